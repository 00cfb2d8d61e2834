#include "node/query_stats.h"

namespace paxflow {

void QueryStats::NoteClosed(Epoch epoch, int64_t now_us) {
  Closed& slot = closed_[epoch % kRing];
  slot.epoch.store(0, std::memory_order_relaxed);  // torn while rewritten: not used
  slot.at_us.store(now_us, std::memory_order_relaxed);
  slot.epoch.store(epoch, std::memory_order_release);
  if (epoch > newest_.load(std::memory_order_relaxed)) newest_.store(epoch, std::memory_order_relaxed);
}

void QueryStats::Record(const std::string& name, Epoch snapshot, int64_t submit_us,
                        int64_t now_us) {
  const Closed& slot = closed_[snapshot % kRing];
  const bool known = slot.epoch.load(std::memory_order_acquire) == snapshot;
  const int64_t closed_us = slot.at_us.load(std::memory_order_relaxed);
  const Epoch newest = newest_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  Entry& entry = by_name_[name];
  entry.latency_us.RecordElapsed(now_us - submit_us);
  if (known && slot.epoch.load(std::memory_order_acquire) == snapshot) {
    entry.age_us.RecordElapsed(now_us - closed_us);
  }
  entry.age_epochs.Record(newest > snapshot ? newest - snapshot : 0);
}

void QueryStats::RecordLatency(const std::string& name, int64_t submit_us, int64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  by_name_[name].latency_us.RecordElapsed(now_us - submit_us);
}

void QueryStats::Fill(std::vector<ProcedureSummary>* procedures) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (ProcedureSummary& p : *procedures) {
    auto it = by_name_.find(p.name);
    if (it == by_name_.end()) continue;
    p.latency_us = it->second.latency_us;
    p.age_us = it->second.age_us;
    p.age_epochs = it->second.age_epochs;
  }
}

}  // namespace paxflow
