// Frees finished epochs off the scheduler thread.
//
// Owns: finished EpochWork (their batches, txns and lock requests), from
// the moment the scheduler hands them over until they are freed.
// Why: an epoch of thousands of txns is thousands of protobuf messages and
// vectors to free, a fifth of the scheduler thread's time on a busy node;
// that thread is the one every txn waits for, so the frees go to a thread
// of their own. Nothing reads a finished epoch, so which thread frees it,
// and when, changes nothing but where the time goes.
// Threads: Dispose from the scheduler thread; its own thread frees, parked
// on a condition variable while there is nothing to free. Before Start
// (step-driven tests) and after Stop, Dispose frees at once.
#pragma once
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "scheduler/txn_work.h"

namespace paxflow {

class EpochDisposer {
 public:
  EpochDisposer() = default;
  EpochDisposer(const EpochDisposer&) = delete;
  EpochDisposer& operator=(const EpochDisposer&) = delete;
  ~EpochDisposer() { Stop(); }

  void Start() {
    std::lock_guard<std::mutex> lock(mu_);
    if (thread_.joinable() || stopped_) return;
    thread_ = std::thread([this] { Loop(); });
  }

  // Frees what is queued, then frees at once from here on.
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopped_ = true;
    }
    cv_.notify_one();
    if (thread_.joinable()) thread_.join();
  }

  void Dispose(std::vector<std::unique_ptr<EpochWork>>* finished) {
    if (finished->empty()) return;
    bool queued = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (thread_.joinable() && !stopped_) {
        for (auto& epoch : *finished) queued_.push_back(std::move(epoch));
        queued = true;
      }
    }
    if (queued) cv_.notify_one();
    finished->clear();  // what no thread took is freed here
  }

 private:
  void Loop() {
    std::vector<std::unique_ptr<EpochWork>> freeing;
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stopped_ || !queued_.empty(); });
      if (queued_.empty()) return;  // stopped, and everything handed over is freed
      freeing.swap(queued_);
      lock.unlock();
      freeing.clear();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<EpochWork>> queued_;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace paxflow
