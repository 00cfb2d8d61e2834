#include "scheduler/scheduler.h"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>
#include <limits>

#include "common/clock.h"

namespace paxflow {
namespace {
constexpr auto kIdleWake = std::chrono::milliseconds(100);

LtxLaneOptions LtxOptionsOf(const SchedulerOptions& options) {
  LtxLaneOptions ltx;
  ltx.partition = options.partition;
  ltx.partitions = options.partitions;
  ltx.runs_procedures = options.runs_procedures;
  ltx.origin_follows_leadership = options.ltx_origin_follows_leadership;
  ltx.fault_hold_file = options.fault_hold_ltx_file;
  ltx.ltx_workers = options.ltx_workers;
  ltx.ltx_timeout = options.ltx_timeout;
  ltx.max_active_ltx = options.max_active_ltx;
  ltx.ltx_max_deferrals = options.ltx_max_deferrals;
  ltx.in_place = options.ltx_in_place;
  ltx.locked_run = options.ltx_locked_run;
  ltx.max_locked_keys = options.max_locked_ltx_keys;
  return ltx;
}

WorkerOptions WorkerOptionsOf(const SchedulerOptions& options) {
  WorkerOptions workers;
  workers.partition = options.partition;
  workers.partitions = options.partitions;
  workers.workers = options.workers;
  workers.ro_workers = options.ro_workers;
  return workers;
}
// A txn (or install) that holds its locks, as a worker's item.
WorkItem ReadyToRun(TxnWork* work) {
  return WorkItem{work, WorkItem::kExecute, WorkerPool::RunsAlone(*work)};
}

}  // namespace

Scheduler::Scheduler(const SchedulerOptions& options, Store* store, const Application* app,
                     PeerSender* peers, NodeStats* stats, ResultSink* results,
                     RecordSubmitter* records)
    : options_(options),
      store_(store),
      app_(app),
      stats_(stats),
      results_(results),
      merger_(options.sequencers),
      participants_(options.partition, options.partitions),
      rw_lane_(options.partition, options.partitions),
      ltx_lane_(LtxOptionsOf(options), store, app, peers, records, stats, results,
                /*stats_slot=*/options.workers,
                LtxExecutor::Callbacks{
                    [this](LtxReadRequest&& request) {
                      DeliverLtxReadRequest(std::move(request));
                    },
                    [this](TxnId id) { PostScanEvent(&inbox_scans_served_, id); },
                    [this](TxnId id) { PostScanEvent(&inbox_scans_finished_, id); },
                    [this](std::shared_ptr<const Txn> record) {
                      PostToInbox([&] { inbox_ltx_finished_.push_back(std::move(record)); });
                    }}),
      workers_(WorkerOptionsOf(options), store, app, peers, stats, results,
               WorkerPool::Callbacks{
                   [this](std::vector<WorkerPool::DoneNote>* notes) { PostDone(notes); },
                   [this] { Wake(); },
                   [this](const Txn& begin, const TxnOutcome& outcome) {
                     // For LTXs run as one locked txn (calvin mode's, and
                     // paxflow's locked at their begin), noted at dispatch.
                     ltx_lane_.NoteResolved(begin, outcome);
                   }}) {
  merger_.set_window(options.max_buffered_epochs);
  participants_.SetAnsweringNode(options.answering_node);
  ltx_lane_.SetSettledCheck([this](Key key, Epoch epoch) { return rw_lane_.Settled(key, epoch); },
                            [this](Key key, int stage) { rw_lane_.PrefetchSettled(key, stage); });
  store_slot_ = store_->RegisterThread();
  CHECK_GE(stats_->workers(), options_.stats_slots())
      << "NodeStats needs SchedulerOptions::stats_slots() slots";
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  disposer_.Start();
  scheduler_thread_ = std::thread([this] { SchedulerLoop(); });
  workers_.Start();
  ltx_lane_.Start();
}

void Scheduler::Stop() {
  stop_.store(true);
  Wake();
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
  disposer_.Stop();
  workers_.Stop();
  ltx_lane_.Stop();
  finished_cv_.notify_all();
}

// ---------------------------------------------------------------- inputs

void Scheduler::DeliverBatch(std::unique_ptr<Batch> batch) {
  PostToInbox([&] { inbox_batches_.push_back(std::move(batch)); });
}

void Scheduler::DeliverRemoteReads(RemoteReads&& reads) {
  workers_.DeliverRemoteReads(std::move(reads), freed_through_.load(std::memory_order_acquire));
}

void Scheduler::DeliverLtxReadRequest(LtxReadRequest&& request) {
  PostToInbox([&] { inbox_ltx_requests_.push_back(std::move(request)); });
}

void Scheduler::DeliverLtxReadReply(LtxReadReply&& reply) {
  ltx_lane_.OnReadReply(std::move(reply));
}

void Scheduler::RequestDigest(Epoch epoch, std::function<void(Epoch, uint64_t)> done) {
  PostToInbox([&] { inbox_digests_.push_back(DigestRequest{epoch, std::move(done)}); });
}

void Scheduler::RequestSnapshot(Epoch epoch, std::function<void(const SnapshotInfo&)> ready) {
  PostToInbox([&] {
    inbox_snapshots_.push_back(SnapshotRequest{epoch, std::move(ready), SnapshotInfo{}});
  });
}

void Scheduler::ReleaseSnapshot(Epoch epoch) {
  PostToInbox([&] { inbox_releases_.push_back(epoch); });
}

bool Scheduler::RestoreAt(const SnapshotInfo& snapshot, std::string* error) {
  if (options_.mode == Mode::kPaxflow && !snapshot.lane_state.empty() &&
      !ltx_lane_.RestoreState(snapshot.lane_state, error)) {
    return false;
  }
  merger_.StartAt(snapshot.epoch + 1);
  for (const auto& [sequencer, final_epoch] : snapshot.finished_sequencers) {
    merger_.MarkFinished(sequencer, final_epoch);
  }
  ro_lane_.RestoreSnapshot(snapshot.last_rw_epoch);
  admitted_.store(snapshot.epoch, std::memory_order_relaxed);
  published_.store(snapshot.epoch, std::memory_order_relaxed);
  freed_through_.store(snapshot.epoch, std::memory_order_relaxed);
  next_epoch_ = snapshot.epoch + 1;
  incomplete_epoch_ = next_epoch_;
  UpdatePins();
  return true;
}

void Scheduler::SetRecoveredThrough(Epoch epoch) {
  participants_.SetRecoveredThrough(epoch);
  workers_.SetRecoveredThrough(epoch);
  ltx_lane_.SetReplayThrough(epoch);
}

void Scheduler::PostDone(std::vector<DoneMessage>* notes) {
  PostToInbox([&] {
    if (inbox_done_.empty()) {
      inbox_done_.swap(*notes);  // the worker keeps the inbox's spare capacity
    } else {
      inbox_done_.insert(inbox_done_.end(), notes->begin(), notes->end());
    }
  });
  notes->clear();
}

void Scheduler::PostScanEvent(std::vector<TxnId>* events, TxnId id) {
  PostToInbox([&] { events->push_back(id); });
}

void Scheduler::Wake() {
  PostToInbox([] {});  // nothing to file: a look at what changed
}

bool Scheduler::WaitFinished(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(finished_mu_);
  return finished_cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                               [&] { return finished_.load() || stop_.load(); }) &&
         finished_.load();
}

