// FlatKeyMap and SmallIdList (common/) against standard containers: random
// inserts, lookups and erases, enough to grow and shrink the table many
// times, with keys chosen to collide (consecutive keys, and keys that share
// their home slot) so that backward-shift deletion moves whole probe runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <unordered_map>
#include <vector>

#include "common/flat_key_map.h"
#include "common/small_id_list.h"

namespace paxflow {
namespace {

void ExpectSame(const FlatKeyMap<uint64_t>& map, const std::unordered_map<Key, uint64_t>& oracle,
                const std::vector<Key>& universe) {
  ASSERT_EQ(map.size(), oracle.size());
  for (Key key : universe) {
    const uint64_t* found = map.Find(key);
    auto it = oracle.find(key);
    if (it == oracle.end()) {
      ASSERT_EQ(found, nullptr) << "key " << key << " is found after its erase";
    } else {
      ASSERT_NE(found, nullptr) << "key " << key << " is lost";
      ASSERT_EQ(*found, it->second) << "key " << key;
    }
  }
  size_t visited = 0;
  map.ForEach([&](Key key, uint64_t value) {
    ++visited;
    ASSERT_EQ(oracle.at(key), value);
  });
  ASSERT_EQ(visited, oracle.size());
}

TEST(FlatKeyMapTest, MatchesAnUnorderedMapThroughGrowthShrinkageAndCollidingErases) {
  std::mt19937_64 rng(7);
  // Consecutive keys, keys 2^58 apart (equal low bits: many share a home
  // slot in a small table) and random 64-bit keys, including 0 and ~0.
  std::vector<Key> universe;
  for (Key k = 0; k < 600; ++k) universe.push_back(k);
  for (Key k = 1; k < 64; ++k) universe.push_back(k << 58);
  for (int i = 0; i < 600; ++i) universe.push_back(rng());
  universe.push_back(~Key{0});
  FlatKeyMap<uint64_t> map;
  std::unordered_map<Key, uint64_t> oracle;
  for (int round = 0; round < 6; ++round) {
    // Fill most of the universe, then drain nearly all of it: the table
    // grows to 2,048 slots, and gives them back when compacted.
    for (int i = 0; i < 3000; ++i) {
      const Key key = universe[rng() % universe.size()];
      const uint64_t bits = rng() | 1;
      map[key] |= bits;
      oracle[key] |= bits;
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSame(map, oracle, universe));
    for (int i = 0; i < 6000; ++i) {
      const Key key = universe[rng() % universe.size()];
      ASSERT_EQ(map.Erase(key), oracle.erase(key) == 1) << "key " << key;
      if (i % 500 == 0) {
        ASSERT_NO_FATAL_FAILURE(ExpectSame(map, oracle, universe));
      }
    }
    ASSERT_NO_FATAL_FAILURE(ExpectSame(map, oracle, universe));
    const size_t full = map.capacity();
    map.Compact();
    EXPECT_LE(map.capacity(), std::max<size_t>(64, full / 4)) << "drained, it kept its memory";
    ASSERT_NO_FATAL_FAILURE(ExpectSame(map, oracle, universe));
  }
  map.clear();
  EXPECT_TRUE(map.empty());
  EXPECT_EQ(map.Find(0), nullptr);
}

TEST(FlatKeyMapTest, ListsOfIdsKeepTheirOrderThroughInsertsRemovesAndRehashes) {
  std::mt19937_64 rng(11);
  FlatKeyMap<SmallIdList> map;
  std::map<Key, std::vector<TxnId>> oracle;
  for (int i = 0; i < 20000; ++i) {
    const Key key = rng() % 300;
    const TxnId id = 1 + rng() % 8;
    if (rng() % 3 != 0) {
      map[key].Insert(id);
      auto& ids = oracle[key];
      ids.insert(std::upper_bound(ids.begin(), ids.end(), id), id);
    } else if (SmallIdList* ids = map.Find(key)) {
      ids->Remove(id);
      auto& expected = oracle.at(key);
      expected.erase(std::remove(expected.begin(), expected.end(), id), expected.end());
      if (ids->empty()) {
        map.Erase(key);
        oracle.erase(key);
      }
    } else {
      ASSERT_EQ(oracle.count(key), 0u);
    }
  }
  ASSERT_EQ(map.size(), oracle.size());
  size_t longest = 0;
  for (const auto& [key, expected] : oracle) {
    const SmallIdList* ids = map.Find(key);
    ASSERT_NE(ids, nullptr);
    ASSERT_EQ(std::vector<TxnId>(ids->begin(), ids->end()), expected) << "key " << key;
    longest = std::max<size_t>(longest, expected.size());
  }
  EXPECT_GT(longest, 2u) << "no list went past its inline ids";
}

}  // namespace
}  // namespace paxflow
