// The scheduler of one partition: the loop that merges the sequencers'
// batches into the global order, admits each epoch's txns into their lane,
// and publishes. The lanes do the rest: the RW lane (Calvin's lock
// manager), the RO lane (PaxFlow's lock-free snapshot reads), the LTX lane
// (long transactions after S-LTX); the worker pool executes.
//
// Owns: the epoch merger, admitted epochs, publish_epoch, snapshot pins,
// pending digests, and the lanes and workers.
// In: batches (DeliverBatch, any thread), other partitions' reads
// (DeliverRemoteReads, LTX reads: any thread), digest requests.
// Out: writes to the Store, reads to other partitions (PeerSender), results
// at the origin partition (ResultSink), LTX records (RecordSubmitter),
// statistics (NodeStats).
// Threads: one scheduler thread owns everything above except the workers'
// and LTX threads' execution state. Without Start() nothing runs by itself:
// tests drive it with Step() and RunQueuedWork().
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
#include "scheduler/epoch_disposer.h"
#include "scheduler/epoch_merger.h"
#include "scheduler/ltx_lane.h"
#include "scheduler/participants.h"
#include "scheduler/ro_lane.h"
#include "scheduler/rw_lane.h"
#include "scheduler/sinks.h"
#include "scheduler/txn_work.h"
#include "scheduler/worker.h"

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
  // The bound instead while no LTX that reads its snapshot round by round
  // is unresolved (LtxLane::SnapshotReaderUnresolved: no snapshot wait to
  // keep short; a locked run's reads wait only for its begin epoch's txns
  // and earlier), or while the oldest unpublished epoch waits for a locked run
  // (LtxLane::LockedRunHoldsPublication: the txns behind its locks wait for
  // it, but the rest of those epochs' work may run meanwhile).
  // 0: max_unpublished_epochs always.
  uint32_t max_unpublished_epochs_wide = 0;
  // The LTX lane (cluster parameters, but ltx_workers and runs_procedures).
  uint32_t ltx_workers = 1;
  bool runs_procedures = true;     // replica 0: runs LTXs and answers their clients
  // Replicated input: the origin role is the group leader's, from the epoch
  // its sequencer starts at (SetLtxOrigin), not replica 0's for good.
  bool ltx_origin_follows_leadership = false;
  // The node this scheduler runs in, when it answers only the txns its own
  // sequencer cut (a replica: the others' clients wait at the others). A
  // read-only txn that another node sequenced and that reads only this
  // partition is then skipped: nobody here wants its result, and it changes
  // nothing. -1: every txn runs (replays, tests).
  int64_t answering_node = -1;
  // Testing: while this file exists, LTX procedures at their origin hold
  // their commit record (LtxExecutorOptions::hold_file). Empty: never.
  std::string fault_hold_ltx_file;
  uint64_t ltx_timeout = 1000;     // epochs
  uint32_t max_active_ltx = 16;
  uint32_t ltx_max_deferrals = 3;
  bool ltx_in_place = false;  // paxflow, one partition: LTXs install in place (ltx.md)
  bool ltx_locked_run = false;  // in place: LTXs that declare their reads run locked (ltx.md)
  // Calvin mode locks every key of an LTX's declared areas; an LTX whose
  // areas hold more keys than this aborts instead.
  uint64_t max_locked_ltx_keys = 1u << 22;

  // NodeStats slots the scheduler's threads use: workers first, then the
  // scheduler thread, then the LTX threads.
  size_t stats_slots() const { return workers + 1 + ltx_workers; }
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
  uint64_t active_ltx = 0;    // LTXs begun and not resolved
  uint64_t deferred = 0;      // short txns set aside by an LTX's write area
  uint64_t parked = 0;        // readers waiting for an LTX to resolve
  Epoch read_only_snapshot = 0;  // the snapshot of ROs admitted from now on
  Epoch next_epoch = 0;       // the epoch it waits to admit
  std::vector<uint32_t> missing_sequencers;  // whose batch of next_epoch has not come
  // The first epoch from next_epoch on that some sequencer's batch is
  // missing for, and those sequencers: what the partition is held by even
  // while admission waits at max_unpublished_epochs (its published epoch
  // waiting, say, for that sequencer's node's reads).
  Epoch incomplete_epoch = 0;
  std::vector<uint32_t> incomplete_missing;
  uint64_t repeated_messages = 0;  // batches and reads sent again (recovery), dropped as such
  // Every epoch up to here is done and freed: reads for its txns are no
  // longer needed here (peers forget what they sent for them).
  Epoch freed_epoch = 0;
};

