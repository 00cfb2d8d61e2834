// KeyArea (common/key_area.h): whatever order and overlap its ranges come
// in, it holds them sorted, disjoint and not adjacent, and answers
// membership like the set of keys they name.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "common/key_area.h"

namespace paxflow {
namespace {

google::protobuf::RepeatedPtrField<KeyRange> Ranges(const std::vector<std::pair<Key, Key>>& list) {
  google::protobuf::RepeatedPtrField<KeyRange> out;
  for (const auto& [lo, hi] : list) {
    KeyRange* range = out.Add();
    range->set_lo(lo);
    range->set_hi(hi);
  }
  return out;
}

using RangeList = std::vector<std::pair<Key, Key>>;

TEST(KeyAreaTest, RangesInAnyOrderAreSortedAndMergedWhenOverlappingOrAdjacent) {
  EXPECT_EQ(KeyArea(Ranges({{20, 25}, {1, 3}, {4, 6}, {10, 12}, {11, 15}})).ranges(),
            (RangeList{{1, 6}, {10, 15}, {20, 25}}));
  // Sorted but adjacent, or overlapping: merged all the same.
  EXPECT_EQ(KeyArea(Ranges({{1, 3}, {4, 6}})).ranges(), (RangeList{{1, 6}}));
  EXPECT_EQ(KeyArea(Ranges({{1, 5}, {2, 3}})).ranges(), (RangeList{{1, 5}}));
  // Already normal: kept as it came.
  EXPECT_EQ(KeyArea(Ranges({{1, 2}, {4, 4}, {9, 12}})).ranges(),
            (RangeList{{1, 2}, {4, 4}, {9, 12}}));
  // The top of the key space.
  const Key top = UINT64_MAX;
  EXPECT_EQ(KeyArea(Ranges({{top - 1, top}, {top, top}})).ranges(), (RangeList{{top - 1, top}}));
  EXPECT_EQ(KeyArea(Ranges({{top, top}, {0, 0}})).ranges(), (RangeList{{0, 0}, {top, top}}));
}

TEST(KeyAreaTest, MembershipMatchesTheKeysOfRandomRanges) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 200; ++round) {
    std::vector<std::pair<Key, Key>> list;
    std::set<Key> keys;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const Key lo = rng() % 100;
      const Key hi = lo + rng() % 6;
      list.emplace_back(lo, hi);
      for (Key k = lo; k <= hi; ++k) keys.insert(k);
    }
    if (round % 2 == 0) std::sort(list.begin(), list.end());
    const KeyArea area(Ranges(list));
    const auto& ranges = area.ranges();
    for (size_t i = 1; i < ranges.size(); ++i) {
      ASSERT_GT(ranges[i].first, ranges[i - 1].second + 1) << "not disjoint and apart";
    }
    for (Key k = 0; k < 110; ++k) {
      ASSERT_EQ(area.Contains(k), keys.count(k) == 1) << "key " << k << " round " << round;
    }
    EXPECT_EQ(KeyArea::OfKeys(std::vector<Key>(keys.rbegin(), keys.rend())).ranges(), ranges);
  }
}

// Many ranges over a narrow span keep a bitmap (an LTX's area of single
// keys); it must answer like the ranges, at its edges too, and a span too
// wide for it keeps the binary search.
TEST(KeyAreaTest, ManyRangesAnswerMembershipFromABitmapLikeTheRanges) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 40; ++round) {
    std::vector<std::pair<Key, Key>> list;
    std::set<Key> keys;
    // Near 0, in the middle, and at the top of the key space.
    const Key base = round % 3 == 0 ? 0 : round % 3 == 1 ? Key{1} << 40 : UINT64_MAX - 5000;
    const int n = 40 + static_cast<int>(rng() % 400);
    for (int i = 0; i < n; ++i) {
      const Key lo = base + rng() % 4800;
      const Key hi = lo + (i % 7 == 0 ? rng() % 150 : 0);  // some span several words
      list.emplace_back(lo, hi);
      for (Key k = lo; k <= hi; ++k) keys.insert(k);
    }
    const KeyArea area(Ranges(list));
    const KeyArea unindexed(Ranges({list.begin(), list.begin() + 1}));
    ASSERT_TRUE(area.ranges().size() < 32 || area.indexed()) << "round " << round;
    for (Key offset = 0; offset < 5000; ++offset) {
      const Key k = base + offset;
      ASSERT_EQ(area.Contains(k), keys.count(k) == 1) << "key " << k << " round " << round;
    }
    for (Key k : {Key{0}, base - 1, base - 64, UINT64_MAX, Key{1} << 41}) {
      ASSERT_EQ(area.Contains(k), keys.count(k) == 1) << "key " << k << " round " << round;
    }
    EXPECT_FALSE(unindexed.indexed());
    EXPECT_EQ(KeyArea::OfKeys(std::vector<Key>(keys.begin(), keys.end())).ranges(), area.ranges());
  }
  // Too wide a span for its ranges: the binary search answers.
  std::vector<std::pair<Key, Key>> wide;
  for (Key i = 0; i < 64; ++i) wide.emplace_back(i << 20, (i << 20) + 1);
  const KeyArea sparse(Ranges(wide));
  EXPECT_FALSE(sparse.indexed());
  EXPECT_TRUE(sparse.Contains(Key{5} << 20));
  EXPECT_FALSE(sparse.Contains((Key{5} << 20) + 2));
}

}  // namespace
}  // namespace paxflow
