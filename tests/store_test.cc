// What both stores promise behind the Store interface (backend/store.h),
// one thread at a time: deletes, ordered range scans over dense and sparse
// keys, partitioned key ownership; and the pieces under them (the block
// pool, the sparse key order).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend/block_pool.h"
#include "backend/multi_version_store.h"
#include "backend/ordered_keys.h"
#include "backend/single_version_store.h"
#include "common/hash.h"
#include "common/random.h"

namespace paxflow {
namespace {

using KeyValues = std::vector<std::pair<Key, std::string>>;

constexpr Key kHugeKey = (Key{1} << 62) - 1;  // a multiple of 3

// A store of partition 1 of 3 with dense keys 0..29 (1, 4, ..., 28 loaded).
class StoreContractTest : public ::testing::TestWithParam<bool /*multi_version*/> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      auto store = std::make_unique<MultiVersionStore>(1, 3, 30, 8, GcOptions());
      mv_ = store.get();
      store_ = std::move(store);
    } else {
      store_ = std::make_unique<SingleVersionStore>(1, 3, 30, 8);
    }
    slot_ = store_->RegisterThread();
    for (Key key = 1; key < 30; key += 3) store_->Load(key, "v" + std::to_string(key));
    // Every epoch a reader may use stays pinned in these tests.
    store_->SetSnapshotPins({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  }
  KeyValues ScanLatest(Key lo, Key hi) {
    KeyValues out;
    store_->ScanLatest(slot_, lo, hi,
                       [&](Key key, std::string_view value) { out.emplace_back(key, value); });
    return out;
  }
  KeyValues ScanAt(Key lo, Key hi, Epoch version) {
    KeyValues out;
    store_->EnterSnapshot(slot_);
    store_->ScanAt(slot_, lo, hi, version,
                   [&](Key key, std::string_view value) { out.emplace_back(key, value); });
    store_->ExitSnapshot(slot_);
    return out;
  }
  bool Latest(Key key, std::string* value = nullptr) {
    std::string_view view;
    if (!store_->ReadLatest(slot_, key, &view)) return false;
    if (value) *value = std::string(view);
    return true;
  }
  std::unique_ptr<Store> store_;
  MultiVersionStore* mv_ = nullptr;
  size_t slot_ = 0;
};

TEST_P(StoreContractTest, DeleteRemovesTheValueAndAWriteBringsItBack) {
  store_->Write(slot_, 4, "four", 2);
  store_->Delete(slot_, 4, 3);
  EXPECT_FALSE(Latest(4));
  const uint64_t without_4 = store_->Digest(slot_, 3);
  uint64_t expected = 0;
  for (Key key = 7; key < 30; key += 3) expected += DigestTerm(key, "v" + std::to_string(key));
  expected += DigestTerm(1, "v1");
  EXPECT_EQ(without_4, expected);
  store_->Delete(slot_, 4, 4);       // deleting what is absent changes nothing
  store_->Delete(slot_, 1000, 4);    // nor does deleting a key never written
  EXPECT_FALSE(Latest(1000));
  store_->Write(slot_, 4, "again", 5);
  std::string value;
  ASSERT_TRUE(Latest(4, &value));
  EXPECT_EQ(value, "again");
  store_->Write(slot_, 1000, "sparse", 5);
  store_->Delete(slot_, 1000, 6);
  EXPECT_FALSE(Latest(1000));
  EXPECT_EQ(store_->Metrics().keys, GetParam() ? 11u : 10u)
      << "multi-version counts records, single-version counts values";
}

TEST_P(StoreContractTest, ScansVisitThePartitionsKeysInOrder) {
  // Sparse keys of this partition (key % 3 == 1), written out of key order,
  // one far beyond any dense range.
  for (Key key : {kHugeKey + 1, Key{1000}, Key{31}, Key{100000}}) {
    ASSERT_EQ(key % 3, 1u);
    store_->Write(slot_, key, "s" + std::to_string(key), 2);
  }
  store_->Delete(slot_, 7, 2);
  KeyValues all = ScanLatest(0, UINT64_MAX);
  KeyValues expected;
  for (Key key = 1; key < 30; key += 3) {
    if (key != 7) expected.emplace_back(key, "v" + std::to_string(key));
  }
  for (Key key : {Key{31}, Key{1000}, Key{100000}, kHugeKey + 1}) {
    expected.emplace_back(key, "s" + std::to_string(key));
  }
  EXPECT_EQ(all, expected);
  // Bounds are inclusive, ranges may start or end between keys.
  EXPECT_EQ(ScanLatest(4, 13), (KeyValues{{4, "v4"}, {10, "v10"}, {13, "v13"}}));
  EXPECT_EQ(ScanLatest(5, 9), KeyValues{});
  EXPECT_EQ(ScanLatest(29, 1000), (KeyValues{{31, "s31"}, {1000, "s1000"}}));
  EXPECT_EQ(ScanLatest(1001, kHugeKey), (KeyValues{{100000, "s100000"}}));
  EXPECT_EQ(ScanLatest(9, 2), KeyValues{}) << "lo > hi is empty";
  // ScanAt sees the same in both stores at the newest snapshot.
  EXPECT_EQ(ScanAt(0, UINT64_MAX, 10), expected);
}

TEST_P(StoreContractTest, ManySparseKeysScanLikeASortedMap) {
  SplitMix64 rng(5);
  std::map<Key, std::string> expected;
  for (int i = 0; i < 20000; ++i) {
    Key key = rng.Next() >> 1;
    key -= key % 3;
    key += 1;  // this partition's
    if (key < 30) continue;
    const std::string value = std::to_string(i);
    store_->Write(slot_, key, value, 2);
    expected[key] = value;
  }
  for (Key key = 1; key < 30; key += 3) expected[key] = "v" + std::to_string(key);
  for (int probe = 0; probe < 50; ++probe) {
    Key lo = rng.Next() >> 1, hi = rng.Next() >> 1;
    if (lo > hi) std::swap(lo, hi);
    if (probe == 0) {
      lo = 0;
      hi = UINT64_MAX;
    }
    KeyValues want;
    for (auto it = expected.lower_bound(lo); it != expected.end() && it->first <= hi; ++it) {
      want.emplace_back(*it);
    }
    ASSERT_EQ(ScanLatest(lo, hi), want) << "[" << lo << ", " << hi << "]";
  }
}

INSTANTIATE_TEST_SUITE_P(Stores, StoreContractTest, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "multi_version" : "single_version");
                         });

