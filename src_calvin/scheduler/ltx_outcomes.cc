#include "scheduler/ltx_outcomes.h"

namespace paxflow {

bool LtxAbortRetryable(int code) {
  return code == kAbortBusy || code == kAbortTimeout || code == kAbortRestart ||
         code == kAbortGuard || code == kAbortRecon || code == kAbortCascade ||
         code == kAbortFailover;
}

TxnOutcome LtxAbortOutcome(const std::string& reason) {
  TxnOutcome outcome;
  outcome.committed = false;
  outcome.aborted = true;
  outcome.abort_reason = reason;
  outcome.retryable = LtxAbortRetryable(LtxAbortReasonOf(reason));
  return outcome;
}

void LtxOutcomes::Began(TxnId ltx) {
  std::lock_guard<std::mutex> lock(mu_);
  ltxs_.emplace(ltx, Entry{});
  // Forgotten by begin order, so the same ones on every replica. An LTX
  // this far back resolved long ago (max_active_ltx bounds the unresolved).
  while (ltxs_.size() > limit_) ltxs_.erase(ltxs_.begin());
}

std::vector<std::pair<LtxOutcomes::Answer, TxnOutcome>> LtxOutcomes::TakeWaitersLocked(
    TxnId ltx, const TxnOutcome& outcome) {
  std::vector<std::pair<Answer, TxnOutcome>> due;
  auto waiting = waiters_.find(ltx);
  if (waiting == waiters_.end()) return due;
  for (Answer& answer : waiting->second) due.emplace_back(std::move(answer), outcome);
  waiters_.erase(waiting);
  return due;
}

void LtxOutcomes::Resolved(TxnId ltx, const TxnOutcome& outcome) {
  std::vector<std::pair<Answer, TxnOutcome>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = ltxs_.find(ltx);
    if (found == ltxs_.end() || found->second.resolved) return;
    found->second.resolved = true;
    found->second.outcome = outcome;
    due = TakeWaitersLocked(ltx, outcome);
  }
  for (auto& [answer, result] : due) answer(Known::kResolved, result);
}

void LtxOutcomes::EpochEnded(Epoch epoch) {
  std::vector<std::pair<Answer, TxnOutcome>> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (epoch > ended_) ended_ = epoch;
    if (waiters_.empty()) return;
    // A waiter for an LTX whose begin epoch was seen without it: the table
    // does not know it (forgotten, or before a restored checkpoint).
    std::vector<TxnId> unknown;
    for (const auto& [ltx, answers] : waiters_) {
      if (TxnEpoch(ltx) <= ended_ && !ltxs_.count(ltx)) unknown.push_back(ltx);
    }
    for (TxnId ltx : unknown) {
      auto more = TakeWaitersLocked(ltx, TxnOutcome{});
      for (auto& each : more) due.push_back(std::move(each));
    }
  }
  for (auto& [answer, result] : due) answer(Known::kForgotten, result);
}

void LtxOutcomes::Ask(TxnId ltx, Answer answer) {
  Known known;
  TxnOutcome outcome;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto found = ltxs_.find(ltx);
    if (found != ltxs_.end() && found->second.resolved) {
      known = Known::kResolved;
      outcome = found->second.outcome;
    } else if (found == ltxs_.end() && TxnEpoch(ltx) <= ended_) {
      known = Known::kForgotten;
    } else {
      // Unresolved, or its begin epoch not reached here yet.
      waiters_[ltx].push_back(std::move(answer));
      return;
    }
  }
  answer(known, outcome);
}

void LtxOutcomes::Save(LtxLaneState* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  out->clear_outcomes();
  for (const auto& [ltx, entry] : ltxs_) {
    LtxStateOutcome* saved = out->add_outcomes();
    saved->set_ltx(ltx);
    if (!entry.resolved) continue;
    const TxnOutcome& o = entry.outcome;
    saved->set_resolved(true);
    saved->set_committed(o.committed);
    saved->set_aborted(o.aborted);
    saved->set_abort_reason(o.abort_reason);
    saved->set_retryable(o.retryable);
    saved->set_checksum(o.checksum);
    LtxStatePosition* p = saved->mutable_position();
    p->set_epoch(o.position.epoch);
    p->set_anchor(o.position.anchor);
    p->set_chain(o.position.chain);
    p->set_txn(o.position.txn);
  }
}

std::string LtxOutcomes::Load(const LtxLaneState& in) {
  std::map<TxnId, Entry> loaded;
  for (const LtxStateOutcome& saved : in.outcomes()) {
    if (saved.ltx() == 0 || (!loaded.empty() && saved.ltx() <= loaded.rbegin()->first)) {
      return "its LTX outcomes are not in ascending order of LTX ids";
    }
    Entry& entry = loaded[saved.ltx()];
    if (!saved.resolved()) continue;
    entry.resolved = true;
    TxnOutcome& o = entry.outcome;
    o.committed = saved.committed();
    o.aborted = saved.aborted();
    o.abort_reason = saved.abort_reason();
    o.retryable = saved.retryable();
    o.checksum = saved.checksum();
    o.position = SerialPosition{saved.position().epoch(), saved.position().anchor(),
                                saved.position().chain(), saved.position().txn()};
  }
  std::lock_guard<std::mutex> lock(mu_);
  ltxs_ = std::move(loaded);
  while (ltxs_.size() > limit_) ltxs_.erase(ltxs_.begin());
  if (in.ended_epoch() > ended_) ended_ = in.ended_epoch();
  return "";
}

size_t LtxOutcomes::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ltxs_.size();
}

size_t LtxOutcomes::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = 0;
  for (const auto& [ltx, answers] : waiters_) total += answers.size();
  return total;
}

}  // namespace paxflow
