// Every partition's scheduler and store in this process, fed by real
// sequencers whose epochs the test closes itself: no timers, no sockets.
// With the generator's backpressure off, the input depends only on the
// seed, so runs in different modes execute the very same txns.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "applications/application.h"
#include "backend/store.h"
#include "deployment/params.h"
#include "scheduler/scheduler.h"
#include "sequencer/generator_source.h"
#include "sequencer/input_log.h"
#include "sequencer/sequencer.h"

namespace paxflow::testing {

class EngineHarness : public PeerSender {
 public:
  // `log_dir` (optional) receives one input log per partition.
  EngineHarness(const NodeParams& params, uint32_t partitions, ResultSink* results,
                const std::string& log_dir = "");
  ~EngineHarness() override;

  // Closes epochs 1..epochs on every sequencer (the last one final), hands
  // every batch over, then starts the schedulers and waits until everything
  // ran. Call once. False on timeout.
  bool Run(Epoch epochs, int64_t timeout_ms = 120000);

  uint64_t DatabaseDigest();  // after Run
  Scheduler& scheduler(PartitionId p) { return *schedulers_[p]; }
  Store& store(PartitionId p) { return *stores_[p]; }
  NodeStats& stats(PartitionId p) { return *stats_[p]; }
  uint64_t Committed() const;
  // PeerSender: reads go straight to the other partition's scheduler.
  void SendRemoteReads(PartitionId to, const RemoteReads& reads) override;

 private:

  NodeParams params_;
  uint32_t partitions_;
  std::unique_ptr<Application> app_;
  std::vector<std::unique_ptr<Store>> stores_;
  std::vector<size_t> digest_slots_;  // the test thread's slot in each store
  std::vector<std::unique_ptr<NodeStats>> stats_;
  std::vector<std::unique_ptr<InputLogWriter>> logs_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;
  std::vector<std::unique_ptr<GeneratorSource>> generators_;
  std::vector<std::unique_ptr<Sequencer>> sequencers_;
};

}  // namespace paxflow::testing
