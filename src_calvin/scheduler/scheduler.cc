#include "scheduler/scheduler.h"

#include <glog/logging.h>

#include <algorithm>
#include <chrono>

#include "common/clock.h"

namespace paxflow {
namespace {
constexpr auto kIdleWake = std::chrono::milliseconds(100);
}  // namespace

Scheduler::Scheduler(const SchedulerOptions& options, Store* store, const Application* app,
                     PeerSender* peers, NodeStats* stats, ResultSink* results)
    : options_(options),
      store_(store),
      app_(app),
      peers_(peers),
      stats_(stats),
      results_(results),
      merger_(options.sequencers),
      reader_mark_(options.partitions, 0),
      writer_mark_(options.partitions, 0) {
  merger_.set_window(options.max_buffered_epochs);
  store_slot_ = store_->RegisterThread();
  for (uint32_t i = 0; i < options_.workers; ++i) {
    contexts_.push_back(std::make_unique<WorkerContext>());
    contexts_.back()->index = i;
    contexts_.back()->store_slot = store_->RegisterThread();
  }
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  scheduler_thread_ = std::thread([this] { SchedulerLoop(); });
  for (uint32_t i = 0; i < options_.workers; ++i) {
    worker_threads_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

void Scheduler::Stop() {
  stop_.store(true);
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    wake_ = true;
  }
  inbox_cv_.notify_all();
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
  work_queue_.Close();
  for (auto& thread : worker_threads_) {
    if (thread.joinable()) thread.join();
  }
  worker_threads_.clear();
  finished_cv_.notify_all();
}

// ---------------------------------------------------------------- inputs

void Scheduler::DeliverBatch(std::unique_ptr<Batch> batch) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_batches_.push_back(std::move(batch));
    wake_ = true;
  }
  inbox_cv_.notify_one();
}

void Scheduler::DeliverRemoteReads(RemoteReads&& reads) {
  std::string error;
  TxnWork* complete = nullptr;
  // Sent again by a recovering partition, or queued for this one while it
  // was down: a repeat is expected.
  const bool expected = reads.resent() || TxnEpoch(reads.txn_id()) <= recovered_through_.load();
  if (TxnEpoch(reads.txn_id()) <= freed_through_.load(std::memory_order_acquire)) {
    error = "remote reads for txn " + TxnIdString(reads.txn_id()) +
            ", whose epoch is over here";
  } else {
    complete = remote_reads_.AddRemote(std::move(reads), &error);
  }
  if (!error.empty() && expected) {
    repeated_messages_.fetch_add(1, std::memory_order_relaxed);
  } else if (!error.empty()) {
    dropped_messages_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(ERROR, 100) << "partition " << options_.partition << ": " << error;
  }
  if (complete) work_queue_.PushReadWrite(WorkItem{complete, WorkItem::kResume});
}

void Scheduler::RequestDigest(Epoch epoch, std::function<void(Epoch, uint64_t)> done) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_digests_.push_back(DigestRequest{epoch, std::move(done)});
    wake_ = true;
  }
  inbox_cv_.notify_one();
}

void Scheduler::RequestSnapshot(Epoch epoch, std::function<void(const SnapshotInfo&)> ready) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_snapshots_.push_back(SnapshotRequest{epoch, std::move(ready), {}, false});
    wake_ = true;
  }
  inbox_cv_.notify_one();
}

void Scheduler::ReleaseSnapshot(Epoch epoch) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_releases_.push_back(epoch);
    wake_ = true;
  }
  inbox_cv_.notify_one();
}

void Scheduler::RestoreAt(const SnapshotInfo& snapshot) {
  merger_.StartAt(snapshot.epoch + 1);
  for (const auto& [sequencer, final_epoch] : snapshot.finished_sequencers) {
    merger_.MarkFinished(sequencer, final_epoch);
  }
  last_rw_epoch_ = snapshot.last_rw_epoch;
  admitted_.store(snapshot.epoch, std::memory_order_relaxed);
  published_.store(snapshot.epoch, std::memory_order_relaxed);
  freed_through_.store(snapshot.epoch, std::memory_order_relaxed);
  next_epoch_ = snapshot.epoch + 1;
  RestoreLaneState(snapshot.lane_state);
  UpdatePins();
}

// The LTX lane keeps its state here; without it there is nothing to keep.
std::string Scheduler::CheckpointLaneState(Epoch) { return ""; }
void Scheduler::RestoreLaneState(const std::string&) {}

