#include "scheduler/ltx_executor.h"

#include <glog/logging.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <set>
#include <thread>

#include "common/clock.h"

namespace paxflow {

struct LtxExecutor::Run {
  std::shared_ptr<const Txn> txn;
  Epoch snapshot = 0;
  bool scan = false;  // a long read-only scan, not an LTX
  KeyArea write_area;
  uint32_t round = 0;  // the procedure round that runs next
  LtxReads reads;
  // The round in flight: the keys asked (ascending, each once), which of
  // them are answered, how many are not; and the partitions whose scans
  // are unanswered. A sorted vector, not a hash set: an LTX asks for
  // thousands of keys per round.
  std::vector<Key> asked;
  std::vector<bool> answered;
  size_t unanswered = 0;
  std::set<PartitionId> scans_unanswered;
  std::vector<LtxReads::Rows> scan_rows;
  // The round's summarized shares (pushed-down scans), by partition.
  std::map<PartitionId, std::string> summaries;
  std::vector<KeyRange> round_scans;  // the round in flight's scans (AskAgain)
  bool waiting() const { return unanswered > 0 || !scans_unanswered.empty(); }
  // Marks `key` answered; false if it was not asked in this round or is
  // answered already.
  bool Answer(Key key) {
    auto it = std::lower_bound(asked.begin(), asked.end(), key);
    if (it == asked.end() || *it != key) return false;
    const size_t index = static_cast<size_t>(it - asked.begin());
    if (answered[index]) return false;
    answered[index] = true;
    --unanswered;
    return true;
  }
  // Calls fn(key) for every asked key not answered yet.
  template <typename Fn>
  void ForEachUnanswered(Fn fn) const {
    if (unanswered == 0) return;
    for (size_t i = 0; i < asked.size(); ++i) {
      if (!answered[i]) fn(asked[i]);
    }
  }
  bool finished = false;  // its record went to the sequencer, or its result out
  int64_t started_us = 0;
  int64_t first_round_us = 0;  // its first round began on an LTX thread
  int64_t run_us = 0;          // its rounds' running time, reads waits excluded
  std::set<TxnId> read_from;   // LtxReadTask::read_from, over every round
  bool in_place = false;       // its record goes to `finished` only
};

LtxExecutor::LtxExecutor(const LtxExecutorOptions& options, Store* store,
                         const Application* app, PeerSender* peers, RecordSubmitter* records,
                         NodeStats* stats, ResultSink* results, Callbacks callbacks)
    : options_(options),
      store_(store),
      app_(app),
      peers_(peers),
      records_(records),
      stats_(stats),
      results_(results),
      callbacks_(std::move(callbacks)) {
  for (uint32_t i = 0; i <= options_.threads; ++i) store_slots_.push_back(store_->RegisterThread());
}

LtxExecutor::~LtxExecutor() {
  Stop();
  while (!queue_.empty()) {
    delete queue_.top();
    queue_.pop();
  }
}

void LtxExecutor::Start() {
  for (uint32_t i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this, i] { Loop(i); });
  }
}

void LtxExecutor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& thread : threads_) {
    if (thread.joinable()) thread.join();
  }
  threads_.clear();
}

void LtxExecutor::Push(std::unique_ptr<Task> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    task->sequence = next_sequence_++;
    queue_.push(task.release());
    NoteQueuedLocked();
  }
  cv_.notify_one();
}

void LtxExecutor::Loop(size_t index) {
  while (true) {
    std::unique_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      task.reset(PopLocked());
    }
    Execute(task.get(), index);
  }
}

size_t LtxExecutor::RunQueued(TxnId held) {
  size_t ran = 0;
  std::vector<Task*> kept;  // `held`'s tasks, queued again at the end
  while (true) {
    std::unique_ptr<Task> task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      while (held != 0 && !queue_.empty() && queue_.top()->ltx == held) {
        kept.push_back(queue_.top());
        queue_.pop();
      }
      if (queue_.empty()) {
        for (Task* waiting : kept) queue_.push(waiting);
        NoteQueuedLocked();
        return ran;
      }
      task.reset(PopLocked());
    }
    Execute(task.get(), options_.threads);
    ++ran;
  }
}

