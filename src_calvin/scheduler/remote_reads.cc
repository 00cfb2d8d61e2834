#include "scheduler/remote_reads.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace paxflow {

bool RemoteReadTable::WellFormed(const RemoteReads& reads, std::string* error) {
  const int n = reads.position_size();
  if (reads.value_size() != n || reads.found_size() != n) {
    *error = "remote reads for txn " + TxnIdString(reads.txn_id()) + " from partition " +
             std::to_string(reads.from_partition()) + " have mismatched fields";
    return false;
  }
  return true;
}

bool RemoteReadTable::Accept(const RemoteReads& reads, const TxnWork& work, const Entry& entry,
                             ReadValues* values, std::string* error) {
  const std::string who = "remote reads for txn " + TxnIdString(reads.txn_id()) +
                          " from partition " + std::to_string(reads.from_partition());
  const PartitionId from = reads.from_partition();
  if (std::find(work.expected_readers.begin(), work.expected_readers.end(), from) ==
      work.expected_readers.end()) {
    *error = who + ": that partition reads nothing for it";
    return false;
  }
  if (std::find(entry.senders.begin(), entry.senders.end(), from) != entry.senders.end()) {
    *error = who + ": duplicate";
    return false;
  }
  for (uint32_t position : reads.position()) {
    if (position >= values->size()) {
      *error = who + " name position " + std::to_string(position) + " of " +
               std::to_string(values->size());
      return false;
    }
  }
  for (int i = 0; i < reads.position_size(); ++i) {
    if (reads.found(i)) values->Set(reads.position(i), reads.value(i));
    else values->SetMissing(reads.position(i));
  }
  return true;
}

TxnWork* RemoteReadTable::AddRemote(RemoteReads&& reads, std::string* error) {
  if (!WellFormed(reads, error)) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = entries_[reads.txn_id()];
  entry.resent_only &= reads.resent();
  if (entry.complete) {
    *error = "remote reads for txn " + TxnIdString(reads.txn_id()) + " from partition " +
             std::to_string(reads.from_partition()) + ": the txn has all its reads already";
    return nullptr;
  }
  if (!entry.work) {
    // Checked against the txn once its local part arrives (AddLocal).
    entry.run_epoch = RunEpochOf(reads);
    entry.early.push_back(std::move(reads));
    return nullptr;
  }
  if (!Accept(reads, *entry.work, entry, entry.values.get(), error)) return nullptr;
  entry.senders.push_back(reads.from_partition());
  if (entry.senders.size() < entry.work->remote_reads_expected) return nullptr;
  entry.complete = true;
  return entry.work;
}

bool RemoteReadTable::AddLocal(TxnWork* work, ReadValues* reads, std::string* error,
                               int64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  const TxnId id = work->txn->id();
  Entry& entry = entries_[id];
  entry.values = std::make_unique<ReadValues>(std::move(*reads));
  *reads = ReadValues();
  for (const RemoteReads& early : entry.early) {
    // Sent again by a restarted participant: a repeat is expected.
    if (early.resent() && std::find(entry.senders.begin(), entry.senders.end(),
                                    early.from_partition()) != entry.senders.end()) {
      continue;
    }
    std::string problem;
    if (Accept(early, *work, entry, entry.values.get(), &problem)) {
      entry.senders.push_back(early.from_partition());
    } else if (error) {
      *error += (error->empty() ? "" : "; ") + problem;
    }
  }
  entry.early.clear();
  if (entry.senders.size() >= work->remote_reads_expected) {
    *reads = std::move(*entry.values);
    entries_.erase(id);
    return true;
  }
  entry.work = work;
  entry.run_epoch = work->epoch ? work->epoch->epoch : TxnEpoch(id);
  entry.parked_us = now_us;
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

size_t RemoteReadTable::DropThrough(Epoch epoch, Epoch expected_through, size_t* expected) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t dropped = 0;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.run_epoch <= epoch && !it->second.work) {
      if (expected && (it->second.run_epoch <= expected_through || it->second.resent_only)) {
        ++*expected;
      }
      it = entries_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

}  // namespace paxflow

namespace paxflow {

std::vector<OverdueReads> RemoteReadTable::Overdue(int64_t now_us, int64_t wait_us,
                                                   size_t max_txns) {
  std::lock_guard<std::mutex> lock(mu_);
  // (run epoch, txn, entry) of every overdue txn, for each partition it misses.
  std::map<PartitionId, std::vector<std::tuple<Epoch, TxnId, Entry*>>> missing;
  for (auto& [id, entry] : entries_) {
    if (!entry.work || entry.complete) continue;  // not parked, or about to run
    if (now_us - std::max(entry.parked_us, entry.asked_us) < wait_us) continue;
    for (PartitionId from : entry.work->expected_readers) {
      if (std::find(entry.senders.begin(), entry.senders.end(), from) != entry.senders.end()) {
        continue;
      }
      missing[from].emplace_back(entry.run_epoch, id, &entry);
    }
  }
  std::vector<OverdueReads> overdue;
  for (auto& [from, txns] : missing) {
    std::sort(txns.begin(), txns.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                              : std::get<1>(a) < std::get<1>(b);
    });
    if (txns.size() > max_txns) txns.resize(max_txns);
    OverdueReads reads;
    reads.from = from;
    reads.first_epoch = std::get<0>(txns.front());
    reads.last_epoch = std::get<0>(txns.back());
    for (const auto& [epoch, id, entry] : txns) {
      reads.txns.push_back(id);
      entry->asked_us = now_us;
    }
    overdue.push_back(std::move(reads));
  }
  return overdue;
}

}  // namespace paxflow
