// The read-only lane (PaxFlow's fast path): picks each read-only txn's
// snapshot and dispatches it lock-free once that snapshot is published.
//
// ro_read_version of an RO in epoch e is the newest epoch before e with
// read-write work (EndEpoch is told which epochs had any), so every
// partition an RO touches reads the same cut. An RO whose snapshot is
// published goes to the workers at once; the others wait in a queue,
// ordered by snapshot, released as publish_epoch reaches them, or earlier
// when the scheduler finds that every key one reads has its final value at
// its snapshot (while an LTX in place holds publication: docs/ltx.md).
//
// Owns: the snapshot choice and the waiting queue. In: admitted ROs,
// publish_epoch advances. Out: ROs ready to run.
// Threads: the scheduler thread only.
#pragma once
#include <cstdint>
#include <deque>
#include <vector>

#include "common/types.h"
#include "scheduler/txn_work.h"
#include "scheduler/work_queue.h"

namespace paxflow {

class RoLane {
 public:
  // The snapshot of read-only txns admitted from now on.
  Epoch snapshot() const { return last_rw_epoch_; }
  // After epoch `epoch` is admitted: whether it counts as a read-write epoch.
  void EndEpoch(Epoch epoch, bool read_write) {
    if (read_write) last_rw_epoch_ = epoch;
  }
  // A restored partition: the snapshot its checkpoint recorded.
  void RestoreSnapshot(Epoch last_rw_epoch) { last_rw_epoch_ = last_rw_epoch; }

  // Dispatches `work` (whose read_version is set) now or when published.
  void Admit(TxnWork* work, Epoch published, std::vector<WorkItem>* ready);
  // publish_epoch advanced: appends the waiting ROs it releases.
  void Release(Epoch published, std::vector<WorkItem>* ready);
  // Appends the waiting ROs for which `settled` says every key they read
  // here has its final value at their snapshot (their order kept), ahead
  // of its publication. Used while an LTX in place holds publication back.
  template <typename Settled>
  void ReleaseSettled(Settled settled, std::vector<WorkItem>* ready) {
    auto kept = waiting_.begin();
    for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
      if (settled(*it)) ready->push_back(WorkItem{*it, WorkItem::kExecute});
      else *kept++ = *it;
    }
    waiting_.erase(kept, waiting_.end());
  }

  size_t waiting() const { return waiting_.size(); }
  uint64_t waited() const { return waited_; }

 private:
  Epoch last_rw_epoch_ = 0;
  std::deque<TxnWork*> waiting_;  // ascending read_version, FIFO among equals
  uint64_t waited_ = 0;           // ROs that went through the queue, since start
};

}  // namespace paxflow
