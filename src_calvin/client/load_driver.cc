#include "client/load_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "applications/bank.h"
#include "common/clock.h"

namespace paxflow {
namespace {

// Moves (or copies, when the txn is kept for a retry) `from`'s repeated
// field into `to`.
template <typename Field>
void Take(Field* from, bool keep, Field* to) {
  if (keep) to->CopyFrom(*from);
  else to->Swap(from);
}

int KindOf(const TxnReply& reply) {
  const std::string& c = reply.txn_class();
  return c == "RO" ? kLoadRO : c == "LTX" ? kLoadLTX : kLoadRW;
}

}  // namespace

const char* LoadKindName(int kind) {
  switch (kind) {
    case kLoadRO: return "RO";
    case kLoadRW: return "RW";
    default: return "LTX";
  }
}

void LoadStats::Merge(const LoadStats& other, bool buckets) {
  for (int k = 0; k < kLoadKinds; ++k) latency_us[k].Merge(other.latency_us[k]);
  visibility_us.Merge(other.visibility_us);
  server_latency_us.Merge(other.server_latency_us);
  for (int e = 0; e < 8; ++e) errors[e] += other.errors[e];
  busy += other.busy;
  busy_local += other.busy_local;
  retries += other.retries;
  failovers += other.failovers;
  already_applied += other.already_applied;
  gave_up += other.gave_up;
  declined += other.declined;
  audit_violations += other.audit_violations;
  lost += other.lost;
  skipped += other.skipped;
  for (const auto& [reason, n] : other.ltx_aborts) ltx_aborts[reason] += n;
  for (const auto& [procedure, theirs] : other.by_procedure) {
    ProcedureStats& mine = by_procedure[procedure];
    mine.latency_us.Merge(theirs.latency_us);
    mine.committed += theirs.committed;
    mine.declined += theirs.declined;
  }
  if (!buckets) return;
  for (auto [mine, theirs] : {std::make_pair(&timeline, &other.timeline),
                               std::make_pair(&steps, &other.steps)}) {
    if (mine->size() < theirs->size()) mine->resize(theirs->size());
    for (size_t i = 0; i < theirs->size(); ++i) {
      (*mine)[i].latency_us.Merge((*theirs)[i].latency_us);
      (*mine)[i].server_latency_us.Merge((*theirs)[i].server_latency_us);
      (*mine)[i].busy += (*theirs)[i].busy;
    }
  }
}

uint64_t LoadStats::Completed() const {
  uint64_t n = 0;
  for (const Histogram& h : latency_us) n += h.count();
  return n;
}

uint64_t LoadStats::Errors() const {
  uint64_t n = 0;
  for (int e = 0; e < 8; ++e) n += e == BUSY ? 0 : errors[e];
  return n;
}

LoadClient::LoadClient(const Application* app, const WorkloadParams& workload,
                       PartitionId partition, uint32_t partitions, uint64_t seed,
                       std::string endpoint, LoadOptions options, zmq::context_t* context)
    : app_(app),
      workload_(workload),
      partition_(partition),
      generator_(app->NewGenerator(partition, partitions, seed)),
      endpoint_(std::move(endpoint)),
      options_(options),
      client_(context, [&] {
        PipelineOptions pipeline;
        pipeline.max_batch_txns = options.batch;
        return pipeline;
      }()),
      jitter_(seed * 0x9e3779b97f4a7c15ULL + 1),
      ring_(options.replicas, options.failover_timeout_ms) {
  if (failover()) {
    std::random_device device;
    client_id_ = (uint64_t{device()} << 32 | device()) ^ (seed * 0x9e3779b97f4a7c15ULL);
    if (client_id_ == 0) client_id_ = 1;
  }
}

std::string LoadClient::Connect() {
  current_ = endpoint_;
  return client_.Connect(endpoint_);
}

void LoadClient::SwitchTo(const std::string& endpoint) {
  const int64_t now = NowMicros();
  current_ = endpoint;
  last_switch_us_ = now;
  last_heard_us_ = now;
  client_.Reconnect(endpoint);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.failovers;
  }
  // Their replies would come on the old socket: sent again, same ids.
  std::vector<InFlight> again;
  for (auto& [id, flight] : in_flight_) {
    if (flight.txn) again.push_back(std::move(flight));
    else Finished(flight);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.lost += in_flight_.size() - again.size();  // kept for no resend (no failover)
  }
  in_flight_.clear();
  for (InFlight& flight : again) Submit(std::move(flight), nullptr);
}

