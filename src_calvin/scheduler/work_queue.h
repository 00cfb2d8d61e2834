// The queue between the scheduler and the worker threads.
//
// Owns: dispatched work not yet taken by a worker.
// In: read-write work (lock holders, resumed multi-partition txns) and
// read-only work (PaxFlow snapshot reads), from the scheduler thread and
// the transport thread. Out: a few items per Pop, read-write work first.
// Threads: any producer; workers block in Pop on a condition variable.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

namespace paxflow {

struct TxnWork;

struct WorkItem {
  enum Action : uint8_t { kExecute, kResume };
  TxnWork* work = nullptr;
  Action action = kExecute;
  // Taken only on its own (WorkerPool::RunsAlone): a long item, which items
  // taken with it would wait for while another worker may idle. Carried
  // here, set where the item is made, so that a take under the queue's lock
  // reads no txn.
  bool alone = false;
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

  // Blocks for the next items this worker may run, read-write work first:
  // up to `max_take` read-write items but no more than a `takers`-th of
  // those queued (the rest stays for the other workers) and none past one
  // that runs alone, or one read-only item (or one that runs alone).
  // False once closed and drained. At hundreds of thousands of txns per
  // second, a few items per lock spare most of the queue's lock traffic.
  bool Pop(bool may_run_read_only, size_t takers, size_t max_take, std::vector<WorkItem>* items) {
    std::unique_lock<std::mutex> lock(mu_);
    auto& cv = may_run_read_only ? any_cv_ : read_write_cv_;
    cv.wait(lock, [&] {
      return closed_ || !read_write_.empty() || (may_run_read_only && !read_only_.empty());
    });
    return TakeLocked(may_run_read_only, takers, max_take, items);
  }

  // Non-blocking Pop.
  bool TryPop(bool may_run_read_only, size_t takers, size_t max_take,
              std::vector<WorkItem>* items) {
    std::lock_guard<std::mutex> lock(mu_);
    return TakeLocked(may_run_read_only, takers, max_take, items);
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
  bool TakeLocked(bool may_run_read_only, size_t takers, size_t max_take,
                  std::vector<WorkItem>* items) {
    items->clear();
    std::deque<WorkItem>* from = !read_write_.empty() ? &read_write_
                                 : may_run_read_only && !read_only_.empty() ? &read_only_
                                                                          : nullptr;
    if (!from) return false;
    // Read-only work one at a time: each item is larger, so a lock per item
    // costs little, and read-write work that comes meanwhile goes first.
    const size_t sharers = std::max<size_t>(takers, 1);
    const size_t share = (from->size() + sharers - 1) / sharers;
    const size_t most = from == &read_only_ ? 1 : std::max<size_t>(1, std::min(max_take, share));
    size_t take = 1;
    if (!from->front().alone) {
      while (take < most && !(*from)[take].alone) ++take;
    }
    items->assign(from->begin(), from->begin() + static_cast<std::ptrdiff_t>(take));
    from->erase(from->begin(), from->begin() + static_cast<std::ptrdiff_t>(take));
    return true;
  }

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