size_t LtxExecutor::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_.size();
}

LtxExecutor::Task* LtxExecutor::PopLocked() {
  Task* task = queue_.top();
  queue_.pop();
  NoteQueuedLocked();
  // A serve taken off the queue is still owed until it ran (QueuedServes).
  if (task->kind == Task::kServe) running_serves_.insert(task);
  return task;
}

void LtxExecutor::Execute(Task* task, size_t index) {
  if (task->kind == Task::kServe) {
    ServeReads(*task->serve, store_slots_[index]);
    std::lock_guard<std::mutex> lock(mu_);
    serving_.erase(serving_.find(task->serve->snapshot));
    running_serves_.erase(task);
  } else if (task->kind == Task::kReport) {
    ReportScan(task->run.get(), task->outcome, index);
  } else {
    RunRound(task->run, index);
  }
}

// ------------------------------------------------------------- origin side

void LtxExecutor::StartLtx(std::shared_ptr<const Txn> begin, Epoch snapshot, bool in_place) {
  auto run = std::make_shared<Run>();
  run->txn = std::move(begin);
  run->snapshot = snapshot;
  run->in_place = in_place;
  run->write_area = KeyArea(run->txn->ltx().write_area());
  run->started_us = NowMicros();
  const TxnId id = run->txn->id();
  {
    std::lock_guard<std::mutex> lock(mu_);
    runs_[id] = run;
  }
  auto task = std::make_unique<Task>();
  task->kind = Task::kRound;
  task->ltx = id;
  task->run = std::move(run);
  Push(std::move(task));
}

void LtxExecutor::StartScan(std::shared_ptr<const Txn> scan, Epoch snapshot) {
  auto run = std::make_shared<Run>();
  run->txn = std::move(scan);
  run->snapshot = snapshot;
  run->scan = true;
  // Every partition sends its share of the declared ranges; the procedure
  // then runs once, as its round 1, over the whole ranges.
  run->round = 1;
  for (PartitionId p = 0; p < options_.partitions; ++p) run->scans_unanswered.insert(p);
  run->scan_rows.resize(static_cast<size_t>(run->txn->ltx().read_area_size()));
  run->started_us = NowMicros();
  std::vector<LtxReadResult> early;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const TxnId id = run->txn->id();
    runs_[id] = std::move(run);
    auto it = early_shares_.find(id);
    if (it != early_shares_.end()) {
      early = std::move(it->second);
      early_shares_.erase(it);
    }
  }
  for (LtxReadResult& share : early) Absorb(std::move(share));
}

void LtxExecutor::Forget(TxnId id) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_.erase(id);
  early_shares_.erase(id);
}

void LtxExecutor::FailScan(TxnId id, const std::string& reason) {
  std::shared_ptr<Run> run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(id);
    if (it == runs_.end() || it->second->finished) return;
    run = it->second;
    run->finished = true;
    runs_.erase(it);
  }
  QueueScanFailure(std::move(run), reason);
}

void LtxExecutor::QueueScanFailure(std::shared_ptr<Run> run, const std::string& reason) {
  auto task = std::make_unique<Task>();
  task->kind = Task::kReport;
  task->ltx = run->txn->id();
  task->outcome.committed = false;
  task->outcome.aborted = true;
  task->outcome.retryable = true;
  task->outcome.abort_reason = reason;
  task->run = std::move(run);
  Push(std::move(task));
}

