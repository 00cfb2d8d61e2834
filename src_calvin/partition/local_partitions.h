// Every partition of one replica in this process, without a network: the
// stores, statistics and schedulers, with a multi-partition txn's reads
// handed from one scheduler to another in memory. Replay runs on it, and so
// do the tests' in-process engine.
//
// Owns: the stores, statistics and schedulers. Threads: the owner's; the
// schedulers run their own once started. Stops them on destruction.
#pragma once
#include <memory>
#include <vector>

#include "applications/application.h"
#include "backend/store.h"
#include "common/stats.h"
#include "base/params.h"
#include "scheduler/scheduler.h"

namespace paxflow {

class LocalPartitions : public PeerSender {
 public:
  // Loads every partition's initial data, unless `load` is false (a replay
  // from checkpoints fills the stores itself). `sequencers`: 0 for one per
  // partition. `runs_procedures`: as replica 0 does (LTX procedures run
  // here); a replay only installs what the log's commit records say.
  // `records`: where partition p's LTX lane submits its records (one per
  // partition; empty: nowhere).
  LocalPartitions(const NodeParams& params, const Application* app, uint32_t partitions,
                  uint32_t sequencers, ResultSink* results, bool runs_procedures = true,
                  const std::vector<RecordSubmitter*>& records = {}, bool load = true);
  ~LocalPartitions() override;

  uint32_t size() const { return static_cast<uint32_t>(schedulers_.size()); }
  Scheduler& scheduler(PartitionId p) { return *schedulers_[p]; }
  Store& store(PartitionId p) { return *stores_[p]; }
  size_t owner_slot(PartitionId p) const { return owner_slots_[p]; }
  NodeStats& stats(PartitionId p) { return *stats_[p]; }

  void Start();
  void Stop();
  // Digest of partition `p` as of `epoch`; owner thread only.
  uint64_t Digest(PartitionId p, Epoch epoch);
  // Txns finished at their origin, over all partitions.
  uint64_t Committed() const;

  // PeerSender: reads go straight to the other partition's scheduler.
  void SendRemoteReads(PartitionId to, const RemoteReads& reads) override;
  void SendLtxReadRequest(PartitionId to, const LtxReadRequest& request) override;
  void SendLtxReadReply(PartitionId to, const LtxReadReply& reply) override;

 private:
  std::vector<std::unique_ptr<Store>> stores_;
  std::vector<size_t> owner_slots_;  // the owner thread's slot in each store
  std::vector<std::unique_ptr<NodeStats>> stats_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;
};

}  // namespace paxflow