// Snapshots of the multi-version store see deletes and inserts at their epochs.
TEST(MultiVersionStoreScanTest, SnapshotsSeeInsertsAndDeletesAtTheirEpochs) {
  MultiVersionStore store(0, 1, 4, 8, GcOptions());
  const size_t slot = store.RegisterThread();
  for (Key key = 0; key < 4; ++key) store.Load(key, "d" + std::to_string(key));
  store.SetSnapshotPins({0, 1, 2, 3, 4});
  store.Write(slot, 50, "fifty", 2);
  store.Delete(slot, 1, 3);
  store.Write(slot, 7, "seven", 3);
  store.Delete(slot, 50, 4);
  auto scan = [&](Epoch version) {
    KeyValues out;
    store.EnterSnapshot(slot);
    store.ScanAt(slot, 0, kHugeKey, version,
                 [&](Key key, std::string_view value) { out.emplace_back(key, value); });
    store.ExitSnapshot(slot);
    return out;
  };
  const KeyValues at1 = {{0, "d0"}, {1, "d1"}, {2, "d2"}, {3, "d3"}};
  EXPECT_EQ(scan(1), at1);
  EXPECT_EQ(scan(2), (KeyValues{{0, "d0"}, {1, "d1"}, {2, "d2"}, {3, "d3"}, {50, "fifty"}}));
  EXPECT_EQ(scan(3), (KeyValues{{0, "d0"}, {2, "d2"}, {3, "d3"}, {7, "seven"}, {50, "fifty"}}));
  EXPECT_EQ(scan(4), (KeyValues{{0, "d0"}, {2, "d2"}, {3, "d3"}, {7, "seven"}}));
  std::string_view value;
  store.EnterSnapshot(slot);
  EXPECT_TRUE(store.ReadAt(slot, 1, 2, &value));
  EXPECT_FALSE(store.ReadAt(slot, 1, 3, &value));
  EXPECT_FALSE(store.ReadAt(slot, 50, 9, &value));
  store.ExitSnapshot(slot);
  EXPECT_EQ(store.Digest(slot, 1), store.Digest(slot, 0));
  EXPECT_NE(store.Digest(slot, 4), store.Digest(slot, 3));
}

