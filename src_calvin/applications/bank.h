// Bank: accounts with 8-byte balances; transfers move money between two
// accounts, audits read every account and check the total. Our correctness
// canary: an audit that sees a torn state reports a wrong total.
#pragma once
#include "applications/application.h"
#include "applications/workload.h"

namespace paxflow {

class BankApplication : public Application {
 public:
  // bank-ltx (a long txn): every account of read_write_set passes up to
  // `args` to the next one around the ring, so the total is unchanged.
  enum Procedure : uint32_t { kTransfer = 1, kAudit = 2, kRing = 3 };

  explicit BankApplication(const WorkloadParams& params) : params_(params) {}
  const char* name() const override { return "bank"; }
  uint64_t DenseKeys() const override { return params_.bank_accounts; }
  void Load(PartitionId partition, uint32_t partitions, Loader* loader) const override;
  void Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
               TxnOutcome* outcome) const override;
  std::unique_ptr<TxnGenerator> NewGenerator(PartitionId partition, uint32_t partitions,
                                             uint64_t seed) const override;
  const char* ProcedureName(uint32_t procedure) const override;
  std::vector<std::pair<std::string, uint32_t>> Procedures() const override;
  std::string CheckClientTxn(const Txn& txn) const override;
  bool IsLongProcedure(uint32_t procedure) const override { return procedure == kRing; }
  bool ReadsDeclared(uint32_t procedure) const override { return procedure == kRing; }
  void ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                   LtxRound* out) const override;

  int64_t ExpectedTotal() const {
    return static_cast<int64_t>(params_.bank_accounts) * params_.bank_initial_balance;
  }
  static int64_t DecodeBalance(std::string_view value);
  static std::string EncodeBalance(int64_t balance);

 private:
  WorkloadParams params_;
};

}  // namespace paxflow
