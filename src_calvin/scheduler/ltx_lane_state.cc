// The LTX lane across checkpoints and restarts: SaveState, RestoreState and
// what a restored lane does once its replay is over (ltx_lane.h).
#include <glog/logging.h>

#include "common/hash.h"
#include "scheduler/ltx_lane.h"

namespace paxflow {
namespace {

constexpr uint32_t kLtxStateFormat = 1;

void SavePosition(const SerialPosition& position, LtxStatePosition* out) {
  out->set_epoch(position.epoch);
  out->set_anchor(position.anchor);
  out->set_chain(position.chain);
  out->set_txn(position.txn);
}

SerialPosition PositionOf(const LtxStatePosition& saved) {
  return SerialPosition{saved.epoch(), saved.anchor(), saved.chain(), saved.txn()};
}

}  // namespace

// ------------------------------------------------------------ saving

bool LtxLane::SaveStateReady() const {
  for (const auto& [waiter, read] : parked_) {
    if (read.work && read.snapshot_reads.empty() && read.work->read_version > published_) {
      return false;
    }
  }
  return true;
}

void LtxLane::SaveSnapshotReads(const TxnWork& work, LtxStateParkedRead* out) const {
  if (!store_->multi_version()) return;
  if (work.read_version > published_) {
    LOG(ERROR) << "partition " << options_.partition << ": LTX lane state saved before snapshot "
               << work.read_version << " of parked RO " << TxnIdString(work.txn->id())
               << " was published (published: " << published_
               << "); after a restart it reads the checkpoint's state";
    return;
  }
  const Txn& txn = *work.txn;
  store_->EnterSnapshot(store_slot_);
  uint32_t position = 0;
  auto read = [&](Key key) {
    if (PartitionOf(key, options_.partitions) == options_.partition) {
      std::string_view value;
      const bool found = store_->ReadAt(store_slot_, key, work.read_version, &value);
      out->add_snapshot_positions(position);
      out->add_snapshot_found(found);
      out->add_snapshot_values(found ? std::string(value) : std::string());
    }
    ++position;
  };
  for (Key key : txn.read_set()) read(key);
  for (Key key : txn.read_write_set()) read(key);
  store_->ExitSnapshot(store_slot_);
}

std::string LtxLane::SaveState(const std::vector<LtxReadRequest>& unread) const {
  LtxLaneState state;
  state.set_format(kLtxStateFormat);
  state.set_partition(options_.partition);
  state.set_partitions(options_.partitions);
  state.set_ended_epoch(ended_epoch_);
  state.set_current_epoch(current_epoch_);
  state.set_published(published_);
  state.set_next_waiter(next_waiter_);
  for (const auto& [id, entry] : ltxs_) {
    LtxStateEntry* saved = state.add_ltxs();
    *saved->mutable_begin() = *entry.begin;
    // An LTX in place not placed yet runs again after a restart.
    if (entry.commit && !(options_.in_place && entry.state == State::kActive)) {
      *saved->mutable_commit() = *entry.commit;
    }
    saved->set_state(entry.state == State::kActive      ? LtxStateEntry::ACTIVE
                     : entry.state == State::kHeld      ? LtxStateEntry::HELD
                     : entry.state == State::kInstalled ? LtxStateEntry::INSTALLED
                     : entry.state == State::kPlaced    ? LtxStateEntry::PLACED
                                                        : LtxStateEntry::ABORTED);
    saved->set_begin_epoch(entry.begin_epoch);
    saved->set_resolved_epoch(entry.resolved_epoch);
    saved->mutable_pending()->Add(entry.pending.begin(), entry.pending.end());
    saved->set_pending_known(entry.pending_known);
    saved->set_origin_here(entry.origin_here);
  }
  for (const auto& [waiter, deferred] : deferred_) {
    LtxStateDeferred* saved = state.add_deferred();
    saved->set_waiter(waiter);
    *saved->mutable_txn() = *deferred.work->txn;
    SavePosition(deferred.work->position, saved->mutable_position());
    saved->set_deferrals(deferred.work->deferrals);
    saved->set_set_aside_us(deferred.work->set_aside_us);
    saved->set_waiting(deferred.waiting);
    saved->set_guarded(deferred.guarded);
  }
  auto owe = [&](TxnId ltx, uint32_t round, PartitionId reply_to) {
    LtxStateOwedRead* owed = state.add_owed();
    owed->set_ltx_id(ltx);
    owed->set_round(round);
    owed->set_reply_to(reply_to);
  };
  for (const auto& [waiter, read] : parked_) {
    if (read.task) {  // an LTX's reads or a scan's share: owed, not kept
      owe(read.task->ltx, read.task->round, read.task->reply_to);
      continue;
    }
    LtxStateParkedRead* saved = state.add_parked();
    saved->set_waiter(waiter);
    *saved->mutable_txn() = *read.work->txn;
    saved->set_read_version(read.work->read_version);
    SavePosition(read.work->position, saved->mutable_position());
    saved->set_set_aside_us(read.work->set_aside_us);
    saved->set_waiting(read.waiting);
    if (!read.snapshot_reads.empty()) {  // restored before: the store is no help
      for (const ReadOverride& value : read.snapshot_reads) {
        saved->add_snapshot_positions(value.position);
        saved->add_snapshot_found(value.found);
        saved->add_snapshot_values(value.value);
      }
    } else {
      SaveSnapshotReads(*read.work, saved);
    }
  }
  for (const auto& [ltx, waiters] : waiters_) {
    LtxStateWaiters* saved = state.add_waiters();
    saved->set_ltx(ltx);
    for (uint64_t waiter : waiters) {
      auto parked = parked_.find(waiter);
      if (parked != parked_.end() && parked->second.task) continue;  // owed, not kept
      saved->add_waiters(waiter);
    }
    if (saved->waiters_size() == 0) state.mutable_waiters()->RemoveLast();
  }
  for (const Guard& guard : guards_) {
    LtxStateGuard* saved = state.add_guards();
    guard.keys.AppendTo(saved->mutable_keys());
    saved->mutable_waiting_on()->Add(guard.waiting_on.begin(), guard.waiting_on.end());
  }
  for (const auto& [snapshot, task] : unpublished_) owe(task->ltx, task->round, task->reply_to);
  for (const auto& [id, requests] : early_requests_) {
    for (const LtxReadRequest& request : requests) *state.add_early_requests() = request;
  }
  for (const LtxReadTask& task : executor_.QueuedServes()) {
    owe(task.ltx, task.round, task.reply_to);
  }
  for (const OwedRead& read : owed_) owe(read.ltx, read.round, read.reply_to);
  for (const LtxReadRequest& request : unread_) *state.add_unread_requests() = request;
  for (const LtxReadRequest& request : unread) *state.add_unread_requests() = request;
  outcomes_.Save(&state);

  LtxLaneStateFile file;
  file.set_state(state.SerializeAsString());
  file.set_hash(HashBytes(file.state()));
  return file.SerializeAsString();
}

// ------------------------------------------------------------ restoring

bool LtxLane::RestoreState(const std::string& bytes, std::string* error) {
  auto fail = [&](const std::string& why) {
    *error = "LTX lane state of partition " + std::to_string(options_.partition) +
             " refused: " + why;
    return false;
  };
  if (restored_ || !ltxs_.empty() || !deferred_.empty() || !parked_.empty() ||
      ended_epoch_ != 0) {
    return fail("the lane is not fresh (restore before any epoch runs)");
  }
  LtxLaneStateFile file;
  if (!file.ParseFromString(bytes)) return fail("not an LTX lane state (it does not parse)");
  if (file.hash() != HashBytes(file.state())) {
    return fail("its hash does not match its bytes (truncated or garbled)");
  }
  LtxLaneState state;
  if (!state.ParseFromString(file.state())) return fail("the state inside does not parse");
  if (state.format() != kLtxStateFormat) {
    return fail("format " + std::to_string(state.format()) + ", this build reads format " +
                std::to_string(kLtxStateFormat));
  }
  if (state.partition() != options_.partition || state.partitions() != options_.partitions) {
    return fail("it was saved by partition " + std::to_string(state.partition()) + " of " +
                std::to_string(state.partitions()) + ", not partition " +
                std::to_string(options_.partition) + " of " +
                std::to_string(options_.partitions));
  }

  // Everything is checked before anything is taken, so a refused state
  // leaves the lane fresh.
  std::set<TxnId> ids, unresolved;
  TxnId previous = 0;
  for (const LtxStateEntry& saved : state.ltxs()) {
    const TxnId id = saved.begin().id();
    if (saved.begin().txn_class() != LTX || saved.begin().ltx().kind() != LTX_BEGIN) {
      return fail("LTX " + TxnIdString(id) + " has no begin record");
    }
    if (!ids.empty() && id <= previous) return fail("its LTXs are not in begin order");
    previous = id;
    ids.insert(id);
    const bool needs_commit =
        saved.state() == LtxStateEntry::HELD || saved.state() == LtxStateEntry::INSTALLED;
    if (needs_commit && !saved.has_commit()) {
      return fail("LTX " + TxnIdString(id) + " is installed or held without a commit record");
    }
    if (saved.has_commit() && (saved.commit().ltx().kind() != LTX_COMMIT ||
                               saved.commit().ltx().ltx_id() != id)) {
      return fail("LTX " + TxnIdString(id) + " carries another LTX's commit record");
    }
    if (saved.state() == LtxStateEntry::ACTIVE || saved.state() == LtxStateEntry::HELD) {
      unresolved.insert(id);
    } else if (saved.state() != LtxStateEntry::INSTALLED &&
               saved.state() != LtxStateEntry::ABORTED &&
               !(saved.state() == LtxStateEntry::PLACED && options_.in_place)) {
      return fail("LTX " + TxnIdString(id) + " has an unknown state");
    }
  }
  // Each waiter waits for exactly as many LTXs as list it, all unresolved.
  std::map<uint64_t, uint32_t> listed;
  for (const LtxStateWaiters& waiters : state.waiters()) {
    if (!unresolved.count(waiters.ltx())) {
      return fail("readers wait for LTX " + TxnIdString(waiters.ltx()) +
                  ", which is not unresolved");
    }
    for (uint64_t waiter : waiters.waiters()) ++listed[waiter];
  }
  std::set<uint64_t> waiter_ids;
  auto check_waiter = [&](uint64_t waiter, uint32_t waiting, const Txn& txn) {
    if (waiter == 0 || waiter >= state.next_waiter() || !waiter_ids.insert(waiter).second) {
      return fail("waiter " + std::to_string(waiter) + " is out of range or repeated");
    }
    if (waiting == 0 || listed[waiter] != waiting) {
      return fail("txn " + TxnIdString(txn.id()) + " waits for " + std::to_string(waiting) +
                  " LTXs but is listed by " + std::to_string(listed[waiter]));
    }
    return true;
  };
  for (const LtxStateDeferred& saved : state.deferred()) {
    if (saved.txn().txn_class() != RW) {
      return fail("deferred txn " + TxnIdString(saved.txn().id()) + " is not a read-write txn");
    }
    if (!check_waiter(saved.waiter(), saved.waiting(), saved.txn())) return false;
  }
  for (const LtxStateParkedRead& saved : state.parked()) {
    if (saved.txn().txn_class() != RO) {
      return fail("parked txn " + TxnIdString(saved.txn().id()) + " is not a read-only txn");
    }
    if (saved.snapshot_positions_size() != saved.snapshot_found_size() ||
        saved.snapshot_positions_size() != saved.snapshot_values_size()) {
      return fail("parked txn " + TxnIdString(saved.txn().id()) + " has misshapen reads");
    }
    if (!check_waiter(saved.waiter(), saved.waiting(), saved.txn())) return false;
  }
  for (const auto& [waiter, count] : listed) {
    if (!waiter_ids.count(waiter)) {
      return fail("waiter " + std::to_string(waiter) + " is listed but not saved");
    }
  }
  for (const LtxReadRequest& request : state.early_requests()) {
    if (TxnEpoch(request.ltx_id()) <= state.ended_epoch() ||
        request.from_partition() >= options_.partitions) {
      return fail("an early read request for LTX " + TxnIdString(request.ltx_id()) +
                  " is not for an LTX after the checkpoint");
    }
  }
  for (const LtxReadRequest& request : state.unread_requests()) {
    if (request.from_partition() >= options_.partitions) {
      return fail("an unread read request for LTX " + TxnIdString(request.ltx_id()) +
                  " comes from partition " + std::to_string(request.from_partition()) +
                  ", beyond the " + std::to_string(options_.partitions) + " partitions");
    }
  }
  for (const LtxStateOwedRead& owed : state.owed()) {
    if (owed.reply_to() >= options_.partitions) {
      return fail("a read is owed to partition " + std::to_string(owed.reply_to()) +
                  ", beyond the " + std::to_string(options_.partitions) + " partitions");
    }
  }
  // The outcomes of LTXs begun under request ids (a state saved before the
  // table existed holds none: retries of those LTXs are told so).
  const std::string outcomes_error = outcomes_.Load(state);
  if (!outcomes_error.empty()) return fail(outcomes_error);

  // Take it.
  for (const LtxStateEntry& saved : state.ltxs()) {
    const TxnId id = saved.begin().id();
    Entry& entry = ltxs_[id];
    entry.id = id;
    entry.begin_epoch = saved.begin_epoch();
    entry.begin = std::make_shared<const Txn>(saved.begin());
    entry.area = KeyArea(entry.begin->ltx().write_area());
    // PLACED: its install is in the restored store.
    entry.state = saved.state() == LtxStateEntry::ACTIVE      ? State::kActive
                  : saved.state() == LtxStateEntry::HELD      ? State::kHeld
                  : saved.state() == LtxStateEntry::INSTALLED ? State::kInstalled
                  : saved.state() == LtxStateEntry::PLACED    ? State::kInstalled
                                                              : State::kAborted;
    entry.resolved_epoch = saved.resolved_epoch();
    if (saved.has_commit()) {
      entry.commit = std::make_shared<const Txn>(saved.commit());
      TakeLocalWrites(&entry, entry.commit);
    }
    entry.pending.assign(saved.pending().begin(), saved.pending().end());
    std::sort(entry.pending.begin(), entry.pending.end());
    entry.pending_known = saved.pending_known();
    entry.origin_here = saved.origin_here();
    if (unresolved.count(id)) {
      unresolved_.insert(id);
      if (!options_.in_place) areas_.Add(id, entry.area);
      if (options_.in_place) {
        // Its procedure's run went with the old process: it runs again, at
        // the same snapshot (the checkpoint's epoch or later).
        entry.area.KeysOn(options_.partition, options_.partitions, options_.max_locked_keys,
                          &entry.lock_keys);
        PlanLockedRun(&entry);
        if (entry.pending_known) StartInPlace(entry);
      }
    }
    // Installs happened in LTX order on each key (an overlapping earlier
    // LTX holds a later one back), so readers' lists come out as live.
    if (entry.state == State::kInstalled) {
      IndexWrites(&entry);
    }
  }
  for (const LtxStateDeferred& saved : state.deferred()) {
    auto work = std::make_unique<TxnWork>();
    work->owned_txn = std::make_unique<Txn>(saved.txn());
    work->txn = work->owned_txn.get();
    work->kind = kKindReadWrite;
    planner_.Plan(work.get());
    work->position = PositionOf(saved.position());
    work->deferrals = saved.deferrals();
    work->set_aside_us = saved.set_aside_us();
    Deferred& deferred = deferred_[saved.waiter()];
    deferred.work = std::move(work);
    deferred.waiting = saved.waiting();
    deferred.guarded = saved.guarded();
  }
  for (const LtxStateParkedRead& saved : state.parked()) {
    auto work = std::make_unique<TxnWork>();
    work->owned_txn = std::make_unique<Txn>(saved.txn());
    work->txn = work->owned_txn.get();
    work->kind = kKindReadOnly;
    work->snapshot_read = true;
    work->read_version = saved.read_version();
    planner_.Plan(work.get());
    // Its client went with the old process: it still reads for the other
    // participants, but reports no result here, nor waits for their reads
    // (nobody sends a read-only txn's reads again).
    if (work->origin) {
      work->executor = false;
      work->remote_reads_expected = 0;
      work->expected_readers.clear();
    }
    work->origin = false;
    work->position = PositionOf(saved.position());
    work->set_aside_us = saved.set_aside_us();
    ParkedRead& read = parked_[saved.waiter()];
    read.work = std::move(work);
    read.waiting = saved.waiting();
    for (int i = 0; i < saved.snapshot_positions_size(); ++i) {
      ReadOverride value;
      value.position = saved.snapshot_positions(i);
      value.found = saved.snapshot_found(i);
      value.value = saved.snapshot_values(i);
      read.snapshot_reads.push_back(std::move(value));
    }
    std::sort(read.snapshot_reads.begin(), read.snapshot_reads.end(),
              [](const ReadOverride& a, const ReadOverride& b) { return a.position < b.position; });
  }
  for (const LtxStateWaiters& saved : state.waiters()) {
    waiters_[saved.ltx()].assign(saved.waiters().begin(), saved.waiters().end());
  }
  for (const LtxStateGuard& saved : state.guards()) {
    Guard guard;
    guard.keys = KeyArea(saved.keys());
    guard.waiting_on.insert(saved.waiting_on().begin(), saved.waiting_on().end());
    if (!guard.waiting_on.empty()) guards_.push_back(std::move(guard));
  }
  for (const LtxStateOwedRead& saved : state.owed()) {
    owed_.push_back(OwedRead{saved.ltx_id(), saved.round(), saved.reply_to()});
  }
  for (const LtxReadRequest& request : state.early_requests()) {
    early_requests_[request.ltx_id()].push_back(request);
  }
  unread_.assign(state.unread_requests().begin(), state.unread_requests().end());
  ended_epoch_ = state.ended_epoch();
  current_epoch_ = state.current_epoch();
  published_ = state.published();
  next_waiter_ = state.next_waiter();
  restored_ = true;
  restored_at_ = ended_epoch_;
  replay_through_ = std::max(replay_through_, ended_epoch_);
  restart_pending_ = true;
  LOG(INFO) << "partition " << options_.partition << ": LTX lane restored at epoch "
            << restored_at_ << ": " << unresolved_.size() << " unresolved LTXs, "
            << deferred_.size() << " deferred txns, " << parked_.size() << " parked readers, "
            << guards_.size() << " guards, " << owed_.size() << " reads owed, " << unread_.size()
            << " read requests to take up";
  return true;
}

// ------------------------------------------------------------ after a restart

void LtxLane::AnswerOwedReads() {
  for (const OwedRead& read : owed_) {
    ReplyError(read.ltx, read.round, read.reply_to,
               "it restarted from a checkpoint at epoch " + std::to_string(restored_at_) +
                   " and lost the reads it owed; try again");
  }
  owed_.clear();
  // Requests that had come and were not taken up: served if their snapshot
  // is still here, else refused retryably (OnReadRequest).
  std::vector<LtxReadRequest> unread;
  unread.swap(unread_);
  for (LtxReadRequest& request : unread) OnReadRequest(std::move(request));
}

size_t LtxLane::AbortOrphans(Epoch before, int reason, const std::string& why) {
  size_t aborted = 0;
  for (TxnId id : unresolved_) {
    const Entry& entry = ltxs_.at(id);
    // One in place runs on every replica, from its begin: nothing lost its
    // state, and its install needs no record.
    if (!entry.origin_here || entry.state != State::kActive || options_.in_place ||
        entry.begin_epoch >= before) {
      continue;
    }
    records_->SubmitRecord(LtxAbortRecord(*entry.begin, reason, why));
    ++aborted;
  }
  return aborted;
}

size_t LtxLane::GuardAgain() {
  size_t guarded = 0;
  for (const auto& [waiter, deferred] : deferred_) {
    const Txn& txn = *deferred.work->txn;
    if (!deferred.guarded && deferred.work->deferrals >= options_.ltx_max_deferrals &&
        planner_.LowestParticipant(txn) == options_.partition) {
      SubmitGuard(txn);
      ++guarded;
    }
  }
  return guarded;
}

void LtxLane::AfterRestart(Epoch epoch) {
  restart_pending_ = false;
  // Replicated input: a restarted node follows; the leader that takes the
  // partition over aborts what the restart orphaned (TakeOver).
  if (!Acts(epoch) || !records_) return;
  // An LTX begun here with no commit record lost its procedure's state (and
  // its snapshot) with the old process: abort it through the log. A commit
  // record sequenced before the restart and delivered later still wins if
  // it comes first: the first of commit and abort wins.
  const size_t aborted = AbortOrphans(
      epoch, kAbortRestart,
      "its origin partition " + std::to_string(options_.partition) + " restarted (" +
          (restored_ ? "from a checkpoint at epoch " + std::to_string(restored_at_)
                     : std::string("with no checkpoint")) +
          ") before it committed; try again");
  // The guards the log owes: a guard submitted before the restart may not
  // have been sequenced. A duplicate is harmless.
  const size_t guarded = GuardAgain();
  LOG(INFO) << "partition " << options_.partition << ": after the restart (epoch " << epoch
            << "), sequencing the abort of " << aborted << " LTXs begun here and " << guarded
            << " guards";
}

void LtxLane::TakeOver(Epoch epoch) {
  const Epoch from = origin_from_.load();
  if (from == 0 || from == taken_over_from_ || epoch < from || !Acts(epoch) || !records_) return;
  taken_over_from_ = from;
  // Every LTX of this partition begun before `from` was begun by an earlier
  // leader (this node in an earlier term included): its procedure runs, if
  // at all, where nothing can sequence its commit record any more. Each is
  // aborted by a record of this leader's, which the log orders: a commit
  // record the old leader got committed first wins, as always. The set is
  // read from the lane's state at `from`, a function of the log through
  // from - 1; only the timing of the records depends on this node.
  const size_t aborted = AbortOrphans(
      from, kAbortFailover,
      "its origin partition " + std::to_string(options_.partition) +
          "'s consensus group changed leader before it committed (the new leader sequences "
          "from epoch " + std::to_string(from) + "); try again");
  const size_t guarded = GuardAgain();
  LOG(INFO) << "partition " << options_.partition << ": leads from epoch " << from
            << ": sequencing the abort of " << aborted << " LTXs begun under earlier leaders and "
            << guarded << " guards";
}

}  // namespace paxflow
