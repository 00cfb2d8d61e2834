#include "node/query_stats.h"

#include <functional>
#include <thread>

namespace paxflow {

void QueryStats::NoteClosed(Epoch epoch, int64_t now_us) {
  Closed& slot = closed_[epoch % kRing];
  slot.epoch.store(0, std::memory_order_relaxed);  // torn while rewritten: not used
  slot.at_us.store(now_us, std::memory_order_relaxed);
  slot.epoch.store(epoch, std::memory_order_release);
  if (epoch > newest_.load(std::memory_order_relaxed)) newest_.store(epoch, std::memory_order_relaxed);
}

QueryStats::Entry& QueryStats::Shard::Of(std::string_view name) {
  auto it = by_name.find(name);
  if (it == by_name.end()) it = by_name.emplace(std::string(name), Entry()).first;
  return it->second;
}

QueryStats::Shard& QueryStats::ThisThreadsShard() {
  return shards_[std::hash<std::thread::id>()(std::this_thread::get_id()) % kShards];
}

void QueryStats::Record(std::string_view name, Epoch snapshot, int64_t submit_us,
                        int64_t now_us) {
  const Closed& slot = closed_[snapshot % kRing];
  const bool known = slot.epoch.load(std::memory_order_acquire) == snapshot;
  const int64_t closed_us = slot.at_us.load(std::memory_order_relaxed);
  const Epoch newest = newest_.load(std::memory_order_relaxed);
  Shard& shard = ThisThreadsShard();
  std::lock_guard<std::mutex> lock(shard.mu);
  Entry& entry = shard.Of(name);
  entry.latency_us.RecordElapsed(now_us - submit_us);
  if (known && slot.epoch.load(std::memory_order_acquire) == snapshot) {
    entry.age_us.RecordElapsed(now_us - closed_us);
  }
  entry.age_epochs.Record(newest > snapshot ? newest - snapshot : 0);
}

void QueryStats::RecordLatency(std::string_view name, int64_t submit_us, int64_t now_us) {
  Shard& shard = ThisThreadsShard();
  std::lock_guard<std::mutex> lock(shard.mu);
  shard.Of(name).latency_us.RecordElapsed(now_us - submit_us);
}

void QueryStats::Fill(std::vector<ProcedureSummary>* procedures) const {
  for (ProcedureSummary& p : *procedures) {
    bool found = false;
    Entry merged;
    for (const Shard& shard : shards_) {
      std::lock_guard<std::mutex> lock(shard.mu);
      auto it = shard.by_name.find(p.name);
      if (it == shard.by_name.end()) continue;
      found = true;
      merged.latency_us.Merge(it->second.latency_us);
      merged.age_us.Merge(it->second.age_us);
      merged.age_epochs.Merge(it->second.age_epochs);
    }
    if (!found) continue;
    p.latency_us = merged.latency_us;
    p.age_us = merged.age_us;
    p.age_epochs = merged.age_epochs;
  }
}

}  // namespace paxflow