void LoadClient::NextReplica(int64_t now) {
  // Many results of one reply say the same: one move per back-off.
  if (!switch_to_.empty() ||
      now - last_switch_us_ < 1000LL * std::max(20, options_.busy_backoff_max_ms / 5)) {
    return;
  }
  switch_to_ = ring_.Next(now);
}

LoadStats LoadClient::Snapshot(bool buckets) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (buckets) return stats_;
  LoadStats copy;
  copy.Merge(stats_, false);
  return copy;
}

void LoadClient::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = LoadStats();
}

void LoadClient::Run(int64_t start_us, int64_t stop_us, const std::vector<RateStep>& steps) {
  phase_start_us_ = start_us;
  step_ends_us_.clear();
  int64_t end = start_us;
  for (const RateStep& step : steps) {
    end += static_cast<int64_t>(step.seconds * 1e6);
    step_ends_us_.push_back(end);
  }
  if (options_.timeline_us > 0) {
    // Every bucket of the phase now, so that the timeline never grows (a
    // copy of all its histograms) under the lock in the middle of the run.
    std::lock_guard<std::mutex> lock(mu_);
    stats_.timeline.resize(static_cast<size_t>((stop_us - start_us) / options_.timeline_us) + 1);
  }
  const auto on_result = [this](const TxnResult& result) { OnResult(result); };
  if (steps.empty()) {
    // Closed loop: refill the window in batches (a quarter of it, at most
    // a message's worth) or after a tick, not one message per reply.
    const size_t window = static_cast<size_t>(options_.outstanding);
    const size_t refill = std::max<size_t>(1, std::min(options_.batch, window / 4));
    const int64_t tick_us = std::max(1, options_.tick_ms) * 1000LL;
    int64_t last_send = 0;
    while (true) {
      const int64_t now = NowMicros();
      if (now >= stop_us) break;
      SubmitDueRetries(now);
      const size_t busy = in_flight_.size() + retries_.size();
      const size_t free = busy < window ? window - busy : 0;
      // While the node asks to back off, the window waits (closed loop).
      if (!client_.backing_off() &&
          (free >= refill || (free > 0 && now - last_send >= tick_us))) {
        for (size_t i = 0; i < free; ++i) SubmitNew(NowMicros());
        last_send = now;
      }
      client_.Poll(free > 0 || !retries_.empty() ? options_.tick_ms : 50, on_result);
    }
  } else {
    // Open loop: txn i of step s is due at its scheduled time; what is due
    // leaves every tick, in one message.
    size_t step = 0;
    int64_t step_end = start_us + static_cast<int64_t>(steps[0].seconds * 1e6);
    double next_send = static_cast<double>(start_us);
    const int64_t tick_us = std::max(1, options_.tick_ms) * 1000LL;
    int64_t next_tick = start_us;
    while (true) {
      const int64_t now = NowMicros();
      if (now >= stop_us) break;
      if (now >= next_tick) {
        while (next_send <= now && next_send < stop_us) {
          while (step + 1 < steps.size() && next_send >= step_end) {
            ++step;
            step_end += static_cast<int64_t>(steps[step].seconds * 1e6);
          }
          const double rate = steps[step].rate;
          if (!(rate > 0)) {  // a pause: nothing due until the next step
            next_send = static_cast<double>(step_end);
            continue;
          }
          if (in_flight_.size() + retries_.size() < options_.max_open_in_flight) {
            SubmitNew(static_cast<int64_t>(next_send));
          } else {
            std::lock_guard<std::mutex> lock(mu_);
            ++stats_.skipped;
          }
          next_send += 1e6 / rate;
        }
        SubmitDueRetries(now);
        client_.Flush();
        next_tick = now + tick_us;
      }
      const int64_t wait_us = std::max<int64_t>(0, next_tick - NowMicros());
      client_.Poll(static_cast<int>((wait_us + 999) / 1000), on_result);
    }
  }
  // Drain: replies still due; BUSY txns are not retried any more.
  const int64_t drain_until = NowMicros() + options_.drain_ms * 1000LL;
  while (!in_flight_.empty() && NowMicros() < drain_until) client_.Poll(50, on_result);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.lost += in_flight_.size();
  stats_.gave_up += retries_.size();
  in_flight_.clear();
  retries_.clear();
}

