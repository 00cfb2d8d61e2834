// Per-partition execution state of the txns of one epoch.
//
// Owned by the scheduler (one EpochWork per admitted epoch). The scheduler
// thread fills a TxnWork and drives its locks; once dispatched, exactly one
// worker at a time touches it, and it goes back to the scheduler only
// through the scheduler's inbox.
//
// A txn normally runs in the epoch its id names and lives in that epoch's
// array. The LTX lane sets some aside (a short txn deferred by an LTX's
// write area, a read-only txn parked until an LTX resolves): those are
// detached (they own their Txn, and their first epoch no longer waits for
// them) and later adopted by the epoch they finally run in, which tags
// their writes and counts them.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "applications/application.h"
#include "common/types.h"
#include "scheduler/lock_request.h"
#include "txn.pb.h"

namespace paxflow {

struct EpochWork;

// A read the LTX lane answers instead of the store: the value an LTX's
// commit record wrote (or deleted) for a key a reader must see it for.
struct ReadOverride {
  uint32_t position = 0;  // in the txn's reads: read_set, then read_write_set
  bool found = false;
  std::string value;
};

// The local writes of one LTX commit record, installed as a write-only txn.
struct LtxInstall {
  TxnId ltx = 0;
  std::shared_ptr<const Txn> begin, record;  // keep what `txn` and `writes` point into
  std::vector<const LtxWrite*> writes;       // this partition's, into `record`
  // At the LTX's origin partition: the LTX's result, reported once its
  // writes here are in.
  bool report = false;
  TxnOutcome outcome;
  int64_t commit_seen_us = 0;  // origin: when its commit record reached the scheduler
  // In place: it locks `lock_keys` (its write area here) before its writes
  // are known, and runs only once they are (`awaiting_writes` false). The
  // scheduler notes in `locks_held` that it got its locks meanwhile.
  bool in_place = false;
  std::vector<Key> lock_keys;
  bool awaiting_writes = false;
  bool locks_held = false;
  // A locked run (in place, docs/ltx.md): the worker that gets this install
  // runs the LTX's procedure under these locks and installs its writes at
  // once. It reads its write area's keys at their newest value, and the
  // keys in `declared` (its declared reads outside its area, ascending) at
  // `snapshot`, or the value the lane chose for them (`chosen`, views into
  // `chosen_records`). A procedure that reads anything else gives the run
  // back (`gave_back`): it then runs on an LTX thread, the locks still held.
  // The worker leaves its commit or abort record in `record`; a commit
  // record carries the writes only if `keep_writes`: an LTX begun after it
  // in its epoch may take them from there (LtxLane::PrepareLockedRun).
  bool run_here = false;
  bool keep_writes = true;
  bool gave_back = false;
  Epoch snapshot = 0;
  std::vector<Key> declared;
  std::vector<std::pair<bool, std::string_view>> chosen_values;  // per declared key, if chosen
  std::vector<bool> chosen;
  std::vector<std::shared_ptr<const Txn>> chosen_records;
  int64_t placed_us = 0;  // placed at its serialization point
  int64_t locked_us = 0;  // its install got its locks
};

struct TxnWork : LockedTxn {
  const Txn* txn = nullptr;
  std::unique_ptr<Txn> owned_txn;  // detached txns own their Txn; `txn` points here
  // Calvin mode's LTX: `txn` lists every key of its areas (what it locks
  // and reads); its procedure runs on the begin record, here.
  const Txn* procedure_txn = nullptr;
  EpochWork* epoch = nullptr;      // the epoch it runs in
  int kind = 0;  // TxnKind
  // PaxFlow read-only fast path: reads `read_version` lock-free.
  bool snapshot_read = false;
  Epoch read_version = 0;
  // Waiting for its snapshot: its first `settled_reads` keys here have
  // their final value there (Scheduler::ReadsSettled; keys settle for good).
  uint32_t settled_reads = 0;
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
  // LTX lane.
  SerialPosition position;            // where it stands in the serial order
  uint32_t deferrals = 0;             // times deferred by an LTX's write area
  std::vector<ReadOverride> overrides;  // ascending positions
  std::unique_ptr<LtxInstall> install;  // set: a write-only install, nothing else
  int64_t set_aside_us = 0;           // when it was deferred or parked (0: never)
};

struct EpochWork {
  Epoch epoch = 0;
  std::vector<std::unique_ptr<Batch>> batches;  // owns the txns
  std::vector<TxnWork> txns;                    // merged global order
  // Txns that run in this epoch but were sequenced earlier (released by an
  // LTX's resolution), and LTX installs.
  std::vector<std::unique_ptr<TxnWork>> adopted;
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
  // PaxFlow: the snapshot this epoch's read-only txns read (adopted ones
  // keep their own: see adopted_snapshots), and how many of them have not
  // finished; while any is left those versions are pinned against garbage
  // collection.
  Epoch ro_read_version = 0;
  std::vector<Epoch> adopted_snapshots;
  std::atomic<uint32_t> ro_unfinished{0};
};

}  // namespace paxflow
