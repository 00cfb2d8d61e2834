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
  counts_[BucketOf(value)].add(1);
  count_.add(1);
  sum_.add(value);
  if (value > max_.get()) max_.set(value);
}

void Histogram::Merge(const Histogram& other) {
  for (int i = 0; i < kBuckets; ++i) {
    const uint64_t n = other.counts_[i].get();
    if (n) counts_[i].add(n);
  }
  count_.add(other.count_.get());
  sum_.add(other.sum_.get());
  max_.set(std::max(max_.get(), other.max_.get()));
}

void Histogram::Clear() {
  for (Cell& cell : counts_) cell.set(0);
  count_.set(0);
  sum_.set(0);
  max_.set(0);
}

uint64_t Histogram::Quantile(double q) const {
  const uint64_t count = count_.get(), max = max_.get();
  if (count == 0) return 0;
  uint64_t rank = static_cast<uint64_t>(q * static_cast<double>(count) + 0.999999);
  if (rank < 1) rank = 1;
  uint64_t seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    seen += counts_[i].get();
    if (seen >= rank) return std::min(BucketUpperBound(i), max);
  }
  return max;
}

std::string Histogram::Encode() const {
  std::ostringstream out;
  out << count_.get() << ";" << sum_.get() << ";" << max_.get() << ";";
  bool first = true;
  for (int i = 0; i < kBuckets; ++i) {
    const uint64_t n = counts_[i].get();
    if (!n) continue;
    if (!first) out << ",";
    out << i << ":" << n;
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
    counts_[bucket].add(count);
    total += count;
  }
  if (total != header[0]) {
    Clear();
    return false;
  }
  count_.set(header[0]);
  sum_.set(header[1]);
  max_.set(header[2]);
  return true;
}

}  // namespace paxflow
