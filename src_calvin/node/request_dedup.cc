#include "node/request_dedup.h"

#include <algorithm>

namespace paxflow {

RequestDedup::RequestDedup(Limits limits) : limits_(limits) {}

RequestDedup::Verdict RequestDedup::Decide(uint64_t client_id, uint64_t seq, uint32_t attempt,
                                           uint64_t txn_id, uint64_t* original) {
  ++tick_;
  auto found = clients_.find(client_id);
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
  if (client.highest >= limits_.window && seq <= client.highest - limits_.window) {
    return Verdict::kTooOld;
  }
  auto ran = client.ran.find(seq);
  if (ran != client.ran.end()) {
    if (attempt == 0) {
      *original = ran->second;
      return Verdict::kDuplicate;
    }
    ran->second = txn_id;  // OLLP: this attempt replaces the one that gave up
    return Verdict::kNew;
  }
  client.ran.emplace(seq, txn_id);
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
      if (txn.client_id() != 0 && txn.txn_class() != LTX) {
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

size_t RequestDedup::remembered() const {
  size_t total = 0;
  for (const auto& [id, client] : clients_) total += client.ran.size();
  return total;
}

}  // namespace paxflow
