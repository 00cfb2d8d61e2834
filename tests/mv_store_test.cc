// The multi-version store's semantics, one thread at a time: snapshots,
// the write buffer, last-writer-wins within an epoch, and what each GC
// policy keeps.
#include <gtest/gtest.h>

#include "backend/multi_version_store.h"
#include "backend/key_index.h"
#include "backend/single_version_store.h"
#include "common/hash.h"

namespace paxflow {
namespace {

std::string Value(Key key, Epoch epoch) { return std::to_string(key) + "@" + std::to_string(epoch); }

class MultiVersionStoreTest : public ::testing::TestWithParam<GcPolicy> {
 protected:
  MultiVersionStoreTest() : store_(0, 1, 10, 16, Options()) {
    slot_ = store_.RegisterThread();
    for (Key key = 0; key < 10; ++key) store_.Load(key, Value(key, 0));
  }
  GcOptions Options() {
    GcOptions gc;
    gc.policy = GetParam();
    return gc;
  }
  std::string ReadAt(Key key, Epoch version) {
    std::string_view value;
    store_.EnterSnapshot(slot_);
    const bool found = store_.ReadAt(slot_, key, version, &value);
    std::string copy(value);
    store_.ExitSnapshot(slot_);
    return found ? copy : "<none>";
  }
  MultiVersionStore store_;
  size_t slot_;
};

TEST_P(MultiVersionStoreTest, SnapshotsSeeTheNewestVersionAtOrBelowThem) {
  store_.SetSnapshotPins({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10});  // keep everything
  store_.Write(slot_, 3, Value(3, 2), 2);
  store_.Write(slot_, 3, Value(3, 5), 5);
  EXPECT_EQ(ReadAt(3, 0), Value(3, 0));
  EXPECT_EQ(ReadAt(3, 1), Value(3, 0));
  EXPECT_EQ(ReadAt(3, 2), Value(3, 2));
  EXPECT_EQ(ReadAt(3, 4), Value(3, 2));
  EXPECT_EQ(ReadAt(3, 9), Value(3, 5));
  std::string_view latest;
  ASSERT_TRUE(store_.ReadLatest(slot_, 3, &latest));
  EXPECT_EQ(latest, Value(3, 5));  // the write buffer: newest, published or not
  EXPECT_EQ(ReadAt(42, 9), "<none>");
  store_.Write(slot_, 42, "new", 7);  // a key outside the dense range
  EXPECT_EQ(ReadAt(42, 6), "<none>");
  EXPECT_EQ(ReadAt(42, 7), "new");
}

TEST_P(MultiVersionStoreTest, LastWriterInAnEpochWins) {
  store_.SetSnapshotPins({0, 4});
  store_.Write(slot_, 1, "first", 4);
  store_.Write(slot_, 1, "second", 4);
  EXPECT_EQ(ReadAt(1, 4), "second");
  EXPECT_EQ(ReadAt(1, 3), Value(1, 0));
  EXPECT_EQ(store_.ChainLength(1), 2u);
}

TEST_P(MultiVersionStoreTest, DigestIsTheStateAtAnEpoch) {
  store_.SetSnapshotPins({0, 1, 2});
  uint64_t at0 = 0, at2 = 0;
  for (Key key = 0; key < 10; ++key) at0 += DigestTerm(key, Value(key, 0));
  at2 = at0 - DigestTerm(4, Value(4, 0)) + DigestTerm(4, Value(4, 2));
  store_.Write(slot_, 4, Value(4, 2), 2);
  EXPECT_EQ(store_.Digest(slot_, 0), at0);
  EXPECT_EQ(store_.Digest(slot_, 1), at0);
  EXPECT_EQ(store_.Digest(slot_, 2), at2);
}

TEST_P(MultiVersionStoreTest, GarbageCollectionKeepsWhatPinnedSnapshotsNeed) {
  // Everything pinned while the chain is built, so nothing goes early.
  store_.SetSnapshotPins({0, 1, 3, 6, 10, 15, 21});
  for (Epoch epoch : {1, 3, 6, 10, 15, 21}) store_.Write(slot_, 2, Value(2, epoch), epoch);
  ASSERT_EQ(store_.ChainLength(2), 7u);
  // Readers remain at 5 and 20; 21 is the newest read-write epoch.
  store_.SetSnapshotPins({5, 20, 21});
  switch (GetParam()) {
    case GcPolicy::kBackground:
      store_.Sweep(slot_);
      // Below the oldest pin only: 21, 15, 10, 6 and 3 (newest <= 5) stay.
      EXPECT_EQ(store_.ChainLength(2), 5u);
      break;
    case GcPolicy::kEpo:
      store_.Write(slot_, 2, Value(2, 21), 21);  // a write triggers pruning
      // Between pins: 21 (also the horizon), 15 (for 20), 3 (for 5).
      EXPECT_EQ(store_.ChainLength(2), 3u);
      break;
    case GcPolicy::kEpoRead:
      EXPECT_EQ(ReadAt(2, 5), Value(2, 3));  // walks past dead versions
      EXPECT_EQ(store_.ChainLength(2), 3u);
      break;
  }
  EXPECT_EQ(ReadAt(2, 5), Value(2, 3));
  EXPECT_EQ(ReadAt(2, 20), Value(2, 15));
  EXPECT_EQ(ReadAt(2, 21), Value(2, 21));
  EXPECT_GT(store_.Metrics().reclaimed_versions, 0u);
}

// A write-only load (no snapshot reader ever reads most keys) must not grow
// the store under any policy: versions that no pin needs go, at the latest
// by the collector's next sweep. Driven step by step: the sweep runs once
// per epoch, as the collector would between epochs.
TEST_P(MultiVersionStoreTest, WriteOnlyLoadStaysBounded) {
  for (Epoch epoch = 1; epoch <= 200; ++epoch) {
    // The scheduler's pins: the epoch being written, and a reader (e.g. a
    // digest or a read-only txn) at the previous one.
    store_.SetSnapshotPins({epoch - 1, epoch});
    for (Key key = 0; key < 10; ++key) store_.Write(slot_, key, Value(key, epoch), epoch);
    store_.Write(slot_, 100 + epoch % 7, Value(100, epoch), epoch);  // sparse keys too
    store_.Sweep(slot_);
    // Each key: the head, and at most the version the reader at epoch - 1 needs.
    ASSERT_LE(store_.Metrics().live_versions, 2u * 17) << "epoch " << epoch;
  }
  EXPECT_EQ(ReadAt(3, 199), Value(3, 199));
  EXPECT_EQ(ReadAt(3, 200), Value(3, 200));
  store_.SetSnapshotPins({200});
  store_.Sweep(slot_);
  EXPECT_EQ(store_.Metrics().live_versions, 17u);
  EXPECT_EQ(store_.ChainLength(3), 1u);
}

// Without readers between them, a write reuses the block of the head it
// supersedes (no allocation, no garbage); with one, the old version stays.
TEST_P(MultiVersionStoreTest, WritesReuseAHeadNoPinNeeds) {
  store_.SetSnapshotPins({5});
  store_.Write(slot_, 2, Value(2, 5), 5);
  EXPECT_EQ(store_.ChainLength(2), 1u);
  EXPECT_EQ(ReadAt(2, 5), Value(2, 5));
  const uint64_t pool = store_.pool_bytes();
  for (Epoch epoch = 6; epoch < 5000; ++epoch) {
    store_.SetSnapshotPins({epoch});
    store_.Write(slot_, 2, Value(2, epoch), epoch);
  }
  EXPECT_EQ(store_.ChainLength(2), 1u);
  EXPECT_EQ(store_.pool_bytes(), pool);
  EXPECT_EQ(store_.Metrics().live_versions, 10u);
  store_.SetSnapshotPins({4999, 5000});  // a reader stays at 4999
  store_.Write(slot_, 2, Value(2, 5000), 5000);
  EXPECT_EQ(store_.ChainLength(2), 2u);
  EXPECT_EQ(ReadAt(2, 4999), Value(2, 4999));
  EXPECT_EQ(ReadAt(2, 5000), Value(2, 5000));
}

// With a reader always one epoch behind, each write must keep the head (the
// reader's version) but the version below it is garbage: its block becomes
// the new head, so the chain stays at two blocks and nothing is allocated.
TEST_P(MultiVersionStoreTest, WritesRecycleTheGarbageBelowAPinnedHead) {
  store_.SetSnapshotPins({5});
  store_.Write(slot_, 2, Value(2, 5), 5);
  store_.SetSnapshotPins({5, 6});
  store_.Write(slot_, 2, Value(2, 6), 6);  // 5 is pinned: a second block
  ASSERT_EQ(store_.ChainLength(2), 2u);
  const uint64_t pool = store_.pool_bytes();
  const uint64_t reclaimed = store_.Metrics().reclaimed_versions;
  for (Epoch epoch = 7; epoch < 5000; ++epoch) {
    store_.SetSnapshotPins({epoch - 1, epoch});
    store_.Write(slot_, 2, Value(2, epoch), epoch);
    ASSERT_EQ(store_.ChainLength(2), 2u);
    ASSERT_EQ(ReadAt(2, epoch - 1), Value(2, epoch - 1));
  }
  EXPECT_EQ(ReadAt(2, 4999), Value(2, 4999));
  EXPECT_EQ(store_.pool_bytes(), pool);
  EXPECT_EQ(store_.Metrics().live_versions, 11u);
  EXPECT_EQ(store_.Metrics().reclaimed_versions, reclaimed + (5000 - 7));
  // A pin at the version below the head keeps it: the write allocates.
  store_.SetSnapshotPins({4998, 4999, 5000});
  store_.Write(slot_, 2, Value(2, 5000), 5000);
  EXPECT_EQ(store_.ChainLength(2), 3u);
  EXPECT_EQ(ReadAt(2, 4998), Value(2, 4998));
  EXPECT_EQ(ReadAt(2, 4999), Value(2, 4999));
  EXPECT_EQ(ReadAt(2, 5000), Value(2, 5000));
}

INSTANTIATE_TEST_SUITE_P(Policies, MultiVersionStoreTest,
                         ::testing::Values(GcPolicy::kBackground, GcPolicy::kEpo,
                                           GcPolicy::kEpoRead),
                         [](const ::testing::TestParamInfo<GcPolicy>& info) {
                           return std::string(info.param == GcPolicy::kEpoRead ? "epo_r"
                                                                               : GcPolicyName(info.param));
                         });

TEST(SingleVersionStoreTest, UpdatesInPlaceAndGrowsValues) {
  SingleVersionStore store(1, 3, 30, 8);
  for (Key key = 1; key < 30; key += 3) store.Load(key, Value(key, 0).substr(0, 8));
  store.Write(0, 4, "abc", 1);
  store.Write(0, 7, "a value longer than the slab slot", 1);
  store.Write(0, 1000, "sparse", 1);
  std::string_view value;
  ASSERT_TRUE(store.ReadLatest(0, 4, &value));
  EXPECT_EQ(value, "abc");
  ASSERT_TRUE(store.ReadLatest(0, 7, &value));
  EXPECT_EQ(value, "a value longer than the slab slot");
  ASSERT_TRUE(store.ReadLatest(0, 1000, &value));
  EXPECT_EQ(value, "sparse");
  EXPECT_FALSE(store.ReadLatest(0, 5, &value)) << "key 5 belongs to partition 2";
  EXPECT_EQ(store.Metrics().keys, 11u);
}

}  // namespace
}  // namespace paxflow

namespace paxflow {
namespace {

// Keys outside the loaded range spill into generations of ever larger
// bucket arrays; every key stays findable and is visited exactly once.
TEST(KeyIndexTest, SparseKeysSurviveGrowth) {
  KeyIndex<int> index(0, 1, 100, /*sparse_buckets=*/16);
  for (Key key = 1000; key < 200000; key += 3) *index.FindOrCreate(key) = static_cast<int>(key % 1000);
  EXPECT_EQ(index.sparse_count(), (200000 - 1000 + 2) / 3);
  for (Key key = 1000; key < 200000; key += 3) {
    const int* record = index.Find(key);
    ASSERT_NE(record, nullptr) << key;
    ASSERT_EQ(*record, static_cast<int>(key % 1000));
    ASSERT_EQ(index.Find(key + 1), nullptr);
  }
  uint64_t visited = 0;
  index.ForEach([&](Key key, int&) { visited += key >= 1000 ? 1 : 0; });
  EXPECT_EQ(visited, index.sparse_count());
}

}  // namespace
}  // namespace paxflow
