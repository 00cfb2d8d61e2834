#include "scheduler/ltx_lane.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/clock.h"

namespace paxflow {

LtxLane::LtxLane(const LtxLaneOptions& options, Store* store, const Application* app,
                 PeerSender* peers, RecordSubmitter* records, NodeStats* stats,
                 ResultSink* results, size_t stats_slot, LtxExecutor::Callbacks executor_callbacks)
    : options_(options),
      app_(app),
      stats_(stats),
      results_(results),
      records_(records),
      peers_(peers),
      stats_slot_(stats_slot),
      executor_(LtxExecutorOptions{options.partition, options.partitions, options.ltx_workers,
                                   stats_slot + 1, options.fault_hold_file},
                store, app, peers, records, stats, results, std::move(executor_callbacks)),
      planner_(options.partition, options.partitions),
      store_(store),
      store_slot_(store->RegisterThread()) {}

LtxLane::Entry* LtxLane::Find(TxnId id) {
  auto it = ltxs_.find(id);
  return it == ltxs_.end() ? nullptr : &it->second;
}

const LtxLane::Entry* LtxLane::Find(TxnId id) const {
  auto it = ltxs_.find(id);
  return it == ltxs_.end() ? nullptr : &it->second;
}

std::vector<Key> LtxLane::KeysOf(const Txn& txn) const {
  std::vector<Key> keys(txn.read_set().begin(), txn.read_set().end());
  keys.insert(keys.end(), txn.read_write_set().begin(), txn.read_write_set().end());
  keys.insert(keys.end(), txn.write_set().begin(), txn.write_set().end());
  return keys;
}

// ------------------------------------------------------------ epochs

void LtxLane::BeginEpoch(Epoch epoch, Epoch read_only_snapshot, std::vector<Action>* actions) {
  current_epoch_ = epoch;
  resolved_this_epoch_ = false;
  begun_this_epoch_.clear();
  if (!owed_.empty() || !unread_.empty()) AnswerOwedReads();
  // Timeouts first, in LTX order. A held install counts as committed.
  uint64_t chain = 0;
  std::vector<TxnId> expired;
  for (TxnId id : unresolved_) {
    const Entry& entry = ltxs_.at(id);
    // In place, it is placed at the epoch after its begin and cannot time out.
    if (entry.state == State::kActive && !options_.in_place &&
        entry.begin_epoch + options_.ltx_timeout <= epoch) {
      expired.push_back(id);
    }
  }
  for (TxnId id : expired) {
    Entry* entry = Find(id);
    if (!entry || entry->state != State::kActive) continue;
    ++chain;
    const std::string reason = std::string(LtxAbortReasonName(kAbortTimeout)) +
                               ": not committed within " + std::to_string(options_.ltx_timeout) +
                               " epochs of its begin (epoch " +
                               std::to_string(entry->begin_epoch) + "), aborted at epoch " +
                               std::to_string(epoch);
    NoteResolved(*entry->begin, LtxAbortOutcome(reason));
    if (entry->origin_here && Acts(epoch)) {
      ReportAbort(*entry->begin, reason, entry->begin_epoch);
    }
    Resolve(entry, /*install=*/false, epoch, 0, &chain, actions);
  }
  // The timeouts of the first epoch after a restart's replay come first:
  // an LTX they abort needs no abort record.
  if (restart_pending_ && epoch > replay_through_) AfterRestart(epoch);
  if (options_.origin_follows_leadership) TakeOver(epoch);
  // In place: the LTXs begun in the epoch before take their places, in LTX
  // order, ahead of this epoch's txns.
  if (options_.in_place) {
    std::vector<TxnId> due;
    for (TxnId id : unresolved_) {
      const Entry& entry = ltxs_.at(id);
      if (entry.state == State::kActive && entry.begin_epoch < epoch) {
        due.push_back(id);
      }
    }
    for (TxnId id : due) Place(Find(id), epoch, actions);
  }
  // Long scans that started here and ran out of time fail, retryably. Their
  // clock starts when their snapshot is published here and counts epochs
  // admitted since, which come at the sequencer's pace (epoch_ms each).
  // Not from the snapshot's own admission: admission runs ahead of
  // execution by the whole queue (hundreds of epochs on a loaded cluster
  // of several partitions), and a scan cannot read before the txns ahead
  // of its snapshot ran. Not in epochs published either: a backlog
  // publishes many at once.
  // The scan stays in scans_here_ until an LTX thread has reported the
  // failure (OnScanFinished): counted in unresolved_here until then, so a
  // run that ends when nothing is unresolved cannot end before its reply.
  for (auto& [id, clock] : scans_here_) {
    if (!clock.failing && clock.readable_at != 0 &&
        clock.readable_at + options_.ltx_timeout <= epoch) {
      executor_.FailScan(id, std::string(LtxAbortReasonName(kAbortTimeout)) +
                                 ": the scan did not finish within " +
                                 std::to_string(options_.ltx_timeout) +
                                 " epochs of its snapshot being published; try again");
      clock.failing = true;
    }
  }
  (void)read_only_snapshot;
}

void LtxLane::EndEpoch(Epoch epoch) {
  ended_epoch_ = epoch;
  // Once an epoch, not per LTX: the next LTX's keys refill the tables.
  areas_.Compact();
  written_.Compact();
  for (TxnId id : begun_this_epoch_) {
    Entry* entry = Find(id);
    if (!entry) continue;
    // Pending for it: every LTX begun before it (same epoch included) that
    // is not resolved by the end of its epoch.
    for (TxnId other : unresolved_) {
      if (other < id) entry->pending.push_back(other);
    }
    entry->pending_known = true;
    if (options_.in_place) {
      StartInPlace(*entry);
    } else if (entry->origin_here && Acts(epoch)) {
      executor_.StartLtx(entry->begin, entry->begin_epoch);
    }
  }
  begun_this_epoch_.clear();
  // A retry waiting for an LTX of this epoch or before that the table
  // does not hold is told so now.
  outcomes_.EpochEnded(epoch);
  // Requests that came before their LTX began here can be answered now.
  for (auto it = early_requests_.begin(); it != early_requests_.end();) {
    if (TxnEpoch(it->first) > epoch) {
      ++it;
      continue;
    }
    std::vector<LtxReadRequest> requests = std::move(it->second);
    it = early_requests_.erase(it);
    for (LtxReadRequest& request : requests) OnReadRequest(std::move(request));
  }
}

// ------------------------------------------------------------ records

void LtxLane::OnRecord(const TxnWork& work, std::vector<Action>* actions) {
  const Txn& txn = *work.txn;
  const Epoch epoch = work.epoch->epoch;
  switch (txn.ltx().kind()) {
    case LTX_BEGIN: {
      // The lane keeps the begin for the LTX's life. Taken from the batch,
      // not copied: its areas are a message per range (8,000 under long's
      // 8,000-op LTXs), and nothing reads the batch's copy after dispatch
      // (the batch keeps an empty Txn in its place, as Scheduler::Detach).
      auto begin = std::make_shared<Txn>();
      begin->Swap(const_cast<Txn*>(work.txn));
      Begin(std::move(begin), epoch);
      return;
    }
    case LTX_COMMIT:
      Commit(txn, epoch, actions);
      return;
    case LTX_ABORT: {
      const Entry* entry = Find(txn.ltx().ltx_id());
      if (!entry || entry->state != State::kActive) {
        LtxCounters::Add(stats_->ltx().late_records);
        return;  // the first of commit and abort in the log won
      }
      Abort(txn.ltx().ltx_id(), txn.ltx().reason(), epoch, txn.id(), actions);
      return;
    }
    case LTX_GUARD:
      ApplyGuard(txn);
      return;
    case LTX_SCAN:
      StartScanShare(work);
      return;
    default:
      LOG_EVERY_N(ERROR, 100) << "partition " << options_.partition
                              << ": ignored an LTX record of unknown kind in txn "
                              << TxnIdString(txn.id());
  }
}

bool LtxLane::LockableAtBegin(const Application& app, const Txn& begin,
                              uint64_t max_locked_keys) {
  const LtxRecord& ltx = begin.ltx();
  if (ltx.kind() != LTX_BEGIN || ltx.write_area_size() == 0 ||
      !app.ReadsDeclared(begin.procedure())) {
    return false;
  }
  const KeyArea area(ltx.write_area());
  const KeyArea reads(ltx.read_area());
  // Its write area and its declared reads are locked (and enumerated) key
  // by key, as in calvin mode.
  uint64_t keys = 0;
  for (const KeyArea* a : {&area, &reads}) {
    for (const auto& [lo, hi] : a->ranges()) {
      if (hi - lo >= max_locked_keys - keys) return false;
      keys += hi - lo + 1;
    }
  }
  // Reading a key outside what it locks exclusively would need the read
  // rule's snapshot; such an LTX keeps the record protocol.
  for (const auto& [lo, hi] : reads.ranges()) {
    if (!area.Covers(lo, hi)) return false;
  }
  return true;
}

bool LtxLane::LocksAtBegin(const Txn& begin) const {
  if (!app_ || !LockableAtBegin(*app_, begin, options_.max_locked_keys)) return false;
  const KeyArea area(begin.ltx().write_area());
  // Record protocol: an active LTX ordered before it may still install
  // into keys it would read and write; it takes the record protocol too
  // (and is held behind that LTX as any record-protocol LTX is). In place,
  // such an LTX's install took its area's locks at its placement, before
  // this epoch's txns: this one waits for them like a short txn. LTXs begun
  // in this epoch are ordered after it (at the start of the next one).
  if (options_.in_place) return true;
  for (TxnId id : unresolved_) {
    const Entry& entry = ltxs_.at(id);
    if (entry.begin_epoch < current_epoch_ && entry.area.Intersects(area)) return false;
  }
  return true;
}

void LtxLane::Begin(std::shared_ptr<const Txn> begin, Epoch epoch) {
  const Txn& txn = *begin;
  const bool origin_here = txn.origin_partition() == options_.partition;
  KeyArea area(txn.ltx().write_area());
  // Busy and guard aborts are counted apart: the share of LTXs that guards
  // abort is how much starvation protection costs the long side.
  std::string busy;
  int code = kAbortBusy;
  if (unresolved_.size() >= options_.max_active_ltx) {
    busy = std::to_string(unresolved_.size()) + " LTXs are unresolved (max_active_ltx=" +
           std::to_string(options_.max_active_ltx) + ")";
  } else {
    for (const Guard& guard : guards_) {
      if (guard.keys.Intersects(area)) {
        busy = "its write area touches keys guarded for a txn the LTX lane deferred too often";
        code = kAbortGuard;
        break;
      }
    }
  }
  std::vector<Key> lock_keys;
  if (busy.empty() && options_.in_place &&
      !area.KeysOn(options_.partition, options_.partitions, options_.max_locked_keys,
                   &lock_keys)) {
    busy = "its write area holds more than " + std::to_string(options_.max_locked_keys) +
           " keys, too many to lock in place";
    code = kAbortProcedure;
  }
  NoteBegan(txn);
  if (!busy.empty()) {
    const std::string reason = std::string(LtxAbortReasonName(code)) + ": " + busy;
    NoteResolved(txn, LtxAbortOutcome(reason));
    if (origin_here && Acts(epoch)) ReportAbort(txn, reason, epoch);
    return;
  }
  Entry& entry = ltxs_[txn.id()];
  entry.lock_keys = std::move(lock_keys);
  entry.id = txn.id();
  entry.begin_epoch = epoch;
  entry.begin = std::move(begin);
  entry.area = std::move(area);
  entry.origin_here = origin_here;
  PlanLockedRun(&entry);
  unresolved_.insert(txn.id());
  if (!options_.in_place) areas_.Add(txn.id(), entry.area);
  begun_this_epoch_.push_back(txn.id());
  if (origin_here && Acts(epoch)) RecordWait(kLtxSequencing, txn.submit_time_us());
}

void LtxLane::Commit(const Txn& record, Epoch epoch, std::vector<Action>* actions) {
  Entry* entry = Find(record.ltx().ltx_id());
  if (!entry || entry->state != State::kActive) {
    // Resolved already (the log aborted it first), or a duplicate.
    LtxCounters::Add(stats_->ltx().late_records);
    LOG_EVERY_N(WARNING, 10) << "partition " << options_.partition << ": commit record of LTX "
                             << TxnIdString(record.ltx().ltx_id())
                             << " ignored: the LTX was already resolved";
    return;
  }
  entry->commit = std::make_shared<const Txn>(record);
  TakeLocalWrites(entry, entry->commit);
  if (entry->origin_here && record.ltx().read_from_size() > 0) {
    LtxCounters::Add(stats_->ltx().early_reads);
  }
  if (entry->origin_here && Acts(epoch)) {
    entry->commit_seen_us = NowMicros();
    if (entry->finished_us > 0) RecordWait(kLtxCommitWait, entry->finished_us);
  }
  if (HeldBack(*entry)) {
    entry->state = State::kHeld;
    if (entry->origin_here) LtxCounters::Add(stats_->ltx().held_installs);
    // Its writes are known: later LTXs may read them early.
    MarkFinished(entry);
    return;
  }
  uint64_t chain = 0;
  InstallOrCascade(entry, epoch, record.id(), &chain, actions);
}

void LtxLane::TakeLocalWrites(Entry* entry, std::shared_ptr<const Txn> record) {
  auto& writes = entry->local_writes;
  writes.clear();
  entry->writes_record = std::move(record);
  const LtxRecord& ltx = entry->writes_record->ltx();
  writes.reserve(static_cast<size_t>(ltx.writes_size()));
  for (const LtxWrite& write : ltx.writes()) {
    if (PartitionOf(write.key(), options_.partitions) == options_.partition) {
      writes.emplace_back(write.key(), &write);
    }
  }
  // An origin writes its record in key order, each key once; anything else
  // is put in that shape, the last write of a key winning.
  if (std::adjacent_find(writes.begin(), writes.end(), [](const auto& a, const auto& b) {
        return a.first >= b.first;
      }) == writes.end()) {
    return;  // strictly ascending
  }
  std::stable_sort(writes.begin(), writes.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t kept = 0;
  for (size_t i = 0; i < writes.size(); ++i) {
    if (i + 1 < writes.size() && writes[i + 1].first == writes[i].first) continue;
    writes[kept++] = writes[i];
  }
  writes.resize(kept);
}

const LtxWrite* LtxLane::LocalWrite(const Entry& entry, Key key) {
  auto it = std::lower_bound(entry.local_writes.begin(), entry.local_writes.end(), key,
                             [](const auto& write, Key k) { return write.first < k; });
  return it != entry.local_writes.end() && it->first == key ? it->second : nullptr;
}

void LtxLane::IndexWrites(Entry* entry) {
  if (entry->indexed) return;
  entry->indexed = true;
  if (options_.in_place) return;  // readers walk their pending lists (ChosenWrite)
  // Ascending LTX order per key: an LTX may finish before an earlier one.
  for (const auto& [key, write] : entry->local_writes) written_[key].Insert(entry->id);
}

void LtxLane::UnindexWrites(Entry* entry) {
  if (!entry->indexed) return;
  entry->indexed = false;
  DropWrites(*entry);
}

void LtxLane::DropWrites(const Entry& entry) {
  if (options_.in_place) return;  // never indexed
  for (const auto& [key, write] : entry.local_writes) {
    SmallIdList* writers = written_.Find(key);
    if (!writers) continue;
    writers->Remove(entry.id);
    if (writers->empty()) written_.Erase(key);
  }
}

void LtxLane::OnFinished(std::shared_ptr<const Txn> record) {
  Entry* entry = Find(record->ltx().ltx_id());
  if (!entry || entry->finished) return;
  const bool commit = record->ltx().kind() == LTX_COMMIT;
  if (options_.in_place) {
    if (entry->state != State::kActive && entry->state != State::kPlaced) return;
    entry->finished_us = NowMicros();
    executor_.Forget(entry->id);
    if (commit) {
      entry->commit = std::move(record);
      TakeLocalWrites(entry, entry->commit);
    } else {
      entry->abort_reason = record->ltx().reason();
    }
    // Its writes are final: nothing can abort it any more.
    MarkFinished(entry);
    if (entry->state == State::kPlaced) Settle(entry);
    return;
  }
  // Its abort record settles it through the log.
  if (!commit || entry->state != State::kActive) return;
  entry->finished_record = std::move(record);
  entry->finished_us = NowMicros();
  TakeLocalWrites(entry, entry->finished_record);
  MarkFinished(entry);
}

void LtxLane::MarkFinished(Entry* entry) {
  entry->finished = true;
  IndexWrites(entry);
  // LTX reads parked on it may go on; every other waiter (deferred short
  // txns, read-only txns, long scans) still waits for its resolution.
  auto waiting = waiters_.find(entry->id);
  if (waiting == waiters_.end()) return;
  std::vector<uint64_t> still_waiting;
  std::vector<ParkedRead> ready;
  for (uint64_t waiter : waiting->second) {
    auto parked = parked_.find(waiter);
    if (parked == parked_.end() || !parked->second.task || parked->second.task->long_scan) {
      still_waiting.push_back(waiter);
      continue;
    }
    if (--parked->second.waiting == 0) {
      ready.push_back(std::move(parked->second));
      parked_.erase(parked);
    }
  }
  if (still_waiting.empty()) {
    waiters_.erase(waiting);
  } else {
    waiting->second = std::move(still_waiting);
  }
  for (ParkedRead& read : ready) ServeParkedTask(std::move(read));
}

void LtxLane::ServeParkedTask(ParkedRead read) {
  if (!read.task->long_scan) RecordWait(kLtxParkedRead, read.task->waiting_since_us);
  ReadPlan plan;
  plan.snapshot = read.task->snapshot;
  if (!read.task->long_scan) plan.pending = &read.ltx_pending;
  PrepareTask(read.task.get(), plan);
  ServeWhenPublished(std::move(read.task));
}

bool LtxLane::ReadFromAborted(const Entry& entry, TxnId* culprit) const {
  if (!entry.commit) return false;
  for (TxnId id : entry.commit->ltx().read_from()) {
    const Entry* other = Find(id);
    // An LTX it read from is forgotten only long after its resolution,
    // never while this one is unresolved; an unknown one is not trusted.
    if (!other || other->state == State::kAborted) {
      *culprit = id;
      return true;
    }
  }
  return false;
}

void LtxLane::InstallOrCascade(Entry* entry, Epoch epoch, uint64_t anchor, uint64_t* chain,
                               std::vector<Action>* actions) {
  TxnId culprit = 0;
  if (ReadFromAborted(*entry, &culprit)) {
    const std::string reason =
        std::string(LtxAbortReasonName(kAbortCascade)) + ": it read the writes of LTX " +
        TxnIdString(culprit) + " before that LTX was resolved, and that LTX was aborted; try again";
    NoteResolved(*entry->begin, LtxAbortOutcome(reason));
    if (entry->origin_here && Acts(epoch)) ReportAbort(*entry->begin, reason, entry->begin_epoch);
    Resolve(entry, /*install=*/false, epoch, anchor, chain, actions);
    return;
  }
  Resolve(entry, /*install=*/true, epoch, anchor, chain, actions);
}

void LtxLane::Abort(TxnId id, const std::string& reason, Epoch epoch, uint64_t anchor,
                    std::vector<Action>* actions) {
  Entry* entry = Find(id);
  NoteResolved(*entry->begin, LtxAbortOutcome(reason));
  if (entry->origin_here && Acts(epoch)) {
    ReportAbort(*entry->begin, reason, entry->begin_epoch);
  }
  uint64_t chain = 0;
  // The abort record's own id anchors what it releases.
  Resolve(entry, /*install=*/false, epoch, anchor, &chain, actions);
}

void LtxLane::ApplyGuard(const Txn& record) {
  Guard guard;
  guard.keys = KeyArea::OfKeys(
      std::vector<Key>(record.ltx().guard_keys().begin(), record.ltx().guard_keys().end()));
  for (TxnId id : unresolved_) {
    if (id < record.id()) guard.waiting_on.insert(id);
  }
  if (options_.partition == 0) LtxCounters::Add(stats_->ltx().guards);
  for (auto& [waiter, deferred] : deferred_) {
    if (deferred.work->txn->id() == record.ltx().guarded_txn()) deferred.guarded = true;
  }
  if (!guard.waiting_on.empty()) guards_.push_back(std::move(guard));
}

bool LtxLane::HeldBack(const Entry& entry) const {
  for (TxnId id : unresolved_) {
    if (id >= entry.id) break;
    if (ltxs_.at(id).area.Intersects(entry.area)) return true;
  }
  // It installs only once every LTX it read early from is resolved.
  if (entry.commit) {
    for (TxnId id : entry.commit->ltx().read_from()) {
      if (unresolved_.count(id)) return true;
    }
  }
  return false;
}

// -------------------------------------------------------- resolutions

void LtxLane::Resolve(Entry* entry, bool install, Epoch epoch, uint64_t anchor, uint64_t* chain,
                      std::vector<Action>* actions) {
  const TxnId id = entry->id;
  if (install) {
    Install(entry, epoch, actions);
  } else {
    entry->state = State::kAborted;
    // Writes it made known early (finished, or held) are no one's to read.
    UnindexWrites(entry);
    entry->local_writes.clear();
    entry->writes_record.reset();
  }
  entry->resolved_epoch = epoch;
  unresolved_.erase(id);
  if (!options_.in_place) areas_.Remove(id, entry->area);
  resolved_this_epoch_ = true;
  executor_.Forget(id);
  for (auto guard = guards_.begin(); guard != guards_.end();) {
    guard->waiting_on.erase(id);
    guard = guard->waiting_on.empty() ? guards_.erase(guard) : std::next(guard);
  }

  // What waited for this LTX and now waits for nothing more.
  std::vector<uint64_t> free_now;
  auto waiting = waiters_.find(id);
  if (waiting != waiters_.end()) {
    for (uint64_t waiter : waiting->second) {
      auto deferred = deferred_.find(waiter);
      if (deferred != deferred_.end()) {
        if (--deferred->second.waiting == 0) free_now.push_back(waiter);
        continue;
      }
      auto parked = parked_.find(waiter);
      if (parked != parked_.end() && --parked->second.waiting == 0) free_now.push_back(waiter);
    }
    waiters_.erase(waiting);
  }
  // Deferred txns, in their original order, re-examined as if sequenced here.
  std::vector<std::unique_ptr<TxnWork>> released;
  for (uint64_t waiter : free_now) {
    auto deferred = deferred_.find(waiter);
    if (deferred == deferred_.end()) continue;
    released.push_back(std::move(deferred->second.work));
    deferred_.erase(deferred);
  }
  std::sort(released.begin(), released.end(),
            [](const auto& a, const auto& b) { return a->txn->id() < b->txn->id(); });
  for (auto& work : released) {
    work->position = SerialPosition{epoch, anchor, *chain, work->txn->id()};
    if (Covers(*work)) {
      Defer(std::move(work));
    } else {
      actions->push_back(Action{std::move(work)});
    }
  }
  // Parked readers: ROs run with the LTXs' values; LTX reads are served.
  for (uint64_t waiter : free_now) {
    auto parked = parked_.find(waiter);
    if (parked == parked_.end()) continue;
    ParkedRead read = std::move(parked->second);
    parked_.erase(parked);
    if (read.work) {
      FillOverrides(read.work.get(), &read.snapshot_reads);
      actions->push_back(Action{std::move(read.work)});
    } else {
      ServeParkedTask(std::move(read));
    }
  }
  // Held installs this resolution frees, in LTX order, each with its own
  // releases.
  std::vector<TxnId> freed;
  for (TxnId other : unresolved_) {
    const Entry& held = ltxs_.at(other);
    if (held.state == State::kHeld && !HeldBack(held)) freed.push_back(other);
  }
  for (TxnId other : freed) {
    Entry* held = Find(other);
    if (!held || held->state != State::kHeld) continue;
    ++*chain;
    InstallOrCascade(held, epoch, anchor, chain, actions);
  }
}

void LtxLane::Install(Entry* entry, Epoch epoch, std::vector<Action>* actions) {
  entry->state = State::kInstalled;
  IndexWrites(entry);
  const bool report = entry->origin_here && Acts(epoch);
  TxnOutcome outcome;
  outcome.checksum = entry->commit->ltx().checksum();
  outcome.position = SerialPosition{entry->begin_epoch + 1, 0, 0, entry->id};
  NoteResolved(*entry->begin, outcome);
  if (entry->local_writes.empty()) {
    if (report) {
      WorkerStats& stats = stats_->worker(stats_slot_);
      stats.RecordResult(kKindLong, false, "", NowMicros() - entry->begin->submit_time_us(),
                         entry->begin->client_request_id() == 0);
      if (results_) {
        ReadValues none;
        results_->OnResult(*entry->begin, outcome, entry->begin_epoch, none);
      }
    }
    return;
  }
  auto work = std::make_unique<TxnWork>();
  work->install = std::make_unique<LtxInstall>();
  LtxInstall& install = *work->install;
  install.ltx = entry->id;
  install.begin = entry->begin;
  install.record = entry->commit;
  for (const auto& [key, write] : entry->local_writes) install.writes.push_back(write);
  install.report = report;
  install.outcome = outcome;
  install.commit_seen_us = entry->commit_seen_us;
  work->txn = entry->begin.get();
  work->kind = kKindLong;
  work->origin = entry->origin_here;
  work->writes_here = true;
  work->position = SerialPosition{epoch, entry->id, 0, 0};
  (void)epoch;
  actions->push_back(Action{std::move(work)});
}

void LtxLane::Place(Entry* entry, Epoch epoch, std::vector<Action>* actions) {
  entry->state = State::kPlaced;
  entry->resolved_epoch = epoch;
  unresolved_.erase(entry->id);
  placed_.insert(entry->id);
  resolved_this_epoch_ = true;
  auto work = std::make_unique<TxnWork>();
  work->install = std::make_unique<LtxInstall>();
  LtxInstall& install = *work->install;
  install.ltx = entry->id;
  install.begin = entry->begin;
  install.in_place = true;
  install.lock_keys = std::move(entry->lock_keys);
  install.awaiting_writes = true;
  install.run_here = entry->locked_run;
  install.snapshot = entry->begin_epoch;
  install.placed_us = NowMicros();
  work->txn = entry->begin.get();
  work->kind = kKindLong;
  work->origin = entry->origin_here;
  work->writes_here = true;
  work->position = SerialPosition{epoch, 0, 0, entry->id};
  entry->install = work.get();
  actions->push_back(Action{std::move(work)});
  if (entry->finished) Settle(entry);
}

void LtxLane::Settle(Entry* entry) {
  placed_.erase(entry->id);
  LtxInstall& install = *entry->install->install;
  const bool report = entry->origin_here && Acts(entry->resolved_epoch);
  if (entry->commit) {
    entry->state = State::kInstalled;
    install.record = entry->commit;
    for (const auto& [key, write] : entry->local_writes) install.writes.push_back(write);
    install.report = report;
    install.outcome.checksum = entry->commit->ltx().checksum();
    install.outcome.position = SerialPosition{entry->begin_epoch + 1, 0, 0, entry->id};
    install.commit_seen_us = entry->finished_us;
    NoteResolved(*entry->begin, install.outcome);
  } else {
    entry->state = State::kAborted;
    NoteResolved(*entry->begin, LtxAbortOutcome(entry->abort_reason));
    if (report) ReportAbort(*entry->begin, entry->abort_reason, entry->begin_epoch);
  }
  install.awaiting_writes = false;
  if (install.locks_held) ready_installs_.push_back(entry->install);
  entry->install = nullptr;
}

// ------------------------------------------------------------ locked runs

void LtxLane::PlanLockedRun(Entry* entry) const {
  entry->locked_run = false;
  entry->declared_reads.clear();
  entry->readable_reads = 0;
  const Txn& begin = *entry->begin;
  if (!options_.in_place || !options_.locked_run || !app_ ||
      !app_->ReadsDeclared(begin.procedure())) {
    return;
  }
  std::vector<Key> declared;
  if (!KeyArea(begin.ltx().read_area())
           .KeysOn(options_.partition, options_.partitions, options_.max_locked_run_reads,
                   &declared)) {
    return;  // too many to check key by key: it runs on an LTX thread
  }
  // Both ascending: one walk, not a search of the area per key.
  const auto& ranges = entry->area.ranges();
  auto range = ranges.begin();
  for (Key key : declared) {
    while (range != ranges.end() && range->second < key) ++range;
    if (range == ranges.end() || key < range->first) entry->declared_reads.push_back(key);
  }
  entry->locked_run = true;
}

void LtxLane::StartInPlace(const Entry& entry) {
  // Every replica runs it, replays included: its writes come from nowhere
  // else. A locked run starts from its install instead.
  if (!entry.locked_run) executor_.StartLtx(entry.begin, entry.begin_epoch, /*in_place=*/true);
}

bool LtxLane::LockedReadsReady(Entry* entry) {
  ReadPlan plan;
  plan.snapshot = entry->begin_epoch;
  plan.pending = &entry->pending;
  // A key stays readable once it is: a pending LTX finishes for good, and
  // a key settles for good. With no LTX pending for it (the common case)
  // only settling counts.
  const bool pending = !entry->pending.empty();
  const std::vector<Key>& keys = entry->declared_reads;
  while (entry->readable_reads < keys.size()) {
    // Thousands of keys, each a few dependent cache misses in the lock
    // table: fetch three stages ahead (slot, entry, queue head).
    if (settled_prefetch_) {
      const size_t at = entry->readable_reads;
      for (int stage = 1; stage <= 3; ++stage) {
        const size_t ahead = at + static_cast<size_t>(4 * (4 - stage));
        if (ahead < keys.size()) settled_prefetch_(keys[ahead], stage);
      }
    }
    const Key key = keys[entry->readable_reads];
    if (pending) {
      scratch_covering_.clear();
      if (KeyCoveredUnresolved(key, plan, &scratch_covering_)) return false;
    }
    const Entry* from = nullptr;
    if (!(pending && ChosenWrite(key, plan, &from, nullptr)) &&
        !(settled_ && settled_(key, plan.snapshot))) {
      return false;
    }
    ++entry->readable_reads;
  }
  return true;
}

void LtxLane::PrepareLockedRun(Entry* entry) {
  LtxInstall& install = *entry->install->install;
  ReadPlan plan;
  plan.snapshot = entry->begin_epoch;
  plan.pending = &entry->pending;
  if (entry->pending.empty()) {
    // No LTX pending for it: every declared read is at its snapshot.
    install.chosen.assign(entry->declared_reads.size(), false);
    install.chosen_values.assign(entry->declared_reads.size(), {});
    install.declared = std::move(entry->declared_reads);
  } else {
    LtxReadTask task;
    task.keys = std::move(entry->declared_reads);
    PrepareTask(&task, plan);
    install.declared = std::move(task.keys);
    install.chosen = std::move(task.key_chosen);
    install.chosen_values = std::move(task.key_values);
    install.chosen_records = std::move(task.records);
  }
  install.report = entry->origin_here && Acts(entry->resolved_epoch);
  // Who reads an LTX in place's writes from its record: only the LTXs
  // begun after it in its epoch, which have it in their pending lists
  // (resolved at its placement, it is pending for no later one); every
  // other reader takes them from the store once it installed. All of its
  // epoch's LTXs are known by now (it is placed, the epoch is admitted).
  // Without such an LTX the record keeps its outcome alone, and the worker
  // skips copying thousands of values that nothing would read.
  auto next = ltxs_.upper_bound(entry->id);
  install.keep_writes = next != ltxs_.end() && next->second.begin_epoch == entry->begin_epoch;
  if (install.keep_writes) LtxCounters::Add(stats_->ltx().locked_runs_writes_kept);
  install.outcome.position = SerialPosition{entry->begin_epoch + 1, 0, 0, entry->id};
  install.awaiting_writes = false;
  LtxCounters::Add(stats_->ltx().locked_runs);
}

bool LtxLane::LockedRunReady(TxnWork* work) {
  Entry* entry = Find(work->install->ltx);
  if (!entry || entry->state != State::kPlaced || entry->install != work) return false;
  if (!LockedReadsReady(entry)) {
    locked_waiting_.insert(entry->id);
    return false;
  }
  PrepareLockedRun(entry);
  return true;
}

void LtxLane::RunReadyLockedRuns() {
  for (auto it = locked_waiting_.begin(); it != locked_waiting_.end();) {
    Entry* entry = Find(*it);
    if (!entry || entry->state != State::kPlaced || !entry->install) {
      it = locked_waiting_.erase(it);
      continue;
    }
    if (!LockedReadsReady(entry)) {
      ++it;
      continue;
    }
    PrepareLockedRun(entry);
    ready_installs_.push_back(entry->install);
    it = locked_waiting_.erase(it);
  }
}

void LtxLane::OnLockedRunDone(const TxnWork& work) {
  const LtxInstall& install = *work.install;
  Entry* entry = Find(install.ltx);
  if (!entry || entry->state != State::kPlaced || entry->install != &work) return;
  entry->install = nullptr;
  placed_.erase(entry->id);
  entry->finished_us = NowMicros();
  const bool commit = install.record->ltx().kind() == LTX_COMMIT;
  if (commit) {
    entry->commit = install.record;
    TakeLocalWrites(entry, entry->commit);
  } else {
    entry->abort_reason = install.record->ltx().reason();
  }
  // Its writes are final, and installed: later LTXs of its epoch read them.
  MarkFinished(entry);
  entry->state = commit ? State::kInstalled : State::kAborted;
  if (commit) {
    TxnOutcome outcome = install.outcome;
    outcome.checksum = install.record->ltx().checksum();
    NoteResolved(*entry->begin, outcome);
  } else {
    NoteResolved(*entry->begin, LtxAbortOutcome(entry->abort_reason));
  }
  if (!commit && entry->origin_here && Acts(entry->resolved_epoch)) {
    ReportAbort(*entry->begin, entry->abort_reason, entry->begin_epoch);
  }
}

void LtxLane::OnGivenBack(TxnWork* work) {
  LtxInstall& install = *work->install;
  install.run_here = false;
  install.awaiting_writes = true;
  install.declared.clear();
  install.chosen.clear();
  install.chosen_values.clear();
  install.chosen_records.clear();
  Entry* entry = Find(install.ltx);
  if (!entry || entry->state != State::kPlaced || entry->install != work) return;
  entry->locked_run = false;
  LtxCounters::Add(stats_->ltx().locked_runs_given_back);
  StartInPlace(*entry);
}

void LtxLane::NoteBegan(const Txn& begin) {
  if (begin.client_id() != 0 && begin.origin_partition() == options_.partition) {
    outcomes_.Began(begin.id());
  }
}

void LtxLane::NoteResolved(const Txn& begin, const TxnOutcome& outcome) {
  if (begin.client_id() != 0 && begin.origin_partition() == options_.partition) {
    outcomes_.Resolved(begin.id(), outcome);
  }
}

void LtxLane::ReportAbort(const Txn& begin, const std::string& reason, Epoch snapshot) {
  const int code = LtxAbortReasonOf(reason);
  stats_->ltx().CountAbort(code);
  WorkerStats& stats = stats_->worker(stats_slot_);
  stats.RecordResult(kKindLong, true, reason, NowMicros() - begin.submit_time_us(),
                     begin.client_request_id() == 0);
  if (!results_) return;
  ReadValues none;
  results_->OnResult(begin, LtxAbortOutcome(reason), snapshot, none);
}

// ------------------------------------------------------------ deferral

bool LtxLane::Covers(const TxnWork& work) const {
  scratch_covering_.clear();
  // An LTX in place defers nothing: its install holds its area's locks.
  if (areas_.empty() || options_.in_place) return false;
  auto check = [&](Key key) {
    areas_.ForEachCovering(key, [&](TxnId id) {
      // Active from the epoch after its begin; one in place defers nothing
      // (its install holds its area's locks).
      const Entry& entry = ltxs_.at(id);
      if (options_.in_place || entry.begin_epoch >= current_epoch_) return;
      if (std::find(scratch_covering_.begin(), scratch_covering_.end(), id) ==
          scratch_covering_.end()) {
        scratch_covering_.push_back(id);
      }
    });
  };
  const Txn& txn = *work.txn;
  for (Key key : txn.read_set()) check(key);
  for (Key key : txn.read_write_set()) check(key);
  for (Key key : txn.write_set()) check(key);
  return !scratch_covering_.empty();
}

void LtxLane::Defer(std::unique_ptr<TxnWork> work) {
  const uint64_t waiter = next_waiter_++;
  ++work->deferrals;
  if (work->set_aside_us == 0) work->set_aside_us = NowMicros();
  LtxCounters& counters = stats_->ltx();
  if (work->origin) {
    LtxCounters::Add(counters.deferrals);
    if (work->deferrals == 1) LtxCounters::Add(counters.deferred_txns);
    if (work->deferrals > counters.max_deferrals.load(std::memory_order_relaxed)) {
      counters.max_deferrals.store(work->deferrals, std::memory_order_relaxed);
    }
  }
  Deferred& deferred = deferred_[waiter];
  if (work->deferrals >= options_.ltx_max_deferrals && Acts(current_epoch_) &&
      planner_.LowestParticipant(*work->txn) == options_.partition) {
    SubmitGuard(*work->txn);
  }
  deferred.waiting = static_cast<uint32_t>(scratch_covering_.size());
  deferred.work = std::move(work);
  ParkOn(scratch_covering_, waiter);
}

void LtxLane::SubmitGuard(const Txn& txn) {
  if (!records_) return;
  // Against starvation: new LTXs on its keys abort (busy) until every LTX
  // begun before the guard is resolved; by then this txn has run.
  Txn guard;
  guard.set_txn_class(LTX);
  guard.set_origin_partition(options_.partition);
  LtxRecord* ltx = guard.mutable_ltx();
  ltx->set_kind(LTX_GUARD);
  ltx->set_guarded_txn(txn.id());
  for (Key key : KeysOf(txn)) ltx->add_guard_keys(key);
  records_->SubmitRecord(std::move(guard));
}

void LtxLane::ParkOn(const std::vector<TxnId>& ltxs, uint64_t waiter) {
  for (TxnId id : ltxs) waiters_[id].push_back(waiter);
}

// ------------------------------------------------------------ the read rule

bool LtxLane::IsPendingFor(const Entry& entry, const ReadPlan& plan) const {
  if (plan.pending) {
    return std::binary_search(plan.pending->begin(), plan.pending->end(), entry.id);
  }
  // Pending at snapshot S: begun before S, and not resolved by S.
  return entry.begin_epoch < plan.snapshot &&
         (Unresolved(entry) || entry.resolved_epoch > plan.snapshot);
}

bool LtxLane::WritesVisible(const Entry& entry, const ReadPlan& plan) const {
  return entry.state == State::kInstalled || (plan.pending && entry.finished &&
                                              entry.state != State::kAborted);
}

bool LtxLane::Blocks(const Entry& entry, const ReadPlan& plan) const {
  return Running(entry) && !(plan.pending && entry.finished);
}

bool LtxLane::KeyCoveredUnresolved(Key key, const ReadPlan& plan,
                                   std::vector<TxnId>* covering) const {
  bool any = false;
  auto blocks_reader = [&](const Entry& entry) {
    return IsPendingFor(entry, plan) && Blocks(entry, plan);
  };
  auto note = [&](const Entry& entry) {
    if (std::find(covering->begin(), covering->end(), entry.id) == covering->end()) {
      covering->push_back(entry.id);
    }
    any = true;
  };
  if (!options_.in_place) {
    areas_.ForEachCovering(key, [&](TxnId id) {
      const Entry& entry = ltxs_.at(id);
      if (blocks_reader(entry)) note(entry);
    });
    return any;
  }
  // In place nothing is deferred, and the few LTXs that can block a reader
  // (its pending list; for a reader by snapshot, the running ones) are
  // asked in turn: cheaper than indexing each LTX's thousands of keys.
  // Whether one can block the reader at all is asked first: an LTX placed
  // at N+1 is pending for no snapshot after N, so for a reader by snapshot
  // the answer is nearly always no, and the area's test is the dearer one.
  if (plan.pending) {
    for (TxnId id : *plan.pending) {
      const Entry* entry = Find(id);
      if (entry && blocks_reader(*entry) && entry->area.Contains(key)) note(*entry);
    }
  } else {
    ForEachRunning([&](const Entry& entry) {
      if (blocks_reader(entry) && entry.area.Contains(key)) note(entry);
    });
  }
  return any;
}

bool LtxLane::RangeCoveredUnresolved(Key lo, Key hi, const ReadPlan& plan,
                                     std::vector<TxnId>* covering) const {
  bool any = false;
  ForEachRunning([&](const Entry& entry) {
    if (IsPendingFor(entry, plan) && Blocks(entry, plan) && entry.area.Intersects(lo, hi)) {
      if (std::find(covering->begin(), covering->end(), entry.id) == covering->end()) {
        covering->push_back(entry.id);
      }
      any = true;
    }
  });
  return any;
}

bool LtxLane::ChosenValue(Key key, const ReadPlan& plan, bool* found, std::string* value,
                          std::vector<TxnId>* read_from) const {
  const Entry* from = nullptr;
  const LtxWrite* write = ChosenWrite(key, plan, &from, read_from);
  if (!write) return false;
  *found = !write->deleted();
  *value = *found ? write->value() : std::string();
  return true;
}

const LtxWrite* LtxLane::ChosenWrite(Key key, const ReadPlan& plan, const Entry** from,
                                     std::vector<TxnId>* read_from) const {
  // The last LTX (in LTX order) pending for the reader that wrote the key.
  if (options_.in_place) {
    // Not indexed (IndexWrites): the candidates, newest first. Writes of
    // an LTX in place are final once known: no need to name it.
    auto chosen = [&](const Entry& entry) -> const LtxWrite* {
      if (!IsPendingFor(entry, plan) || !WritesVisible(entry, plan)) return nullptr;
      const LtxWrite* write = LocalWrite(entry, key);
      if (write) *from = &entry;
      return write;
    };
    if (plan.pending) {
      for (auto it = plan.pending->rbegin(); it != plan.pending->rend(); ++it) {
        const Entry* entry = Find(*it);
        if (const LtxWrite* write = entry ? chosen(*entry) : nullptr) return write;
      }
    } else {
      for (auto it = ltxs_.rbegin(); it != ltxs_.rend(); ++it) {
        if (const LtxWrite* write = chosen(it->second)) return write;
      }
    }
    return nullptr;
  }
  const SmallIdList* writers = written_.Find(key);
  if (!writers) return nullptr;
  for (const TxnId* it = writers->end(); it != writers->begin();) {
    const Entry& entry = ltxs_.at(*--it);
    if (!IsPendingFor(entry, plan) || !WritesVisible(entry, plan)) continue;
    // Writes of an LTX in place are final once known: no need to name it.
    if (read_from && entry.state != State::kInstalled && !options_.in_place) {
      read_from->push_back(entry.id);
    }
    *from = &entry;
    return LocalWrite(entry, key);
  }
  return nullptr;
}

void LtxLane::FillOverrides(TxnWork* work,
                            const std::vector<ReadOverride>* snapshot_reads) const {
  work->overrides.clear();
  ReadPlan plan;
  plan.snapshot = work->read_version;
  const bool saved = snapshot_reads && !snapshot_reads->empty();
  bool any_pending = saved;
  for (const auto& [id, entry] : ltxs_) {
    if (entry.state == State::kInstalled && IsPendingFor(entry, plan) &&
        !entry.local_writes.empty()) {
      any_pending = true;
      break;
    }
  }
  if (!any_pending) return;
  const Txn& txn = *work->txn;
  uint32_t position = 0;
  size_t next_saved = 0;
  auto check = [&](Key key) {
    if (PartitionOf(key, options_.partitions) == options_.partition) {
      ReadOverride value;
      value.position = position;
      while (saved && next_saved < snapshot_reads->size() &&
             (*snapshot_reads)[next_saved].position < position) {
        ++next_saved;
      }
      if (ChosenValue(key, plan, &value.found, &value.value)) {
        work->overrides.push_back(value);
      } else if (saved && next_saved < snapshot_reads->size() &&
                 (*snapshot_reads)[next_saved].position == position) {
        work->overrides.push_back((*snapshot_reads)[next_saved]);
      }
    }
    ++position;
  };
  for (Key key : txn.read_set()) check(key);
  for (Key key : txn.read_write_set()) check(key);
}

bool LtxLane::MustPark(TxnWork* work) {
  scratch_covering_.clear();
  if (ltxs_.empty()) return false;
  ReadPlan plan;
  plan.snapshot = work->read_version;
  // On every participant alike: all the txn's keys, not only local ones.
  for (Key key : KeysOf(*work->txn)) KeyCoveredUnresolved(key, plan, &scratch_covering_);
  if (!scratch_covering_.empty()) return true;
  FillOverrides(work);
  return false;
}

void LtxLane::Park(std::unique_ptr<TxnWork> work) {
  const uint64_t waiter = next_waiter_++;
  if (work->origin) LtxCounters::Add(stats_->ltx().parked_reads);
  work->set_aside_us = NowMicros();
  ParkedRead& read = parked_[waiter];
  read.waiting = static_cast<uint32_t>(scratch_covering_.size());
  read.work = std::move(work);
  ParkOn(scratch_covering_, waiter);
}

void LtxLane::PrepareTask(LtxReadTask* task, const ReadPlan& plan) const {
  task->key_values.assign(task->keys.size(), {});
  task->key_chosen.assign(task->keys.size(), false);
  // The records the chosen values are read from stay alive with the task.
  const Entry* last_from = nullptr;
  auto keep = [&](const Entry& entry) {
    if (&entry == last_from) return;
    last_from = &entry;
    if (std::find(task->records.begin(), task->records.end(), entry.writes_record) ==
        task->records.end()) {
      task->records.push_back(entry.writes_record);
    }
  };
  for (size_t i = 0; i < task->keys.size(); ++i) {
    const Entry* from = nullptr;
    const LtxWrite* write = ChosenWrite(task->keys[i], plan, &from, &task->read_from);
    if (!write) continue;
    keep(*from);
    task->key_chosen[i] = true;
    task->key_values[i] = {!write->deleted(),
                           write->deleted() ? std::string_view() : std::string_view(write->value())};
  }
  task->scan_values.assign(task->scans.size(), {});
  for (size_t s = 0; s < task->scans.size(); ++s) {
    const Key lo = task->scans[s].lo(), hi = task->scans[s].hi();
    for (const auto& [id, entry] : ltxs_) {  // LTX order: the last writer wins
      if (!WritesVisible(entry, plan) || !IsPendingFor(entry, plan) ||
          !entry.area.Intersects(lo, hi)) {
        continue;
      }
      if (entry.state != State::kInstalled && !options_.in_place) {
        task->read_from.push_back(entry.id);
      }
      auto it = std::lower_bound(entry.local_writes.begin(), entry.local_writes.end(), lo,
                                 [](const auto& write, Key k) { return write.first < k; });
      if (it != entry.local_writes.end() && it->first <= hi) keep(entry);
      for (; it != entry.local_writes.end() && it->first <= hi; ++it) {
        task->scan_values[s][it->first] = {
            !it->second->deleted(),
            it->second->deleted() ? std::string_view() : std::string_view(it->second->value())};
      }
    }
  }
  std::sort(task->read_from.begin(), task->read_from.end());
  task->read_from.erase(std::unique(task->read_from.begin(), task->read_from.end()),
                        task->read_from.end());
}

void LtxLane::ServeWhenPublished(std::unique_ptr<LtxReadTask> task) {
  if (task->snapshot <= published_) {
    executor_.Serve(std::move(*task));
    return;
  }
  // A reader's snapshot is an admitted epoch everywhere it is served (an
  // LTX's begin epoch: EndEpoch came first; a long scan's RO snapshot): a
  // key no txn of that epoch or before still locks has its final value
  // there (docs/ltx.md, "Publication around LTXs in place"). A task of keys
  // only is split: the settled keys are read now, the others wait. A task
  // with scans goes as a whole once every key of its ranges settled.
  if (settled_ && task->scans.empty()) {
    LtxReadTask now;
    auto later = std::make_unique<LtxReadTask>();
    for (LtxReadTask* part : {&now, later.get()}) {
      part->ltx = task->ltx;
      part->round = task->round;
      part->reply_to = task->reply_to;
      part->snapshot = task->snapshot;
      part->read_from = task->read_from;
      part->records = task->records;
    }
    for (size_t i = 0; i < task->keys.size(); ++i) {
      LtxReadTask* part =
          task->key_chosen[i] || settled_(task->keys[i], task->snapshot) ? &now : later.get();
      part->keys.push_back(task->keys[i]);
      part->key_values.push_back(task->key_values[i]);
      part->key_chosen.push_back(task->key_chosen[i]);
    }
    if (!now.keys.empty()) executor_.Serve(std::move(now));
    if (later->keys.empty()) return;
    task = std::move(later);
  } else if (Settled(task.get())) {
    executor_.Serve(std::move(*task));
    return;
  }
  const Epoch snapshot = task->snapshot;
  task->waiting_since_us = NowMicros();
  unpublished_.emplace(snapshot, std::move(task));
}

bool LtxLane::Settled(LtxReadTask* task) const {
  if (!settled_) return false;
  // Keys settle for good (every txn of the snapshot's epoch or before asked
  // for its locks already), so each check goes on from where the last one
  // stopped.
  while (task->settled_keys < task->keys.size() &&
         (task->key_chosen[task->settled_keys] ||
          settled_(task->keys[task->settled_keys], task->snapshot))) {
    ++task->settled_keys;
  }
  if (task->settled_keys < task->keys.size()) return false;
  // Only this partition's keys of a range can be locked here: the check
  // steps over the others. Ranges with too many of them in all (CH's
  // queries: millions, each a lock-table probe on this thread, which the
  // short txns wait for) wait for publication instead.
  const uint64_t partitions = options_.partitions;
  auto first_here = [&](Key lo) {
    return FirstKeyOn(lo, options_.partition, options_.partitions);
  };
  auto keys_here = [&](const KeyRange& scan) -> uint64_t {
    if (scan.hi() < scan.lo()) return 0;
    const Key first = first_here(scan.lo());
    return first < scan.lo() || first > scan.hi() ? 0 : (scan.hi() - first) / partitions + 1;
  };
  if (task->settled_scans == 0 && task->settled_in_scan == 0) {
    uint64_t keys = 0;
    for (const KeyRange& scan : task->scans) keys += keys_here(scan);
    if (keys >= kMaxSettledScanKeys) return false;
  }
  for (; task->settled_scans < task->scans.size();
       ++task->settled_scans, task->settled_in_scan = 0) {
    const KeyRange& scan = task->scans[task->settled_scans];
    const uint64_t width = keys_here(scan);
    const Key first = first_here(scan.lo());
    while (task->settled_in_scan < width) {
      if (!settled_(first + task->settled_in_scan * partitions, task->snapshot)) return false;
      ++task->settled_in_scan;
    }
  }
  return true;
}

void LtxLane::RecordWait(int stage, int64_t since_us) {
  stats_->worker(stats_slot_).ltx_stage_us[stage].RecordElapsed(NowMicros() - since_us);
}

void LtxLane::OnPublish(Epoch published) {
  published_ = published;
  // A long scan's clock starts when its snapshot is readable here.
  for (auto& [id, clock] : scans_here_) {
    if (clock.readable_at == 0 && clock.snapshot <= published) clock.readable_at = current_epoch_;
  }
  while (!unpublished_.empty() && unpublished_.begin()->first <= published) {
    if (!unpublished_.begin()->second->long_scan) {
      RecordWait(kLtxSnapshotWait, unpublished_.begin()->second->waiting_since_us);
    }
    executor_.Serve(std::move(*unpublished_.begin()->second));
    unpublished_.erase(unpublished_.begin());
  }
}

void LtxLane::ServeSettled() {
  if (!locked_waiting_.empty()) RunReadyLockedRuns();
  if (!settled_) return;
  for (auto it = unpublished_.begin(); it != unpublished_.end();) {
    LtxReadTask& task = *it->second;
    if (!Settled(&task)) {
      ++it;
      continue;
    }
    if (!task.long_scan) RecordWait(kLtxSnapshotWait, task.waiting_since_us);
    executor_.Serve(std::move(task));
    it = unpublished_.erase(it);
  }
}

void LtxLane::ReplyError(const LtxReadRequest& request, const std::string& error) {
  ReplyError(request.ltx_id(), request.round(), request.from_partition(), error);
}

void LtxLane::ReplyError(TxnId ltx, uint32_t round, PartitionId reply_to,
                         const std::string& error) {
  if (!options_.runs_procedures) return;
  LtxReadReply reply;
  reply.set_ltx_id(ltx);
  reply.set_round(round);
  reply.set_from_partition(options_.partition);
  reply.set_error(error);
  if (reply_to == options_.partition) {
    executor_.OnReply(std::move(reply));
  } else if (reply_to < options_.partitions && peers_) {
    peers_->SendLtxReadReply(reply_to, reply);
  }
}

void LtxLane::OnReadRequest(LtxReadRequest&& request) {
  const TxnId id = request.ltx_id();
  Entry* entry = Find(id);
  if (!entry || !entry->pending_known) {
    // An origin runs ahead of a participant by the epochs in flight, not
    // more: a request from further ahead is garbage and is dropped.
    constexpr Epoch kMaxAhead = 100000;
    if (TxnEpoch(id) > ended_epoch_ + kMaxAhead) {
      LOG_EVERY_N(ERROR, 100) << "partition " << options_.partition
                              << ": dropped a read request for LTX " << TxnIdString(id)
                              << ", far beyond epoch " << ended_epoch_;
      return;
    }
    if (TxnEpoch(id) > ended_epoch_ || (entry && !entry->pending_known)) {
      early_requests_[id].push_back(std::move(request));  // it has not begun here yet
    }
    // Otherwise it never began (busy) or is long resolved: nobody waits.
    return;
  }
  if (!Running(*entry)) return;  // resolved
  if (restored_ && entry->begin_epoch < restored_at_) {
    // Its snapshot predates the checkpoint this partition restarted from.
    ReplyError(request, "it restarted from a checkpoint at epoch " +
                            std::to_string(restored_at_) + " and no longer holds snapshot " +
                            std::to_string(entry->begin_epoch) + "; try again");
    return;
  }
  ServeRequest(std::move(request));
}

void LtxLane::ServeRequest(LtxReadRequest&& request) {
  const Entry& entry = ltxs_.at(request.ltx_id());
  ReadPlan plan;
  plan.snapshot = entry.begin_epoch;
  plan.pending = &entry.pending;
  auto make_task = [&] {
    auto task = std::make_unique<LtxReadTask>();
    task->ltx = request.ltx_id();
    task->round = request.round();
    task->reply_to = request.from_partition();
    task->snapshot = entry.begin_epoch;
    return task;
  };
  // What no pending LTX covers is served now; the rest waits for the LTXs
  // whose areas hold it (the scans as a whole: they answer in one piece).
  auto ready = make_task();
  auto waiting = make_task();
  std::vector<TxnId> covering;
  for (Key key : request.keys()) {
    (KeyCoveredUnresolved(key, plan, &covering) ? waiting : ready)->keys.push_back(key);
  }
  bool scans_wait = false;
  for (const KeyRange& scan : request.scans()) {
    scans_wait |= RangeCoveredUnresolved(scan.lo(), scan.hi(), plan, &covering);
  }
  LtxReadTask* scans = scans_wait ? waiting.get() : ready.get();
  scans->scans.assign(request.scans().begin(), request.scans().end());
  // A scan the procedure summarizes (Application::SummarizesScans) is
  // pushed down here too: the share's summary goes back, not its rows.
  if (!scans->scans.empty() && entry.begin && app_->SummarizesScans(*entry.begin)) {
    scans->scan_txn = entry.begin;
  }
  if (!ready->keys.empty() || !ready->scans.empty()) {
    PrepareTask(ready.get(), plan);
    ServeWhenPublished(std::move(ready));
  }
  if (covering.empty()) return;
  const uint64_t waiter = next_waiter_++;
  waiting->waiting_since_us = NowMicros();
  ParkedRead& read = parked_[waiter];
  read.task = std::move(waiting);
  read.ltx_pending = entry.pending;
  read.waiting = static_cast<uint32_t>(covering.size());
  ParkOn(covering, waiter);
}

void LtxLane::StartScanShare(const TxnWork& work) {
  const Txn& txn = *work.txn;
  const Epoch snapshot = work.read_version;
  if (!options_.runs_procedures) return;  // only replica 0 answers clients
  auto record = std::make_shared<const Txn>(txn);
  if (txn.origin_partition() == options_.partition && Acts(work.epoch->epoch)) {
    executor_.StartScan(record, snapshot);
    scans_here_[txn.id()] = ScanClock{snapshot, snapshot <= published_ ? current_epoch_ : 0};
  }
  auto task = std::make_unique<LtxReadTask>();
  task->ltx = txn.id();
  task->round = 1;
  task->reply_to = txn.origin_partition() < options_.partitions ? txn.origin_partition() : 0;
  task->snapshot = snapshot;
  task->scans.assign(txn.ltx().read_area().begin(), txn.ltx().read_area().end());
  task->long_scan = true;
  if (app_->SummarizesScans(txn)) task->scan_txn = std::move(record);
  scan_share_of_[txn.id()] = snapshot;
  ReadPlan plan;
  plan.snapshot = snapshot;
  std::vector<TxnId> covering;
  for (const KeyRange& scan : task->scans) {
    RangeCoveredUnresolved(scan.lo(), scan.hi(), plan, &covering);
  }
  if (!covering.empty()) {
    const uint64_t waiter = next_waiter_++;
    ParkedRead& read = parked_[waiter];
    read.task = std::move(task);
    read.waiting = static_cast<uint32_t>(covering.size());
    ParkOn(covering, waiter);
    return;
  }
  PrepareTask(task.get(), plan);
  ServeWhenPublished(std::move(task));
}

void LtxLane::OnScanServed(TxnId id) {
  scan_share_of_.erase(id);
  // The origin's tracking of its scan ends with its result or its timeout.
}

bool LtxLane::HoldsPublication(Epoch epoch) const {
  // LTXs are placed in begin order, so the first placed is the earliest.
  return !placed_.empty() && ltxs_.at(*placed_.begin()).resolved_epoch <= epoch;
}

bool LtxLane::LockedRunHoldsPublication(Epoch epoch) const {
  for (TxnId id : placed_) {
    const Entry& entry = ltxs_.at(id);
    if (entry.resolved_epoch > epoch) return false;  // in begin order: none later either
    if (entry.locked_run) return true;
  }
  return false;
}

bool LtxLane::SnapshotReaderUnresolved() const {
  bool found = false;
  ForEachRunning([&](const Entry& entry) { found = found || !entry.locked_run; });
  return found;
}

size_t LtxLane::unresolved_here() const {
  size_t count = scans_here_.size();
  ForEachRunning([&](const Entry& entry) { count += entry.origin_here ? 1 : 0; });
  return count;
}

// ------------------------------------------------------------ GC

void LtxLane::CollectPins(std::vector<Epoch>* pins) const {
  // An LTX reads its snapshot on every partition: its reads are not declared.
  ForEachRunning([&](const Entry& entry) { pins->push_back(entry.begin_epoch); });
  for (const auto& [waiter, read] : parked_) {
    pins->push_back(read.work ? read.work->read_version : read.task->snapshot);
  }
  for (const auto& [snapshot, task] : unpublished_) pins->push_back(snapshot);
  for (const auto& [id, snapshot] : scan_share_of_) pins->push_back(snapshot);
  // Reads handed to the LTX threads, whose LTX may have resolved since.
  executor_.ServingSnapshots(pins);
}

void LtxLane::Forget(Epoch read_only_snapshot) {
  Epoch needed = read_only_snapshot;
  std::vector<Epoch> pins;
  CollectPins(&pins);
  for (Epoch pin : pins) needed = std::min(needed, pin);
  // A resolved LTX matters to readers whose snapshot is before its
  // resolution; none is left below `needed`.
  for (auto it = ltxs_.begin(); it != ltxs_.end();) {
    const Entry& entry = it->second;
    const bool resolved = entry.state == State::kInstalled || entry.state == State::kAborted;
    if (resolved && entry.resolved_epoch <= needed && !waiters_.count(entry.id)) {
      DropWrites(entry);
      it = ltxs_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace paxflow