void LtxExecutor::RunRound(const std::shared_ptr<Run>& run, size_t index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (run->finished || !runs_.count(run->txn->id())) return;  // resolved meanwhile
  }
  LtxRound round;
  const int64_t round_start = NowMicros();
  if (run->first_round_us == 0) run->first_round_us = round_start;
  app_->ExecuteLong(*run->txn, run->round, run->reads, &round);
  run->run_us += NowMicros() - round_start;
  if (run->scan) {
    if (!round.done() && !round.abort) {
      round.abort = true;
      round.reason = "a long scan reads only the ranges it declared";
    }
    TxnOutcome outcome = round.outcome;
    if (round.abort) {
      outcome.committed = false;
      outcome.aborted = true;
      outcome.retryable = round.restart;
      outcome.abort_reason =
          std::string(LtxAbortReasonName(round.restart ? kAbortRecon : kAbortProcedure)) + ": " +
          round.reason;
    }
    outcome.position = SerialPosition{run->snapshot + 1, 0, 0, 0};
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (run->finished) return;
      run->finished = true;
      runs_.erase(run->txn->id());
    }
    ReportScan(run.get(), outcome, index);
    return;
  }
  if (round.abort) {
    SubmitAbort(*run, round.restart ? kAbortRecon : kAbortProcedure, round.reason);
    return;
  }
  if (round.done()) {
    Finish(run, round, index);
    return;
  }
  AskForReads(run, round);
}

void LtxExecutor::AskForReads(const std::shared_ptr<Run>& run, const LtxRound& round) {
  const PartitionId self = options_.partition;
  std::vector<LtxReadRequest> requests(options_.partitions);
  bool asked_any = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (run->finished || !runs_.count(run->txn->id())) return;
    std::vector<Key>& asked = run->asked;
    asked.clear();
    for (Key key : round.reads) {
      bool found;
      std::string_view value;
      if (run->reads.Get(key, &found, &value)) continue;  // read in an earlier round
      asked.push_back(key);
    }
    std::sort(asked.begin(), asked.end());
    asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
    run->answered.assign(asked.size(), false);
    run->unanswered = asked.size();
    std::vector<std::vector<Key>> keys(options_.partitions);  // each ascending
    if (options_.partitions == 1) {
      keys[0] = asked;
    } else {
      for (Key key : asked) keys[PartitionOf(key, options_.partitions)].push_back(key);
    }
    run->scans_unanswered.clear();
    run->scan_rows.assign(round.scans.size(), {});
    run->round_scans = round.scans;
    for (PartitionId p = 0; p < options_.partitions; ++p) {
      if (keys[p].empty() && round.scans.empty()) continue;  // scans reach every partition
      if (!round.scans.empty()) run->scans_unanswered.insert(p);
      LtxReadRequest& request = requests[p];
      request.set_ltx_id(run->txn->id());
      request.set_round(run->round);
      request.set_from_partition(self);
      request.mutable_keys()->Add(keys[p].begin(), keys[p].end());
      for (const KeyRange& scan : round.scans) *request.add_scans() = scan;
      asked_any = true;
    }
    if (!asked_any) ++run->round;  // everything asked was read before
  }
  if (!asked_any) {
    auto task = std::make_unique<Task>();
    task->kind = Task::kRound;
    task->ltx = run->txn->id();
    task->run = run;
    Push(std::move(task));
    return;
  }
  for (PartitionId p = 0; p < options_.partitions; ++p) {
    if (requests[p].ltx_id() != 0) SendRequest(p, std::move(requests[p]));
  }
}

void LtxExecutor::SendRequest(PartitionId p, LtxReadRequest&& request) {
  if (p == options_.partition) {
    callbacks_.deliver_request(std::move(request));
  } else {
    peers_->SendLtxReadRequest(p, request);
  }
}

