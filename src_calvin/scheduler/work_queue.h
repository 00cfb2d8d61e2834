// The queue between the scheduler and the worker threads.
//
// Owns: dispatched work not yet taken by a worker.
// In: read-write work (lock holders, resumed multi-partition txns) and
// read-only work (PaxFlow snapshot reads), from the scheduler thread and
// the transport thread. Out: one item per Pop, read-write work first.
// Threads: any producer; workers block in Pop on a condition variable.
#pragma once
#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

namespace paxflow {

struct TxnWork;

struct WorkItem {
  enum Action : uint8_t { kExecute, kResume };
  TxnWork* work = nullptr;
  Action action = kExecute;
};

class WorkQueue {
 public:
  void PushReadWrite(const WorkItem& item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_write_.push_back(item);
    }
    any_cv_.notify_one();
    read_write_cv_.notify_one();
  }
  void PushReadWrite(const std::vector<WorkItem>& items) { PushMany(items, &read_write_); }
  // Ahead of every queued item (in their order): work that others wait for
  // in a chain (an LTX's locked run), not whatever was admitted before it.
  void PushReadWriteFirst(const std::vector<WorkItem>& items) {
    if (items.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      read_write_.insert(read_write_.begin(), items.begin(), items.end());
    }
    any_cv_.notify_all();
    read_write_cv_.notify_all();
  }
  void PushReadOnly(const std::vector<WorkItem>& items) { PushMany(items, &read_only_); }

  // Blocks for the next item this worker may run; false once closed and drained.
  bool Pop(bool may_run_read_only, WorkItem* item) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& cv = may_run_read_only ? any_cv_ : read_write_cv_;
    cv.wait(lock, [&] {
      return closed_ || !read_write_.empty() || (may_run_read_only && !read_only_.empty());
    });
    if (!read_write_.empty()) {
      *item = read_write_.front();
      read_write_.pop_front();
      return true;
    }
    if (may_run_read_only && !read_only_.empty()) {
      *item = read_only_.front();
      read_only_.pop_front();
      return true;
    }
    return false;
  }

  // Non-blocking Pop, for step-by-step tests.
  bool TryPop(bool may_run_read_only, WorkItem* item) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!read_write_.empty()) {
      *item = read_write_.front();
      read_write_.pop_front();
      return true;
    }
    if (may_run_read_only && !read_only_.empty()) {
      *item = read_only_.front();
      read_only_.pop_front();
      return true;
    }
    return false;
  }

  void Close() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
    }
    any_cv_.notify_all();
    read_write_cv_.notify_all();
  }

  size_t Size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return read_write_.size() + read_only_.size();
  }

 private:
  void PushMany(const std::vector<WorkItem>& items, std::deque<WorkItem>* queue) {
    if (items.empty()) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue->insert(queue->end(), items.begin(), items.end());
    }
    if (items.size() == 1) {
      any_cv_.notify_one();
      if (queue == &read_write_) read_write_cv_.notify_one();
    } else {
      any_cv_.notify_all();
      if (queue == &read_write_) read_write_cv_.notify_all();
    }
  }

  mutable std::mutex mu_;
  std::condition_variable any_cv_;         // workers that may run read-only work
  std::condition_variable read_write_cv_;  // workers restricted to read-write work
  std::deque<WorkItem> read_write_;
  std::deque<WorkItem> read_only_;
  bool closed_ = false;
};

}  // namespace paxflow
