// YCSB-style key/value workload: read-only txns of N reads, and read-write
// txns mixing reads and read-modify-writes, over dense integer keys.
#pragma once
#include "applications/application.h"
#include "applications/workload.h"

namespace paxflow {

class YcsbApplication : public Application {
 public:
  enum Procedure : uint32_t {
    kReadOnly = 1,
    kReadModifyWrite = 2,
    kLong = 3,    // ycsb-ltx: reads read_set, read-modify-writes read_write_set (WL1)
    kScan = 4,    // ycsb-scan: a long read-only scan of its read area (WL2)
    kInsert = 5,  // ycsb-insert: writes new values to write_set (WL2's short txns)
    kReport = 6,  // ycsb-report: scans its read area, writes a summary to its write area
  };
  // Summary keys a generated report writes (its write area), and the slots
  // they are drawn from: above the loaded keys, where no short txn goes.
  static constexpr uint32_t kReportSummaryKeys = 4;
  static constexpr uint32_t kReportSlots = 64;

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
  bool IsLongProcedure(uint32_t procedure) const override {
    return procedure == kLong || procedure == kScan || procedure == kReport;
  }
  bool ReadsDeclared(uint32_t procedure) const override { return procedure == kLong; }
  void ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                   LtxRound* out) const override;
  // A report's scan is pushed down: each partition folds its share of the
  // rows where it reads them (rows, sum of first words, and a fold that
  // does not depend on the order or split of the rows), so no row is
  // copied; the procedure adds the shares up.
  bool SummarizesScans(const Txn& txn) const override { return txn.procedure() == kReport; }
  std::string SummarizeScans(const Txn& txn, const ScanVisit& visit,
                             const ScanMemoUse& memo) const override;

  // The value every key starts with.
  static void InitialValue(Key key, uint32_t size, std::string* out);

 private:
  WorkloadParams params_;
};

}  // namespace paxflow
