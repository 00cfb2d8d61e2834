#include "partition/local_partitions.h"

#include "partition/partition_setup.h"

namespace paxflow {

LocalPartitions::LocalPartitions(const NodeParams& params, const Application* app,
                                 uint32_t partitions, uint32_t sequencers, ResultSink* results,
                                 bool runs_procedures,
                                 const std::vector<RecordSubmitter*>& records, bool load) {
  for (PartitionId p = 0; p < partitions; ++p) {
    stores_.push_back(MakeStore(params.engine, p, partitions, *app, params.workload.value_size));
    if (load) LoadPartition(*app, p, partitions, stores_.back().get());
    owner_slots_.push_back(stores_.back()->RegisterThread());
    SchedulerOptions options = SchedulerOptionsFor(params.engine, p, partitions, sequencers);
    options.runs_procedures = runs_procedures;
    stats_.push_back(std::make_unique<NodeStats>(options.stats_slots()));
    schedulers_.push_back(std::make_unique<Scheduler>(options, stores_.back().get(), app, this,
                                                      stats_.back().get(), results,
                                                      p < records.size() ? records[p] : nullptr));
  }
}

LocalPartitions::~LocalPartitions() { Stop(); }

void LocalPartitions::Start() {
  for (auto& scheduler : schedulers_) scheduler->Start();
}

void LocalPartitions::Stop() {
  for (auto& scheduler : schedulers_) scheduler->Stop();
}

uint64_t LocalPartitions::Digest(PartitionId p, Epoch epoch) {
  return stores_[p]->Digest(owner_slots_[p], epoch);
}

uint64_t LocalPartitions::Committed() const {
  uint64_t total = 0;
  for (const auto& stats : stats_) total += stats->CommittedAll();
  return total;
}

void LocalPartitions::SendRemoteReads(PartitionId to, const RemoteReads& reads) {
  RemoteReads copy = reads;
  schedulers_[to]->DeliverRemoteReads(std::move(copy));
}

void LocalPartitions::SendLtxReadRequest(PartitionId to, const LtxReadRequest& request) {
  LtxReadRequest copy = request;
  schedulers_[to]->DeliverLtxReadRequest(std::move(copy));
}

void LocalPartitions::SendLtxReadReply(PartitionId to, const LtxReadReply& reply) {
  LtxReadReply copy = reply;
  schedulers_[to]->DeliverLtxReadReply(std::move(copy));
}

}  // namespace paxflow
