#include "scheduler/worker.h"

#include <glog/logging.h>

#include <algorithm>

#include "applications/long_run.h"
#include "common/clock.h"
#include "common/key_area.h"
#include "scheduler/ltx_executor.h"

namespace paxflow {
namespace {

// One write of an LTX's commit record, into the store at `epoch`.
void ApplyLtxWrite(Store* store, size_t slot, const LtxWrite& write, Epoch epoch) {
  if (write.deleted()) {
    store->Delete(slot, write.key(), epoch);
  } else {
    store->Write(slot, write.key(), write.value(), epoch);
  }
}

// Reading a run of keys, the store's cache misses overlap: the records of
// the first kRecordAhead keys are asked up front, then, as the i-th key is
// read, the record kRecordAhead keys ahead and the value kValueAhead ahead.
constexpr size_t kRecordAhead = 16, kValueAhead = 8;

template <typename KeyAt>
void PrefetchFirstRecords(Store* store, size_t total, const KeyAt& key_at) {
  for (size_t i = 0; i < std::min(total, kRecordAhead); ++i) store->Prefetch(key_at(i), 1);
}

template <typename KeyAt>
void PrefetchAhead(Store* store, size_t i, size_t total, const KeyAt& key_at) {
  if (i + kRecordAhead < total) store->Prefetch(key_at(i + kRecordAhead), 1);
  if (i + kValueAhead < total) store->Prefetch(key_at(i + kValueAhead), 2);
}

// Keys 0..total-1 visited in order with their cache misses overlapped (an
// LTX's thousands of reads or writes): `visit(i)` reads or writes the i-th
// key, and returns false to stop.
template <typename KeyAt, typename Visit>
void VisitPrefetched(Store* store, size_t total, const KeyAt& key_at, const Visit& visit) {
  PrefetchFirstRecords(store, total, key_at);
  for (size_t i = 0; i < total; ++i) {
    PrefetchAhead(store, i, total, key_at);
    if (!visit(i)) return;
  }
}

}  // namespace

WorkerPool::WorkerPool(const WorkerOptions& options, Store* store, const Application* app,
                       PeerSender* peers, NodeStats* stats, ResultSink* results,
                       Callbacks callbacks)
    : options_(options),
      store_(store),
      app_(app),
      peers_(peers),
      stats_(stats),
      results_(results),
      callbacks_(std::move(callbacks)) {
  for (uint32_t i = 0; i < options_.workers; ++i) {
    contexts_.push_back(std::make_unique<Context>());
    contexts_.back()->index = i;
    contexts_.back()->store_slot = store_->RegisterThread();
  }
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Start() {
  for (uint32_t i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
}

void WorkerPool::Stop() {
  queue_.Close();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void WorkerPool::Loop(size_t index) {
  Context* context = contexts_[index].get();
  const bool may_run_read_only = options_.ro_workers == 0 || index < options_.ro_workers;
  const size_t takers = options_.workers;
  std::vector<WorkItem> items;
  while (queue_.Pop(may_run_read_only, takers, kMaxTake, &items)) {
    for (const WorkItem& item : items) Execute(item, context);
    // What these finished goes on before the worker takes more: a lock
    // release waits no longer than the few items taken with it.
    HandOnDone(context);
  }
}

void WorkerPool::RunQueued(size_t worker) {
  Context* context = contexts_[worker].get();
  std::vector<WorkItem> items;
  // One at a time, as a lone worker would: work pushed meanwhile to the
  // queue's front runs next.
  while (queue_.TryPop(true, /*takers=*/1, /*max_take=*/1, &items)) {
    for (const WorkItem& item : items) Execute(item, context);
  }
  HandOnDone(context);
}

void WorkerPool::CountDropped(const std::string& what, bool expected) {
  if (expected) {
    repeated_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  dropped_.fetch_add(1, std::memory_order_relaxed);
  LOG_EVERY_N(ERROR, 100) << "partition " << options_.partition << ": " << what;
}

void WorkerPool::DeliverRemoteReads(RemoteReads&& reads, Epoch freed_through) {
  const Epoch runs_in = RunEpochOf(reads);
  // Sent again by a recovering partition, or queued for this one while it
  // was down: a repeat is expected.
  const bool expected = reads.resent() || runs_in <= recovered_through_;
  std::string error;
  TxnWork* complete = nullptr;
  if (runs_in <= freed_through) {
    error = "remote reads for txn " + TxnIdString(reads.txn_id()) + ", whose epoch " +
            std::to_string(runs_in) + " is over here";
  } else {
    complete = remote_reads_.AddRemote(std::move(reads), &error);
  }
  if (!error.empty()) CountDropped(error, expected);
  if (complete) queue_.PushReadWrite(WorkItem{complete, WorkItem::kResume, RunsAlone(*complete)});
}

void WorkerPool::DropRemoteReadsThrough(Epoch epoch) {
  // Reads for txns skipped after a restart, or sent again, are expected.
  size_t expected = 0;
  const size_t stale = remote_reads_.DropThrough(epoch, recovered_through_, &expected) - expected;
  repeated_.fetch_add(expected, std::memory_order_relaxed);
  if (stale > 0) {
    dropped_.fetch_add(stale, std::memory_order_relaxed);
    LOG_EVERY_N(WARNING, 100) << "partition " << options_.partition << " dropped " << stale
                              << " remote read(s) for txns it does not run";
  }
}

void WorkerPool::Execute(const WorkItem& item, Context* context) {
  TxnWork* work = item.work;
  if (work->install) {
    Install(work, context);
    return;
  }
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
    Finish(work, true, context);
    return;
  }
  if (work->remote_reads_expected == 0) {
    RunProcedure(work, reads, context);
    return;
  }
  // Waiting for other partitions: a participant that writes nothing here no
  // longer needs its locks.
  if (!work->writes_here && !work->snapshot_read) Finish(work, false, context);
  std::string dropped;
  const bool complete = remote_reads_.AddLocal(work, &reads, &dropped, NowMicros());
  if (!dropped.empty()) {
    CountDropped("dropped " + dropped, work->epoch->epoch <= recovered_through_);
  }
  if (complete) {
    RunProcedure(work, reads, context);
    context->reads = ReadValues();
  }
}

void WorkerPool::Install(TxnWork* work, Context* context) {
  if (work->install->run_here) {
    RunLocked(work, context);
    return;
  }
  const LtxInstall& install = *work->install;
  const Epoch epoch = work->epoch->epoch;
  VisitPrefetched(store_, install.writes.size(),
                  [&](size_t i) { return install.writes[i]->key(); },
                  [&](size_t i) {
                    ApplyLtxWrite(store_, context->store_slot, *install.writes[i], epoch);
                    return true;
                  });
  if (install.report) {
    if (install.commit_seen_us > 0) {
      stats_->worker(context->index)
          .ltx_stage_us[kLtxInstall]
          .RecordElapsed(NowMicros() - install.commit_seen_us);
    }
    ReadValues none;
    Report(work, install.outcome, none, context);
  }
  Finish(work, true, context);
}

void WorkerPool::RunLocked(TxnWork* work, Context* context) {
  LtxInstall& install = *work->install;
  const Txn& begin = *install.begin;
  const KeyArea area(begin.ltx().write_area());
  const size_t slot = context->store_slot;
  const int64_t start = NowMicros();
  // Every value it reads is the serial one at its position (docs/ltx.md,
  // "Locked run"): its area's newest values (it holds their locks, so
  // every earlier writer has written and no later one can), and its other
  // declared reads at its snapshot, settled there, or as the lane chose.
  // Anything else (an undeclared key, a scan, a runaway) is given back.
  constexpr uint32_t kMaxLockedRounds = 100;
  uint32_t rounds = 0;
  bool give_back = false;
  auto fetch = [&](const std::vector<Key>& keys, const std::vector<KeyRange>& scans,
                   LtxReads* out) -> std::string {
    if (!scans.empty() || ++rounds > kMaxLockedRounds) give_back = true;
    if (give_back) return "given back";
    VisitPrefetched(store_, keys.size(), [&keys](size_t i) { return keys[i]; }, [&](size_t i) {
      const Key key = keys[i];
      std::string_view value;
      bool found;
      if (area.Contains(key)) {
        found = store_->ReadLatest(slot, key, &value);
      } else {
        auto it = std::lower_bound(install.declared.begin(), install.declared.end(), key);
        if (it == install.declared.end() || *it != key) {
          give_back = true;
          return false;
        }
        const size_t at = static_cast<size_t>(it - install.declared.begin());
        if (install.chosen[at]) {
          found = install.chosen_values[at].first;
          value = install.chosen_values[at].second;
        } else {
          found = store_->ReadAt(slot, key, install.snapshot, &value);
        }
      }
      out->SetPoint(key, found, found ? value : std::string_view());
      return true;
    });
    return give_back ? "given back" : "";
  };
  LtxRound last;
  std::string reason;
  store_->EnterSnapshot(slot);
  RunLongProcedure(*app_, begin, fetch, &last, &reason);
  store_->ExitSnapshot(slot);
  if (give_back) {
    install.gave_back = true;
    Finish(work, false, context);
    return;
  }
  // Its writes go in before its locks do, straight from the procedure's
  // output (in order: the last write of a key wins, deletes after every
  // write, as the record would have them). The locks then go at once: the
  // lane's record of the writes (what later LTXs of its epoch read, and its
  // outcome) is built after, and the lane counts the LTX finished only when
  // it arrives (docs/ltx.md, "Locked run").
  const bool commit = reason.empty() && !LowestWriteOutside(last, area);
  const int64_t ran = NowMicros();
  const Epoch epoch = work->epoch->epoch;
  if (commit) {
    VisitPrefetched(store_, last.writes.size(), [&](size_t i) { return last.writes.key(i); },
                    [&](size_t i) {
                      store_->Write(slot, last.writes.key(i), last.writes.value(i), epoch);
                      return true;
                    });
    VisitPrefetched(store_, last.deletes.size(), [&](size_t i) { return last.deletes[i]; },
                    [&](size_t i) {
                      store_->Delete(slot, last.deletes[i], epoch);
                      return true;
                    });
    Finish(work, false, context);  // its locks only; the record follows
  }
  const int64_t installed = NowMicros();
  // The record's thousands of writes live on one arena: whichever thread
  // drops the record last (the scheduler thread, when the lane forgets
  // the LTX, or an LTX thread that read from it) frees a few blocks
  // instead of one allocation per write made here. The first block is
  // sized to the writes, so a small LTX's record, kept until the lane
  // forgets it, stays small.
  const bool outcome_only = commit && !install.keep_writes;
  const size_t kept_writes = outcome_only ? 0 : last.writes.size() + last.deletes.size();
  google::protobuf::ArenaOptions arena_options;
  arena_options.start_block_size =
      std::clamp<size_t>(size_t{128} * kept_writes, size_t{1} << 10, size_t{64} << 10);
  arena_options.max_block_size = size_t{1} << 20;
  auto arena = std::make_shared<google::protobuf::Arena>(arena_options);
  Txn* record = google::protobuf::Arena::CreateMessage<Txn>(arena.get());
  if (outcome_only) {
    LtxCommitOutcome(begin, last.outcome.checksum, record);
  } else if (reason.empty()) {
    LtxFinishRecord(begin, last, area, {}, record);  // an abort if it wrote outside its area
    DCHECK_EQ(commit, record->ltx().kind() == LTX_COMMIT);
  } else {
    // RunLongProcedure's reason names its kind already ("procedure: ...").
    *record = LtxAbortRecord(begin, kAbortProcedure, "");
    record->mutable_ltx()->set_reason(reason);
  }
  install.record = std::shared_ptr<const Txn>(std::move(arena), record);
  if (install.report) {
    WorkerStats& stats = stats_->worker(context->index);
    // Start wait: for its install's locks; reads wait: then for its
    // declared reads to settle (and for a worker).
    stats.ltx_stage_us[kLtxStartWait].RecordElapsed(install.locked_us - install.placed_us);
    stats.ltx_stage_us[kLtxReadWait].RecordElapsed(start - install.locked_us);
    stats.ltx_stage_us[kLtxRun].RecordElapsed(ran - start);
    stats.ltx_stage_us[kLtxInstall].RecordElapsed(installed - ran);
    // An abort is the lane's to report (LtxLane::OnLockedRunDone).
    if (commit) {
      TxnOutcome outcome = install.outcome;
      outcome.checksum = record->ltx().checksum();
      ReadValues none;
      Report(work, outcome, none, context);
    }
  }
  Finish(work, true, context);
}

void WorkerPool::ReadLocal(TxnWork* work, size_t slot, ReadValues* reads) {
  const Txn& txn = *work->txn;
  const uint32_t partitions = options_.partitions;
  const PartitionId self = options_.partition;
  // Stage the cache misses of keys ahead of the one being read (read_set,
  // then read_write_set, as positions go).
  const size_t plain_reads = static_cast<size_t>(txn.read_set_size());
  const size_t total = plain_reads + static_cast<size_t>(txn.read_write_set_size());
  auto key_at = [&](size_t i) {
    return i < plain_reads ? txn.read_set(static_cast<int>(i))
                           : txn.read_write_set(static_cast<int>(i - plain_reads));
  };
  // A short txn fetches every record, then every value, before reading.
  const bool pipelined = work->all_local && total > kRecordAhead;
  if (work->all_local) {
    PrefetchFirstRecords(store_, total, key_at);
    if (!pipelined) {
      for (size_t i = 0; i < total; ++i) store_->Prefetch(key_at(i), 2);
    }
  }
  const std::vector<ReadOverride>& overrides = work->overrides;
  size_t next_override = 0;
  size_t position = 0;
  auto read = [&](Key key) {
    if (pipelined) PrefetchAhead(store_, position, total, key_at);
    // An LTX the reader must see has not installed at its snapshot: take
    // its commit record's value instead (the LTX lane chose it).
    while (next_override < overrides.size() && overrides[next_override].position < position) {
      ++next_override;
    }
    if (next_override < overrides.size() && overrides[next_override].position == position) {
      const ReadOverride& value = overrides[next_override];
      if (value.found) reads->Set(position, value.value);
      else reads->SetMissing(position);
      return;
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

void WorkerPool::SendReads(TxnWork* work, const ReadValues& reads, Context* context) {
  const Txn& txn = *work->txn;
  RemoteReads& message = context->outgoing;
  message.Clear();
  message.set_txn_id(txn.id());
  message.set_from_partition(options_.partition);
  message.set_run_epoch(work->epoch->epoch);
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

void WorkerPool::RunProcedure(TxnWork* work, const ReadValues& reads, Context* context) {
  const Txn& txn = *work->txn;
  WriteSet& writes = context->writes;
  writes.Clear();
  TxnOutcome outcome;
  if (work->procedure_txn) {
    ExecuteLongLocked(*app_, *work->procedure_txn, txn, reads, &writes, &outcome);
  } else {
    app_->Execute(txn, reads, &writes, &outcome);
  }
  if (work->writes_here && outcome.committed) {
    const Epoch epoch = work->epoch->epoch;
    auto local = [&](Key key) {
      return work->all_local || PartitionOf(key, options_.partitions) == options_.partition;
    };
    for (size_t i = 0; i < writes.size(); ++i) {
      if (local(writes.key(i))) store_->Write(context->store_slot, writes.key(i), writes.value(i), epoch);
    }
    for (Key key : writes.deletes()) {
      if (local(key)) store_->Delete(context->store_slot, key, epoch);
    }
  }
  if (work->origin) {
    outcome.position = work->position;
    outcome.deferrals = work->deferrals;
    const int code = work->procedure_txn && outcome.aborted
                         ? LtxAbortReasonOf(outcome.abort_reason) : -1;
    if (code >= 0) outcome.retryable = code == kAbortRecon;
    // Replays too: a client's retry of an LTX locked at its begin is
    // answered from what every replica noted (scheduler/ltx_outcomes.h).
    if (work->procedure_txn && callbacks_.locked_ltx_resolved) {
      callbacks_.locked_ltx_resolved(*work->procedure_txn, outcome);
    }
    if (work->epoch->epoch > recovered_through_) {
      // An LTX aborted under its locks: counted by reason (OLLP restarts
      // are the recon ones).
      if (code >= 0) stats_->ltx().CountAbort(code);
      Report(work, outcome, reads, context);
    }
  }
  Finish(work, true, context);
}

void WorkerPool::Report(TxnWork* work, const TxnOutcome& outcome, const ReadValues& reads,
                        Context* context) {
  // A calvin-mode LTX reports on its begin record, not on the key lists it
  // locked; and an LTX's reads are too many to echo.
  const Txn& txn = work->procedure_txn ? *work->procedure_txn : *work->txn;
  WorkerStats& stats = stats_->worker(context->index);
  const int64_t now = NowMicros();
  const int64_t latency = now - txn.submit_time_us();
  // An OLLP restart (calvin mode's stale reconnaissance) is counted as
  // one by Execute (LtxCounters' recon aborts), not as a result.
  stats.RecordResult(work->kind, outcome.aborted, outcome.abort_reason, latency,
                     txn.client_request_id() == 0);
  if (!outcome.committed && !outcome.aborted) WorkerStats::Add(stats.declined[work->kind]);
  if (work->kind == kKindReadOnly && work->epoch->previous_close_time_us > 0 &&
      work->set_aside_us == 0) {
    const int64_t delay = now - work->epoch->previous_close_time_us;
    stats.visibility_us.RecordElapsed(delay);
  }
  if (work->set_aside_us > 0) {
    // Deferred by an LTX's area (RW) or parked until an LTX resolved (RO):
    // the latency the LTX lane added.
    const int64_t waited = now - work->set_aside_us;
    stats.ltx_wait_us[work->kind].RecordElapsed(waited);
  }
  if (!outcome.invariant_ok) {
    WorkerStats::Add(stats.invariant_failures);
    LOG(ERROR) << "txn " << TxnIdString(txn.id()) << " (" << app_->ProcedureName(txn.procedure())
               << "): invariant violated: " << outcome.detail;
  }
  if (!results_) return;
  if (work->kind == kKindLong) {
    ReadValues none;
    results_->OnResult(txn, outcome, 0, none);
    return;
  }
  results_->OnResult(txn, outcome, work->snapshot_read ? work->read_version : 0, reads);
}

void WorkerPool::Finish(TxnWork* work, bool finished, Context* context) {
  if (!work->snapshot_read) {
    context->done.push_back(DoneNote{work, finished});
    if (!finished) HandOnDone(context);
    return;
  }
  read_only_finished_.fetch_add(1, std::memory_order_relaxed);
  // Lock-free read-only txns never visit the scheduler; the last one of an
  // epoch wakes it so the epoch can be freed.
  work->epoch->ro_unfinished.fetch_sub(1, std::memory_order_acq_rel);
  if (work->epoch->unfinished.fetch_sub(1, std::memory_order_acq_rel) == 1) callbacks_.wake();
}

void WorkerPool::HandOnDone(Context* context) {
  if (!context->done.empty()) callbacks_.done(&context->done);
}

}  // namespace paxflow
