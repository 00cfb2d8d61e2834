#include "applications/bank.h"

#include <cstring>

#include "common/hash.h"
#include "common/random.h"

namespace paxflow {
namespace {

class BankGenerator : public TxnGenerator {
 public:
  BankGenerator(const WorkloadParams& params, uint64_t seed) : params_(params), rng_(seed) {}

  void Next(Txn* txn) override {
    if (rng_.UnitDouble() < params_.audit_fraction) {
      txn->set_procedure(BankApplication::kAudit);
      auto* keys = txn->mutable_read_set();
      keys->Reserve(static_cast<int>(params_.bank_accounts));
      for (Key account = 0; account < params_.bank_accounts; ++account) keys->Add(account);
      return;
    }
    txn->set_procedure(BankApplication::kTransfer);
    Key from = rng_.Uniform(params_.bank_accounts);
    Key to = rng_.Uniform(params_.bank_accounts - 1);
    if (to >= from) ++to;
    txn->add_read_write_set(from);
    txn->add_read_write_set(to);
    int64_t amount = 1 + static_cast<int64_t>(rng_.Uniform(100));
    txn->set_args(BankApplication::EncodeBalance(amount));
  }

 private:
  const WorkloadParams params_;  // a copy: generators may outlive their application
  SplitMix64 rng_;
};

}  // namespace

int64_t BankApplication::DecodeBalance(std::string_view value) {
  int64_t balance = 0;
  if (value.size() == sizeof(balance)) std::memcpy(&balance, value.data(), sizeof(balance));
  return balance;
}

std::string BankApplication::EncodeBalance(int64_t balance) {
  return std::string(reinterpret_cast<const char*>(&balance), sizeof(balance));
}

void BankApplication::Load(PartitionId partition, uint32_t partitions, Loader* loader) const {
  const std::string initial = EncodeBalance(params_.bank_initial_balance);
  for (Key account = partition; account < params_.bank_accounts; account += partitions) {
    loader->Put(account, initial);
  }
}

void BankApplication::Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
                              TxnOutcome* outcome) const {
  if (txn.procedure() == kAudit) {
    int64_t total = 0;
    uint64_t checksum = 0;
    bool all_found = true;
    for (size_t i = 0; i < reads.size(); ++i) {
      all_found &= reads.Found(i);
      int64_t balance = reads.Found(i) ? DecodeBalance(reads.Get(i)) : 0;
      total += balance;
      checksum = Mix64(checksum ^ static_cast<uint64_t>(balance));
    }
    outcome->checksum = checksum;
    outcome->invariant_ok = all_found && total == ExpectedTotal();
    if (!outcome->invariant_ok) {
      outcome->detail = "audit saw total " + std::to_string(total) + ", expected " +
                        std::to_string(ExpectedTotal());
    }
    return;
  }
  if (txn.procedure() != kTransfer || txn.read_write_set_size() != 2 || reads.size() != 2) {
    outcome->committed = false;
    outcome->detail = "malformed bank txn";
    return;
  }
  const int64_t amount = DecodeBalance(txn.args());
  const int64_t from = DecodeBalance(reads.Get(0));
  const int64_t to = DecodeBalance(reads.Get(1));
  outcome->checksum = Mix64(static_cast<uint64_t>(from) ^ Mix64(static_cast<uint64_t>(to)));
  if (amount <= 0 || from < amount) {
    outcome->committed = false;  // insufficient funds: a deterministic no-op
    return;
  }
  writes->Put(txn.read_write_set(0), EncodeBalance(from - amount));
  writes->Put(txn.read_write_set(1), EncodeBalance(to + amount));
}

std::unique_ptr<TxnGenerator> BankApplication::NewGenerator(PartitionId /*partition*/,
                                                            uint32_t /*partitions*/,
                                                            uint64_t seed) const {
  return std::make_unique<BankGenerator>(params_, seed);
}

std::vector<std::pair<std::string, uint32_t>> BankApplication::Procedures() const {
  return {{"bank-transfer", kTransfer}, {"bank-audit", kAudit}};
}

std::string BankApplication::CheckClientTxn(const Txn& txn) const {
  for (Key key : txn.read_set()) {
    if (key >= params_.bank_accounts) return "no account " + std::to_string(key);
  }
  for (Key key : txn.read_write_set()) {
    if (key >= params_.bank_accounts) return "no account " + std::to_string(key);
  }
  if (txn.procedure() == kAudit) {
    if (txn.read_write_set_size() > 0 || txn.write_set_size() > 0) return "bank-audit only reads";
    if (txn.read_set_size() == 0) return "bank-audit needs the accounts to read (read_set)";
    return "";
  }
  if (txn.read_set_size() > 0 || txn.write_set_size() > 0 || txn.read_write_set_size() != 2) {
    return "bank-transfer takes exactly two accounts in read_write_set (from, to)";
  }
  if (txn.args().size() != sizeof(int64_t) || DecodeBalance(txn.args()) <= 0) {
    return "bank-transfer needs a positive amount (8-byte little-endian int64 args)";
  }
  return "";
}

const char* BankApplication::ProcedureName(uint32_t procedure) const {
  switch (procedure) {
    case kTransfer: return "bank-transfer";
    case kAudit: return "bank-audit";
    default: return "unknown";
  }
}

}  // namespace paxflow
