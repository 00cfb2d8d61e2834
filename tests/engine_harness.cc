#include "tests/engine_harness.h"

#include <thread>

#include "common/clock.h"
#include "partition/partition_setup.h"

namespace paxflow::testing {
namespace {

std::vector<std::unique_ptr<RecordQueue>> MakeQueues(uint32_t partitions) {
  std::vector<std::unique_ptr<RecordQueue>> queues;
  for (uint32_t p = 0; p < partitions; ++p) queues.push_back(std::make_unique<RecordQueue>());
  return queues;
}

std::vector<RecordSubmitter*> Submitters(const std::vector<std::unique_ptr<RecordQueue>>& queues) {
  std::vector<RecordSubmitter*> submitters;
  for (const auto& queue : queues) submitters.push_back(queue.get());
  return submitters;
}

}  // namespace

EngineHarness::EngineHarness(const NodeParams& params, uint32_t partitions, ResultSink* results,
                             const std::string& log_dir)
    : partitions_(partitions),
      app_(MakeApplication(params.workload)),
      records_(MakeQueues(partitions)),
      engine_(std::make_unique<LocalPartitions>(params, app_.get(), partitions, 0, results,
                                                /*runs_procedures=*/true, Submitters(records_))) {
  for (PartitionId p = 0; p < partitions; ++p) {
    if (!log_dir.empty()) {
      logs_.push_back(std::make_unique<InputLogWriter>());
      logs_.back()->Open(InputLogPath(log_dir, p), MakeLogHeader(params, p, p, 0, partitions),
                         false);
      InputLogWriter* log = logs_.back().get();
      scheduler(p).SetBeforeExecute(
          [log](const MergedEpoch& epoch) { return log->Append(epoch).empty(); });
    }
    // As a node: sequencers_per_node sequencers, each with its own generator.
    const uint32_t per_node = params.engine.sequencers_per_node;
    for (uint32_t index = 0; index < per_node; ++index) {
      generators_.push_back(std::make_unique<GeneratorSource>(
          app_->NewGenerator(p, partitions, params.engine.seed + p + (uint64_t{index} << 32)),
          /*window=*/nullptr));
      SequencerOptions sequencer;
      sequencer.sequencer_id = SequencerId(p, index, per_node);
      sequencer.partition = p;
      sequencer.partitions = partitions;
      sequencer.node = p;
      sequencer.max_batch = params.engine.max_batch;
      // The first sequencer of a node takes the LTX lane's records.
      sequencers_.push_back(std::make_unique<Sequencer>(
          sequencer, std::vector<TxnSource*>{generators_.back().get()},
          index == 0 ? records_[p].get() : nullptr));
    }
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

bool EngineHarness::RunLive(Epoch epochs, int64_t timeout_ms) {
  engine_->Start();
  const int64_t deadline = NowMicros() + timeout_ms * 1000;
  // Epochs close as execution keeps up (a few epochs ahead at most): the
  // flow control of a sequencer whose clock waits for nobody, without the
  // clock.
  constexpr Epoch kAhead = 4;
  for (Epoch epoch = 1;; ++epoch) {
    for (PartitionId p = 0; p < partitions_; ++p) {
      while (scheduler(p).Status().admitted_epoch + kAhead < epoch) {
        if (NowMicros() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::microseconds(200));  // flow control, not sync
      }
    }
    bool owed = false;
    for (PartitionId p = 0; p < partitions_; ++p) {
      owed |= records_[p]->size() > 0 || scheduler(p).OwesLtxWork(epoch - 1);
    }
    // As SequencerRunner: the last epoch that takes new txns is never the
    // final one (LTXs it begins are not in `owed` yet).
    const bool final = epoch > epochs && !owed;
    for (auto& sequencer : sequencers_) {
      auto batches = sequencer->CloseEpoch(epoch, NowMicros(), final, epoch <= epochs);
      for (PartitionId p = 0; p < partitions_; ++p) {
        scheduler(p).DeliverBatch(std::move(batches[p]));
      }
    }
    if (final) break;
    if (NowMicros() > deadline) return false;
  }
  for (PartitionId p = 0; p < partitions_; ++p) {
    const int64_t left_ms = std::max<int64_t>(1, (deadline - NowMicros()) / 1000);
    if (!scheduler(p).WaitFinished(left_ms)) return false;
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
