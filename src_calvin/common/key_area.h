// A set of keys given as inclusive ranges (an LTX's write-preservation
// area, a scan's ranges, a guard's keys): sorted, overlapping and adjacent
// ranges merged, so membership is one binary search. An area of many
// ranges over a narrow span of keys (a `long` LTX's 4,000 keys among
// 100,000) also keeps a bitmap of that span, so membership is one bit:
// a locked run asks it for every key it reads and writes, and the binary
// search's cache misses over 4,000 ranges were a fifth of that run's time.
//
// Immutable after construction; any thread may read it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/types.h"
#include "txn.pb.h"

namespace paxflow {

class KeyArea {
 public:
  KeyArea() = default;
  explicit KeyArea(const google::protobuf::RepeatedPtrField<KeyRange>& ranges) {
    ranges_.reserve(static_cast<size_t>(ranges.size()));
    for (const KeyRange& range : ranges) Add(range.lo(), range.hi());
    Normalize();
    Index();
  }
  static KeyArea OfKeys(std::vector<Key> keys) {
    KeyArea area;
    for (Key key : keys) area.Add(key, key);
    area.Normalize();
    area.Index();
    return area;
  }

  bool empty() const { return ranges_.empty(); }
  // Membership is answered from the bitmap (tests check both ways).
  bool indexed() const { return !bits_.empty(); }
  const std::vector<std::pair<Key, Key>>& ranges() const { return ranges_; }

  bool Contains(Key key) const {
    if (!bits_.empty()) {
      const Key offset = key - base_;  // below base_ it wraps past span_
      return offset <= span_ && ((bits_[offset >> 6] >> (offset & 63)) & 1) != 0;
    }
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), key,
                               [](Key k, const std::pair<Key, Key>& r) { return k < r.first; });
    return it != ranges_.begin() && std::prev(it)->second >= key;
  }
  // Some key of [lo, hi] is in the area.
  bool Intersects(Key lo, Key hi) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), hi,
                               [](Key k, const std::pair<Key, Key>& r) { return k < r.first; });
    return it != ranges_.begin() && std::prev(it)->second >= lo;
  }
  // Every key of [lo, hi] is in the area.
  bool Covers(Key lo, Key hi) const {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), lo,
                               [](Key k, const std::pair<Key, Key>& r) { return k < r.first; });
    return it != ranges_.begin() && std::prev(it)->second >= hi;
  }
  bool Intersects(const KeyArea& other) const {
    auto a = ranges_.begin(), b = other.ranges_.begin();
    while (a != ranges_.end() && b != other.ranges_.end()) {
      if (a->second < b->first) ++a;
      else if (b->second < a->first) ++b;
      else return true;
    }
    return false;
  }
  // Keys of the area on partition `p` of `partitions`, up to `limit` of
  // them; false if there are more (the area is too wide to enumerate).
  bool KeysOn(PartitionId p, uint32_t partitions, uint64_t limit, std::vector<Key>* out) const {
    for (const auto& [lo, hi] : ranges_) {
      Key first = FirstKeyOn(lo, p, partitions);
      for (Key key = first; key >= lo && key <= hi; key += partitions) {
        if (out->size() >= limit) return false;
        out->push_back(key);
        if (hi - key < partitions) break;  // the next step would pass hi (or wrap)
      }
    }
    return true;
  }
  // Appends the area's ranges to a message's range list.
  void AppendTo(google::protobuf::RepeatedPtrField<KeyRange>* out) const {
    for (const auto& [lo, hi] : ranges_) {
      KeyRange* range = out->Add();
      range->set_lo(lo);
      range->set_hi(hi);
    }
  }
  // Checked at the door: every range has lo <= hi. Empty, or what is wrong.
  static std::string Validate(const google::protobuf::RepeatedPtrField<KeyRange>& ranges,
                              const char* what, bool disjoint) {
    std::vector<std::pair<Key, Key>> sorted;
    for (const KeyRange& range : ranges) {
      if (range.lo() > range.hi()) {
        return std::string(what) + " range [" + std::to_string(range.lo()) + ", " +
               std::to_string(range.hi()) + "] is empty (lo > hi)";
      }
      sorted.emplace_back(range.lo(), range.hi());
    }
    if (!disjoint) return "";
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 1; i < sorted.size(); ++i) {
      if (sorted[i].first <= sorted[i - 1].second) {
        return std::string(what) + " ranges [" + std::to_string(sorted[i - 1].first) + ", " +
               std::to_string(sorted[i - 1].second) + "] and [" +
               std::to_string(sorted[i].first) + ", " + std::to_string(sorted[i].second) +
               "] overlap";
      }
    }
    return "";
  }

 private:
  void Add(Key lo, Key hi) {
    if (lo <= hi) ranges_.emplace_back(lo, hi);
  }
  // Already disjoint, ascending and not adjacent: what every area a node
  // built (OfKeys) and sent on looks like, read again at each step of an
  // LTX's life; checking costs one pass where sorting 4,000 ranges did not.
  bool Normal() const {
    for (size_t i = 1; i < ranges_.size(); ++i) {
      const Key end = ranges_[i - 1].second;
      if (end == UINT64_MAX || ranges_[i].first <= end + 1) return false;
    }
    return true;
  }
  void Normalize() {
    if (Normal()) return;
    std::sort(ranges_.begin(), ranges_.end());
    std::vector<std::pair<Key, Key>> merged;
    for (const auto& range : ranges_) {
      if (!merged.empty() && (merged.back().second == UINT64_MAX ||
                              range.first <= merged.back().second + 1)) {
        merged.back().second = std::max(merged.back().second, range.second);
      } else {
        merged.push_back(range);
      }
    }
    ranges_ = std::move(merged);
  }

  // From this many ranges on, a binary search takes enough steps (and cache
  // misses) that one bit is worth keeping, if the bitmap takes at most
  // kBitmapWordsPerRange words (8 bytes each) per range, i.e. at most four
  // times the ranges' own 16 bytes each.
  static constexpr size_t kIndexFrom = 32;
  static constexpr uint64_t kBitmapWordsPerRange = 8;
  void Index() {
    if (ranges_.size() < kIndexFrom) return;
    const Key base = ranges_.front().first;
    const Key span = ranges_.back().second - base;
    if ((span >> 6) >= kBitmapWordsPerRange * ranges_.size()) return;
    base_ = base;
    span_ = span;
    bits_.assign(static_cast<size_t>(span >> 6) + 1, 0);
    for (const auto& [lo, hi] : ranges_) {
      for (Key offset = lo - base; offset <= hi - base;) {
        const uint64_t bit = offset & 63;
        // One word at a time: bits bit.. of this word, up to hi.
        const uint64_t count = std::min<uint64_t>(64 - bit, hi - base - offset + 1);
        const uint64_t mask = count == 64 ? ~uint64_t{0} : ((uint64_t{1} << count) - 1) << bit;
        bits_[offset >> 6] |= mask;
        offset += count;  // at most span_ + 1: span_ is far below 2^64 here
      }
    }
  }

  std::vector<std::pair<Key, Key>> ranges_;  // disjoint, ascending, not adjacent
  // Bit i: key base_ + i is in the area; empty when not indexed.
  std::vector<uint64_t> bits_;
  Key base_ = 0;
  Key span_ = 0;  // the last range's hi minus base_
};

}  // namespace paxflow
