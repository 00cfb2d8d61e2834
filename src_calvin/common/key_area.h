// A set of keys given as inclusive ranges (an LTX's write-preservation
// area, a scan's ranges, a guard's keys): sorted, overlapping and adjacent
// ranges merged, so membership is one binary search.
//
// Immutable after construction; any thread may read it.
#pragma once
#include <algorithm>
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
  }
  static KeyArea OfKeys(std::vector<Key> keys) {
    KeyArea area;
    for (Key key : keys) area.Add(key, key);
    area.Normalize();
    return area;
  }

  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<Key, Key>>& ranges() const { return ranges_; }

  bool Contains(Key key) const {
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

  std::vector<std::pair<Key, Key>> ranges_;  // disjoint, ascending, not adjacent
};

}  // namespace paxflow
