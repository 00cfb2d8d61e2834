#include "applications/bank.h"

#include <algorithm>
#include <cstring>

#include "common/hash.h"
#include "common/key_area.h"
#include "common/random.h"

namespace paxflow {
namespace {

class BankGenerator : public TxnGenerator {
 public:
  BankGenerator(const WorkloadParams& params, uint64_t seed) : params_(params), rng_(seed) {}

  void Next(Txn* txn) override {
    if (params_.ltx_fraction > 0 && rng_.UnitDouble() < params_.ltx_fraction) {
      NextRing(txn);
      return;
    }
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
  // A long txn over min(ltx_ops, accounts) distinct accounts, which are its
  // write area (and what calvin mode locks).
  void NextRing(Txn* txn) {
    const uint64_t count = std::min<uint64_t>(params_.ltx_ops, params_.bank_accounts);
    std::vector<Key> accounts;
    while (accounts.size() < count) {
      const Key account = rng_.Uniform(params_.bank_accounts);
      if (std::find(accounts.begin(), accounts.end(), account) == accounts.end()) {
        accounts.push_back(account);
      }
    }
    txn->set_txn_class(LTX);
    txn->set_procedure(BankApplication::kRing);
    txn->mutable_read_write_set()->Add(accounts.begin(), accounts.end());
    txn->set_args(BankApplication::EncodeBalance(1 + static_cast<int64_t>(rng_.Uniform(100))));
    LtxRecord* ltx = txn->mutable_ltx();
    ltx->set_kind(LTX_BEGIN);
    if (params_.bank_ltx_read_outside) {
      // The first account not in the ring: a declared read outside the
      // write area keeps the record protocol (the procedure never reads it).
      Key outside = 0;
      while (std::find(accounts.begin(), accounts.end(), outside) != accounts.end()) ++outside;
      if (outside < params_.bank_accounts) {
        KeyRange* range = ltx->add_read_area();
        range->set_lo(outside);
        range->set_hi(outside);
      }
    }
    KeyArea::OfKeys(std::move(accounts)).AppendTo(ltx->mutable_write_area());
  }

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

void BankApplication::ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                                  LtxRound* out) const {
  if (txn.procedure() != kRing) {
    Application::ExecuteLong(txn, round, reads, out);  // not a long procedure
    return;
  }
  if (round == 0) {
    out->reads.assign(txn.read_write_set().begin(), txn.read_write_set().end());
    return;
  }
  const int64_t amount = DecodeBalance(txn.args());
  const size_t n = static_cast<size_t>(txn.read_write_set_size());
  std::vector<int64_t> balance(n);
  uint64_t checksum = 0;
  for (size_t i = 0; i < n; ++i) {
    bool found = false;
    std::string_view value;
    if (!reads.Get(txn.read_write_set(static_cast<int>(i)), &found, &value) || !found) {
      out->abort = true;
      out->reason = "no account " + std::to_string(txn.read_write_set(static_cast<int>(i)));
      return;
    }
    balance[i] = DecodeBalance(value);
    checksum = Mix64(checksum ^ static_cast<uint64_t>(balance[i]));
  }
  for (size_t i = 0; i < n; ++i) {
    const int64_t give = std::max<int64_t>(0, std::min(amount, balance[i]));
    balance[i] -= give;
    balance[(i + 1) % n] += give;
  }
  for (size_t i = 0; i < n; ++i) {
    out->writes.Put(txn.read_write_set(static_cast<int>(i)), EncodeBalance(balance[i]));
  }
  out->outcome.checksum = checksum;
}

std::unique_ptr<TxnGenerator> BankApplication::NewGenerator(PartitionId /*partition*/,
                                                            uint32_t /*partitions*/,
                                                            uint64_t seed) const {
  return std::make_unique<BankGenerator>(params_, seed);
}

std::vector<std::pair<std::string, uint32_t>> BankApplication::Procedures() const {
  return {{"bank-transfer", kTransfer}, {"bank-audit", kAudit}, {"bank-ltx", kRing}};
}

std::string BankApplication::CheckClientTxn(const Txn& txn) const {
  for (Key key : txn.read_set()) {
    if (key >= params_.bank_accounts) return "no account " + std::to_string(key);
  }
  for (Key key : txn.read_write_set()) {
    if (key >= params_.bank_accounts) return "no account " + std::to_string(key);
  }
  if (txn.procedure() == kRing) {
    if (txn.txn_class() != LTX) return "bank-ltx is a long txn: send it as an LTX request";
    if (txn.read_set_size() > 0 || txn.write_set_size() > 0 || txn.read_write_set_size() < 2) {
      return "bank-ltx takes two or more accounts in read_write_set";
    }
    if (txn.args().size() != sizeof(int64_t) || DecodeBalance(txn.args()) <= 0) {
      return "bank-ltx needs a positive amount (8-byte little-endian int64 args)";
    }
    return "";
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
    case kRing: return "bank-ltx";
    default: return "unknown";
  }
}

}  // namespace paxflow
