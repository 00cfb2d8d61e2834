#include "tests/engine_harness.h"

#include "common/clock.h"
#include "deployment/node.h"

namespace paxflow::testing {
EngineHarness::EngineHarness(const NodeParams& params, uint32_t partitions, ResultSink* results,
                             const std::string& log_dir)
    : params_(params), partitions_(partitions), app_(MakeApplication(params.workload)) {
  for (PartitionId p = 0; p < partitions; ++p) {
    stores_.push_back(MakeStore(params.engine, p, partitions, *app_, params.workload.value_size));
    LoadPartition(*app_, p, partitions, stores_.back().get());
    digest_slots_.push_back(stores_.back()->RegisterThread());
    stats_.push_back(std::make_unique<NodeStats>(params.engine.workers));
    schedulers_.push_back(std::make_unique<Scheduler>(SchedulerOptionsFor(params.engine, p,
                                                                          partitions),
                                                      stores_.back().get(), app_.get(), this,
                                                      stats_.back().get(), results));
    if (!log_dir.empty()) {
      LogHeader header;
      header.set_node_id(p);
      header.set_partition(p);
      header.set_partitions(partitions);
      header.set_sequencers(partitions);
      for (const auto& [name, value] : params.ClusterParams()) {
        Param* param = header.add_param();
        param->set_name(name);
        param->set_value(value);
      }
      logs_.push_back(std::make_unique<InputLogWriter>());
      logs_.back()->Open(InputLogPath(log_dir, p), header, false);
      InputLogWriter* log = logs_.back().get();
      schedulers_.back()->SetBeforeExecute([log](const MergedEpoch& epoch) { log->Append(epoch); });
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

EngineHarness::~EngineHarness() {
  for (auto& scheduler : schedulers_) scheduler->Stop();
}

void EngineHarness::SendRemoteReads(PartitionId to, const RemoteReads& reads) {
  RemoteReads copy = reads;
  schedulers_[to]->DeliverRemoteReads(std::move(copy));
}

bool EngineHarness::Run(Epoch epochs, int64_t timeout_ms) {
  for (Epoch epoch = 1; epoch <= epochs; ++epoch) {
    for (auto& sequencer : sequencers_) {
      auto batches = sequencer->CloseEpoch(epoch, NowMicros(), epoch == epochs);
      for (PartitionId p = 0; p < partitions_; ++p) {
        schedulers_[p]->DeliverBatch(std::move(batches[p]));
      }
    }
  }
  // Started only now: the first thing each scheduler sees is the whole
  // input, so read-only txns reliably meet unpublished snapshots.
  for (auto& scheduler : schedulers_) scheduler->Start();
  for (auto& scheduler : schedulers_) {
    if (!scheduler->WaitFinished(timeout_ms)) return false;
  }
  return true;
}

uint64_t EngineHarness::DatabaseDigest() {
  uint64_t digest = 0;
  for (PartitionId p = 0; p < partitions_; ++p) {
    digest += stores_[p]->Digest(digest_slots_[p], schedulers_[p]->last_epoch());
  }
  return digest;
}

uint64_t EngineHarness::Committed() const {
  uint64_t total = 0;
  for (const auto& stats : stats_) total += stats->CommittedAll();
  return total;
}

}  // namespace paxflow::testing
