#include "base/signals.h"

#include <pthread.h>

#include <ctime>

namespace paxflow {

SignalWatcher::SignalWatcher() {
  sigemptyset(&set_);
  sigaddset(&set_, SIGINT);
  sigaddset(&set_, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  thread_ = std::thread([this] {
    while (!done_.load()) {
      timespec timeout{0, 200 * 1000 * 1000};
      int signal = sigtimedwait(&set_, nullptr, &timeout);
      if (signal > 0) {
        signal_.store(signal);
        interrupted_.store(true);
      }
    }
  });
}

SignalWatcher::~SignalWatcher() {
  done_.store(true);
  thread_.join();
}

}  // namespace paxflow