SchedulerStatus Scheduler::Status() const {
  SchedulerStatus status;
  status.admitted_epoch = admitted_.load(std::memory_order_relaxed);
  status.published_epoch = published_.load(std::memory_order_relaxed);
  status.pending = pending_.load(std::memory_order_relaxed);
  const uint64_t dispatched = dispatched_.load(std::memory_order_relaxed);
  const uint64_t done =
      finished_txns_.load(std::memory_order_relaxed) + workers_.read_only_finished();
  status.executing = dispatched > done ? dispatched - done : 0;
  status.waiting_ro = waiting_ro_count_.load(std::memory_order_relaxed);
  status.waited_ro = waited_ro_.load(std::memory_order_relaxed);
  status.locked_keys = locked_keys_.load(std::memory_order_relaxed);
  status.buffered_epochs = buffered_epochs_.load(std::memory_order_relaxed);
  status.active_ltx = active_ltx_.load(std::memory_order_relaxed);
  status.deferred = deferred_.load(std::memory_order_relaxed);
  status.parked = parked_.load(std::memory_order_relaxed);
  status.repeated_messages = repeated_messages();
  status.read_only_snapshot = ro_snapshot_.load(std::memory_order_relaxed);
  status.freed_epoch = freed_through_.load(std::memory_order_acquire);
  std::lock_guard<std::mutex> lock(status_mu_);
  status.waiting_for = waiting_for_;
  status.next_epoch = next_epoch_;
  status.incomplete_epoch = incomplete_epoch_;
  status.incomplete_missing = incomplete_missing_;
  if (incomplete_epoch_ == next_epoch_) status.missing_sequencers = incomplete_missing_;
  return status;
}

// ------------------------------------------------------- scheduler thread

void Scheduler::SchedulerLoop() {
  std::vector<std::unique_ptr<Batch>> batches;
  std::vector<DoneMessage> done;
  while (!stop_.load(std::memory_order_relaxed)) {
    {
      std::unique_lock<std::mutex> lock(inbox_mu_);
      inbox_cv_.wait_for(lock, kIdleWake, [&] { return wake_; });
      TakeInbox(&batches, &done);
    }
    ProcessInbox(&batches, &done);
    batches.clear();
    done.clear();
  }
}

