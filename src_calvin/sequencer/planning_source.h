// A source whose txns are planned as the sequencer takes them: OLLP's
// reconnaissance (Application::PlanDependent) for txns that arrive without
// their full key sets, such as clients' dependent TPC-C txns.
// Owns nothing: the inner source and the plan outlive it. Threads: the
// sequencer thread that polls it (the plan reads the store there).
#pragma once
#include <functional>
#include <utility>

#include "sequencer/txn_source.h"

namespace paxflow {

class PlanningSource : public TxnSource {
 public:
  PlanningSource(TxnSource* inner, std::function<void(Txn*)> plan)
      : inner_(inner), plan_(std::move(plan)) {}

  size_t Fill(size_t max, int64_t now_us, Batch* batch) override {
    const int first = batch->txns_size();
    const size_t count = inner_->Fill(max, now_us, batch);
    if (plan_) {
      for (int i = first; i < batch->txns_size(); ++i) plan_(batch->mutable_txns(i));
    }
    return count;
  }

 private:
  TxnSource* const inner_;
  const std::function<void(Txn*)> plan_;
};

}  // namespace paxflow