// A partition's state at a checkpoint epoch, besides its store.
struct SnapshotInfo {
  bool ok = false;          // false: the epoch was already admitted when asked; no snapshot
  Epoch epoch = 0;
  Epoch last_rw_epoch = 0;  // newest epoch <= `epoch` with RW work (RO snapshots follow it)
  std::string lane_state;   // the LTX lane's state at `epoch` (opaque bytes)
  // Sequencers that had ended their run by `epoch`, and where.
  std::vector<std::pair<uint32_t, Epoch>> finished_sequencers;
};

class Scheduler {
 public:
  // `records` takes the LTX lane's records for this node's sequencer
  // (replica 0); null where nothing sequences (replays, other replicas).
  Scheduler(const SchedulerOptions& options, Store* store, const Application* app,
            PeerSender* peers, NodeStats* stats, ResultSink* results,
            RecordSubmitter* records = nullptr);
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
  // `snapshot.epoch` (a checkpoint); execution goes on with the next epoch.
  // False (with `error`) if the lane state cannot be read back.
  bool RestoreAt(const SnapshotInfo& snapshot, std::string* error);
  // Recovery, before Start: epochs up to `epoch` were sequenced before a
  // restart, so nobody waits for their results here: read-only txns whose
  // origin is this partition are skipped, as is the procedure of a txn
  // that only reports its result here, and none is counted in the stats.
  // The LTX lane runs no procedure for them either (replay never re-runs an
  // LTX); what began here and is unresolved when they are done is aborted
  // through this node's sequencer.
  void SetRecoveredThrough(Epoch epoch);

  // A consistent snapshot for a checkpoint at `epoch`, asked for before
  // `epoch` + 1 is admitted. Once every txn of epochs <= `epoch` has
  // finished here, `ready` runs on the scheduler thread; the snapshot stays
  // readable until ReleaseSnapshot(epoch): pinned against garbage collection
  // in a multi-version store; in calvin mode by holding back later epochs
  // (the partition pauses). Asked too late, `ready` gets ok = false.
  void RequestSnapshot(Epoch epoch, std::function<void(const SnapshotInfo&)> ready);
  void ReleaseSnapshot(Epoch epoch);  // any thread

  void Start();  // the scheduler thread and the workers
  void Stop();   // joins them; work in flight is dropped

  void DeliverBatch(std::unique_ptr<Batch> batch);
  void DeliverRemoteReads(RemoteReads&& reads);
  // The LTX lane's read exchange: requests from an LTX's origin, replies
  // from participants. Any thread.
  void DeliverLtxReadRequest(LtxReadRequest&& request);
  void DeliverLtxReadReply(LtxReadReply&& reply);

  // Asks for the state digest as of `epoch`, delivered on the scheduler
  // thread once that epoch is published. In calvin mode the scheduler holds
  // back later epochs until the digest is taken.
  void RequestDigest(Epoch epoch, std::function<void(Epoch, uint64_t)> done);

  // Every sequencer finished and every txn ran. Blocks up to `timeout_ms`.
  bool WaitFinished(int64_t timeout_ms);
  bool finished() const { return finished_.load(std::memory_order_acquire); }
  Epoch last_epoch() const { return published_.load(std::memory_order_acquire); }

  SchedulerStatus Status() const;
  // Reads from other partitions that txns of admitted epochs have waited
  // for longer than `wait_us`, by partition (any thread): the node asks
  // those partitions to send them again. See RemoteReadTable::Overdue.
  std::vector<OverdueReads> OverdueRemoteReads(int64_t now_us, int64_t wait_us,
                                               size_t max_txns) {
    return workers_.OverdueRemoteReads(now_us, wait_us, max_txns);
  }
  uint64_t repeated_messages() const {
    return repeated_messages_.load(std::memory_order_relaxed) + workers_.repeated_messages();
  }