void Scheduler::Step() {
  std::vector<std::unique_ptr<Batch>> batches;
  std::vector<DoneMessage> done;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    TakeInbox(&batches, &done);
  }
  ProcessInbox(&batches, &done);
}

void Scheduler::RunQueuedWork(size_t worker) { workers_.RunQueued(worker); }

size_t Scheduler::RunQueuedLtxWork(TxnId held) { return ltx_lane_.RunQueued(held); }

void Scheduler::TakeInbox(std::vector<std::unique_ptr<Batch>>* batches,
                          std::vector<DoneMessage>* done) {
  wake_ = false;
  batches->swap(inbox_batches_);
  done->swap(inbox_done_);
  for (auto& request : inbox_digests_) digests_.push_back(std::move(request));
  inbox_digests_.clear();
  for (auto& request : inbox_snapshots_) taken_snapshots_.push_back(std::move(request));
  inbox_snapshots_.clear();
  taken_releases_.insert(taken_releases_.end(), inbox_releases_.begin(), inbox_releases_.end());
  inbox_releases_.clear();
  for (auto& request : inbox_ltx_requests_) ltx_requests_.push_back(std::move(request));
  inbox_ltx_requests_.clear();
  for (auto& record : inbox_ltx_finished_) ltx_finished_.push_back(std::move(record));
  inbox_ltx_finished_.clear();
  for (TxnId id : inbox_scans_served_) ltx_lane_.OnScanServed(id);
  inbox_scans_served_.clear();
  for (TxnId id : inbox_scans_finished_) ltx_lane_.OnScanFinished(id);
  inbox_scans_finished_.clear();
}

void Scheduler::TakeSnapshotRequests() {
  for (auto& request : taken_snapshots_) {
    if (request.epoch < merger_.next_epoch()) {
      // Later epochs may have run: this snapshot can no longer be had.
      request.info.epoch = request.epoch;
      request.ready(request.info);
      continue;
    }
    request.lane_taken = options_.mode != Mode::kPaxflow;
    auto at = std::find_if(snapshots_.begin(), snapshots_.end(),
                           [&](const SnapshotRequest& r) { return r.epoch >= request.epoch; });
    snapshots_.insert(at, std::move(request));
  }
  taken_snapshots_.clear();
  for (Epoch epoch : taken_releases_) {
    auto it = std::find_if(snapshots_.begin(), snapshots_.end(), [&](const SnapshotRequest& r) {
      return r.epoch == epoch && r.served;
    });
    if (it != snapshots_.end()) snapshots_.erase(it);
  }
  taken_releases_.clear();
}

void Scheduler::OfferBatch(std::unique_ptr<Batch> batch) {
  std::string error;
  switch (merger_.Offer(std::move(batch), &error)) {
    case EpochMerger::Outcome::kAccepted:
      break;
    case EpochMerger::Outcome::kRepeated:
    case EpochMerger::Outcome::kTooFarAhead:
      // Sent again after a restart, or early: harmless; its sender's log
      // has it for when it is due.
      repeated_messages_.fetch_add(1, std::memory_order_relaxed);
      break;
    case EpochMerger::Outcome::kRejected:
      dropped_messages_.fetch_add(1, std::memory_order_relaxed);
      LOG(ERROR) << "partition " << options_.partition << " dropped " << error;
      break;
  }
}

