#include "node/request_dedup.h"

#include <algorithm>

namespace paxflow {

RequestDedup::RequestDedup(Limits limits) : limits_(limits) {}

RequestDedup::Verdict RequestDedup::Decide(uint64_t client_id, uint64_t seq, uint32_t attempt,
                                           uint64_t txn_id, uint64_t* original) {
  auto found = clients_.find(client_id);
  if (found != clients_.end()) {
    // A dropped txn changes nothing (not even its client's recency), so a
    // window fed records already filtered ends in the same state.
    const Client& client = found->second;
    if (client.highest >= limits_.window && seq <= client.highest - limits_.window) {
      return Verdict::kTooOld;
    }
    auto ran = client.ran.find(seq);
    if (ran != client.ran.end() && attempt == 0) {
      *original = ran->second;
      return Verdict::kDuplicate;
    }
  }
  ++tick_;
  if (found == clients_.end()) {
    if (clients_.size() >= std::max<uint32_t>(1, limits_.clients)) {
      // The client seen least recently, in log order: the same one on
      // every member.
      const auto oldest = by_last_seen_.begin();
      clients_.erase(oldest->second);
      by_last_seen_.erase(oldest);
    }
    found = clients_.emplace(client_id, Client{}).first;
  } else {
    by_last_seen_.erase({found->second.last_seen, client_id});
  }
  Client& client = found->second;
  client.last_seen = tick_;
  by_last_seen_.insert({tick_, client_id});
  // New, or (attempt > 0) an OLLP restart that replaces the attempt that
  // gave up.
  client.ran[seq] = txn_id;
  if (seq > client.highest) {
    client.highest = seq;
    // Amortized: trimmed once it holds twice the window.
    if (client.ran.size() >= 2 * limits_.window) Trim(&client);
  }
  return Verdict::kNew;
}

void RequestDedup::Trim(Client* client) const {
  if (client->highest < limits_.window) return;
  const uint64_t floor = client->highest - limits_.window;
  for (auto it = client->ran.begin(); it != client->ran.end();) {
    it = it->first <= floor ? client->ran.erase(it) : std::next(it);
  }
}

bool RequestDedup::HeldToWindow(const Txn& txn) {
  // A txn that writes nothing runs again on a retry: running it twice
  // changes nothing, and a client whose first answer was lost (its node
  // died) gets the reads it asked for, not "already applied". So does a
  // long scan. An LTX that writes is its begin record; the lane's other
  // records (commit, abort, guard) carry no request id.
  if (txn.txn_class() == LTX) return txn.ltx().kind() == LTX_BEGIN;
  return txn.write_set_size() > 0 || txn.read_write_set_size() > 0;
}

size_t RequestDedup::Filter(SequencedEpoch* record, std::vector<Dropped>* dropped) {
  // Decisions of this record by txn id: a multi-partition txn is in
  // several batches, decided once.
  decided_.clear();
  size_t count = 0;
  for (Batch& batch : *record->mutable_batches()) {
    auto* txns = batch.mutable_txns();
    int kept = 0;
    for (int i = 0; i < txns->size(); ++i) {
      Txn& txn = *txns->Mutable(i);
      bool drop = false;
      if (txn.client_id() != 0 && HeldToWindow(txn)) {
        const auto seen = decided_.find(txn.id());
        if (seen != decided_.end()) {
          drop = seen->second;
        } else {
          uint64_t original = 0;
          const Verdict verdict =
              Decide(txn.client_id(), txn.client_seq(), txn.attempt(), txn.id(), &original);
          drop = verdict != Verdict::kNew;
          decided_.emplace(txn.id(), drop);
          if (drop) {
            Dropped& out = dropped->emplace_back();
            out.txn = txn;
            out.verdict = verdict;
            out.original = original;
            ++count;
          }
        }
      }
      if (drop) continue;
      if (kept != i) txns->SwapElements(kept, i);
      ++kept;
    }
    while (txns->size() > kept) txns->RemoveLast();
  }
  return count;
}

void RequestDedup::Save(RequestWindow* out) const {
  out->set_tick(tick_);
  out->clear_client();
  for (const auto& [id, client] : clients_) {
    RequestWindowClient* saved = out->add_client();
    saved->set_id(id);
    saved->set_highest(client.highest);
    saved->set_last_seen(client.last_seen);
    for (const auto& [seq, txn_id] : client.ran) {
      saved->add_seq(seq);
      saved->add_txn_id(txn_id);
    }
  }
}

std::string RequestDedup::Load(const RequestWindow& in) {
  tick_ = 0;
  clients_.clear();
  by_last_seen_.clear();
  std::string error;
  for (const RequestWindowClient& saved : in.client()) {
    if (saved.seq_size() != saved.txn_id_size()) {
      error = "client " + std::to_string(saved.id()) + " has " +
              std::to_string(saved.seq_size()) + " seqs but " +
              std::to_string(saved.txn_id_size()) + " txn ids";
    } else if (saved.last_seen() > in.tick() ||
               !by_last_seen_.insert({saved.last_seen(), saved.id()}).second ||
               clients_.count(saved.id())) {
      error = "client " + std::to_string(saved.id()) + " is listed twice or out of order";
    }
    if (!error.empty()) break;
    Client& client = clients_[saved.id()];
    client.highest = saved.highest();
    client.last_seen = saved.last_seen();
    for (int i = 0; i < saved.seq_size(); ++i) client.ran.emplace(saved.seq(i), saved.txn_id(i));
  }
  if (!error.empty()) {
    clients_.clear();
    by_last_seen_.clear();
    return "the saved request-id window is damaged: " + error;
  }
  tick_ = in.tick();
  return "";
}

size_t RequestDedup::remembered() const {
  size_t total = 0;
  for (const auto& [id, client] : clients_) total += client.ran.size();
  return total;
}

}  // namespace paxflow