void LtxExecutor::OnReply(LtxReadReply&& reply) {
  LtxReadResult result;
  result.ltx = reply.ltx_id();
  result.round = reply.round();
  result.from = reply.from_partition();
  result.error = reply.error();
  const bool shaped = reply.keys_size() == reply.value_size() &&
                      reply.keys_size() == reply.found_size() &&
                      reply.scan_key_size() == reply.scan_value_size() &&
                      std::is_sorted(reply.scan_begin().begin(), reply.scan_begin().end()) &&
                      (reply.scan_begin_size() == 0 ||
                       reply.scan_begin(reply.scan_begin_size() - 1) <=
                           static_cast<uint32_t>(reply.scan_key_size()));
  if (!shaped || result.from >= options_.partitions) {
    LOG(ERROR) << "partition " << options_.partition << ": dropped a malformed LTX reply for "
               << TxnIdString(reply.ltx_id()) << " from partition " << reply.from_partition();
    return;
  }
  result.keys.assign(reply.keys().begin(), reply.keys().end());
  result.found.assign(reply.found().begin(), reply.found().end());
  for (const std::string& value : reply.value()) result.AddValue(value);
  result.scans_included = reply.scans_included();
  result.summarized = reply.scan_summarized();
  if (result.summarized) result.summary = std::move(*reply.mutable_scan_summary());
  result.read_from.assign(reply.read_from().begin(), reply.read_from().end());
  const int scans = reply.scan_begin_size();
  result.scans.resize(static_cast<size_t>(scans));
  for (int s = 0; s < scans; ++s) {
    const int begin = static_cast<int>(reply.scan_begin(s));
    const int end = s + 1 < scans ? static_cast<int>(reply.scan_begin(s + 1)) : reply.scan_key_size();
    for (int r = begin; r < end; ++r) {
      result.scans[s].emplace_back(reply.scan_key(r), std::move(*reply.mutable_scan_value(r)));
    }
  }
  Absorb(std::move(result));
}

bool LtxExecutor::OwesLocked(const Run& run, PartitionId p) const {
  if (run.scans_unanswered.count(p)) return true;
  bool owes = false;
  run.ForEachUnanswered([&](Key key) { owes |= PartitionOf(key, options_.partitions) == p; });
  return owes;
}

void LtxExecutor::AskAgain(PartitionId p) {
  if (p >= options_.partitions) return;
  std::vector<LtxReadRequest> requests;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, run] : runs_) {
      // A long scan's shares come from the log, not from requests: a
      // restarted participant serves them again as it replays, or owes them.
      if (run->scan || run->finished || !OwesLocked(*run, p)) continue;
      LtxReadRequest request;
      request.set_ltx_id(id);
      request.set_round(run->round);
      request.set_from_partition(options_.partition);
      std::vector<Key> keys;  // ascending, as asked
      run->ForEachUnanswered([&](Key key) {
        if (PartitionOf(key, options_.partitions) == p) keys.push_back(key);
      });
      request.mutable_keys()->Add(keys.begin(), keys.end());
      if (run->scans_unanswered.count(p)) {
        for (const KeyRange& scan : run->round_scans) *request.add_scans() = scan;
      }
      requests.push_back(std::move(request));
    }
  }
  if (!requests.empty()) {
    LOG(INFO) << "partition " << options_.partition << ": partition " << p
              << " restarted; asking it again for the reads of " << requests.size() << " LTXs";
  }
  for (LtxReadRequest& request : requests) SendRequest(p, std::move(request));
}

