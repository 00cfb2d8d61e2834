// YCSB-style key/value workload: read-only txns of N reads, and read-write
// txns mixing reads and read-modify-writes, over dense integer keys.
#pragma once
#include "applications/application.h"
#include "applications/workload.h"

namespace paxflow {

class YcsbApplication : public Application {
 public:
  enum Procedure : uint32_t { kReadOnly = 1, kReadModifyWrite = 2 };

  explicit YcsbApplication(const WorkloadParams& params) : params_(params) {}
  const char* name() const override { return "ycsb"; }
  uint64_t DenseKeys() const override { return params_.records; }
  void Load(PartitionId partition, uint32_t partitions, Loader* loader) const override;
  void Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
               TxnOutcome* outcome) const override;
  std::unique_ptr<TxnGenerator> NewGenerator(PartitionId partition, uint32_t partitions,
                                             uint64_t seed) const override;
  const char* ProcedureName(uint32_t procedure) const override;
  std::vector<std::pair<std::string, uint32_t>> Procedures() const override;
  std::string CheckClientTxn(const Txn& txn) const override;

  // The value every key starts with.
  static void InitialValue(Key key, uint32_t size, std::string* out);

 private:
  WorkloadParams params_;
};

}  // namespace paxflow
