#include "tests/serial_reference.h"

#include <memory>

#include <algorithm>

#include "applications/long_run.h"
#include "common/hash.h"
#include "sequencer/input_log.h"

namespace paxflow::testing {
namespace {

class MapLoader : public Loader {
 public:
  explicit MapLoader(std::map<Key, std::string>* state) : state_(state) {}
  void Put(Key key, std::string_view value) override { (*state_)[key] = std::string(value); }

 private:
  std::map<Key, std::string>* state_;
};

void ReadInto(const std::map<Key, std::string>& state, const Txn& txn, ReadValues* reads) {
  reads->Reset(static_cast<size_t>(txn.read_set_size() + txn.read_write_set_size()));
  size_t position = 0;
  auto read = [&](Key key) {
    auto it = state.find(key);
    if (it == state.end()) reads->SetMissing(position);
    else reads->Set(position, it->second);
    ++position;
  };
  for (Key key : txn.read_set()) read(key);
  for (Key key : txn.read_write_set()) read(key);
}

uint64_t Digest(const std::map<Key, std::string>& state) {
  uint64_t digest = 0;
  for (const auto& [key, value] : state) digest += DigestTerm(key, value);
  return digest;
}

// The digest is a sum of per-row terms, so it follows each write: a digest
// per epoch then costs the rows written, not the database (TPC-C's 560,000
// rows a warehouse made it minutes).
void Put(std::map<Key, std::string>* state, uint64_t* digest, Key key, std::string_view value) {
  auto [it, inserted] = state->try_emplace(key);
  if (!inserted) *digest -= DigestTerm(key, it->second);
  it->second.assign(value.data(), value.size());
  *digest += DigestTerm(key, it->second);
}

void Erase(std::map<Key, std::string>* state, uint64_t* digest, Key key) {
  auto it = state->find(key);
  if (it == state->end()) return;
  *digest -= DigestTerm(key, it->second);
  state->erase(it);
}

}  // namespace

SerialResult SerialExecute(const std::string& dir, const WorkloadParams& workload,
                           uint32_t replica) {
  SerialResult result;
  std::map<TxnId, Txn> txns;
  uint32_t partitions = 0;
  for (const std::string& path : ListInputLogs(dir)) {
    InputLogReader reader;
    result.error = reader.Open(path);
    if (!result.error.empty()) return result;
    if (reader.header().replica() != replica) continue;
    partitions = reader.header().partitions();
    LogEpoch epoch;
    while (reader.Next(&epoch)) {
      result.last_epoch = std::max(result.last_epoch, epoch.epoch());
      for (const Batch& batch : epoch.batch()) {
        for (const Txn& txn : batch.txns()) txns.emplace(txn.id(), txn);
      }
    }
  }
  if (partitions == 0) {
    result.error = "no logs of replica " + std::to_string(replica) + " in " + dir;
    return result;
  }
  std::unique_ptr<Application> app = MakeApplication(workload);
  std::map<Key, std::string> state;
  MapLoader loader(&state);
  for (PartitionId p = 0; p < partitions; ++p) app->Load(p, partitions, &loader);
  uint64_t digest = Digest(state);

  ReadValues reads;
  WriteSet writes;
  auto it = txns.begin();
  for (Epoch epoch = 1; epoch <= result.last_epoch; ++epoch) {
    auto epoch_end = it;
    while (epoch_end != txns.end() && TxnEpoch(epoch_end->first) == epoch) ++epoch_end;
    for (auto ro = it; ro != epoch_end; ++ro) {
      if (ro->second.txn_class() != RO) continue;
      ReadInto(state, ro->second, &reads);
      TxnOutcome outcome;
      writes.Clear();
      app->Execute(ro->second, reads, &writes, &outcome);
      result.ro_at_epoch_start[ro->first] = outcome.checksum;
    }
    bool has_rw = false;
    for (; it != epoch_end; ++it) {
      const Txn& txn = it->second;
      has_rw |= txn.txn_class() != RO;
      ReadInto(state, txn, &reads);
      TxnOutcome outcome;
      writes.Clear();
      app->Execute(txn, reads, &writes, &outcome);
      if (txn.txn_class() == RO) result.ro_at_position[txn.id()] = outcome.checksum;
      if (outcome.committed) {
        for (size_t i = 0; i < writes.size(); ++i) Put(&state, &digest, writes.key(i), writes.value(i));
        for (Key key : writes.deletes()) Erase(&state, &digest, key);
      }
      ++result.txns;
    }
    result.digest_after_epoch[epoch] = digest;
    if (has_rw) result.epochs_with_rw.push_back(epoch);
  }
  result.digest = digest;
  return result;
}

OrderResult ExecuteInPositionOrder(const WorkloadParams& workload, uint32_t partitions,
                                   std::vector<ResultLog::Result> results,
                                   const std::map<TxnId, bool>* submitted) {
  OrderResult result;
  if (submitted) {
    // Exactly one reply each: a txn run twice (a replay that acted, a
    // restart that lost one) or never shows here, not in the state.
    std::map<TxnId, size_t> replies;
    for (const ResultLog::Result& r : results) ++replies[r.txn.id()];
    for (const auto& [id, count] : replies) {
      auto it = submitted->find(id);
      if (it == submitted->end()) {
        result.error = "txn " + TxnIdString(id) + " has a result but was never submitted";
        return result;
      }
      if (count > 1) {
        result.error = "txn " + TxnIdString(id) + " got " + std::to_string(count) + " results";
        return result;
      }
    }
    for (const auto& [id, must] : *submitted) {
      if (must && !replies.count(id)) {
        result.error = "txn " + TxnIdString(id) + " got no result";
        return result;
      }
    }
  }
  std::unique_ptr<Application> app = MakeApplication(workload);
  std::map<Key, std::string> state;
  MapLoader loader(&state);
  for (PartitionId p = 0; p < partitions; ++p) app->Load(p, partitions, &loader);
  // Aborted LTXs (and scans that failed) are not in the order.
  results.erase(std::remove_if(results.begin(), results.end(),
                               [](const ResultLog::Result& r) { return r.outcome.aborted; }),
                results.end());
  std::stable_sort(results.begin(), results.end(), [](const auto& a, const auto& b) {
    if (!(a.outcome.position == b.outcome.position)) return a.outcome.position < b.outcome.position;
    return a.txn.id() < b.txn.id();
  });
  ReadValues reads;
  WriteSet writes;
  auto name = [](const ResultLog::Result& r) {
    const SerialPosition& p = r.outcome.position;
    return "txn " + TxnIdString(r.txn.id()) + " at position (" + std::to_string(p.epoch) + ", " +
           TxnIdString(p.anchor) + ", " + std::to_string(p.chain) + ", " + TxnIdString(p.txn) +
           ")";
  };
  for (const ResultLog::Result& r : results) {
    const Txn& txn = r.txn;
    if (r.outcome.position.epoch == 0) {
      result.error = name(r) + " reported no position";
      return result;
    }
    TxnOutcome outcome;
    writes.Clear();
    if (txn.txn_class() == LTX) {
      ++result.long_txns;
      auto fetch = [&](const std::vector<Key>& keys, const std::vector<KeyRange>& scans,
                       LtxReads* out) -> std::string {
        for (Key key : keys) {
          auto it = state.find(key);
          out->SetPoint(key, it != state.end(), it != state.end() ? it->second : "");
        }
        for (const KeyRange& scan : scans) {
          LtxReads::Rows rows;
          for (auto it = state.lower_bound(scan.lo()); it != state.end() && it->first <= scan.hi();
               ++it) {
            rows.emplace_back(it->first, it->second);
          }
          out->AddScan(std::move(rows));
        }
        return "";
      };
      LtxRound last;
      std::string reason;
      RunLongProcedure(*app, txn, fetch, &last, &reason);
      if (!reason.empty()) {
        result.error = name(r) + " committed, but serially it aborts: " + reason;
        return result;
      }
      outcome = last.outcome;
      for (size_t i = 0; i < last.writes.size(); ++i) {
        state[last.writes.key(i)] = std::string(last.writes.value(i));
      }
      for (Key key : last.deletes) state.erase(key);
    } else {
      ReadInto(state, txn, &reads);
      app->Execute(txn, reads, &writes, &outcome);
      if (outcome.committed) {
        for (size_t i = 0; i < writes.size(); ++i) {
          state[writes.key(i)] = std::string(writes.value(i));
        }
        for (Key key : writes.deletes()) state.erase(key);
      }
    }
    if (outcome.checksum != r.outcome.checksum) {
      result.error = name(r) + " read something else than it would serially (checksum " +
                     std::to_string(r.outcome.checksum) + ", serially " +
                     std::to_string(outcome.checksum) + ")";
      return result;
    }
    ++result.txns;
  }
  result.digest = Digest(state);
  return result;
}

std::map<TxnId, bool> SubmittedTxns(const std::string& dir, uint32_t replica,
                                    std::string* error) {
  std::map<TxnId, bool> submitted;
  for (const std::string& path : ListInputLogs(dir)) {
    InputLogReader reader;
    *error = reader.Open(path);
    if (!error->empty()) return {};
    if (reader.header().replica() != replica) continue;
    LogEpoch epoch;
    while (reader.Next(&epoch)) {
      for (const Batch& batch : epoch.batch()) {
        for (const Txn& txn : batch.txns()) {
          const bool record = txn.txn_class() == LTX && txn.ltx().kind() != LTX_BEGIN &&
                              txn.ltx().kind() != LTX_SCAN;
          if (!record) submitted[txn.id()] = true;
        }
      }
    }
  }
  if (submitted.empty()) *error = "no txn in the logs of replica " + std::to_string(replica);
  return submitted;
}

Epoch SerialResult::ReadVersionFor(Epoch epoch) const {
  Epoch version = 0;
  for (Epoch rw : epochs_with_rw) {
    if (rw < epoch) version = rw;
  }
  return version;
}

}  // namespace paxflow::testing