void LtxExecutor::Absorb(LtxReadResult&& result) {
  std::shared_ptr<Run> run;
  bool complete = false;
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(result.ltx);
    if (it == runs_.end()) {
      // Resolved, or never ours: nothing waits for it. Or a scan's share
      // ahead of its StartScan here: kept for it.
      if (result.summarized && result.error.empty() && result.round == 1) {
        if (early_shares_.size() >= kMaxEarlyShares) early_shares_.erase(early_shares_.begin());
        early_shares_[result.ltx].push_back(std::move(result));
      }
      return;
    }
    run = it->second;
    const PartitionId from = result.from;
    if (run->finished || result.round != run->round || !run->waiting()) return;
    if (!result.error.empty() && !OwesLocked(*run, from)) {
      // It answered this round already (before it restarted, say): its
      // error for a request asked again changes nothing.
      return;
    }
    if (!result.error.empty()) {
      failure = "partition " + std::to_string(from) + ": " + result.error;
      run->finished = true;
    } else {
      // Only keys asked and not answered yet count (a repeat is ignored).
      run->read_from.insert(result.read_from.begin(), result.read_from.end());
      run->reads.Reserve(result.keys.size(), result.value_data.size());
      for (size_t i = 0; i < result.keys.size(); ++i) {
        const Key key = result.keys[i];
        if (PartitionOf(key, options_.partitions) != from || !run->Answer(key)) continue;
        run->reads.SetPoint(key, result.found[i], result.value(i));
      }
      if (result.scans_included && result.scans.size() == run->scan_rows.size() &&
          run->scans_unanswered.erase(from)) {
        if (result.summarized) run->summaries[from] = std::move(result.summary);
        for (size_t s = 0; s < result.scans.size(); ++s) {
          LtxReads::Rows& rows = run->scan_rows[s];
          if (rows.empty()) {
            rows = std::move(result.scans[s]);
          } else {
            // Each partition's share is in key order: merged into the
            // shares before it (linear; partitions' keys interleave, so a
            // sort of the whole would cost n log n on a query's 10^6 rows).
            const size_t before = rows.size();
            rows.insert(rows.end(), std::make_move_iterator(result.scans[s].begin()),
                        std::make_move_iterator(result.scans[s].end()));
            std::inplace_merge(rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(before),
                               rows.end(),
                               [](const auto& a, const auto& b) { return a.first < b.first; });
          }
        }
      }
      if (!run->waiting()) {
        for (auto& rows : run->scan_rows) run->reads.AddScan(std::move(rows));
        run->scan_rows.clear();
        for (auto& [p, summary] : run->summaries) run->reads.AddSummary(std::move(summary));
        run->summaries.clear();
        if (!run->scan) ++run->round;
        complete = true;
      }
    }
  }
  if (!failure.empty()) {
    if (run->scan) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        runs_.erase(run->txn->id());
      }
      QueueScanFailure(std::move(run),
                       std::string(LtxAbortReasonName(kAbortRestart)) + ": " + failure);
    } else {
      SubmitAbort(*run, kAbortRestart, failure);
    }
    return;
  }
  if (complete) {
    auto task = std::make_unique<Task>();
    task->kind = Task::kRound;
    task->ltx = run->txn->id();
    task->run = std::move(run);
    Push(std::move(task));
  }
}

std::optional<Key> LowestWriteOutside(const LtxRound& round, const KeyArea& write_area) {
  std::optional<Key> lowest;
  auto note = [&](Key key) {
    if (!write_area.Contains(key) && (!lowest || key < *lowest)) lowest = key;
  };
  for (size_t i = 0; i < round.writes.size(); ++i) note(round.writes.key(i));
  for (Key key : round.deletes) note(key);
  return lowest;
}

Txn LtxFinishRecord(const Txn& begin, const LtxRound& round, const KeyArea& write_area,
                    const std::set<TxnId>& read_from) {
  Txn record;
  LtxFinishRecord(begin, round, write_area, read_from, &record);
  return record;
}

void LtxCommitOutcome(const Txn& begin, uint64_t checksum, Txn* out) {
  out->Clear();
  out->set_txn_class(LTX);
  out->set_origin_partition(begin.origin_partition());
  out->set_origin_node(begin.origin_node());
  LtxRecord* ltx = out->mutable_ltx();
  ltx->set_kind(LTX_COMMIT);
  ltx->set_ltx_id(begin.id());
  ltx->set_checksum(checksum);
  ltx->set_origin_node(begin.origin_node());
}

