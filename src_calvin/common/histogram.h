// Latency histogram: log-linear buckets (32 per power of two, ~3% error),
// cheap to record into from one thread and to merge across threads/nodes.
// Not thread-safe: each recording thread owns one and a reporter merges.
#pragma once
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

  uint64_t count() const { return count_; }
  uint64_t max() const { return max_; }
  double Mean() const { return count_ ? static_cast<double>(sum_) / count_ : 0.0; }
  // Smallest recorded bucket value v with at least fraction q of samples <= v.
  uint64_t Quantile(double q) const;

  // Sparse "index:count,..." form, for summaries merged by the launcher.
  std::string Encode() const;
  bool Decode(const std::string& text);

  static int BucketOf(uint64_t value);
  static uint64_t BucketUpperBound(int bucket);

 private:
  std::vector<uint64_t> counts_;
  uint64_t count_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

}  // namespace paxflow
