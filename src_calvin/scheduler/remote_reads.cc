#include "scheduler/remote_reads.h"

#include <algorithm>

namespace paxflow {

bool RemoteReadTable::Merge(const RemoteReads& reads, ReadValues* values, std::string* error) {
  const int n = reads.position_size();
  if (reads.value_size() != n || reads.found_size() != n) {
    *error = "remote reads for txn " + TxnIdString(reads.txn_id()) + " have mismatched fields";
    return false;
  }
  for (int i = 0; i < n; ++i) {
    const uint32_t position = reads.position(i);
    if (position >= values->size()) {
      *error = "remote reads for txn " + TxnIdString(reads.txn_id()) + " name position " +
               std::to_string(position) + " of " + std::to_string(values->size());
      return false;
    }
    if (reads.found(i)) values->Set(position, reads.value(i));
    else values->SetMissing(position);
  }
  return true;
}

TxnWork* RemoteReadTable::AddRemote(RemoteReads&& reads, std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = entries_[reads.txn_id()];
  const PartitionId from = reads.from_partition();
  if (std::find(entry.senders.begin(), entry.senders.end(), from) != entry.senders.end()) {
    *error = "duplicate remote reads for txn " + TxnIdString(reads.txn_id()) + " from partition " +
             std::to_string(from);
    return nullptr;
  }
  if (!entry.work) {
    entry.senders.push_back(from);
    entry.early.push_back(std::move(reads));
    return nullptr;
  }
  if (!Merge(reads, entry.values.get(), error)) return nullptr;
  entry.senders.push_back(from);
  if (entry.senders.size() < entry.work->remote_reads_expected) return nullptr;
  return entry.work;
}

bool RemoteReadTable::AddLocal(TxnWork* work, ReadValues* reads) {
  std::lock_guard<std::mutex> lock(mu_);
  const TxnId id = work->txn->id();
  Entry& entry = entries_[id];
  entry.values = std::make_unique<ReadValues>(std::move(*reads));
  *reads = ReadValues();
  for (const RemoteReads& early : entry.early) {
    std::string error;
    Merge(early, entry.values.get(), &error);  // malformed ones were counted; values stay unset
  }
  entry.early.clear();
  if (entry.senders.size() >= work->remote_reads_expected) {
    *reads = std::move(*entry.values);
    entries_.erase(id);
    return true;
  }
  entry.work = work;
  return false;
}

std::unique_ptr<ReadValues> RemoteReadTable::Take(TxnId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return nullptr;
  std::unique_ptr<ReadValues> values = std::move(it->second.values);
  entries_.erase(it);
  return values;
}

}  // namespace paxflow