  // The LTX lane across a checkpoint (paxflow mode; LtxLane::SaveState and
  // co.): its state once the checkpoint epoch is admitted and
  // LtxLaneStateReady (scheduler thread), and back into a fresh scheduler
  // before Start; epochs up to SetLtxReplayThrough's are replayed (no LTX
  // procedure, record or result).
  bool LtxLaneStateReady() const { return ltx_lane_.SaveStateReady(); }
  std::string SaveLtxLaneState() { return ltx_lane_.SaveState(UnreadLtxRequests()); }
  bool RestoreLtxLaneState(const std::string& state, std::string* error) {
    return ltx_lane_.RestoreState(state, error);
  }
  void SetLtxReplayThrough(Epoch epoch) { ltx_lane_.SetReplayThrough(epoch); }
  // Partition `p` restarted: the LTXs begun here ask it again for the reads
  // it had not answered (LtxLane::OnPartitionRestarted). Any thread.
  void PartitionRestarted(PartitionId p) { ltx_lane_.OnPartitionRestarted(p); }
  // Replicated input: this node leads its group and sequences from epoch
  // `first_epoch` on (0: it no longer leads). LtxLane::SetOrigin. Any thread.
  void SetLtxOrigin(Epoch first_epoch) { ltx_lane_.SetOrigin(first_epoch); }
  // Tasks waiting for this node's LTX threads (LtxExecutor::queued). Any thread.
  size_t ltx_backlog() const { return ltx_lane_.queued_tasks(); }
  const SchedulerOptions& options() const { return options_; }
  // The outcomes of LTXs begun here under client request ids, for their
  // retries (scheduler/ltx_outcomes.h). Ask from any thread.
  LtxOutcomes& ltx_outcomes() { return ltx_lane_.outcomes(); }
  // Work of the LTX lane that this node's sequencer owes the log: an LTX or
  // long scan begun here is unresolved, or an epoch up to `sequenced` is
  // not admitted yet (it may begin one). Any thread.
  bool OwesLtxWork(Epoch sequenced) const {
    // admitted_ first: Admit stores origin_ltx_ before it (release), so an
    // epoch seen admitted comes with the LTXs it began.
    if (admitted_.load(std::memory_order_acquire) < sequenced) return true;
    return origin_ltx_.load(std::memory_order_acquire) > 0;
  }
  uint64_t dropped_messages() const {
    return dropped_messages_.load(std::memory_order_relaxed) + workers_.dropped_messages();
  }

  // Step-by-step driving (tests): process everything in the inbox, then run
  // every queued txn on the calling thread as worker `worker`, and every
  // queued LTX-thread task (RunQueuedLtxWork returns how many) but those of
  // LTX `held`, if given (it stays running).
  void Step();
  void RunQueuedWork(size_t worker = 0);
  size_t RunQueuedLtxWork(TxnId held = 0);

 private:
  using DoneMessage = WorkerPool::DoneNote;
  struct DigestRequest {
    Epoch epoch;
    std::function<void(Epoch, uint64_t)> done;
  };
  struct SnapshotRequest {
    Epoch epoch;
    std::function<void(const SnapshotInfo&)> ready;
    SnapshotInfo info;    // filled at admission of `epoch`
    // The LTX lane's state at `epoch` is in `info` (paxflow mode; once
    // `epoch` is admitted nothing later is, until then, so the lane stays as
    // it was there). Calvin mode has no lane: taken from the start.
    bool lane_taken = false;
    bool served = false;  // `ready` ran; pinned until released
  };

