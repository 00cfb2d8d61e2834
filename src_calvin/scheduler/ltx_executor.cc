#include "scheduler/ltx_executor.h"

#include <glog/logging.h>

#include <algorithm>
#include <set>
#include <unordered_set>

#include "common/clock.h"

namespace paxflow {
namespace {

// Until the stores scan their ordered key index, a participant enumerates
// the keys of a scanned range that live on its partition; this bounds it.
constexpr uint64_t kMaxScanKeysPerPartition = 4u << 20;

}  // namespace

struct LtxExecutor::Run {
  std::shared_ptr<const Txn> txn;
  Epoch snapshot = 0;
  bool scan = false;  // a long read-only scan, not an LTX
  KeyArea write_area;
  uint32_t round = 0;  // the procedure round that runs next
  LtxReads reads;
  // The round in flight: the keys still unanswered, and the partitions
  // whose scans are.
  std::unordered_set<Key> unanswered;
  std::set<PartitionId> scans_unanswered;
  std::vector<LtxReads::Rows> scan_rows;
  bool waiting() const { return !unanswered.empty() || !scans_unanswered.empty(); }
  bool finished = false;  // its record went to the sequencer, or its result out
  int64_t started_us = 0;
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
      task.reset(queue_.top());
      queue_.pop();
    }
    Execute(task.get(), index);
  }
}

size_t LtxExecutor::RunQueued() {
  size_t ran = 0;
  while (true) {
    std::unique_ptr<Task> task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return ran;
      task.reset(queue_.top());
      queue_.pop();
    }
    Execute(task.get(), options_.threads);
    ++ran;
  }
}

size_t LtxExecutor::running() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_.size();
}

void LtxExecutor::Execute(Task* task, size_t index) {
  if (task->kind == Task::kServe) {
    ServeReads(*task->serve, store_slots_[index]);
  } else {
    RunRound(task->run, index);
  }
}

// ------------------------------------------------------------- origin side

void LtxExecutor::StartLtx(std::shared_ptr<const Txn> begin, Epoch snapshot) {
  auto run = std::make_shared<Run>();
  run->txn = std::move(begin);
  run->snapshot = snapshot;
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
  std::lock_guard<std::mutex> lock(mu_);
  runs_[run->txn->id()] = std::move(run);
}

void LtxExecutor::Forget(TxnId id) {
  std::lock_guard<std::mutex> lock(mu_);
  runs_.erase(id);
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
  TxnOutcome outcome;
  outcome.committed = false;
  outcome.aborted = true;
  outcome.abort_reason = reason;
  outcome.retryable = true;
  ReportScan(run.get(), outcome, options_.threads);
}

