// A ResultSink that records what tests check: the order results came in,
// read-only checksums and snapshots, invariant failures.
#pragma once
#include <map>
#include <mutex>
#include <vector>

#include "scheduler/scheduler.h"

namespace paxflow::testing {

class ResultLog : public ResultSink {
 public:
  struct ReadOnly {
    uint64_t checksum = 0;
    Epoch read_version = 0;
  };
  // Every result, whole (for the serialization-order oracle).
  struct Result {
    Txn txn;
    TxnOutcome outcome;
    Epoch read_version = 0;
  };

  void OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                const ReadValues&) override {
    std::lock_guard<std::mutex> lock(mu_);
    all_.push_back(Result{txn, outcome, read_version});
    order_.push_back(txn.id());
    if (txn.txn_class() == RO) read_only_[txn.id()] = ReadOnly{outcome.checksum, read_version};
    if (!outcome.invariant_ok) ++invariant_failures_;
  }
  std::vector<TxnId> order() const {
    std::lock_guard<std::mutex> lock(mu_);
    return order_;
  }
  std::map<TxnId, ReadOnly> read_only() const {
    std::lock_guard<std::mutex> lock(mu_);
    return read_only_;
  }
  std::vector<Result> all() const {
    std::lock_guard<std::mutex> lock(mu_);
    return all_;
  }
  // The result of txn `id` (the last one if several came): false if none.
  bool Find(TxnId id, Result* out) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = all_.rbegin(); it != all_.rend(); ++it) {
      if (it->txn.id() == id) {
        *out = *it;
        return true;
      }
    }
    return false;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return all_.size();
  }
  int invariant_failures() const {
    std::lock_guard<std::mutex> lock(mu_);
    return invariant_failures_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<TxnId> order_;
  std::vector<Result> all_;
  std::map<TxnId, ReadOnly> read_only_;
  int invariant_failures_ = 0;
};

}  // namespace paxflow::testing