// A tombstone and what lies below it go once no pin needs them; a
// tombstone left as the only version stays (lock holders read heads).
TEST(MultiVersionStoreScanTest, GarbageCollectionDropsTombstones) {
  for (GcPolicy policy : {GcPolicy::kBackground, GcPolicy::kEpo, GcPolicy::kEpoRead}) {
    GcOptions gc;
    gc.policy = policy;
    MultiVersionStore store(0, 1, 4, 8, gc);
    const size_t slot = store.RegisterThread();
    store.Load(1, "one");
    store.SetSnapshotPins({0, 2, 3});
    store.Delete(slot, 1, 2);
    store.Write(slot, 1, "back", 3);
    ASSERT_EQ(store.ChainLength(1), 3u) << GcPolicyName(policy);
    store.SetSnapshotPins({3});  // nobody reads at 0 or 2 any more
    store.Sweep(slot);
    EXPECT_EQ(store.ChainLength(1), 1u) << GcPolicyName(policy);
    store.SetSnapshotPins({3, 4});
    store.Delete(slot, 1, 4);
    store.SetSnapshotPins({4});
    store.Sweep(slot);
    EXPECT_EQ(store.ChainLength(1), 1u) << GcPolicyName(policy) << ": the tombstone head stays";
    std::string_view value;
    EXPECT_FALSE(store.ReadLatest(slot, 1, &value));
  }
}

TEST(BlockPoolTest, SizeClassesCoverEveryPooledSize) {
  for (size_t bytes = 1; bytes <= BlockPool::kMaxPooledBytes; ++bytes) {
    const uint16_t size_class = BlockPool::ClassFor(bytes);
    ASSERT_NE(size_class, BlockPool::kUnpooled);
    ASSERT_GE(BlockPool::ClassBytes(size_class), bytes);
    if (size_class > 0) {
      ASSERT_LT(BlockPool::ClassBytes(size_class - 1), bytes);
    }
  }
  EXPECT_EQ(BlockPool::ClassFor(BlockPool::kMaxPooledBytes + 1), BlockPool::kUnpooled);
  EXPECT_EQ(BlockPool::ClassBytes(BlockPool::ClassFor(124)), 128u);
}

// Blocks one slot frees (a collector) feed another slot's allocations (a
// writer): churn at a steady live count never takes more memory.
TEST(BlockPoolTest, FreedBlocksAreReusedAcrossSlots) {
  BlockPool pool(2);
  const uint16_t size_class = BlockPool::ClassFor(128);
  std::vector<void*> live;
  for (int i = 0; i < 10000; ++i) live.push_back(pool.Allocate(0, size_class, 128));
  const uint64_t reserved = pool.reserved_bytes();
  std::set<void*> distinct(live.begin(), live.end());
  EXPECT_EQ(distinct.size(), live.size());
  for (int round = 0; round < 50; ++round) {
    for (void* block : live) pool.Free(1, block, size_class);
    for (void*& block : live) block = pool.Allocate(0, size_class, 128);
  }
  EXPECT_LE(pool.reserved_bytes(), reserved + (size_t{4} << 20))
      << "the writer slot must get the collector's blocks back";
  void* big = pool.Allocate(0, BlockPool::kUnpooled, 100000);
  pool.Free(0, big, BlockPool::kUnpooled);
}

TEST(OrderedKeysTest, ScansMatchASortedSetAndRunsStayFew) {
  OrderedKeys keys;
  std::set<Key> expected;
  SplitMix64 rng(9);
  for (int i = 0; i < 300000; ++i) {
    Key key = rng.Next();
    if (!expected.insert(key).second) continue;
    keys.Insert(key, nullptr);
  }
  keys.Compact();
  // Binary-counter merging: about log2(n / 1024) sealed runs.
  EXPECT_LE(keys.runs(), 12u);
  for (int probe = 0; probe < 100; ++probe) {
    Key lo = rng.Next(), hi = rng.Next();
    if (lo > hi) std::swap(lo, hi);
    if (probe == 0) {
      lo = 0;
      hi = UINT64_MAX;
    }
    if (probe == 1) hi = lo;  // a single point
    std::vector<Key> want(expected.lower_bound(lo), expected.upper_bound(hi));
    std::vector<Key> got;
    OrderedKeys::Cursor cursor = keys.Scan(lo, hi);
    OrderedKeys::Entry entry;
    while (cursor.Next(&entry)) got.push_back(entry.key);
    ASSERT_EQ(got, want);
  }
  EXPECT_EQ(keys.size(), expected.size());
}

}  // namespace
}  // namespace paxflow
