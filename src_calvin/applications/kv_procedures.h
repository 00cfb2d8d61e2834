// Wraps an application with the generic procedures every application
// offers its clients: "get" (read keys), "put" (write values) and "kv"
// (read some keys, write others), and the generic long txn "ltx-kv"
// (reads read_set, scans read_area, writes KvArgs values to
// read_write_set; an empty value deletes the key). Everything else goes to the wrapped application
// unchanged.
#pragma once
#include <memory>

#include "applications/application.h"

namespace paxflow {

class WithKvProcedures : public Application {
 public:
  enum Procedure : uint32_t { kGet = 1001, kPut = 1002, kKv = 1003, kLongKv = 1004 };

  explicit WithKvProcedures(std::unique_ptr<Application> inner) : inner_(std::move(inner)) {}
  const char* name() const override { return inner_->name(); }
  uint64_t DenseKeys() const override { return inner_->DenseKeys(); }
  void Load(PartitionId partition, uint32_t partitions, Loader* loader) const override {
    inner_->Load(partition, partitions, loader);
  }
  void Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
               TxnOutcome* outcome) const override;
  std::unique_ptr<TxnGenerator> NewGenerator(PartitionId partition, uint32_t partitions,
                                             uint64_t seed) const override {
    return inner_->NewGenerator(partition, partitions, seed);
  }
  const char* ProcedureName(uint32_t procedure) const override;
  std::vector<std::pair<std::string, uint32_t>> Procedures() const override;
  std::string CheckClientTxn(const Txn& txn) const override;
  bool IsLongProcedure(uint32_t procedure) const override {
    return procedure == kLongKv || inner_->IsLongProcedure(procedure);
  }
  bool NeedsRecon(uint32_t procedure) const override { return inner_->NeedsRecon(procedure); }
  bool ReadsDeclared(uint32_t procedure) const override {
    return inner_->ReadsDeclared(procedure);
  }
  void PlanDependent(Txn* txn, const ReconRead& read) const override {
    inner_->PlanDependent(txn, read);
  }
  bool PlansLtxAreas(uint32_t procedure) const override {
    return inner_->PlansLtxAreas(procedure);
  }
  std::string CheckState(const StateScan& scan) const override { return inner_->CheckState(scan); }
  void OnGeneratedResult(const Txn& txn, const TxnOutcome& outcome) const override {
    inner_->OnGeneratedResult(txn, outcome);
  }
  void ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                   LtxRound* out) const override;
  bool SummarizesScans(const Txn& txn) const override {
    return txn.procedure() != kLongKv && inner_->SummarizesScans(txn);
  }
  std::string SummarizeScans(const Txn& txn, const ScanVisit& visit,
                             const ScanMemoUse& memo) const override {
    return inner_->SummarizeScans(txn, visit, memo);
  }
  const Application& inner() const { return *inner_; }

 private:
  std::unique_ptr<Application> inner_;
};

}  // namespace paxflow
