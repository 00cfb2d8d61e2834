// Every partition's scheduler and store in this process, fed by real
// sequencers whose epochs the test closes itself: no timers, no sockets.
// With the generator's backpressure off, the input depends only on the
// seed, so runs in different modes execute the very same txns.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "applications/application.h"
#include "partition/local_partitions.h"
#include "base/params.h"
#include "sequencer/generator_source.h"
#include "sequencer/input_log.h"
#include "sequencer/sequencer.h"

namespace paxflow::testing {

class EngineHarness {
 public:
  // `log_dir` (optional) receives one input log per partition.
  EngineHarness(const NodeParams& params, uint32_t partitions, ResultSink* results,
                const std::string& log_dir = "");

  // Closes epochs 1..epochs on every sequencer (the last one final), hands
  // every batch over, then starts the schedulers and waits until everything
  // ran. Call once. False on timeout.
  bool Run(Epoch epochs, int64_t timeout_ms = 120000);
  // With the schedulers running from the start: closes epochs one after
  // the other as execution keeps up, the LTX lanes' records going into the
  // next ones, and after `epochs` keeps closing record-only epochs until no
  // LTX is unresolved. Call once instead of Run. False on timeout.
  bool RunLive(Epoch epochs, int64_t timeout_ms = 120000);

  uint64_t DatabaseDigest();  // after Run
  Scheduler& scheduler(PartitionId p) { return engine_->scheduler(p); }
  Store& store(PartitionId p) { return engine_->store(p); }
  NodeStats& stats(PartitionId p) { return engine_->stats(p); }
  uint64_t Committed() const { return engine_->Committed(); }

 private:
  uint32_t partitions_;
  std::unique_ptr<Application> app_;
  std::vector<std::unique_ptr<InputLogWriter>> logs_;  // outlive the schedulers' hooks
  std::vector<std::unique_ptr<RecordQueue>> records_;  // the LTX lanes' records, by partition
  std::unique_ptr<LocalPartitions> engine_;
  std::vector<std::unique_ptr<GeneratorSource>> generators_;
  std::vector<std::unique_ptr<Sequencer>> sequencers_;
};

}  // namespace paxflow::testing
