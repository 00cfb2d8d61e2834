#include "tests/engine_harness.h"

#include "common/clock.h"
#include "partition/partition_setup.h"

namespace paxflow::testing {

EngineHarness::EngineHarness(const NodeParams& params, uint32_t partitions, ResultSink* results,
                             const std::string& log_dir)
    : partitions_(partitions),
      app_(MakeApplication(params.workload)),
      engine_(std::make_unique<LocalPartitions>(params, app_.get(), partitions, 0, results)) {
  for (PartitionId p = 0; p < partitions; ++p) {
    if (!log_dir.empty()) {
      logs_.push_back(std::make_unique<InputLogWriter>());
      logs_.back()->Open(InputLogPath(log_dir, p), MakeLogHeader(params, p, p, 0, partitions),
                         false);
      InputLogWriter* log = logs_.back().get();
      scheduler(p).SetBeforeExecute(
          [log](const MergedEpoch& epoch) { return log->Append(epoch).empty(); });
    }
    generators_.push_back(std::make_unique<GeneratorSource>(
        app_->NewGenerator(p, partitions, params.engine.seed + p), /*max_inflight=*/0, nullptr));
    SequencerOptions sequencer;
    sequencer.sequencer_id = p;
    sequencer.partitions = partitions;
    sequencer.node = p;
    sequencer.max_batch = params.engine.max_batch;
    sequencers_.push_back(std::make_unique<Sequencer>(
        sequencer, std::vector<TxnSource*>{generators_.back().get()}));
  }
}

bool EngineHarness::Run(Epoch epochs, int64_t timeout_ms) {
  for (Epoch epoch = 1; epoch <= epochs; ++epoch) {
    for (auto& sequencer : sequencers_) {
      auto batches = sequencer->CloseEpoch(epoch, NowMicros(), epoch == epochs);
      for (PartitionId p = 0; p < partitions_; ++p) {
        scheduler(p).DeliverBatch(std::move(batches[p]));
      }
    }
  }
  // Started only now: the first thing each scheduler sees is the whole
  // input, so read-only txns reliably meet unpublished snapshots.
  engine_->Start();
  for (PartitionId p = 0; p < partitions_; ++p) {
    if (!scheduler(p).WaitFinished(timeout_ms)) return false;
  }
  return true;
}

uint64_t EngineHarness::DatabaseDigest() {
  uint64_t digest = 0;
  for (PartitionId p = 0; p < partitions_; ++p) {
    digest += engine_->Digest(p, scheduler(p).last_epoch());
  }
  return digest;
}

}  // namespace paxflow::testing
