#include "node/kept_reads.h"

#include <utility>

namespace paxflow {

namespace {

bool LocalRead(const Txn& txn, PartitionId partition, uint32_t partitions) {
  if (txn.txn_class() != RO) return false;
  if (partitions == 1) return true;
  for (Key key : txn.read_set()) {
    if (PartitionOf(key, partitions) != partition) return false;
  }
  for (Key key : txn.read_write_set()) {
    if (PartitionOf(key, partitions) != partition) return false;
  }
  return txn.write_set_size() == 0;
}

}  // namespace

size_t TakeLocalReads(PartitionId partition, uint32_t partitions, Batch* batch,
                      std::vector<Txn>* out) {
  auto* txns = batch->mutable_txns();
  // Each txn's keys are looked at once (a read-only txn of `mixed` has 100).
  std::vector<bool> local;
  local.reserve(txns->size());
  size_t taken = 0;
  for (const Txn& txn : *txns) {
    local.push_back(LocalRead(txn, partition, partitions));
    if (local.back()) ++taken;
  }
  if (taken == 0) return 0;
  google::protobuf::RepeatedPtrField<Txn> rest;
  rest.Reserve(txns->size() - static_cast<int>(taken));
  out->reserve(out->size() + taken);
  for (int i = 0; i < txns->size(); ++i) {
    Txn& txn = (*txns)[i];
    if (local[i]) {
      out->push_back(std::move(txn));
    } else {
      rest.Add(std::move(txn));
    }
  }
  txns->Swap(&rest);
  return taken;
}

void PutBackById(std::vector<Txn>* txns, Batch* batch) {
  if (txns->empty()) return;
  auto* into = batch->mutable_txns();
  google::protobuf::RepeatedPtrField<Txn> merged;
  merged.Reserve(into->size() + static_cast<int>(txns->size()));
  size_t k = 0;
  for (Txn& txn : *into) {
    while (k < txns->size() && (*txns)[k].id() < txn.id()) merged.Add(std::move((*txns)[k++]));
    merged.Add(std::move(txn));
  }
  while (k < txns->size()) merged.Add(std::move((*txns)[k++]));
  into->Swap(&merged);
  txns->clear();
}

size_t KeptReads::Keep(Epoch epoch, Batch* batch) {
  std::vector<Txn> taken;
  const size_t count = TakeLocalReads(partition_, partitions_, batch, &taken);
  std::lock_guard<std::mutex> lock(mu_);
  if (count == 0) {
    kept_.erase(epoch);
  } else {
    kept_[epoch] = std::move(taken);
  }
  return count;
}

void KeptReads::PutBack(Epoch epoch, bool ours, Batch* batch) {
  std::vector<Txn> txns;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto end = kept_.upper_bound(epoch);
    auto it = kept_.find(epoch);
    if (ours && it != kept_.end()) txns = std::move(it->second);
    kept_.erase(kept_.begin(), end);
  }
  PutBackById(&txns, batch);
}

void KeptReads::Forget() {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.clear();
}

size_t KeptReads::epochs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kept_.size();
}

}  // namespace paxflow
