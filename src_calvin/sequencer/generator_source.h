// The embedded load generator (Calvin's way of reaching peak throughput):
// fills each batch from the application's generator, keeping at most
// `max_inflight` generated txns unfinished so queues stay bounded.
#pragma once
#include <functional>
#include <memory>

#include "applications/application.h"
#include "sequencer/txn_source.h"

namespace paxflow {

class GeneratorSource : public TxnSource {
 public:
  // `completed` returns how many of this node's txns have finished so far.
  GeneratorSource(std::unique_ptr<TxnGenerator> generator, uint64_t max_inflight,
                  std::function<uint64_t()> completed);
  size_t Fill(size_t max, int64_t now_us, Batch* batch) override;

 private:
  std::unique_ptr<TxnGenerator> generator_;
  const uint64_t max_inflight_;  // 0: unbounded
  std::function<uint64_t()> completed_;
  uint64_t generated_ = 0;
};

}  // namespace paxflow