void Scheduler::ProcessInbox(std::vector<std::unique_ptr<Batch>>* batches,
                             std::vector<DoneMessage>* done) {
  TakeSnapshotRequests();
  for (const DoneMessage& message : *done) HandleDone(message);
  for (auto& batch : *batches) OfferBatch(std::move(batch));
  // In calvin mode a digest needs the store exactly at its epoch: pin the
  // target now so later epochs wait for it.
  // A multi-version digest reads a snapshot that must still be whole: at or
  // beyond the newest pin, or exactly at an older pin.
  for (auto& request : digests_) {
    if (options_.mode == Mode::kCalvin) {
      request.epoch = std::max(request.epoch, admitted_.load(std::memory_order_relaxed));
    } else if (!pins_.empty() && request.epoch < ro_lane_.snapshot() &&
               !std::binary_search(pins_.begin(), pins_.end(), request.epoch)) {
      request.epoch = *std::lower_bound(pins_.begin(), pins_.end(), request.epoch);
    }
  }
  UpdatePins();
  TakeLaneStates();
  const bool paxflow = options_.mode == Mode::kPaxflow;
  // Paxflow: LTXs in place form chains (each reads keys the one before it
  // locks), and a link waits for whatever this thread does before it hands
  // work on. So the chain's events go before admission, which costs
  // milliseconds per epoch: a finished LTX's install, the txns that lock
  // releases freed, and LTX reads whose keys settled go to their threads
  // first. Only when work is handed on changes, never what it does.
  if (paxflow) {
    TakeFinishedLtxs();
    ltx_lane_.ServeSettled();
    FlushReady();
  }
  AdmitReadyEpochs();
  TakeFinishedLtxs();
  for (LtxReadRequest& request : ltx_requests_) ltx_lane_.OnReadRequest(std::move(request));
  ltx_requests_.clear();
  // Publication moving lets in epochs that waited at max_unpublished_epochs:
  // now, not at the next message.
  if (AdvancePublish()) AdmitReadyEpochs();
  ltx_lane_.ServeSettled();
  ReleaseSettledReadOnly();
  TakeLaneStates();
  ltx_lane_.Forget(ro_lane_.snapshot());
  UpdatePins();
  FlushReady();
  ServeDigests();
  FreeFinishedEpochs();
  ServeSnapshots();

  pending_.store(admitted_txns_ - dispatched_txns_, std::memory_order_relaxed);
  waiting_ro_count_.store(ro_lane_.waiting(), std::memory_order_relaxed);
  waited_ro_.store(ro_lane_.waited(), std::memory_order_relaxed);
  locked_keys_.store(rw_lane_.locked_keys(), std::memory_order_relaxed);
  buffered_epochs_.store(merger_.buffered_epochs(), std::memory_order_relaxed);
  active_ltx_.store(ltx_lane_.active(), std::memory_order_relaxed);
  deferred_.store(ltx_lane_.deferred(), std::memory_order_relaxed);
  parked_.store(ltx_lane_.parked(), std::memory_order_relaxed);
  ro_snapshot_.store(ro_lane_.snapshot(), std::memory_order_relaxed);
  origin_ltx_.store(ltx_lane_.unresolved_here(), std::memory_order_release);
  {
    std::string waiting;
    std::vector<uint32_t> incomplete_missing;
    Epoch incomplete = merger_.next_epoch();
    if (!merger_.Finished()) {
      incomplete = merger_.FirstIncompleteEpoch();
      incomplete_missing = merger_.MissingFor(incomplete);
      if (incomplete == merger_.next_epoch() && !incomplete_missing.empty()) {
        waiting = "epoch " + std::to_string(incomplete) + " waits for sequencer";
        for (uint32_t s : incomplete_missing) waiting += " " + std::to_string(s);
      }
    }
    std::lock_guard<std::mutex> lock(status_mu_);
    waiting_for_ = std::move(waiting);
    next_epoch_ = merger_.next_epoch();
    incomplete_epoch_ = incomplete;
    incomplete_missing_ = std::move(incomplete_missing);
  }
  if (!finished_.load(std::memory_order_relaxed) && merger_.Finished() && epochs_.empty()) {
    {
      std::lock_guard<std::mutex> lock(finished_mu_);
      finished_.store(true, std::memory_order_release);
    }
    finished_cv_.notify_all();
  }
}

void Scheduler::AdmitReadyEpochs() {
  while (!AdmissionBlocked(merger_.next_epoch())) {
    std::unique_ptr<MergedEpoch> merged = merger_.TakeReady();
    if (!merged) break;
    Admit(std::move(merged));
    TakeLaneStates();
  }
}

void Scheduler::TakeFinishedLtxs() {
  // Finished LTXs before read requests: the requests then find their writes.
  for (auto& record : ltx_finished_) ltx_lane_.OnFinished(std::move(record));
  ltx_finished_.clear();
}

bool Scheduler::AdmissionBlocked(Epoch epoch) const {
  if (input_failed_) return true;
  // A checkpoint waits for the LTX lane's state at its epoch (a parked
  // reader's snapshot to be published: a few epochs at most).
  const Epoch admitted = admitted_.load(std::memory_order_relaxed);
  for (const auto& request : snapshots_) {
    if (request.epoch <= admitted && !request.lane_taken) return true;
  }
  const Epoch published = published_.load(std::memory_order_relaxed);
  if (options_.max_unpublished_epochs > 0 && epoch > published + options_.max_unpublished_epochs) {
    // The narrow bound is for snapshots read round by round, whose wait
    // grows with the queue admitted before them: with no such LTX
    // unresolved the wide one applies, so that a lost message's retry
    // stalls nothing but its own epoch (a locked run's reads wait only for
    // its begin epoch's txns and earlier). The wide one also applies while
    // a locked run holds publication: its procedure runs on a worker under
    // its install's locks, and the short txns not behind those locks need
    // not wait.
    const uint32_t wide = options_.max_unpublished_epochs_wide;
    const bool narrow = ltx_lane_.SnapshotReaderUnresolved() &&
                        !ltx_lane_.LockedRunHoldsPublication(published + 1);
    if (wide == 0 || narrow || epoch > published + wide) return true;
  }
  if (options_.mode != Mode::kCalvin) return false;
  for (const auto& request : digests_) {
    if (request.epoch < epoch) return true;
  }
  // A single-version store holds a snapshot by not moving past it.
  for (const auto& request : snapshots_) {
    if (request.epoch < epoch) return true;
  }
  return false;
}

