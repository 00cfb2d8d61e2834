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
  void OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                const ReadValues&) override {
    std::lock_guard<std::mutex> lock(mu_);
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
  int invariant_failures() const {
    std::lock_guard<std::mutex> lock(mu_);
    return invariant_failures_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<TxnId> order_;
  std::map<TxnId, ReadOnly> read_only_;
  int invariant_failures_ = 0;
};

}  // namespace paxflow::testing