void LtxFinishRecord(const Txn& begin, const LtxRound& round, const KeyArea& write_area,
                     const std::set<TxnId>& read_from, Txn* out) {
  out->Clear();
  if (const std::optional<Key> outside = LowestWriteOutside(round, write_area)) {
    *out = LtxAbortRecord(begin, kAbortWriteArea,
                          "it wrote key " + std::to_string(*outside) + ", outside its write area");
    return;
  }
  // The last write of each key wins; a delete after a write deletes. In key
  // order: (key, order made, index; deletes index past the writes).
  struct Final {
    Key key;
    size_t order;
    size_t index;
  };
  std::vector<Final> finals;
  finals.reserve(round.writes.size() + round.deletes.size());
  for (size_t i = 0; i < round.writes.size(); ++i) finals.push_back({round.writes.key(i), i, i});
  for (size_t i = 0; i < round.deletes.size(); ++i) {
    finals.push_back({round.deletes[i], round.writes.size() + i, SIZE_MAX});
  }
  std::sort(finals.begin(), finals.end(), [](const Final& a, const Final& b) {
    return a.key != b.key ? a.key < b.key : a.order < b.order;
  });
  LtxCommitOutcome(begin, round.outcome.checksum, out);
  LtxRecord* ltx = out->mutable_ltx();
  ltx->mutable_read_from()->Add(read_from.begin(), read_from.end());
  ltx->mutable_writes()->Reserve(static_cast<int>(finals.size()));
  for (size_t i = 0; i < finals.size(); ++i) {
    if (i + 1 < finals.size() && finals[i + 1].key == finals[i].key) continue;  // overwritten
    const Final& final = finals[i];
    LtxWrite* write = ltx->add_writes();
    write->set_key(final.key);
    if (final.index == SIZE_MAX) {
      write->set_deleted(true);
    } else {
      const std::string_view value = round.writes.value(final.index);
      write->set_value(value.data(), value.size());
    }
  }
}

void LtxExecutor::Finish(const std::shared_ptr<Run>& run, const LtxRound& round, size_t index) {
  Txn record = LtxFinishRecord(*run->txn, round, run->write_area, run->read_from);
  if (record.ltx().kind() == LTX_ABORT) {
    MarkFinished(*run);
    Deliver(*run, std::move(record));
    return;
  }
  if (!options_.hold_file.empty() && !run->in_place) HoldWhileFileExists();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (run->finished) return;
    run->finished = true;
  }
  // Nothing reads them once it finished (Absorb and AskForReads check
  // `finished` first): freed here, not on the scheduler thread that drops
  // the last reference to the run.
  run->reads = LtxReads();
  const int64_t now = NowMicros();
  WorkerStats& stats =
      stats_->worker(options_.first_stats_slot + std::min<size_t>(index, options_.threads - 1));
  stats.ltx_stage_us[kLtxStartWait].RecordElapsed(run->first_round_us - run->started_us);
  stats.ltx_stage_us[kLtxRun].RecordElapsed(run->run_us);
  stats.ltx_stage_us[kLtxReadWait].RecordElapsed(now - run->first_round_us - run->run_us);
  Deliver(*run, std::move(record));
}