void LtxExecutor::RunRound(const std::shared_ptr<Run>& run, size_t index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (run->finished || !runs_.count(run->txn->id())) return;  // resolved meanwhile
  }
  LtxRound round;
  app_->ExecuteLong(*run->txn, run->round, run->reads, &round);
  if (run->scan) {
    if (!round.done() && !round.abort) {
      round.abort = true;
      round.reason = "a long scan reads only the ranges it declared";
    }
    TxnOutcome outcome = round.outcome;
    if (round.abort) {
      outcome.committed = false;
      outcome.aborted = true;
      outcome.abort_reason = std::string(LtxAbortReasonName(kAbortProcedure)) + ": " + round.reason;
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
    SubmitAbort(*run, kAbortProcedure, round.reason);
    return;
  }
  if (round.done()) {
    Finish(run, round);
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
    std::vector<std::vector<Key>> keys(options_.partitions);
    for (Key key : round.reads) {
      bool found;
      std::string_view value;
      if (run->reads.Get(key, &found, &value)) continue;  // read in an earlier round
      keys[PartitionOf(key, options_.partitions)].push_back(key);
    }
    run->unanswered.clear();
    run->scans_unanswered.clear();
    run->scan_rows.assign(round.scans.size(), {});
    for (PartitionId p = 0; p < options_.partitions; ++p) {
      std::sort(keys[p].begin(), keys[p].end());
      keys[p].erase(std::unique(keys[p].begin(), keys[p].end()), keys[p].end());
      if (keys[p].empty() && round.scans.empty()) continue;  // scans reach every partition
      run->unanswered.insert(keys[p].begin(), keys[p].end());
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
    if (requests[p].ltx_id() == 0) continue;
    if (p == self) {
      callbacks_.deliver_request(std::move(requests[p]));
    } else {
      peers_->SendLtxReadRequest(p, requests[p]);
    }
  }
}

void LtxExecutor::OnReply(LtxReadReply&& reply) {
  std::shared_ptr<Run> run;
  bool complete = false;
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(reply.ltx_id());
    if (it == runs_.end()) return;  // resolved, or never ours: nothing waits for it
    run = it->second;
    const PartitionId from = reply.from_partition();
    if (run->finished || reply.round() != run->round || !run->waiting()) return;
    const size_t scans = run->scan_rows.size();
    const bool shaped =
        reply.keys_size() == reply.value_size() && reply.keys_size() == reply.found_size() &&
        reply.scan_key_size() == reply.scan_value_size() &&
        (!reply.scans_included() ||
         (static_cast<size_t>(reply.scan_begin_size()) == scans &&
          std::is_sorted(reply.scan_begin().begin(), reply.scan_begin().end()) &&
          (scans == 0 || reply.scan_begin(static_cast<int>(scans) - 1) <=
                             static_cast<uint32_t>(reply.scan_key_size()))));
    if (!reply.error().empty()) {
      failure = "partition " + std::to_string(from) + ": " + reply.error();
      run->finished = true;
    } else if (!shaped) {
      LOG(ERROR) << "partition " << options_.partition << ": dropped a malformed LTX reply for "
                 << TxnIdString(reply.ltx_id()) << " from partition " << from;
      return;
    } else {
      // Only keys asked and not answered yet count (a repeat is ignored).
      for (int i = 0; i < reply.keys_size(); ++i) {
        const Key key = reply.keys(i);
        if (PartitionOf(key, options_.partitions) != from || !run->unanswered.erase(key)) continue;
        run->reads.SetPoint(key, reply.found(i), reply.value(i));
      }
      if (reply.scans_included() && run->scans_unanswered.erase(from)) {
        for (size_t s = 0; s < scans; ++s) {
          const size_t begin = reply.scan_begin(static_cast<int>(s));
          const size_t end = s + 1 < scans ? reply.scan_begin(static_cast<int>(s) + 1)
                                           : static_cast<size_t>(reply.scan_key_size());
          for (size_t r = begin; r < end; ++r) {
            run->scan_rows[s].emplace_back(reply.scan_key(static_cast<int>(r)),
                                           reply.scan_value(static_cast<int>(r)));
          }
        }
      }
      if (!run->waiting()) {
        for (auto& rows : run->scan_rows) {
          std::sort(rows.begin(), rows.end(),
                    [](const auto& a, const auto& b) { return a.first < b.first; });
          run->reads.AddScan(std::move(rows));
        }
        run->scan_rows.clear();
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
      TxnOutcome outcome;
      outcome.committed = false;
      outcome.aborted = true;
      outcome.retryable = true;
      outcome.abort_reason = std::string(LtxAbortReasonName(kAbortRestart)) + ": " + failure;
      ReportScan(run.get(), outcome, options_.threads);
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

void LtxExecutor::Finish(const std::shared_ptr<Run>& run, const LtxRound& round) {
  const Txn& begin = *run->txn;
  std::map<Key, LtxWrite> writes;
  for (size_t i = 0; i < round.writes.size(); ++i) {
    LtxWrite& write = writes[round.writes.key(i)];
    write.set_key(round.writes.key(i));
    const std::string_view value = round.writes.value(i);
    write.set_value(value.data(), value.size());
    write.set_deleted(false);
  }
  for (Key key : round.deletes) {
    LtxWrite& write = writes[key];
    write.set_key(key);
    write.clear_value();
    write.set_deleted(true);
  }
  for (const auto& [key, write] : writes) {
    if (!run->write_area.Contains(key)) {
      SubmitAbort(*run, kAbortWriteArea,
                  "it wrote key " + std::to_string(key) + ", outside its write area");
      return;
    }
  }
  Txn record;
  record.set_txn_class(LTX);
  record.set_origin_partition(begin.origin_partition());
  record.set_origin_node(begin.origin_node());
  LtxRecord* ltx = record.mutable_ltx();
  ltx->set_kind(LTX_COMMIT);
  ltx->set_ltx_id(begin.id());
  ltx->set_checksum(round.outcome.checksum);
  ltx->set_origin_node(begin.origin_node());
  for (auto& [key, write] : writes) *ltx->add_writes() = std::move(write);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (run->finished) return;
    run->finished = true;
  }
  if (records_) records_->SubmitRecord(std::move(record));
}

void LtxExecutor::SubmitAbort(const Run& run, int reason, const std::string& text) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = runs_.find(run.txn->id());
    if (it != runs_.end()) it->second->finished = true;
  }
  Txn record;
  record.set_txn_class(LTX);
  record.set_origin_partition(run.txn->origin_partition());
  record.set_origin_node(run.txn->origin_node());
  LtxRecord* ltx = record.mutable_ltx();
  ltx->set_kind(LTX_ABORT);
  ltx->set_ltx_id(run.txn->id());
  ltx->set_reason(std::string(LtxAbortReasonName(reason)) + ": " + text);
  ltx->set_origin_node(run.txn->origin_node());
  if (records_) records_->SubmitRecord(std::move(record));
}

void LtxExecutor::ReportScan(Run* run, const TxnOutcome& outcome, size_t index) {
  const Txn& txn = *run->txn;
  // RunQueued's caller (a test) counts as the first LTX thread.
  WorkerStats& stats =
      stats_->worker(options_.first_stats_slot + std::min<size_t>(index, options_.threads - 1));
  const int64_t latency = NowMicros() - txn.submit_time_us();
  stats.latency_us[kKindLong].Record(latency > 0 ? static_cast<uint64_t>(latency) : 0);
  WorkerStats::Add(outcome.aborted ? stats.aborted[kKindLong] : stats.committed[kKindLong]);
  if (txn.client_request_id() == 0) WorkerStats::Add(stats.generated_done);
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
  Push(std::move(queued));
}

void LtxExecutor::ServeReads(const LtxReadTask& task, size_t slot) {
  LtxReadReply reply;
  reply.set_ltx_id(task.ltx);
  reply.set_round(task.round);
  reply.set_from_partition(options_.partition);
  store_->EnterSnapshot(slot);
  reply.mutable_keys()->Add(task.keys.begin(), task.keys.end());
  reply.set_scans_included(!task.scans.empty());
  for (size_t i = 0; i < task.keys.size(); ++i) {
    if (task.key_chosen[i]) {
      reply.add_found(task.key_values[i].first);
      reply.add_value(task.key_values[i].second);
      continue;
    }
    std::string_view value;
    const bool found = store_->ReadAt(slot, task.keys[i], task.snapshot, &value);
    reply.add_found(found);
    reply.add_value(found ? std::string(value) : std::string());
  }
  std::string error;
  for (size_t s = 0; s < task.scans.size() && error.empty(); ++s) {
    reply.add_scan_begin(static_cast<uint32_t>(reply.scan_key_size()));
    const KeyArea range(google::protobuf::RepeatedPtrField<KeyRange>(task.scans.begin() + s,
                                                                     task.scans.begin() + s + 1));
    std::vector<Key> keys;
    if (!range.KeysOn(options_.partition, options_.partitions, kMaxScanKeysPerPartition, &keys)) {
      error = "scan range [" + std::to_string(task.scans[s].lo()) + ", " +
              std::to_string(task.scans[s].hi()) + "] is too wide to read here";
      break;
    }
    const auto& chosen = task.scan_values[s];
    for (Key key : keys) {
      auto it = chosen.find(key);
      if (it != chosen.end()) {
        if (!it->second.first) continue;  // deleted by an LTX the reader sees
        reply.add_scan_key(key);
        reply.add_scan_value(it->second.second);
        continue;
      }
      std::string_view value;
      if (store_->ReadAt(slot, key, task.snapshot, &value)) {
        reply.add_scan_key(key);
        reply.add_scan_value(value.data(), value.size());
      }
    }
  }
  store_->ExitSnapshot(slot);
  if (!error.empty()) {
    reply.Clear();
    reply.set_ltx_id(task.ltx);
    reply.set_round(task.round);
    reply.set_from_partition(options_.partition);
    reply.set_error(error);
  }
  if (task.reply_to == options_.partition) {
    OnReply(std::move(reply));
  } else {
    peers_->SendLtxReadReply(task.reply_to, reply);
  }
  if (task.long_scan && callbacks_.scan_served) callbacks_.scan_served(task.ltx);
}

}  // namespace paxflow
