// The scheduler of one partition: merges the sequencers' batches into the
// global order, runs Calvin's lock manager for the txns that need locks,
// the PaxFlow read-only dispatcher for those that do not, and a pool of
// worker threads that execute them.
//
// Owns: the epoch merger, the lock manager, admitted epochs, the read-only
// waiting queue, publish_epoch, the remote-read table and the workers.
// In: batches (DeliverBatch, any thread), other partitions' reads
// (DeliverRemoteReads, any thread).
// Out: writes to the Store, reads to other partitions (PeerSender), results
// at the origin partition (ResultSink), statistics (NodeStats).
// Threads: one scheduler thread owns everything above except the workers'
// execution state; `workers` worker threads execute txns. Without Start()
// nothing runs by itself: tests drive it with Step() and RunQueuedWork().
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "applications/application.h"
#include "backend/store.h"
#include "common/stats.h"
#include "common/types.h"
#include "message.pb.h"
#include "scheduler/epoch_merger.h"
#include "scheduler/lock_manager.h"
#include "scheduler/remote_reads.h"
#include "scheduler/txn_work.h"
#include "scheduler/work_queue.h"

namespace paxflow {

struct SchedulerOptions {
  Mode mode = Mode::kPaxflow;
  PartitionId partition = 0;
  uint32_t partitions = 1;
  uint32_t sequencers = 1;
  uint32_t workers = 2;
  uint32_t ro_workers = 0;  // workers allowed to run read-only work; 0: all
  // Batches for epochs this far ahead of the next one to run are refused
  // (their senders keep them in their logs and send them again when asked):
  // bounds what a stalled partition buffers. 0: no bound.
  uint32_t max_buffered_epochs = 0;
  // An epoch is admitted only this many epochs past publish_epoch: a
  // partition that cannot publish (it waits for a dead peer's reads) stops
  // taking in work. 0: no bound.
  uint32_t max_unpublished_epochs = 0;
};

// Sends this partition's reads of a multi-partition txn to another
// partition of the same replica. Called from worker threads.
class PeerSender {
 public:
  virtual ~PeerSender() = default;
  virtual void SendRemoteReads(PartitionId to, const RemoteReads& reads) = 0;
};

// Receives every txn's result at its origin partition, on a worker thread.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  // `read_version`: the snapshot a PaxFlow read-only txn read, else 0.
  // `reads`: what the procedure read (read_set, then read_write_set).
  virtual void OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                        const ReadValues& reads) = 0;
};

struct SchedulerStatus {
  Epoch admitted_epoch = 0;   // newest epoch in execution
  Epoch published_epoch = 0;  // publish_epoch
  uint64_t pending = 0;       // admitted, waiting for locks or a snapshot
  uint64_t executing = 0;     // dispatched to workers, not finished
  uint64_t waiting_ro = 0;    // read-only txns in the waiting queue
  uint64_t waited_ro = 0;     // read-only txns that went through it, since start
  uint64_t locked_keys = 0;
  uint64_t buffered_epochs = 0;  // received, waiting for other sequencers
  std::string waiting_for;    // which sequencers the next epoch waits on
  Epoch next_epoch = 0;       // the epoch it waits to admit
  std::vector<uint32_t> missing_sequencers;  // whose batch of next_epoch has not come
  uint64_t repeated_messages = 0;  // batches and reads sent again (recovery), dropped as such
};

// A partition's state at a checkpoint epoch, besides its store.
struct SnapshotInfo {
  bool ok = false;          // false: the epoch was already admitted when asked; no snapshot
  Epoch epoch = 0;
  Epoch last_rw_epoch = 0;  // newest epoch <= `epoch` with RW work (RO snapshots follow it)
  std::string lane_state;   // the lanes' own state at `epoch` (opaque)
  // Sequencers that had ended their run by `epoch`, and where.
  std::vector<std::pair<uint32_t, Epoch>> finished_sequencers;
};

