// Latency histogram: log-linear buckets (32 per power of two, ~3% error),
// cheap to record into from one thread and to merge across threads/nodes.
// One writer: each recording thread owns one. Any thread may read or merge
// from it meanwhile (a metrics scrape): every counter is a relaxed atomic
// that its one writer bumps with a load and a store (plain moves on x86),
// so a live read sees each counter whole, the counters not all of one
// instant (count() may run a few samples ahead of the buckets).
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace paxflow {

class Histogram {
 public:
  static constexpr int kSubBucketBits = 5;
  static constexpr int kBuckets = (1 << kSubBucketBits) * (64 - kSubBucketBits + 1);

  Histogram();
  void Record(uint64_t value);
  // A duration taken as the difference of two clock readings: a negative
  // one (readings on two threads, a clock step) counts as 0.
  void RecordElapsed(int64_t micros) { Record(micros > 0 ? static_cast<uint64_t>(micros) : 0); }
  void Merge(const Histogram& other);
  void Clear();

  uint64_t count() const { return count_.get(); }
  uint64_t max() const { return max_.get(); }
  uint64_t sum() const { return sum_.get(); }
  uint64_t bucket_count(int bucket) const { return counts_[bucket].get(); }
  double Mean() const {
    const uint64_t count = count_.get();
    return count ? static_cast<double>(sum_.get()) / count : 0.0;
  }
  // Smallest recorded bucket value v with at least fraction q of samples <= v.
  uint64_t Quantile(double q) const;

  // Sparse "index:count,..." form, for summaries merged by the launcher.
  std::string Encode() const;
  bool Decode(const std::string& text);

  static int BucketOf(uint64_t value);
  static uint64_t BucketUpperBound(int bucket);

 private:
  // A counter with one writer, readable by any thread (see above).
  class Cell {
   public:
    Cell(uint64_t value = 0) : value_(value) {}
    Cell(const Cell& other) : value_(other.get()) {}
    Cell& operator=(const Cell& other) {
      set(other.get());
      return *this;
    }
    uint64_t get() const { return value_.load(std::memory_order_relaxed); }
    void set(uint64_t value) { value_.store(value, std::memory_order_relaxed); }
    void add(uint64_t n) { set(get() + n); }

   private:
    std::atomic<uint64_t> value_;
  };
  std::vector<Cell> counts_;
  Cell count_;
  Cell sum_;
  Cell max_;
};

}  // namespace paxflow
