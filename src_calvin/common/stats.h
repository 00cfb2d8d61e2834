// Per-node execution statistics.
//
// Owns: one WorkerStats slot per worker thread (cache-line aligned).
// Threads: each worker writes only its own slot; counters are atomics that
// the progress reporter and the sequencer read at any time; histograms are
// read only after the workers have stopped.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/histogram.h"

namespace paxflow {

enum TxnKind : int { kKindReadOnly = 0, kKindReadWrite = 1, kKindLong = 2 };
constexpr int kTxnKinds = 3;
const char* TxnKindName(int kind);  // "RO", "RW", "LTX"

struct alignas(64) WorkerStats {
  // Single writer: bump with Add(), never fetch_add.
  std::atomic<uint64_t> committed[kTxnKinds] = {};
  std::atomic<uint64_t> declined[kTxnKinds] = {};  // procedure chose not to write
  std::atomic<uint64_t> invariant_failures{0};
  // Generated (not client) txns finished here: the generator's window.
  std::atomic<uint64_t> generated_done{0};
  Histogram latency_us[kTxnKinds];
  Histogram visibility_us;  // RO: end of the snapshot's epoch -> run

  static void Add(std::atomic<uint64_t>& counter, uint64_t n = 1) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
};

class NodeStats {
 public:
  explicit NodeStats(size_t workers);
  WorkerStats& worker(size_t index) { return *slots_[index]; }
  size_t workers() const { return slots_.size(); }

  uint64_t Committed(int kind) const;
  uint64_t CommittedAll() const;
  uint64_t GeneratedDone() const;
  uint64_t Declined(int kind) const;
  uint64_t InvariantFailures() const;
  // Merged histograms: call only once the workers have stopped.
  Histogram Latency(int kind) const;
  Histogram Visibility() const;

 private:
  std::vector<std::unique_ptr<WorkerStats>> slots_;
};

}  // namespace paxflow
