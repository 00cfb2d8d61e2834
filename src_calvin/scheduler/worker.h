// The worker pool: executes ready txns (local reads, the multi-partition
// read exchange, the procedure, its local writes) and LTX installs, and
// reports each finished txn back to the scheduler through a callback.
//
// Owns: the work queue, the worker threads and their scratch state, and
// the table of multi-partition reads still being gathered.
// In: ready work (Push*, from the scheduler thread), other partitions'
// reads (DeliverRemoteReads, the transport thread).
// Out: writes to the Store, reads to peers (PeerSender), results at the
// origin (ResultSink), `done` for every txn that went through the lock
// manager (from a worker thread), `wake` when a lock-free read-only txn
// finishes the last work of its epoch. An LTX in place that runs locked
// (LtxInstall::run_here) runs its procedure here, within its install.
// Threads: `workers` threads after Start(); without Start() nothing runs and
// tests execute queued work on their own thread (RunQueued).
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "applications/application.h"
#include "backend/store.h"
#include "common/stats.h"
#include "scheduler/remote_reads.h"
#include "scheduler/sinks.h"
#include "scheduler/txn_work.h"
#include "scheduler/work_queue.h"

namespace paxflow {

struct WorkerOptions {
  PartitionId partition = 0;
  uint32_t partitions = 1;
  uint32_t workers = 2;
  uint32_t ro_workers = 0;  // workers allowed to run read-only work; 0: all
};

class WorkerPool {
 public:
  // A txn that went through the lock manager finished here (`finished`),
  // or only no longer needs its locks (more of its work follows).
  struct DoneNote {
    TxnWork* work;
    bool finished;
  };
  // Whether work is taken on its own (WorkItem::alone): a long txn (an LTX's
  // install or locked run, a calvin-mode LTX), as long as hundreds of
  // short ones.
  static bool RunsAlone(const TxnWork& work) { return work.kind == kKindLong; }

  struct Callbacks {
    // Done notes, in the order this worker made them; the callee takes
    // them and leaves the vector empty. A worker hands on finished txns'
    // notes together, after the items it took at once (kMaxTake), and a
    // lock release that more of its txn's work follows at once, with
    // every note before it (others may wait for those locks meanwhile).
    std::function<void(std::vector<DoneNote>* notes)> done;
    // A lock-free read-only txn finished the last work of its epoch.
    std::function<void()> wake;
    // An LTX run as one locked txn resolved at its origin partition (on
    // every replica, replays included): `outcome` is what a client's retry
    // of it is told (scheduler/ltx_outcomes.h). Unset: not noted.
    std::function<void(const Txn& begin, const TxnOutcome& outcome)> locked_ltx_resolved;
  };

  WorkerPool(const WorkerOptions& options, Store* store, const Application* app,
             PeerSender* peers, NodeStats* stats, ResultSink* results, Callbacks callbacks);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Start();
  void Stop();  // closes the queue and joins the threads

  void PushReadWrite(const std::vector<WorkItem>& items) { queue_.PushReadWrite(items); }
  void PushReadWriteFirst(const std::vector<WorkItem>& items) {
    queue_.PushReadWriteFirst(items);
  }
  void PushReadOnly(const std::vector<WorkItem>& items) { queue_.PushReadOnly(items); }
  // Runs every queued item on the calling thread as worker `worker` (tests).
  void RunQueued(size_t worker);

  // Another partition's reads. Those of txns running in an epoch at or
  // below `freed_through` (over here: nothing will ever read them) are
  // dropped, as are malformed or unexpected ones; each drop is counted.
  void DeliverRemoteReads(RemoteReads&& reads, Epoch freed_through);
  // Forgets reads that arrived for txns of epochs <= `epoch` that never ran.
  void DropRemoteReadsThrough(Epoch epoch);
  // Reads parked txns have waited for longer than `wait_us` (any thread;
  // RemoteReadTable::Overdue).
  std::vector<OverdueReads> OverdueRemoteReads(int64_t now_us, int64_t wait_us, size_t max_txns) {
    return remote_reads_.Overdue(now_us, wait_us, max_txns);
  }
  // Epochs up to `epoch` were sequenced before a restart (before Start):
  // reads for their txns may come twice, and their results go to no one.
  void SetRecoveredThrough(Epoch epoch) { recovered_through_ = epoch; }
  uint64_t dropped_messages() const { return dropped_.load(std::memory_order_relaxed); }
  // Reads sent again after a restart, dropped as expected repeats.
  uint64_t repeated_messages() const { return repeated_.load(std::memory_order_relaxed); }
  // Lock-free read-only txns finished (the others are counted by `done`).
  uint64_t read_only_finished() const {
    return read_only_finished_.load(std::memory_order_relaxed);
  }

 private:
  // Work items a worker takes from the queue at once (WorkQueue::Pop). The
  // done notes of those it finishes go to the scheduler together after
  // them: one post (its lock, and often its wake-up) per take instead of
  // per txn, and a lock release waits at most for the items taken with it.
  static constexpr size_t kMaxTake = 8;

  struct Context {
    size_t index = 0;
    size_t store_slot = 0;
    std::vector<DoneNote> done;  // gathered, not yet handed on
    ReadValues reads;
    WriteSet writes;
    RemoteReads outgoing;
  };

  void Loop(size_t index);
  void Execute(const WorkItem& item, Context* context);
  void Install(TxnWork* work, Context* context);
  // A locked run (LtxInstall::run_here): the LTX's procedure, then its
  // writes, under its install's locks; a commit's locks go before its
  // record is built (done, not finished), the record then finishes it. Or
  // the run given back.
  void RunLocked(TxnWork* work, Context* context);
  void ReadLocal(TxnWork* work, size_t slot, ReadValues* reads);
  void SendReads(TxnWork* work, const ReadValues& reads, Context* context);
  void RunProcedure(TxnWork* work, const ReadValues& reads, Context* context);
  void Report(TxnWork* work, const TxnOutcome& outcome, const ReadValues& reads,
              Context* context);
  // Notes that `work` finished (gathered until HandOnDone) or released its
  // locks only (its note goes at once, with every note gathered before it).
  void Finish(TxnWork* work, bool finished, Context* context);
  void HandOnDone(Context* context);
  // Counts a dropped message; a repeat after a restart (`expected`) apart.
  void CountDropped(const std::string& what, bool expected = false);

  const WorkerOptions options_;
  Store* const store_;
  const Application* const app_;
  PeerSender* const peers_;
  NodeStats* const stats_;
  ResultSink* const results_;
  const Callbacks callbacks_;

  WorkQueue queue_;
  RemoteReadTable remote_reads_;
  std::vector<std::unique_ptr<Context>> contexts_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> repeated_{0};
  Epoch recovered_through_ = 0;  // set before Start
  std::atomic<uint64_t> read_only_finished_{0};
};

}  // namespace paxflow