  void SchedulerLoop();
  // Moves the inbox's contents out; caller holds inbox_mu_.
  // LTX read requests that reached this partition and that the lane has
  // not taken up (a checkpoint's lane state keeps them). Scheduler thread.
  std::vector<LtxReadRequest> UnreadLtxRequests();
  void TakeInbox(std::vector<std::unique_ptr<Batch>>* batches, std::vector<DoneMessage>* done);
  void ProcessInbox(std::vector<std::unique_ptr<Batch>>* batches, std::vector<DoneMessage>* done);
  void Admit(std::unique_ptr<MergedEpoch> merged);
  // Hands one admitted txn to its lane.
  void Dispatch(TxnWork* work);
  // A read-only txn (paxflow) to the RO lane, or straight to the workers
  // when an LTX in place holds its snapshot's publication and every key it
  // reads here has settled there (ReadsSettled, RwLane::Settled).
  void AdmitReadOnly(TxnWork* work);
  bool ReadsSettled(TxnWork* work) const;
  // Locks were released: waiting read-only txns whose keys settled since go.
  void ReleaseSettledReadOnly();
  // Calvin mode, and paxflow mode for an LTX locked at its begin
  // (LtxLane::LocksAtBegin): an LTX becomes one big locked txn over its
  // declared areas.
  void DispatchLockedLtx(TxnWork* work);
  // An LTX record in paxflow mode: bookkeeping, done at once.
  void DispatchLtxRecord(TxnWork* work);
  // Takes a txn out of its epoch (the LTX lane sets it aside) / runs one in
  // the epoch being admitted.
  std::unique_ptr<TxnWork> Detach(TxnWork* work);
  void Adopt(std::unique_ptr<TxnWork> work, EpochWork* epoch);
  // `work` holds all its locks: to the workers (an install in place
  // waiting for its LTX's writes keeps them until the lane hands them over).
  void MakeReady(TxnWork* work);
  void RunActions(EpochWork* epoch);
  void FinishAtOnce(TxnWork* work);
  void HandleDone(const DoneMessage& message);
  // Moves publish_epoch over finished epochs; true if it moved.
  bool AdvancePublish();
  void ServeDigests();
  void FreeFinishedEpochs();
  void ServeSnapshots();
  // The LTX lane's state for the snapshot of the newest admitted epoch, once
  // the lane can give it (its parked readers' snapshots are published).
  void TakeLaneStates();
  void TakeSnapshotRequests();
  void OfferBatch(std::unique_ptr<Batch> batch);
  bool AdmissionBlocked(Epoch epoch) const;
  // Admits merged epochs in order until none is ready or admission is blocked.
  void AdmitReadyEpochs();
  void FlushReady();
  // Hands what is ready to the workers: locked LTX runs ahead of every
  // queued item, then lock holders and snapshot reads. FlushReady first
  // takes the installs the LTX lane made ready; admission calls this
  // alone, every kHandOnEvery txns and at once for a locked run.
  void HandOnReady();
  static constexpr size_t kHandOnEvery = 128;
  // Paxflow: hands the finished LTXs' commit (or abort) records to the lane.
  void TakeFinishedLtxs();
  void UpdatePins();
  // A worker's done notes (taken; `notes` is left empty).
  void PostDone(std::vector<DoneMessage>* notes);
  void PostScanEvent(std::vector<TxnId>* events, TxnId id);
  void Wake();
  // Any thread: `add` runs under the inbox lock (it files something for the
  // scheduler thread), then that thread wakes.
  template <typename Add>
  void PostToInbox(Add&& add) {
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      add();
      wake_ = true;
    }
    inbox_cv_.notify_one();
  }

  const SchedulerOptions options_;
  Store* const store_;
  const Application* const app_;
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
  ParticipantPlanner participants_;
  RwLane rw_lane_;
  RoLane ro_lane_;
  std::deque<std::unique_ptr<EpochWork>> epochs_;  // admitted and not freed, oldest first
  EpochDisposer disposer_;                          // frees finished epochs
  LtxLane ltx_lane_;
  std::vector<LtxLane::Action> actions_;  // scratch
  std::vector<LtxReadRequest> inbox_ltx_requests_, ltx_requests_;
  std::vector<TxnId> inbox_scans_served_, inbox_scans_finished_;
  // LTXs finished at this origin (LtxLane::OnFinished), inbox and taken.
  std::vector<std::shared_ptr<const Txn>> inbox_ltx_finished_, ltx_finished_;
  std::vector<TxnWork*> ready_locked_;
  std::vector<WorkItem> ready_rw_, ready_ro_;
  // Locked runs of LTXs in place: ahead of the queued short txns, since the
  // next LTXs (and the txns queued behind their installs) wait for them.
  std::vector<WorkItem> ready_first_;
  std::vector<DigestRequest> digests_;
  std::vector<SnapshotRequest> snapshots_;        // ascending epochs
  std::vector<SnapshotRequest> taken_snapshots_;  // from the inbox, not yet placed
  std::vector<Epoch> taken_releases_;
  bool input_failed_ = false;    // an epoch could not be logged: admit nothing more
  bool locks_released_ = false;  // since ReleaseSettledReadOnly last looked
  size_t store_slot_ = 0;            // the scheduler thread's
  std::vector<Epoch> pins_;          // last pins given to the store
  // UpdatePins' working set, kept between calls: it runs twice per loop
  // and the pins rarely change, so building them allocates nothing.
  std::vector<Epoch> pins_scratch_;
  int64_t previous_close_time_us_ = 0;
  uint64_t admitted_txns_ = 0, dispatched_txns_ = 0, finished_locked_ = 0;

  WorkerPool workers_;

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
  std::atomic<uint64_t> active_ltx_{0}, deferred_{0}, parked_{0}, origin_ltx_{0};
  std::atomic<Epoch> ro_snapshot_{0};
  // Every epoch up to here is done and freed (later ones may be freed too).
  std::atomic<Epoch> freed_through_{0};
  mutable std::mutex status_mu_;
  std::string waiting_for_;
  Epoch next_epoch_ = 1;
  // The first epoch a batch is missing for and whose: the next epoch's
  // missing list when it is that one.
  Epoch incomplete_epoch_ = 1;
  std::vector<uint32_t> incomplete_missing_;

  std::atomic<bool> stop_{false};
  std::atomic<bool> finished_{false};
  std::mutex finished_mu_;
  std::condition_variable finished_cv_;
  std::thread scheduler_thread_;
};

}  // namespace paxflow