void LoadClient::SubmitNew(int64_t scheduled_us) {
  if (!options_.retry_busy && client_.backing_off()) {
    // The node asked us to back off: this txn is refused here, unbuilt.
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.busy;
    ++stats_.busy_local;
    ++stats_.gave_up;
    TallyLocked(scheduled_us, true, 0, 0);
    return;
  }
  InFlight flight;
  flight.scheduled_us = scheduled_us;
  Txn txn;
  generator_->Next(&txn);
  flight.procedure = txn.procedure();
  flight.audit =
      workload_.application == "bank" && txn.procedure() == BankApplication::kAudit;
  // LTXs too: a retry of one that began answers with that LTX's outcome.
  if (failover()) flight.seq = next_seq_++;
  if (options_.retry_busy || failover()) {
    flight.txn = std::make_unique<Txn>(std::move(txn));
    Submit(std::move(flight), nullptr);
  } else {
    Submit(std::move(flight), &txn);
  }
}

void LoadClient::Submit(InFlight flight, Txn* txn) {
  const bool keep = txn == nullptr;
  if (keep) txn = flight.txn.get();
  uint64_t id;
  if (txn->txn_class() == LTX) {
    LtxRequest ltx;
    ltx.set_procedure(app_->ProcedureName(txn->procedure()));
    ltx.set_args(txn->args());
    Take(txn->mutable_ltx()->mutable_write_area(), keep, ltx.mutable_write_area());
    Take(txn->mutable_ltx()->mutable_read_area(), keep, ltx.mutable_read_area());
    Take(txn->mutable_read_set(), keep, ltx.mutable_read_set());
    Take(txn->mutable_read_write_set(), keep, ltx.mutable_read_write_set());
    if (flight.seq) {
      ltx.set_client_id(client_id_);
      ltx.set_client_seq(flight.seq);
    }
    flight.kind = kLoadLTX;
    id = client_.Submit(&ltx);
  } else {
    TxnRequest request;
    request.set_procedure(app_->ProcedureName(txn->procedure()));
    request.set_args(txn->args());
    Take(txn->mutable_read_set(), keep, request.mutable_read_set());
    Take(txn->mutable_write_set(), keep, request.mutable_write_set());
    Take(txn->mutable_read_write_set(), keep, request.mutable_read_write_set());
    if (flight.seq) {
      request.set_client_id(client_id_);
      request.set_client_seq(flight.seq);
    }
    id = client_.Submit(&request);
  }
  if (in_flight_.empty()) last_heard_us_ = NowMicros();
  in_flight_.emplace(id, std::move(flight));
}

void LoadClient::SubmitDueRetries(int64_t now) {
  // Replicated input: no reply at all for a while (a killed leader).
  if (failover() && !in_flight_.empty() &&
      now - last_heard_us_ > 1000LL * options_.failover_timeout_ms) {
    last_switch_us_ = 0;
    ring_.MarkSilent(current_, now);
    NextReplica(now);
  }
  if (!switch_to_.empty()) {  // decided in OnResult, done here, outside Poll
    const std::string to = std::move(switch_to_);
    switch_to_.clear();
    SwitchTo(to);
  }
  while (!retries_.empty() && retries_.begin()->first <= now) {
    InFlight flight = std::move(retries_.begin()->second);
    retries_.erase(retries_.begin());
    Submit(std::move(flight), nullptr);
  }
}

int64_t BusyBackoffMicros(int64_t base_ms, int attempts, int64_t max_ms, uint64_t random) {
  const int64_t cap_us =
      1000 * std::max<int64_t>(1, std::min<int64_t>(max_ms, base_ms << std::min(attempts, 20)));
  // A point in the upper half of the capped backoff: the jitter spreads the
  // retries without ever passing the cap (jitter applied after the cap, +-50%,
  // used to reach 1.5x of it).
  return cap_us - cap_us / 2 + static_cast<int64_t>(random % static_cast<uint64_t>(cap_us / 2 + 1));
}

int64_t LoadClient::Backoff(const InFlight& flight, const TxnResult& result) {
  int64_t base_ms = options_.busy_backoff_ms > 0 ? options_.busy_backoff_ms
                                                 : std::max<uint32_t>(1, result.retry_after_ms());
  jitter_ ^= jitter_ << 13;
  jitter_ ^= jitter_ >> 7;
  jitter_ ^= jitter_ << 17;
  return BusyBackoffMicros(base_ms, flight.attempts, options_.busy_backoff_max_ms, jitter_);
}

