// The embedded load generator (Calvin's way of reaching peak throughput):
// fills each batch from the application's generator. A node's generators
// (one per sequencer) share one InflightWindow, which keeps the node's
// generated txns that have not finished below a bound, so queues stay
// bounded when the engine is slower than the offered load.
#pragma once
#include <atomic>
#include <functional>
#include <memory>

#include "applications/application.h"
#include "sequencer/txn_source.h"

namespace paxflow {

// Threads: Claim from any sequencer thread.
class InflightWindow {
 public:
  // `limit`: most unfinished generated txns (0: unbounded); `completed`
  // returns how many of the node's generated txns have finished so far.
  InflightWindow(uint64_t limit, std::function<uint64_t()> completed);
  // Room for at most `want` more txns: how many the caller may generate.
  size_t Claim(size_t want);

 private:
  const uint64_t limit_;
  std::function<uint64_t()> completed_;
  std::atomic<uint64_t> generated_{0};
};

class GeneratorSource : public TxnSource {
 public:
  // `window` (shared by the node's generators; null: unbounded) outlives this.
  GeneratorSource(std::unique_ptr<TxnGenerator> generator, InflightWindow* window);
  size_t Fill(size_t max, int64_t now_us, Batch* batch) override;

 private:
  std::unique_ptr<TxnGenerator> generator_;
  InflightWindow* const window_;
};

}  // namespace paxflow