void Scheduler::PostDone(const DoneMessage& message) {
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_done_.push_back(message);
    wake_ = true;
  }
  inbox_cv_.notify_one();
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
  const uint64_t done = finished_txns_.load(std::memory_order_relaxed);
  status.executing = dispatched > done ? dispatched - done : 0;
  status.waiting_ro = waiting_ro_count_.load(std::memory_order_relaxed);
  status.waited_ro = waited_ro_.load(std::memory_order_relaxed);
  status.locked_keys = locked_keys_.load(std::memory_order_relaxed);
  status.buffered_epochs = buffered_epochs_.load(std::memory_order_relaxed);
  status.repeated_messages = repeated_messages_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(status_mu_);
  status.waiting_for = waiting_for_;
  status.next_epoch = next_epoch_;
  status.missing_sequencers = missing_sequencers_;
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
}

void Scheduler::TakeSnapshotRequests() {
  for (auto& request : taken_snapshots_) {
    if (request.epoch < merger_.next_epoch()) {
      // Later epochs may have run: this snapshot can no longer be had.
      request.info.epoch = request.epoch;
      request.ready(request.info);
      continue;
    }
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

void Scheduler::ProcessInbox(std::vector<std::unique_ptr<Batch>>* batches,
                             std::vector<DoneMessage>* done) {
  TakeSnapshotRequests();
  for (const DoneMessage& message : *done) HandleDone(message);
  for (auto& batch : *batches) {
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
  // In calvin mode a digest needs the store exactly at its epoch: pin the
  // target now so later epochs wait for it.
  // A multi-version digest reads a snapshot that must still be whole: at or
  // beyond the newest pin, or exactly at an older pin.
  for (auto& request : digests_) {
    if (options_.mode == Mode::kCalvin) {
      request.epoch = std::max(request.epoch, admitted_.load(std::memory_order_relaxed));
    } else if (!pins_.empty() && request.epoch < last_rw_epoch_ &&
               !std::binary_search(pins_.begin(), pins_.end(), request.epoch)) {
      request.epoch = *std::lower_bound(pins_.begin(), pins_.end(), request.epoch);
    }
  }
  UpdatePins();
  while (!AdmissionBlocked(merger_.next_epoch())) {
    std::unique_ptr<MergedEpoch> merged = merger_.TakeReady();
    if (!merged) break;
    Admit(std::move(merged));
  }
  AdvancePublish();
  UpdatePins();
  FlushReady();
  ServeDigests();
  FreeFinishedEpochs();
  ServeSnapshots();

  pending_.store(admitted_txns_ - dispatched_txns_, std::memory_order_relaxed);
  waiting_ro_count_.store(waiting_ro_.size(), std::memory_order_relaxed);
  locked_keys_.store(locks_.locked_keys(), std::memory_order_relaxed);
  buffered_epochs_.store(merger_.buffered_epochs(), std::memory_order_relaxed);
  {
    std::string waiting;
    std::vector<uint32_t> missing;
    if (!merger_.Finished()) {
      missing = merger_.MissingForNextEpoch();
      if (!missing.empty()) {
        waiting = "epoch " + std::to_string(merger_.next_epoch()) + " waits for sequencer";
        for (uint32_t s : missing) waiting += " " + std::to_string(s);
      }
    }
    std::lock_guard<std::mutex> lock(status_mu_);
    waiting_for_ = std::move(waiting);
    next_epoch_ = merger_.next_epoch();
    missing_sequencers_ = std::move(missing);
  }
  if (!finished_.load(std::memory_order_relaxed) && merger_.Finished() && epochs_.empty()) {
    {
      std::lock_guard<std::mutex> lock(finished_mu_);
      finished_.store(true, std::memory_order_release);
    }
    finished_cv_.notify_all();
  }
}

bool Scheduler::AdmissionBlocked(Epoch epoch) const {
  if (input_failed_) return true;
  if (options_.max_unpublished_epochs > 0 &&
      epoch > published_.load(std::memory_order_relaxed) + options_.max_unpublished_epochs) {
    return true;
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
  epoch->batches = std::move(merged->batches);
  size_t count = 0;
  for (const auto& batch : epoch->batches) {
    if (batch) count += static_cast<size_t>(batch->txns_size());
  }
  // Sized once: lock requests point into these objects.
  epoch->txns.resize(count);
  size_t next = 0;
  uint32_t writers = 0;
  size_t skipped = 0;
  for (const auto& batch : epoch->batches) {
    if (!batch) continue;
    for (const Txn& txn : batch->txns()) {
      TxnWork* work = &epoch->txns[next++];
      work->txn = &txn;
      work->epoch = epoch.get();
      Prepare(work);
      writers += work->writes_here ? 1 : 0;
      skipped += work->skipped ? 1 : 0;
    }
  }
  count -= skipped;
  epoch->writes_pending = writers;
  epoch->ro_read_version = last_rw_epoch_;
  epoch->unfinished.store(static_cast<uint32_t>(count), std::memory_order_relaxed);
  admitted_txns_ += count;
  const Epoch published = published_.load(std::memory_order_relaxed);
  uint32_t snapshot_readers = 0;
  for (TxnWork& work : epoch->txns) {
    if (work.skipped) continue;
    if (work.snapshot_read) {
      ++snapshot_readers;
      if (work.read_version <= published) {
        ready_ro_.push_back(WorkItem{&work, WorkItem::kExecute});
      } else {
        waiting_ro_.push_back(&work);
        waited_ro_.fetch_add(1, std::memory_order_relaxed);
      }
    } else if (locks_.Acquire(&work)) {
      ready_rw_.push_back(WorkItem{&work, WorkItem::kExecute});
    }
  }
  epoch->ro_unfinished.store(snapshot_readers, std::memory_order_relaxed);
  if (epoch->has_rw) last_rw_epoch_ = epoch->epoch;
  previous_close_time_us_ = epoch->close_time_us;
  for (SnapshotRequest& request : snapshots_) {
    if (request.epoch == epoch->epoch) request.info.last_rw_epoch = last_rw_epoch_;
  }
  admitted_.store(epoch->epoch, std::memory_order_relaxed);
  epochs_.push_back(std::move(epoch));
}

void Scheduler::Prepare(TxnWork* work) {
  const Txn& txn = *work->txn;
  const PartitionId self = options_.partition;
  const bool read_only = txn.txn_class() == RO;
  work->kind = read_only ? kKindReadOnly : txn.txn_class() == LTX ? kKindLong : kKindReadWrite;
  work->origin = txn.origin_partition() == self;
  work->snapshot_read = read_only && options_.mode == Mode::kPaxflow;
  if (work->snapshot_read) work->read_version = last_rw_epoch_;

  const bool has_reads = txn.read_set_size() + txn.read_write_set_size() > 0;
  const bool has_writes = txn.write_set_size() + txn.read_write_set_size() > 0;
  if (options_.partitions == 1) {
    work->all_local = true;
    work->reads_here = has_reads;
    work->writes_here = has_writes;
    work->executor = true;
  } else {
    // Participants: readers contribute values, writers and the origin run the
    // procedure (Calvin's active participants).
    std::vector<PartitionId> touched;
    auto mark = [&](std::vector<uint8_t>& marks, Key key) {
      PartitionId p = PartitionOf(key, options_.partitions);
      if (!reader_mark_[p] && !writer_mark_[p]) touched.push_back(p);
      marks[p] = 1;
    };
    for (Key key : txn.read_set()) mark(reader_mark_, key);
    for (Key key : txn.read_write_set()) {
      mark(reader_mark_, key);
      mark(writer_mark_, key);
    }
    for (Key key : txn.write_set()) mark(writer_mark_, key);
    const PartitionId origin = txn.origin_partition() < options_.partitions
                                   ? txn.origin_partition()
                                   : 0;
    work->reads_here = reader_mark_[self];
    work->writes_here = writer_mark_[self];
    work->executor = work->writes_here || origin == self;
    work->all_local = true;
    uint32_t readers = 0;
    for (PartitionId p : touched) {
      if (p != self) work->all_local = false;
      if (reader_mark_[p]) ++readers;
    }
    if (work->executor) {
      work->remote_reads_expected = readers - (reader_mark_[self] ? 1 : 0);
      for (PartitionId p : touched) {
        if (p != self && reader_mark_[p]) work->expected_readers.push_back(p);
      }
    }
    if (work->reads_here) {
      for (PartitionId p : touched) {
        if (p != self && writer_mark_[p]) work->send_reads_to.push_back(p);
      }
      if (origin != self && !writer_mark_[origin]) work->send_reads_to.push_back(origin);
    }
    for (PartitionId p : touched) reader_mark_[p] = writer_mark_[p] = 0;
  }
  if (work->epoch->epoch <= recovered_through_ && work->origin && !work->writes_here) {
    // Sequenced before a restart: the client waiting for this result is
    // gone. A read-only txn has nothing else to do here; another still
    // owes its reads to the partitions that write.
    if (read_only) {
      work->skipped = true;
      return;
    }
    work->executor = false;
  }
  if (work->snapshot_read) return;

  auto add_locks = [&](const google::protobuf::RepeatedField<uint64_t>& keys, bool exclusive) {
    for (Key key : keys) {
      if (!work->all_local && PartitionOf(key, options_.partitions) != self) continue;
      LockRequest request;
      request.key = key;
      request.exclusive = exclusive;
      work->lock_requests.push_back(request);
    }
  };
  work->lock_requests.reserve(static_cast<size_t>(txn.read_set_size() + txn.read_write_set_size() +
                                                  txn.write_set_size()));
  add_locks(txn.read_set(), false);
  add_locks(txn.read_write_set(), true);
  add_locks(txn.write_set(), true);
}

void Scheduler::HandleDone(const DoneMessage& message) {
  TxnWork* work = message.work;
  locks_.Release(work, &ready_locked_);
  if (!message.finished) return;
  if (work->writes_here) --work->epoch->writes_pending;
  finished_txns_.fetch_add(1, std::memory_order_relaxed);
  work->epoch->unfinished.fetch_sub(1, std::memory_order_acq_rel);
}

void Scheduler::AdvancePublish() {
  Epoch published = published_.load(std::memory_order_relaxed);
  bool advanced = false;
  for (const auto& epoch : epochs_) {
    if (epoch->epoch <= published) continue;
    if (epoch->writes_pending > 0) break;
    published = epoch->epoch;
    advanced = true;
  }
  if (!advanced) return;
  published_.store(published, std::memory_order_release);
  ReleaseWaitingReadOnly();
}

void Scheduler::ReleaseWaitingReadOnly() {
  const Epoch published = published_.load(std::memory_order_relaxed);
  // read_version never decreases along the global order, so the queue is FIFO.
  while (!waiting_ro_.empty() && waiting_ro_.front()->read_version <= published) {
    ready_ro_.push_back(WorkItem{waiting_ro_.front(), WorkItem::kExecute});
    waiting_ro_.pop_front();
  }
}

void Scheduler::UpdatePins() {
  if (!store_->multi_version()) return;
  // Every snapshot a reader may still read: those of admitted read-only txns
  // not yet finished, pending digests, and the newest RW epoch, which every
  // read-only txn admitted later will read at or beyond.
  std::vector<Epoch> pins = {last_rw_epoch_};
  for (const auto& epoch : epochs_) {
    if (epoch->ro_unfinished.load(std::memory_order_acquire) > 0) {
      pins.push_back(epoch->ro_read_version);
    }
  }
  for (const auto& request : digests_) pins.push_back(request.epoch);
  for (const auto& request : snapshots_) pins.push_back(request.epoch);
  std::sort(pins.begin(), pins.end());
  pins.erase(std::unique(pins.begin(), pins.end()), pins.end());
  if (pins == pins_) return;
  pins_ = pins;
  store_->SetSnapshotPins(std::move(pins));
}

void Scheduler::FlushReady() {
  for (LockedTxn* txn : ready_locked_) {
    ready_rw_.push_back(WorkItem{static_cast<TxnWork*>(txn), WorkItem::kExecute});
  }
  ready_locked_.clear();
  const size_t count = ready_rw_.size() + ready_ro_.size();
  if (count == 0) return;
  dispatched_txns_ += count;
  dispatched_.fetch_add(count, std::memory_order_relaxed);
  work_queue_.PushReadWrite(ready_rw_);
  work_queue_.PushReadOnly(ready_ro_);
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
  Epoch freed = 0;
  while (!epochs_.empty() && epochs_.front()->epoch <= published &&
         epochs_.front()->unfinished.load(std::memory_order_acquire) == 0) {
    freed = epochs_.front()->epoch;
    epochs_.pop_front();
  }
  // Reads still held for txns of freed epochs never had a txn here to go to.
  if (freed > 0) {
    freed_through_.store(freed, std::memory_order_release);
    // Reads for txns skipped after a restart, or sent again, are expected.
    const size_t expected = remote_reads_.DropThrough(std::min(freed, recovered_through_.load()));
    size_t resent = 0;
    const size_t stale = remote_reads_.DropThrough(freed, &resent) - resent;
    repeated_messages_.fetch_add(expected + resent, std::memory_order_relaxed);
    if (stale > 0) {
      dropped_messages_.fetch_add(stale, std::memory_order_relaxed);
      LOG_EVERY_N(WARNING, 100) << "partition " << options_.partition << " dropped " << stale
                                << " remote read(s) for txns it does not run";
    }
  }
}

void Scheduler::ServeSnapshots() {
  const Epoch freed = freed_through_.load(std::memory_order_relaxed);
  for (SnapshotRequest& request : snapshots_) {
    if (request.served || request.epoch > freed) continue;
    // Every txn of epochs <= request.epoch has finished here: its writes are
    // in, and the reads it owed other partitions are sent.
    request.info.ok = true;
    request.info.epoch = request.epoch;
    request.info.lane_state = CheckpointLaneState(request.epoch);
    request.info.finished_sequencers = merger_.FinishedThrough(request.epoch);
    request.served = true;
    request.ready(request.info);
  }
}

// --------------------------------------------------------- worker threads

void Scheduler::WorkerLoop(size_t index) {
  WorkerContext* context = contexts_[index].get();
  const bool may_run_read_only = options_.ro_workers == 0 || index < options_.ro_workers;
  WorkItem item;
  while (work_queue_.Pop(may_run_read_only, &item)) Execute(item, context);
}

void Scheduler::RunQueuedWork(size_t worker) {
  WorkerContext* context = contexts_[worker].get();
  WorkItem item;
  while (work_queue_.TryPop(true, &item)) Execute(item, context);
}

void Scheduler::Execute(const WorkItem& item, WorkerContext* context) {
  TxnWork* work = item.work;
  if (item.action == WorkItem::kResume) {
    std::unique_ptr<ReadValues> reads = remote_reads_.Take(work->txn->id());
    if (!reads) {
      LOG(ERROR) << "partition " << options_.partition << ": lost the reads of txn "
                 << TxnIdString(work->txn->id());
      return;
    }
    RunProcedure(work, *reads, context);
    return;
  }
  const Txn& txn = *work->txn;
  ReadValues& reads = context->reads;
  reads.Reset(static_cast<size_t>(txn.read_set_size() + txn.read_write_set_size()));
  if (work->reads_here) {
    if (work->snapshot_read) store_->EnterSnapshot(context->store_slot);
    ReadLocal(work, context->store_slot, &reads);
    if (work->snapshot_read) store_->ExitSnapshot(context->store_slot);
  }
  if (!work->send_reads_to.empty()) SendReads(work, reads, context);
  if (!work->executor) {
    FinishLocal(work, true);
    return;
  }
  if (work->remote_reads_expected == 0) {
    RunProcedure(work, reads, context);
    return;
  }
  // Waiting for other partitions: a participant that writes nothing here no
  // longer needs its locks.
  if (!work->writes_here && !work->snapshot_read) PostDone(DoneMessage{work, false});
  std::string dropped;
  const bool complete = remote_reads_.AddLocal(work, &reads, &dropped);
  if (!dropped.empty() && work->epoch->epoch <= recovered_through_) {
    repeated_messages_.fetch_add(1, std::memory_order_relaxed);  // sent again after a restart
  } else if (!dropped.empty()) {
    dropped_messages_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(ERROR, 100) << "partition " << options_.partition << " dropped " << dropped;
  }
  if (complete) {
    RunProcedure(work, reads, context);
    context->reads = ReadValues();
  }
}

void Scheduler::ReadLocal(TxnWork* work, size_t slot, ReadValues* reads) {
  const Txn& txn = *work->txn;
  const uint32_t partitions = options_.partitions;
  const PartitionId self = options_.partition;
  // Stage the cache misses of keys ahead of the one being read.
  constexpr size_t kRecordAhead = 16, kValueAhead = 8;
  if (work->all_local) {
    const size_t reads_total = static_cast<size_t>(txn.read_set_size());
    for (size_t i = 0; i < std::min(reads_total, kRecordAhead); ++i) {
      store_->Prefetch(txn.read_set(static_cast<int>(i)), 1);
    }
  }
  size_t position = 0;
  auto read = [&](Key key) {
    if (work->all_local && position < static_cast<size_t>(txn.read_set_size())) {
      const size_t total = static_cast<size_t>(txn.read_set_size());
      if (position + kRecordAhead < total) {
        store_->Prefetch(txn.read_set(static_cast<int>(position + kRecordAhead)), 1);
      }
      if (position + kValueAhead < total) {
        store_->Prefetch(txn.read_set(static_cast<int>(position + kValueAhead)), 2);
      }
    }
    std::string_view value;
    const bool found = work->snapshot_read ? store_->ReadAt(slot, key, work->read_version, &value)
                                           : store_->ReadLatest(slot, key, &value);
    if (found) reads->Set(position, value);
    else reads->SetMissing(position);
  };
  for (Key key : txn.read_set()) {
    if (work->all_local || PartitionOf(key, partitions) == self) read(key);
    ++position;
  }
  for (Key key : txn.read_write_set()) {
    if (work->all_local || PartitionOf(key, partitions) == self) read(key);
    ++position;
  }
}

void Scheduler::SendReads(TxnWork* work, const ReadValues& reads, WorkerContext* context) {
  const Txn& txn = *work->txn;
  RemoteReads& message = context->outgoing;
  message.Clear();
  message.set_txn_id(txn.id());
  message.set_from_partition(options_.partition);
  message.set_writes(txn.txn_class() != RO);
  uint32_t position = 0;
  auto add = [&](Key key) {
    if (PartitionOf(key, options_.partitions) == options_.partition) {
      message.add_position(position);
      message.add_found(reads.Found(position));
      std::string_view value = reads.Found(position) ? reads.Get(position) : std::string_view();
      message.add_value(value.data(), value.size());
    }
    ++position;
  };
  for (Key key : txn.read_set()) add(key);
  for (Key key : txn.read_write_set()) add(key);
  for (PartitionId to : work->send_reads_to) peers_->SendRemoteReads(to, message);
}

void Scheduler::RunProcedure(TxnWork* work, const ReadValues& reads, WorkerContext* context) {
  const Txn& txn = *work->txn;
  WriteSet& writes = context->writes;
  writes.Clear();
  TxnOutcome outcome;
  app_->Execute(txn, reads, &writes, &outcome);
  if (work->writes_here && outcome.committed) {
    const Epoch epoch = work->epoch->epoch;
    for (size_t i = 0; i < writes.size(); ++i) {
      const Key key = writes.key(i);
      if (work->all_local || PartitionOf(key, options_.partitions) == options_.partition) {
        store_->Write(context->store_slot, key, writes.value(i), epoch);
      }
    }
  }
  if (work->origin && work->epoch->epoch > recovered_through_) {
    WorkerStats& stats = stats_->worker(context->index);
    const int64_t now = NowMicros();
    const int64_t latency = now - txn.submit_time_us();
    stats.latency_us[work->kind].Record(latency > 0 ? static_cast<uint64_t>(latency) : 0);
    WorkerStats::Add(stats.committed[work->kind]);
    if (txn.client_request_id() == 0) WorkerStats::Add(stats.generated_done);
    if (!outcome.committed) WorkerStats::Add(stats.declined[work->kind]);
    if (work->kind == kKindReadOnly && work->epoch->previous_close_time_us > 0) {
      const int64_t delay = now - work->epoch->previous_close_time_us;
      stats.visibility_us.Record(delay > 0 ? static_cast<uint64_t>(delay) : 0);
    }
    if (!outcome.invariant_ok) {
      WorkerStats::Add(stats.invariant_failures);
      LOG(ERROR) << "txn " << TxnIdString(txn.id()) << " ("
                 << app_->ProcedureName(txn.procedure()) << "): invariant violated: "
                 << outcome.detail;
    }
    if (results_) {
      results_->OnResult(txn, outcome, work->snapshot_read ? work->read_version : 0, reads);
    }
  }
  FinishLocal(work, true);
}

void Scheduler::FinishLocal(TxnWork* work, bool finished) {
  if (!work->snapshot_read) {
    PostDone(DoneMessage{work, finished});
    return;
  }
  // Lock-free read-only txns never visit the scheduler; the last one of an
  // epoch wakes it so the epoch can be freed.
  work->epoch->ro_unfinished.fetch_sub(1, std::memory_order_acq_rel);
  if (work->epoch->unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    finished_txns_.fetch_add(1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(inbox_mu_);
      wake_ = true;
    }
    inbox_cv_.notify_one();
    return;
  }
  finished_txns_.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace paxflow
