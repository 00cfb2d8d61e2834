// A step-driven test bench for the LTX lane: the schedulers of 1..n
// partitions in this process, never started. The test is the sequencer: it
// builds each epoch's txns, hands the LTX lane's records back into the
// epochs it chooses, and runs every thread's work itself (Drain), so each
// interleaving is chosen, not hoped for.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "applications/application.h"
#include "backend/store.h"
#include "base/params.h"
#include "partition/local_partitions.h"
#include "scheduler/scheduler.h"
#include "tests/result_log.h"

namespace paxflow::testing {

struct LtxBenchOptions {
  Mode mode = Mode::kPaxflow;
  uint32_t partitions = 1;
  uint64_t records = 100;
  uint64_t ltx_timeout = 1000;
  uint32_t max_active_ltx = 16;
  uint32_t ltx_max_deferrals = 3;
  GcPolicy gc = GcPolicy::kEpo;
};

class LtxBench : public RecordSubmitter {
 public:
  explicit LtxBench(const LtxBenchOptions& options);
  ~LtxBench() override;

  // Txns to sequence (ids, classes and origins are set by Sequence).
  static Txn Rmw(std::vector<Key> keys, std::vector<Key> reads = {});
  static Txn Read(std::vector<Key> keys);
  // ycsb-ltx: reads `reads`, read-modify-writes `rmw`; write area = rmw.
  static Txn Long(std::vector<Key> reads, std::vector<Key> rmw);
  // ltx-kv: reads `reads`, writes `values` to `keys`; write area given.
  static Txn LongKv(std::vector<Key> reads, std::vector<std::pair<Key, std::string>> writes,
                    std::vector<std::pair<Key, Key>> write_area);
  static Txn Scan(Key lo, Key hi);
  static Txn Insert(std::vector<Key> keys);

  // Sequences `txns` as epoch `epoch` (the next one) and delivers every
  // partition's batch; `origin` is the partition each txn came from. Returns
  // the ids given, in order.
  std::vector<TxnId> Sequence(Epoch epoch, std::vector<Txn> txns, PartitionId origin = 0);
  // Runs everything runnable on every partition until nothing moves;
  // without `ltx_threads`, leaves the LTX threads' work queued (an LTX
  // then has not read yet, however long short txns run).
  void Drain(bool ltx_threads = true);
  // The records the LTX lanes submitted since the last call.
  std::vector<Txn> TakeRecords();

  Scheduler& scheduler(PartitionId p) { return engine_->scheduler(p); }
  Store& store(PartitionId p) { return engine_->store(p); }
  const ResultLog& results() const { return results_; }
  bool Result(TxnId id, ResultLog::Result* out) const { return results_.Find(id, out); }
  // Digest of the whole database as of `epoch` (published on every partition).
  uint64_t Digest(Epoch epoch);
  Epoch Published() const;
  // Checks every result against a serial execution in position order.
  std::string CheckSerialOrder(uint64_t* serial_digest = nullptr);
  const WorkloadParams& workload() const { return workload_; }

  // RecordSubmitter: every partition's LTX lane hands its records here.
  void SubmitRecord(Txn record) override;

 private:
  LtxBenchOptions options_;
  WorkloadParams workload_;
  std::unique_ptr<Application> app_;
  ResultLog results_;
  std::unique_ptr<LocalPartitions> engine_;  // never started: the test drives it
  std::mutex records_mu_;
  std::vector<Txn> records_;
};

}  // namespace paxflow::testing