std::vector<LtxReadRequest> Scheduler::UnreadLtxRequests() {
  std::vector<LtxReadRequest> unread = ltx_requests_;
  std::lock_guard<std::mutex> lock(inbox_mu_);
  unread.insert(unread.end(), inbox_ltx_requests_.begin(), inbox_ltx_requests_.end());
  return unread;
}

void Scheduler::TakeLaneStates() {
  const Epoch admitted = admitted_.load(std::memory_order_relaxed);
  for (SnapshotRequest& request : snapshots_) {
    if (request.epoch > admitted || request.lane_taken || !ltx_lane_.SaveStateReady()) continue;
    // The lane's state right after the checkpoint epoch's records (nothing
    // later was admitted): what the store's snapshot at that epoch goes with.
    request.info.lane_state = ltx_lane_.SaveState(UnreadLtxRequests());
    request.lane_taken = true;
  }
}

void Scheduler::Admit(std::unique_ptr<MergedEpoch> merged) {
  if (before_execute_ && !before_execute_(*merged)) {
    LOG(ERROR) << "partition " << options_.partition << ": epoch " << merged->epoch
               << " could not be logged; it does not run, nor does anything after it";
    input_failed_ = true;
    return;
  }
  auto epoch = std::make_unique<EpochWork>();
  epoch->epoch = merged->epoch;
  epoch->has_rw = merged->has_rw;
  epoch->close_time_us = merged->close_time_us;
  epoch->previous_close_time_us = previous_close_time_us_;
  epoch->ro_read_version = ro_lane_.snapshot();
  epoch->batches = std::move(merged->batches);
  size_t count = 0;
  for (const auto& batch : epoch->batches) {
    if (batch) count += static_cast<size_t>(batch->txns_size());
  }
  // Sized once: lock requests point into these objects.
  epoch->txns.resize(count);
  epoch->unfinished.store(static_cast<uint32_t>(count), std::memory_order_relaxed);
  admitted_txns_ += count;
  const bool paxflow = options_.mode == Mode::kPaxflow;
  if (paxflow) {
    // The timeouts that fall here come first.
    ltx_lane_.BeginEpoch(epoch->epoch, ro_lane_.snapshot(), &actions_);
    RunActions(epoch.get());
    if (!ready_first_.empty()) HandOnReady();
  }
  size_t next = 0;
  for (const auto& batch : epoch->batches) {
    if (!batch) continue;
    for (const Txn& txn : batch->txns()) {
      TxnWork* work = &epoch->txns[next++];
      work->txn = &txn;
      work->epoch = epoch.get();
      work->position = SerialPosition{epoch->epoch, txn.id(), 0, 0};
      Dispatch(work);
      // Workers start on an epoch's first lock holders while this thread
      // admits the rest: a whole batch (thousands of txns) would otherwise
      // leave them idle for milliseconds at every epoch's start. A locked
      // LTX run (others wait for it in a chain) goes at once, ahead.
      if (!ready_first_.empty() || ready_rw_.size() + ready_ro_.size() >= kHandOnEvery) {
        HandOnReady();
      }
    }
  }
  if (paxflow) {
    ltx_lane_.EndEpoch(epoch->epoch);
    // An epoch that resolves an LTX (or runs the txns that freed) is a
    // read-write epoch for publication and RO snapshots.
    epoch->has_rw |= ltx_lane_.resolved_this_epoch();
  }
  ro_lane_.EndEpoch(epoch->epoch, epoch->has_rw);
  previous_close_time_us_ = epoch->close_time_us;
  for (SnapshotRequest& request : snapshots_) {
    if (request.epoch == epoch->epoch) request.info.last_rw_epoch = ro_lane_.snapshot();
  }
  // An LTX begun in this epoch is owed work from the moment the epoch counts
  // as admitted (OwesLtxWork reads admitted_ first): publish it before.
  origin_ltx_.store(ltx_lane_.unresolved_here(), std::memory_order_relaxed);
  admitted_.store(epoch->epoch, std::memory_order_release);
  epochs_.push_back(std::move(epoch));
}

void Scheduler::Dispatch(TxnWork* work) {
  const Txn& txn = *work->txn;
  EpochWork* epoch = work->epoch;
  const bool read_only = txn.txn_class() == RO;
  const bool paxflow = options_.mode == Mode::kPaxflow;
  work->kind = read_only ? kKindReadOnly : txn.txn_class() == LTX ? kKindLong : kKindReadWrite;
  if (txn.txn_class() == LTX) {
    if (paxflow) DispatchLtxRecord(work);
    else DispatchLockedLtx(work);
    return;
  }
  participants_.Plan(work);
  if (work->skipped) {
    FinishAtOnce(work);
    return;
  }
  if (read_only && paxflow) {
    work->snapshot_read = true;
    work->read_version = ro_lane_.snapshot();
    // Serialized right after its snapshot, before any LTX begun since.
    work->position = SerialPosition{work->read_version + 1, 0, 0, 0};
    if (ltx_lane_.MustPark(work)) {
      ltx_lane_.Park(Detach(work));
      return;
    }
    epoch->ro_unfinished.fetch_add(1, std::memory_order_relaxed);
    AdmitReadOnly(work);
    return;
  }
  if (paxflow && ltx_lane_.Covers(*work)) {
    ltx_lane_.Defer(Detach(work));
    return;
  }
  if (work->writes_here) ++epoch->writes_pending;
  if (rw_lane_.Acquire(work)) ready_rw_.push_back(ReadyToRun(work));
}