class Scheduler {
 public:
  Scheduler(const SchedulerOptions& options, Store* store, const Application* app,
            PeerSender* peers, NodeStats* stats, ResultSink* results);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Called on the scheduler thread for each epoch before any of its txns
  // executes: the input log's hook. False: the epoch could not be logged;
  // it does not run, and nothing is admitted from then on.
  void SetBeforeExecute(std::function<bool(const MergedEpoch&)> hook) {
    before_execute_ = std::move(hook);
  }

  // Recovery, before Start: the partition's store holds its state as of
  // `epoch` (a checkpoint); execution goes on with epoch + 1.
  void RestoreAt(const SnapshotInfo& snapshot);
  // Recovery, before Start: epochs up to `epoch` were sequenced before a
  // restart, so nobody waits for their results here: read-only txns whose
  // origin is this partition are skipped, as is the procedure of a txn
  // that only reports its result here, and none is counted in the stats.
  void SetRecoveredThrough(Epoch epoch) { recovered_through_ = epoch; }

  // A consistent snapshot for a checkpoint at `epoch`, asked for before
  // `epoch` + 1 is admitted. Once every txn of epochs <= `epoch` has
  // finished here, `ready` runs on the scheduler thread; the snapshot stays
  // readable until ReleaseSnapshot(epoch): pinned against garbage collection
  // in a multi-version store; in calvin mode by holding back later epochs
  // (the partition pauses). Asked too late, `ready` gets ok = false.
  void RequestSnapshot(Epoch epoch, std::function<void(const SnapshotInfo&)> ready);
  void ReleaseSnapshot(Epoch epoch);  // any thread
  // The lanes' state at a checkpoint epoch, as opaque bytes, and back
  // (scheduler thread; RestoreLaneState before Start).
  std::string CheckpointLaneState(Epoch epoch);
  void RestoreLaneState(const std::string& state);

  void Start();  // the scheduler thread and the workers
  void Stop();   // joins them; work in flight is dropped

  void DeliverBatch(std::unique_ptr<Batch> batch);
  void DeliverRemoteReads(RemoteReads&& reads);

  // Asks for the state digest as of `epoch`, delivered on the scheduler
  // thread once that epoch is published. In calvin mode the scheduler holds
  // back later epochs until the digest is taken.
  void RequestDigest(Epoch epoch, std::function<void(Epoch, uint64_t)> done);

  // Every sequencer finished and every txn ran. Blocks up to `timeout_ms`.
  bool WaitFinished(int64_t timeout_ms);
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  Epoch last_epoch() const { return published_.load(std::memory_order_acquire); }

  SchedulerStatus Status() const;
  uint64_t dropped_messages() const { return dropped_messages_.load(std::memory_order_relaxed); }

  // Step-by-step driving (tests): process everything in the inbox, then run
  // every queued txn on the calling thread as worker `worker`.
  void Step();
  void RunQueuedWork(size_t worker = 0);

 private:
  struct DoneMessage {
    TxnWork* work;
    bool finished;  // false: release the locks only; more work follows
  };
  struct DigestRequest {
    Epoch epoch;
    std::function<void(Epoch, uint64_t)> done;
  };
  struct SnapshotRequest {
    Epoch epoch;
    std::function<void(const SnapshotInfo&)> ready;
    SnapshotInfo info;   // filled at admission of `epoch`
    bool served = false;  // `ready` ran; pinned until released
  };
  // Scratch state of one worker thread.
  struct WorkerContext {
    size_t index = 0;
    size_t store_slot = 0;
    ReadValues reads;
    WriteSet writes;
    RemoteReads outgoing;
  };

  // Scheduler thread.
  void SchedulerLoop();
  // Moves the inbox's contents out; caller holds inbox_mu_.
  void TakeInbox(std::vector<std::unique_ptr<Batch>>* batches, std::vector<DoneMessage>* done);
  void ProcessInbox(std::vector<std::unique_ptr<Batch>>* batches, std::vector<DoneMessage>* done);
  void Admit(std::unique_ptr<MergedEpoch> merged);
  void Prepare(TxnWork* work);
  void HandleDone(const DoneMessage& message);
  void AdvancePublish();
  void ReleaseWaitingReadOnly();
  void ServeDigests();
  void FreeFinishedEpochs();
  void ServeSnapshots();
  void TakeSnapshotRequests();
  bool AdmissionBlocked(Epoch epoch) const;
  void FlushReady();
  void UpdatePins();

