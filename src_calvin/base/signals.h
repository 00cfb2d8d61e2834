// Turns SIGINT/SIGTERM into a flag the main loop polls, via a dedicated
// sigwait thread (no async-signal handler touches program state).
// Construct before any other thread starts so every thread inherits the mask.
#pragma once
#include <atomic>
#include <csignal>
#include <thread>

namespace paxflow {

class SignalWatcher {
 public:
  SignalWatcher();
  ~SignalWatcher();
  bool interrupted() const { return interrupted_.load(); }
  int signal() const { return signal_.load(); }

 private:
  sigset_t set_;
  std::atomic<bool> interrupted_{false};
  std::atomic<int> signal_{0};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace paxflow