void Scheduler::AdmitReadOnly(TxnWork* work) {
  const Epoch published = published_.load(std::memory_order_relaxed);
  // An LTX in place holds its epoch's publication until its procedure ran;
  // a read-only txn whose keys all have their final value at its snapshot
  // does not wait for it (docs/ltx.md, "Publication around LTXs in place").
  if (work->read_version > published && ltx_lane_.HoldsPublication(work->read_version) &&
      ReadsSettled(work)) {
    ready_ro_.push_back(WorkItem{work, WorkItem::kExecute});
    return;
  }
  ro_lane_.Admit(work, published, &ready_ro_);
}

bool Scheduler::ReadsSettled(TxnWork* work) const {
  const Txn& txn = *work->txn;
  const uint32_t reads = static_cast<uint32_t>(txn.read_set_size());
  const uint32_t total = reads + static_cast<uint32_t>(txn.read_write_set_size());
  for (; work->settled_reads < total; ++work->settled_reads) {
    const uint32_t i = work->settled_reads;
    const Key key = i < reads ? txn.read_set(static_cast<int>(i))
                              : txn.read_write_set(static_cast<int>(i - reads));
    if (!work->all_local && PartitionOf(key, options_.partitions) != options_.partition) continue;
    if (!rw_lane_.Settled(key, work->read_version)) return false;
  }
  return true;
}

void Scheduler::ReleaseSettledReadOnly() {
  // Keys settle only as locks are released (HandleDone).
  if (!locks_released_) return;
  locks_released_ = false;
  if (ro_lane_.waiting() == 0 || !ltx_lane_.HoldsPublication(std::numeric_limits<Epoch>::max())) return;
  ro_lane_.ReleaseSettled(
      [&](TxnWork* work) {
        return ltx_lane_.HoldsPublication(work->read_version) && ReadsSettled(work);
      },
      &ready_ro_);
}

void Scheduler::DispatchLtxRecord(TxnWork* work) {
  // An LTX that reads only what it writes gains nothing from a snapshot:
  // it is locked at its begin position, as a short txn would be
  // (docs/ltx.md, "Locked at its begin"). Its writes make the epoch a
  // read-write one for publication and RO snapshots (every partition
  // decides alike, from the log).
  if (ltx_lane_.LocksAtBegin(*work->txn)) {
    work->epoch->has_rw = true;
    DispatchLockedLtx(work);
    return;
  }
  // A long scan reads an RO snapshot.
  work->read_version = ro_lane_.snapshot();
  ltx_lane_.OnRecord(*work, &actions_);
  FinishAtOnce(work);
  RunActions(work->epoch);
}

void Scheduler::DispatchLockedLtx(TxnWork* work) {
  const Txn& begin = *work->txn;
  const LtxRecord& record = begin.ltx();
  if (record.kind() != LTX_BEGIN && record.kind() != LTX_SCAN) {
    FinishAtOnce(work);  // calvin mode sequences no other LTX records
    return;
  }
  // Its outcome answers a client's retry of it like any LTX's, in log
  // order on every replica: noted here, resolved by the worker that runs
  // it (or below, if it cannot be locked). A long scan writes nothing, and
  // its retry simply runs again.
  const bool noted = record.kind() == LTX_BEGIN;
  if (noted) ltx_lane_.NoteBegan(begin);
  // Every key of its areas, on every partition (to know the participants),
  // locked like a short txn's: the write area exclusively.
  const KeyArea write_area(record.write_area());
  const KeyArea read_area(record.read_area());
  std::vector<Key> writes, reads;
  bool fits = true;
  for (PartitionId p = 0; p < options_.partitions && fits; ++p) {
    fits = write_area.KeysOn(p, options_.partitions, options_.max_locked_ltx_keys, &writes) &&
           read_area.KeysOn(p, options_.partitions, options_.max_locked_ltx_keys, &reads);
  }
  if (fits && writes.size() + reads.size() > options_.max_locked_ltx_keys) fits = false;
  if (!fits) {
    const TxnOutcome outcome = LtxAbortOutcome(
        std::string(LtxAbortReasonName(kAbortProcedure)) + ": its areas hold more than " +
        std::to_string(options_.max_locked_ltx_keys) + " keys, too many to lock in calvin mode");
    if (noted) ltx_lane_.NoteResolved(begin, outcome);
    if (begin.origin_partition() == options_.partition && options_.runs_procedures) {
      stats_->ltx().CountAbort(kAbortProcedure);
      stats_->worker(options_.workers)
          .RecordResult(kKindLong, true, outcome.abort_reason, NowMicros() - begin.submit_time_us(),
                        begin.client_request_id() == 0);
      ReadValues none;
      if (results_) results_->OnResult(begin, outcome, 0, none);
    }
    FinishAtOnce(work);
    return;
  }
  std::sort(writes.begin(), writes.end());
  auto expanded = std::make_unique<Txn>();
  expanded->set_id(begin.id());
  expanded->set_txn_class(LTX);
  expanded->set_procedure(begin.procedure());
  expanded->set_origin_partition(begin.origin_partition());
  expanded->set_origin_node(begin.origin_node());
  for (Key key : reads) {
    if (!std::binary_search(writes.begin(), writes.end(), key)) expanded->add_read_set(key);
  }
  for (Key key : writes) expanded->add_read_write_set(key);
  work->procedure_txn = work->txn;
  work->owned_txn = std::move(expanded);
  work->txn = work->owned_txn.get();
  participants_.Plan(work);
  if (work->writes_here) ++work->epoch->writes_pending;
  if (rw_lane_.Acquire(work)) ready_rw_.push_back(ReadyToRun(work));
}

