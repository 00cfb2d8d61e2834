// Latency of the txns this node's generator made, by procedure (TPC-C's
// five, each percentile apart), and the freshness of its long txns (LTXs
// and long scans): what CH-benCHmark reports of its analytic queries. Freshness is the visibility delay of a query's snapshot: how
// old that snapshot was when the result came back, in epochs (the newest
// epoch this node's sequencer had closed, minus the snapshot's epoch) and
// in ms (since the snapshot's epoch closed here).
//
// NoteClosed from the first sequencer thread, Record and RecordLatency
// from any result thread, Fill after the run. Short txns' latencies come
// at the node's full rate from every worker: each thread records into one
// of a few shards (by a hash of its id), each under its own mutex, so
// workers rarely meet on one; Fill merges the shards.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/summary.h"
#include "common/types.h"

namespace paxflow {

class QueryStats {
 public:
  // Epoch `epoch` closed at `now_us` (the sequencer sent it).
  void NoteClosed(Epoch epoch, int64_t now_us);
  // A result of a long txn of procedure `name` that read the state as of
  // `snapshot`, submitted at `submit_us`, came back at `now_us`.
  void Record(std::string_view name, Epoch snapshot, int64_t submit_us, int64_t now_us);
  // A short txn's: its latency only.
  void RecordLatency(std::string_view name, int64_t submit_us, int64_t now_us);
  // Adds the histograms to the summary's procedures of the same name.
  void Fill(std::vector<ProcedureSummary>* procedures) const;

 private:
  static constexpr size_t kRing = 4096;  // epochs whose close time is remembered
  struct Closed {
    std::atomic<Epoch> epoch{0};
    std::atomic<int64_t> at_us{0};
  };
  std::array<Closed, kRing> closed_;
  std::atomic<Epoch> newest_{0};
  struct Entry { Histogram latency_us, age_us, age_epochs; };
  struct alignas(64) Shard {
    mutable std::mutex mu;
    std::map<std::string, Entry, std::less<>> by_name;  // under mu
    // The entry of `name`, made if new; caller holds mu.
    Entry& Of(std::string_view name);
  };
  static constexpr size_t kShards = 8;
  Shard& ThisThreadsShard();
  std::array<Shard, kShards> shards_;
};

}  // namespace paxflow
