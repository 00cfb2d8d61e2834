#include "common/histogram.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

namespace paxflow {

Histogram::Histogram() : counts_(kBuckets, 0) {}

int Histogram::BucketOf(uint64_t value) {
  constexpr uint64_t kLinear = 1ull << kSubBucketBits;
  if (value < kLinear) return static_cast<int>(value);
  int exponent = 63 - __builtin_clzll(value);
  int shift = exponent - kSubBucketBits;
  int mantissa = static_cast<int>((value >> shift) & (kLinear - 1));
  return static_cast<int>(kLinear) + shift * static_cast<int>(kLinear) + mantissa;
}

uint64_t Histogram::BucketUpperBound(int bucket) {
  constexpr int kLinear = 1 << kSubBucketBits;
  if (bucket < kLinear) return static_cast<uint64_t>(bucket);
  int shift = (bucket - kLinear) / kLinear;
  uint64_t mantissa = static_cast<uint64_t>((bucket - kLinear) % kLinear);
  uint64_t low = (uint64_t{kLinear} + mantissa) << shift;
  return low + ((uint64_t{1} << shift) - 1);
}

void Histogram::Record(uint64_t value) {
  ++counts_[BucketOf(value)];
  ++count_;
  sum_ += value;
  if (value > max_) max_ = value;
}

void Histogram::Merge(const Histogram& other) {
  for (int i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
  count_ += other.count_;
  sum_ += other.sum_;
  max_ = std::max(max_, other.max_);
}

void Histogram::Clear() {
  std::fill(counts_.begin(), counts_.end(), 0);
  count_ = sum_ = max_ = 0;
}

uint64_t Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count_) + 0.999999);
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i];
    if (seen >= rank) return std::min(BucketUpperBound(i), max_);
  }
  return max_;
}

std::string Histogram::Encode() const {
  std::ostringstream out;
  out << count_ << ";" << sum_ << ";" << max_ << ";";
  bool first = true;
  for (int i = 0; i < kBuckets; ++i) {
    if (!counts_[i]) continue;
    if (!first) out << ",";
    out << i << ":" << counts_[i];
    first = false;
  }
  return out.str();
}

namespace {

// Parses all of `text` as a decimal number.
bool ParseNumber(const std::string& text, uint64_t* out) {
  if (text.empty() || text.size() > 20) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  *out = std::strtoull(text.c_str(), nullptr, 10);
  return true;
}

}  // namespace

bool Histogram::Decode(const std::string& text) {
  Clear();
  std::istringstream in(text);
  std::string field;
  uint64_t header[3];
  for (uint64_t& value : header) {
    if (!std::getline(in, field, ';') || !ParseNumber(field, &value)) return false;
  }
  uint64_t total = 0;
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t colon = item.find(':');
    uint64_t bucket, count;
    if (colon == std::string::npos || !ParseNumber(item.substr(0, colon), &bucket) ||
        !ParseNumber(item.substr(colon + 1), &count) || bucket >= kBuckets) {
      Clear();
      return false;
    }
    counts_[bucket] += count;
    total += count;
  }
  if (total != header[0]) {
    Clear();
    return false;
  }
  count_ = header[0];
  sum_ = header[1];
  max_ = header[2];
  return true;
}

}  // namespace paxflow