void LtxExecutor::HoldWhileFileExists() {
  while (access(options_.hold_file.c_str(), F_OK) == 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void LtxExecutor::Deliver(const Run& run, Txn record) {
  // In place, the scheduler installs (or drops) it at its place in the
  // order; the log never carries it, so it moves rather than being copied
  // (thousands of writes).
  if (run.in_place) {
    if (callbacks_.finished) callbacks_.finished(std::make_shared<Txn>(std::move(record)));
    return;
  }
  if (callbacks_.finished) callbacks_.finished(std::make_shared<Txn>(record));
  if (records_) records_->SubmitRecord(std::move(record));
}

void LtxExecutor::MarkFinished(const Run& run) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = runs_.find(run.txn->id());
  if (it != runs_.end()) it->second->finished = true;
}

void LtxExecutor::SubmitAbort(const Run& run, int reason, const std::string& text) {
  MarkFinished(run);
  Deliver(run, LtxAbortRecord(*run.txn, reason, text));
}

Txn LtxAbortRecord(const Txn& begin, int reason, const std::string& text) {
  Txn record;
  record.set_txn_class(LTX);
  record.set_origin_partition(begin.origin_partition());
  record.set_origin_node(begin.origin_node());
  LtxRecord* ltx = record.mutable_ltx();
  ltx->set_kind(LTX_ABORT);
  ltx->set_ltx_id(begin.id());
  ltx->set_reason(std::string(LtxAbortReasonName(reason)) + ": " + text);
  ltx->set_origin_node(begin.origin_node());
  return record;
}

void LtxExecutor::ReportScan(Run* run, const TxnOutcome& outcome, size_t index) {
  const Txn& txn = *run->txn;
  // RunQueued's caller (a test) counts as the first LTX thread.
  WorkerStats& stats =
      stats_->worker(options_.first_stats_slot + std::min<size_t>(index, options_.threads - 1));
  // A scan whose planned ranges went stale restarts (recon): counted by
  // its reason, like every LTX abort, and not as a result (RecordResult).
  if (outcome.aborted) stats_->ltx().CountAbort(LtxAbortReasonOf(outcome.abort_reason));
  stats.RecordResult(kKindLong, outcome.aborted, outcome.abort_reason,
                     NowMicros() - txn.submit_time_us(), txn.client_request_id() == 0);
  if (results_) {
    ReadValues none;
    results_->OnResult(txn, outcome, run->snapshot, none);
  }
  if (callbacks_.scan_finished) callbacks_.scan_finished(txn.id());
}

// -------------------------------------------------------- participant side

void LtxExecutor::Serve(LtxReadTask task) {
  auto queued = std::make_unique<Task>();
  queued->kind = Task::kServe;
  queued->ltx = task.ltx;
  queued->serve = std::make_unique<LtxReadTask>(std::move(task));
  {
    std::lock_guard<std::mutex> lock(mu_);
    serving_.insert(queued->serve->snapshot);
  }
  Push(std::move(queued));
}

void LtxExecutor::ServingSnapshots(std::vector<Epoch>* pins) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = serving_.begin(); it != serving_.end(); it = serving_.upper_bound(*it)) {
    pins->push_back(*it);
  }
}

std::vector<LtxReadTask> LtxExecutor::QueuedServes() const {
  std::vector<LtxReadTask> owed;
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const Task*> serves(running_serves_.begin(), running_serves_.end());
  for (auto queue = queue_; !queue.empty(); queue.pop()) {  // copies of the pointers
    serves.push_back(queue.top());
  }
  for (const Task* task : serves) {
    if (task->kind != Task::kServe || !task->serve) continue;
    LtxReadTask copy;
    copy.ltx = task->serve->ltx;
    copy.round = task->serve->round;
    copy.reply_to = task->serve->reply_to;
    copy.snapshot = task->serve->snapshot;
    copy.long_scan = task->serve->long_scan;
    owed.push_back(std::move(copy));
  }
  return owed;
}

