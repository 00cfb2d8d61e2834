// Per-partition execution state of the txns of one epoch.
//
// Owned by the scheduler (one EpochWork per admitted epoch). The scheduler
// thread fills a TxnWork and drives its locks; once dispatched, exactly one
// worker at a time touches it, and it goes back to the scheduler only
// through the scheduler's inbox.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/types.h"
#include "scheduler/lock_manager.h"
#include "txn.pb.h"

namespace paxflow {

struct EpochWork;

struct TxnWork : LockedTxn {
  const Txn* txn = nullptr;
  EpochWork* epoch = nullptr;
  int kind = 0;  // TxnKind
  // PaxFlow read-only fast path: reads `read_version` lock-free.
  bool snapshot_read = false;
  Epoch read_version = 0;
  bool all_local = true;     // every key of the txn is on this partition
  bool reads_here = false;   // has keys to read on this partition
  bool writes_here = false;  // has keys to write on this partition
  bool executor = false;     // runs the procedure here
  bool origin = false;       // this partition reports the result
  bool skipped = false;      // nothing to do here (a read-only txn whose client is gone)
  // Multi-partition only: other partitions whose reads the executor needs,
  // and the executors (other than us) to send our reads to.
  uint32_t remote_reads_expected = 0;
  std::vector<PartitionId> expected_readers;  // the partitions counted above
  std::vector<PartitionId> send_reads_to;
};

struct EpochWork {
  Epoch epoch = 0;
  std::vector<std::unique_ptr<Batch>> batches;  // owns the txns
  std::vector<TxnWork> txns;                    // merged global order
  bool has_rw = false;
  int64_t close_time_us = 0;
  // End of the previous epoch: read-only txns of this epoch see the state as
  // of then, so their visibility delay counts from it.
  int64_t previous_close_time_us = 0;
  // Txns whose work on this partition is not finished. Workers decrement it
  // for lock-free snapshot reads; the scheduler for everything else.
  std::atomic<uint32_t> unfinished{0};
  // Scheduler thread: txns with local writes not yet applied.
  uint32_t writes_pending = 0;
  // PaxFlow: the snapshot this epoch's read-only txns read (the same for
  // all of them), and how many of them have not finished; while any is
  // left the version is pinned against garbage collection.
  Epoch ro_read_version = 0;
  std::atomic<uint32_t> ro_unfinished{0};
};

}  // namespace paxflow
