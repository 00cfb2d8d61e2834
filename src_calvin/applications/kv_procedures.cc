#include "applications/kv_procedures.h"

#include "common/hash.h"

namespace paxflow {

void WithKvProcedures::Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
                               TxnOutcome* outcome) const {
  const uint32_t procedure = txn.procedure();
  if (procedure != kGet && procedure != kPut && procedure != kKv) {
    inner_->Execute(txn, reads, writes, outcome);
    return;
  }
  uint64_t checksum = 0;
  for (size_t i = 0; i < reads.size(); ++i) {
    checksum = Mix64(checksum ^ (reads.Found(i) ? HashBytes(reads.Get(i)) : 0));
  }
  outcome->checksum = checksum;
  if (procedure == kGet) return;
  KvArgs args;
  if (!args.ParseFromString(txn.args()) || args.values_size() != txn.write_set_size()) {
    outcome->committed = false;  // validated at the door; a log edited by hand could still say so
    outcome->detail = "malformed put/kv arguments";
    return;
  }
  for (int i = 0; i < txn.write_set_size(); ++i) writes->Put(txn.write_set(i), args.values(i));
}

void WithKvProcedures::ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                                   LtxRound* out) const {
  if (txn.procedure() == kGet || txn.procedure() == kPut || txn.procedure() == kKv) {
    Application::ExecuteLong(txn, round, reads, out);  // a short one of ours, run long
    return;
  }
  if (txn.procedure() != kLongKv) {
    inner_->ExecuteLong(txn, round, reads, out);
    return;
  }
  if (round == 0 && txn.read_set_size() + txn.ltx().read_area_size() > 0) {
    out->reads.assign(txn.read_set().begin(), txn.read_set().end());
    out->scans.assign(txn.ltx().read_area().begin(), txn.ltx().read_area().end());
    return;
  }
  uint64_t checksum = 0;
  for (Key key : txn.read_set()) {
    bool found = false;
    std::string_view value;
    reads.Get(key, &found, &value);
    checksum = Mix64(checksum ^ (found ? HashBytes(value) : 0));
  }
  for (size_t s = 0; s < reads.scans(); ++s) {
    for (const auto& [key, value] : reads.Scan(s)) checksum = Mix64(checksum ^ key ^ HashBytes(value));
  }
  KvArgs args;
  if (!args.ParseFromString(txn.args()) || args.values_size() != txn.read_write_set_size()) {
    out->abort = true;
    out->reason = "ltx-kv needs one value (KvArgs) per read_write_set key";
    return;
  }
  for (int i = 0; i < txn.read_write_set_size(); ++i) {
    if (args.values(i).empty()) {
      out->deletes.push_back(txn.read_write_set(i));
    } else {
      out->writes.Put(txn.read_write_set(i), args.values(i));
    }
  }
  out->outcome.checksum = checksum;
}

const char* WithKvProcedures::ProcedureName(uint32_t procedure) const {
  switch (procedure) {
    case kGet: return "get";
    case kPut: return "put";
    case kKv: return "kv";
    case kLongKv: return "ltx-kv";
    default: return inner_->ProcedureName(procedure);
  }
}

std::vector<std::pair<std::string, uint32_t>> WithKvProcedures::Procedures() const {
  std::vector<std::pair<std::string, uint32_t>> procedures = {
      {"get", kGet}, {"put", kPut}, {"kv", kKv}, {"ltx-kv", kLongKv}};
  for (const auto& procedure : inner_->Procedures()) procedures.push_back(procedure);
  return procedures;
}

std::string WithKvProcedures::CheckClientTxn(const Txn& txn) const {
  switch (txn.procedure()) {
    case kGet:
      if (txn.read_set_size() == 0) return "get needs keys to read (read_set)";
      if (txn.write_set_size() + txn.read_write_set_size() > 0) return "get only reads";
      return "";
    case kPut:
      if (txn.write_set_size() == 0) return "put needs keys to write (write_set)";
      if (txn.read_set_size() + txn.read_write_set_size() > 0) return "put only writes";
      return "";
    case kKv:
      if (txn.read_write_set_size() > 0) return "kv takes read_set and write_set only";
      if (txn.read_set_size() + txn.write_set_size() == 0) return "no keys";
      return "";
    case kLongKv:
      if (txn.txn_class() != LTX) return "ltx-kv is a long txn: send it as an LTX request";
      if (txn.write_set_size() > 0) return "ltx-kv takes read_set, read_write_set and read_area";
      if (txn.read_set_size() + txn.read_write_set_size() + txn.ltx().read_area_size() == 0) {
        return "no keys";
      }
      return "";
    default:
      return inner_->CheckClientTxn(txn);
  }
}

}  // namespace paxflow