void LtxExecutor::ServeReads(const LtxReadTask& task, size_t slot) {
  LtxReadResult result;
  result.ltx = task.ltx;
  result.round = task.round;
  result.from = options_.partition;
  result.keys = task.keys;
  result.found.reserve(task.keys.size());
  result.value_end.reserve(task.keys.size());
  result.scans_included = !task.scans.empty();
  result.read_from = task.read_from;
  store_->EnterSnapshot(slot);
  for (size_t i = 0; i < task.keys.size(); ++i) {
    if (task.key_chosen[i]) {
      result.found.push_back(task.key_values[i].first);
      result.AddValue(task.key_values[i].second);
      continue;
    }
    std::string_view value;
    const bool found = store_->ReadAt(slot, task.keys[i], task.snapshot, &value);
    result.found.push_back(found);
    result.AddValue(found ? value : std::string_view());
  }
  // Scan s's rows at the snapshot: the store's keys merged (both ascending)
  // with the values the lane chose, which replace, insert, or delete (not
  // found).
  uint64_t rows_read = 0;  // what a pushed-down share folded, for the counters
  auto scan_share = [&](size_t s, Key from, Key to, const ScanRow& row) {
    const Key lo = std::max(task.scans[s].lo(), from), hi = std::min(task.scans[s].hi(), to);
    if (lo > hi) return;
    const auto& chosen = task.scan_values[s];
    auto next_chosen = chosen.lower_bound(from);
    auto take_chosen_below = [&](Key bound, bool inclusive) {
      while (next_chosen != chosen.end() &&
             (next_chosen->first < bound || (inclusive && next_chosen->first == bound))) {
        if (next_chosen->second.first) {
          ++rows_read;
          row(next_chosen->first, next_chosen->second.second);
        }
        ++next_chosen;
      }
    };
    store_->ScanAt(slot, lo, hi, task.snapshot,
                   [&](Key key, std::string_view value) {
                     take_chosen_below(key, /*inclusive=*/false);
                     if (next_chosen != chosen.end() && next_chosen->first == key) {
                       take_chosen_below(key, /*inclusive=*/true);
                       return;
                     }
                     ++rows_read;
                     row(key, value);
                   });
    if (next_chosen != chosen.end()) take_chosen_below(hi, /*inclusive=*/true);
  };
  result.scans.resize(task.scans.size());
  if (task.scan_txn) {
    // Pushed down: the share's summary travels, its rows stay here (read
    // in place: no copy of a value).
    result.summarized = true;
    // The partition's memo, if no other LTX thread is summarizing with it
    // (then this share goes without: the same result, read in full).
    ScanMemoUse memo;
    std::unique_ptr<ScanMemo> held;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!memo_busy_) {
        memo_busy_ = true;
        held = std::move(memo_);
        memo.memo = &held;
      }
    }
    memo.snapshot = task.snapshot;
    memo.may_learn = task.read_from.empty();
    result.summary = app_->SummarizeScans(
        *task.scan_txn,
        [&](size_t s, Key from, Key to, const ScanRow& row) {
          if (s < task.scans.size()) scan_share(s, from, to, row);
        },
        memo);
    stats_->ltx().pushed_down_shares.fetch_add(1, std::memory_order_relaxed);
    stats_->ltx().pushed_down_rows.fetch_add(rows_read, std::memory_order_relaxed);
    if (memo.memo != nullptr) {
      std::lock_guard<std::mutex> lock(mu_);
      memo_ = std::move(held);
      memo_busy_ = false;
    }
  } else {
    for (size_t s = 0; s < task.scans.size(); ++s) {
      LtxReads::Rows& rows = result.scans[s];
      scan_share(s, 0, ~Key{0},
                 [&](Key key, std::string_view value) { rows.emplace_back(key, value); });
    }
  }
  store_->ExitSnapshot(slot);
  if (task.reply_to == options_.partition) {
    Absorb(std::move(result));
  } else {
    LtxReadReply reply;
    reply.set_ltx_id(result.ltx);
    reply.set_round(result.round);
    reply.set_from_partition(result.from);
    if (!result.error.empty()) {
      reply.set_error(result.error);
    } else {
      reply.mutable_keys()->Add(result.keys.begin(), result.keys.end());
      for (size_t i = 0; i < result.keys.size(); ++i) {
        reply.add_found(result.found[i]);
        reply.add_value(std::string(result.value(i)));
      }
      reply.set_scans_included(result.scans_included);
      if (result.summarized) {
        reply.set_scan_summarized(true);
        reply.set_scan_summary(std::move(result.summary));
      }
      reply.mutable_read_from()->Add(result.read_from.begin(), result.read_from.end());
      for (auto& rows : result.scans) {
        reply.add_scan_begin(static_cast<uint32_t>(reply.scan_key_size()));
        for (auto& [key, value] : rows) {
          reply.add_scan_key(key);
          reply.add_scan_value(std::move(value));
        }
      }
    }
    peers_->SendLtxReadReply(task.reply_to, reply);
  }
  if (task.long_scan && callbacks_.scan_served) callbacks_.scan_served(task.ltx);
}

}  // namespace paxflow