void Scheduler::FinishAtOnce(TxnWork* work) {
  // Bookkeeping only: nothing runs on a worker for it.
  --admitted_txns_;
  work->epoch->unfinished.fetch_sub(1, std::memory_order_acq_rel);
}

std::unique_ptr<TxnWork> Scheduler::Detach(TxnWork* work) {
  auto detached = std::make_unique<TxnWork>();
  detached->owned_txn = std::make_unique<Txn>();
  // The batch keeps an empty Txn in its place; nothing reads it any more.
  detached->owned_txn->Swap(const_cast<Txn*>(work->txn));
  detached->txn = detached->owned_txn.get();
  detached->kind = work->kind;
  detached->snapshot_read = work->snapshot_read;
  detached->read_version = work->read_version;
  detached->all_local = work->all_local;
  detached->reads_here = work->reads_here;
  detached->writes_here = work->writes_here;
  detached->executor = work->executor;
  detached->origin = work->origin;
  detached->remote_reads_expected = work->remote_reads_expected;
  detached->expected_readers = std::move(work->expected_readers);
  detached->send_reads_to = std::move(work->send_reads_to);
  detached->position = work->position;
  detached->deferrals = work->deferrals;
  detached->set_aside_us = work->set_aside_us;
  // Its first epoch no longer waits for it.
  FinishAtOnce(work);
  return detached;
}

void Scheduler::Adopt(std::unique_ptr<TxnWork> work, EpochWork* epoch) {
  TxnWork* txn = work.get();
  epoch->adopted.push_back(std::move(work));
  txn->epoch = epoch;
  epoch->unfinished.fetch_add(1, std::memory_order_relaxed);
  ++admitted_txns_;
  if (txn->snapshot_read) {
    epoch->ro_unfinished.fetch_add(1, std::memory_order_relaxed);
    epoch->adopted_snapshots.push_back(txn->read_version);
    AdmitReadOnly(txn);
    return;
  }
  if (txn->writes_here) ++epoch->writes_pending;
  if (rw_lane_.Acquire(txn)) MakeReady(txn);
}

void Scheduler::MakeReady(TxnWork* work) {
  // An install in place may get its locks before its LTX finished: it
  // holds them and runs when the lane hands it the writes. One that runs
  // locked goes as soon as its declared reads are readable too.
  if (work->install && work->install->awaiting_writes) {
    work->install->locks_held = true;
    work->install->locked_us = NowMicros();
    if (!work->install->run_here || !ltx_lane_.LockedRunReady(work)) return;
  }
  if (work->install && work->install->run_here) {
    ready_first_.push_back(ReadyToRun(work));
    return;
  }
  ready_rw_.push_back(ReadyToRun(work));
}

void Scheduler::RunActions(EpochWork* epoch) {
  for (LtxLane::Action& action : actions_) Adopt(std::move(action.work), epoch);
  actions_.clear();
}

void Scheduler::HandleDone(const DoneMessage& message) {
  TxnWork* work = message.work;
  if (work->install && work->install->run_here) {
    // A locked run: given back, it keeps its locks for the LTX thread's
    // run. A commit's locks go as soon as its writes are in (not finished:
    // its record follows); the lane takes the outcome with the record.
    if (work->install->gave_back) {
      work->install->gave_back = false;
      ltx_lane_.OnGivenBack(work);
      return;
    }
    if (message.finished) ltx_lane_.OnLockedRunDone(*work);
  }
  rw_lane_.Release(work, &ready_locked_);
  locks_released_ = true;
  if (!message.finished) return;
  if (work->writes_here) --work->epoch->writes_pending;
  ++finished_locked_;
  finished_txns_.store(finished_locked_, std::memory_order_relaxed);
  work->epoch->unfinished.fetch_sub(1, std::memory_order_acq_rel);
}