  // Worker threads.
  void WorkerLoop(size_t index);
  void Execute(const WorkItem& item, WorkerContext* context);
  void ReadLocal(TxnWork* work, size_t slot, ReadValues* reads);
  void SendReads(TxnWork* work, const ReadValues& reads, WorkerContext* context);
  void RunProcedure(TxnWork* work, const ReadValues& reads, WorkerContext* context);
  void FinishLocal(TxnWork* work, bool finished);
  void PostDone(const DoneMessage& message);

  const SchedulerOptions options_;
  Store* const store_;
  const Application* const app_;
  PeerSender* const peers_;
  NodeStats* const stats_;
  ResultSink* const results_;
  std::function<bool(const MergedEpoch&)> before_execute_;

  // Inbox: filled by any thread, drained by the scheduler thread.
  std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<std::unique_ptr<Batch>> inbox_batches_;
  std::vector<DoneMessage> inbox_done_;
  std::vector<DigestRequest> inbox_digests_;
  std::vector<SnapshotRequest> inbox_snapshots_;
  std::vector<Epoch> inbox_releases_;
  bool wake_ = false;

  // Scheduler-thread state.
  EpochMerger merger_;
  LockManager locks_;
  std::deque<std::unique_ptr<EpochWork>> epochs_;  // admitted, oldest first
  std::deque<TxnWork*> waiting_ro_;                // snapshot not yet published
  std::vector<LockedTxn*> ready_locked_;
  std::vector<WorkItem> ready_rw_, ready_ro_;
  std::vector<DigestRequest> digests_;
  std::vector<SnapshotRequest> snapshots_;  // ascending epochs
  std::vector<SnapshotRequest> taken_snapshots_;  // from the inbox, not yet placed
  std::vector<Epoch> taken_releases_;
  Epoch last_rw_epoch_ = 0;
  std::atomic<Epoch> recovered_through_{0};  // set before Start; read by any thread
  bool input_failed_ = false;  // an epoch could not be logged: admit nothing more
  size_t store_slot_ = 0;            // the scheduler thread's
  std::vector<Epoch> pins_;          // last pins given to the store
  int64_t previous_close_time_us_ = 0;
  std::vector<uint8_t> reader_mark_, writer_mark_;  // by partition, Prepare scratch
  uint64_t admitted_txns_ = 0, dispatched_txns_ = 0;

  RemoteReadTable remote_reads_;
  WorkQueue work_queue_;
  std::vector<std::unique_ptr<WorkerContext>> contexts_;

  std::atomic<Epoch> admitted_{0};
  std::atomic<Epoch> published_{0};
  std::atomic<uint64_t> pending_{0};
  std::atomic<uint64_t> finished_txns_{0};
  std::atomic<uint64_t> dispatched_{0};
  std::atomic<uint64_t> waiting_ro_count_{0};
  std::atomic<uint64_t> waited_ro_{0};
  std::atomic<uint64_t> locked_keys_{0};
  std::atomic<uint64_t> buffered_epochs_{0};
  std::atomic<uint64_t> dropped_messages_{0};
  std::atomic<uint64_t> repeated_messages_{0};
  std::atomic<Epoch> freed_through_{0};  // every epoch up to here is done and freed
  mutable std::mutex status_mu_;
  std::string waiting_for_;
  Epoch next_epoch_ = 1;
  std::vector<uint32_t> missing_sequencers_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::mutex finished_mu_;
  std::condition_variable finished_cv_;
  std::thread scheduler_thread_;
  std::vector<std::thread> worker_threads_;
};

}  // namespace paxflow