void LoadClient::OnResult(const TxnResult& result) {
  auto it = in_flight_.find(result.id());
  if (it == in_flight_.end()) return;
  InFlight flight = std::move(it->second);
  in_flight_.erase(it);
  const int64_t now = NowMicros();
  last_heard_us_ = now;
  if (failover() && flight.txn && flight.seq &&
      (result.status() == NOT_LEADER || result.status() == UNAVAILABLE ||
       result.status() == SHUTTING_DOWN)) {
    // Nothing ran, or (a deposed leader) maybe it did: either way its
    // request id makes the retry safe.
    // Followers name a dead leader until they notice (ReplicaRing).
    if (result.status() == NOT_LEADER && !result.leader_address().empty() &&
        ring_.Believe(result.leader_address(), now)) {
      if (result.leader_address() != current_) switch_to_ = result.leader_address();
    } else {
      NextReplica(now);
    }
    if (flight.attempts < options_.max_retries) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.retries;
      }
      const int64_t due = now + Backoff(flight, result);
      ++flight.attempts;
      retries_.emplace(due, std::move(flight));
      return;
    }
  }
  if (result.status() == BUSY) {
    const bool retry = options_.retry_busy && flight.txn && flight.attempts < options_.max_retries;
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.busy;
      if (result.error().find("backing off") != std::string::npos) ++stats_.busy_local;
      if (retry) ++stats_.retries;
      else ++stats_.gave_up;
      TallyLocked(flight.scheduled_us, true, 0, 0);
    }
    if (retry) {
      const int64_t due = now + Backoff(flight, result);
      ++flight.attempts;
      retries_.emplace(due, std::move(flight));
    } else {
      Finished(flight);
    }
    return;
  }
  Finished(flight);
  Record(flight, result, now);
}

void LoadClient::Finished(const InFlight& flight) {
  if (flight.kind != kLoadLTX) return;
  Txn txn;
  txn.set_procedure(flight.procedure);
  txn.set_origin_partition(partition_);
  app_->OnGeneratedResult(txn, TxnOutcome{});
}

void LoadClient::TallyLocked(int64_t scheduled_us, bool busy, uint64_t latency,
                             uint64_t server_latency) {
  auto tally = [&](std::vector<TimelineBucket>* buckets, size_t bucket) {
    if (buckets->size() <= bucket) buckets->resize(bucket + 1);
    TimelineBucket& b = (*buckets)[bucket];
    if (busy) {
      ++b.busy;
    } else {
      b.latency_us.Record(latency);
      b.server_latency_us.Record(server_latency);
    }
  };
  if (scheduled_us < phase_start_us_) return;
  if (options_.timeline_us > 0) {
    tally(&stats_.timeline,
          static_cast<size_t>((scheduled_us - phase_start_us_) / options_.timeline_us));
  }
  if (step_ends_us_.size() > 1) {
    const size_t step = static_cast<size_t>(
        std::upper_bound(step_ends_us_.begin(), step_ends_us_.end(), scheduled_us) -
        step_ends_us_.begin());
    tally(&stats_.steps, std::min(step, step_ends_us_.size() - 1));
  }
}

void LoadClient::Record(const InFlight& flight, const TxnResult& result, int64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  if (result.status() != OK) {
    ++stats_.errors[std::min<int>(result.status(), 7)];
    return;
  }
  const TxnReply& txn = result.txn();
  if (txn.already_applied()) {
    // A retry whose first send ran (replicated input): counted apart; its
    // result (and an audit's balances) came with neither send.
    ++stats_.already_applied;
    return;
  }
  const int kind = KindOf(txn);
  const uint64_t latency = static_cast<uint64_t>(std::max<int64_t>(0, now - flight.scheduled_us));
  stats_.latency_us[kind].Record(latency);
  if (kind == kLoadRO && txn.visibility_us() > 0) {
    stats_.visibility_us.Record(static_cast<uint64_t>(txn.visibility_us()));
  }
  if (txn.aborted()) {
    ++stats_.ltx_aborts[txn.abort_reason().empty() ? "(no reason given)" : txn.abort_reason()];
  } else if (!txn.committed()) {
    ++stats_.declined;
  }
  ProcedureStats& procedure = stats_.by_procedure[flight.procedure];
  procedure.latency_us.Record(latency);
  if (txn.committed()) ++procedure.committed;
  else if (!txn.aborted()) ++procedure.declined;
  const uint64_t server_latency = static_cast<uint64_t>(std::max<int64_t>(0, txn.server_latency_us()));
  stats_.server_latency_us.Record(server_latency);
  TallyLocked(flight.scheduled_us, false, latency, server_latency);
  if (flight.audit) {
    // Check the audit ourselves from the balances it returned.
    const ReadsView reads(txn);
    int64_t total = 0;
    for (size_t i = 0; i < reads.size(); ++i) total += BankApplication::DecodeBalance(reads.value(i));
    const int64_t expected =
        static_cast<int64_t>(workload_.bank_accounts) * workload_.bank_initial_balance;
    if (reads.malformed() || total != expected || !txn.invariant_ok()) ++stats_.audit_violations;
  }
}

}  // namespace paxflow