bool Scheduler::AdvancePublish() {
  Epoch published = published_.load(std::memory_order_relaxed);
  bool advanced = false;
  for (const auto& epoch : epochs_) {
    if (epoch->epoch <= published) continue;
    if (epoch->writes_pending > 0) break;
    published = epoch->epoch;
    advanced = true;
  }
  if (!advanced) return false;
  published_.store(published, std::memory_order_release);
  ro_lane_.Release(published, &ready_ro_);
  ltx_lane_.OnPublish(published);
  return true;
}

void Scheduler::UpdatePins() {
  if (!store_->multi_version()) return;
  // Every snapshot a reader may still read: those of admitted read-only txns
  // not yet finished, pending digests, and the newest RW epoch, which every
  // read-only txn admitted later will read at or beyond.
  std::vector<Epoch>& pins = pins_scratch_;
  pins.assign(1, ro_lane_.snapshot());
  for (const auto& epoch : epochs_) {
    if (epoch->ro_unfinished.load(std::memory_order_acquire) > 0) {
      pins.push_back(epoch->ro_read_version);
      pins.insert(pins.end(), epoch->adopted_snapshots.begin(), epoch->adopted_snapshots.end());
    }
  }
  for (const auto& request : digests_) pins.push_back(request.epoch);
  for (const auto& request : snapshots_) pins.push_back(request.epoch);
  ltx_lane_.CollectPins(&pins);
  std::sort(pins.begin(), pins.end());
  pins.erase(std::unique(pins.begin(), pins.end()), pins.end());
  if (pins == pins_) return;
  pins_ = pins;
  store_->SetSnapshotPins(pins);
}

void Scheduler::FlushReady() {
  ltx_lane_.TakeReadyInstalls(&ready_locked_);
  for (TxnWork* work : ready_locked_) MakeReady(work);
  ready_locked_.clear();
  HandOnReady();
}

void Scheduler::HandOnReady() {
  const size_t count = ready_rw_.size() + ready_ro_.size() + ready_first_.size();
  if (count == 0) return;
  dispatched_txns_ += count;
  dispatched_.fetch_add(count, std::memory_order_relaxed);
  workers_.PushReadWriteFirst(ready_first_);
  ready_first_.clear();
  workers_.PushReadWrite(ready_rw_);
  workers_.PushReadOnly(ready_ro_);
  ready_rw_.clear();
  ready_ro_.clear();
}

void Scheduler::ServeDigests() {
  const Epoch published = published_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < digests_.size();) {
    if (digests_[i].epoch > published) {
      ++i;
      continue;
    }
    // A single-version store holds exactly the published state here (later
    // epochs were held back); a multi-version one reads the snapshot.
    const Epoch at = options_.mode == Mode::kCalvin ? published : digests_[i].epoch;
    digests_[i].done(at, store_->Digest(store_slot_, at));
    digests_.erase(digests_.begin() + static_cast<long>(i));
  }
}

void Scheduler::FreeFinishedEpochs() {
  const Epoch published = published_.load(std::memory_order_relaxed);
  // Epochs finish out of order (a txn set aside by the LTX lane leaves its
  // first epoch and runs in a later one): free every finished one.
  std::vector<std::unique_ptr<EpochWork>> finished;
  for (auto it = epochs_.begin(); it != epochs_.end();) {
    if ((*it)->epoch <= published && (*it)->unfinished.load(std::memory_order_acquire) == 0) {
      finished.push_back(std::move(*it));
      it = epochs_.erase(it);
    } else {
      ++it;
    }
  }
  if (finished.empty()) return;
  disposer_.Dispose(&finished);
  const Epoch through = epochs_.empty() ? published : epochs_.front()->epoch - 1;
  if (through <= freed_through_.load(std::memory_order_relaxed)) return;
  freed_through_.store(through, std::memory_order_release);
  // Reads still held for txns of freed epochs never had a txn here to go to.
  workers_.DropRemoteReadsThrough(through);
}

void Scheduler::ServeSnapshots() {
  const Epoch freed = freed_through_.load(std::memory_order_relaxed);
  for (SnapshotRequest& request : snapshots_) {
    if (request.served || !request.lane_taken || request.epoch > freed) continue;
    // Every txn of epochs <= request.epoch has finished here: its writes are
    // in, and the reads it owed other partitions are sent. (Txns the LTX
    // lane set aside are in its state, taken at admission.)
    request.info.ok = true;
    request.info.epoch = request.epoch;
    request.info.finished_sequencers = merger_.FinishedThrough(request.epoch);
    request.served = true;
    request.ready(request.info);
  }
}

}  // namespace paxflow
