// Lock-free snapshot readers against a writer and the garbage collector,
// for every GC policy. Also built with ThreadSanitizer (make tsan).
//
// The writer plays the scheduler: it pins snapshots before readers may use
// them, exactly as the scheduler does (pins = newest epoch being written,
// the published epoch, and every registered reader's snapshot).
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "backend/key_index.h"
#include "backend/multi_version_store.h"
#include "common/hash.h"

namespace paxflow {
namespace {

constexpr Key kKeys = 64;
constexpr Epoch kEpochs = 5000;

// Key k is written in epoch e when (k + e) % 4 == 0; its value names both.
bool WrittenIn(Key key, Epoch epoch) { return epoch > 0 && (key + epoch) % 4 == 0; }
std::string Value(Key key, Epoch epoch) {
  std::string value(16, '\0');
  std::memcpy(value.data(), &key, 8);
  std::memcpy(value.data() + 8, &epoch, 8);
  return value;
}
Epoch ExpectedEpoch(Key key, Epoch version) {
  for (Epoch e = version; e > 0; --e) {
    if (WrittenIn(key, e)) return e;
  }
  return 0;
}

class Pinning {
 public:
  explicit Pinning(MultiVersionStore* store) : store_(store) {}
  // Writer: about to write `epoch`; `published` is complete.
  void Advance(Epoch writing, Epoch published) {
    std::lock_guard<std::mutex> lock(mu_);
    published_ = published;
    horizon_ = writing;
    Push();
  }
  Epoch Register() {
    std::lock_guard<std::mutex> lock(mu_);
    readers_.insert(published_);
    return published_;
  }
  void Unregister(Epoch version) {
    std::lock_guard<std::mutex> lock(mu_);
    readers_.erase(readers_.find(version));
  }

 private:
  void Push() {
    std::vector<Epoch> pins = {published_, horizon_};
    pins.insert(pins.end(), readers_.begin(), readers_.end());
    store_->SetSnapshotPins(pins);
  }
  MultiVersionStore* store_;
  std::mutex mu_;
  Epoch published_ = 0, horizon_ = 0;
  std::multiset<Epoch> readers_;
};

// The writer's part of an epoch for the dense keys.
void WriteDenseKeys(MultiVersionStore* store, size_t writer, Epoch epoch) {
  for (Key key = 0; key < kKeys; ++key) {
    if (WrittenIn(key, epoch)) store->Write(writer, key, Value(key, epoch), epoch);
  }
}

// Two short readers, each running `check` `checks` times at a snapshot it
// pins, over and over, and a collector sweeping, until `done`.
std::vector<std::thread> StartReadersAndCollector(
    MultiVersionStore* store, Pinning* pinning, std::atomic<bool>* done,
    const std::function<void(size_t, Epoch)>& check, int checks) {
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([=, slot = store->RegisterThread()] {
      while (!done->load()) {
        const Epoch version = pinning->Register();
        for (int i = 0; i < checks; ++i) check(slot, version);
        pinning->Unregister(version);
      }
    });
  }
  threads.emplace_back([=, slot = store->RegisterThread()] {
    while (!done->load()) store->Sweep(slot);
  });
  return threads;
}

// A store of kKeys dense keys under the test's GC policy, pinned as the
// scheduler would, and the readers' shared flags.
class StoreConcurrencyTest : public ::testing::TestWithParam<GcPolicy> {
 protected:
  StoreConcurrencyTest() : store(0, 1, kKeys, 16, Options()), pinning(&store) {
    for (Key key = 0; key < kKeys; ++key) store.Load(key, Value(key, 0));
  }
  static GcOptions Options() {
    GcOptions gc;
    gc.policy = GetParam();
    return gc;
  }
  MultiVersionStore store;
  Pinning pinning;
  std::atomic<bool> done{false};
  std::atomic<uint64_t> checked{0};
  std::atomic<int> wrong{0};
};

TEST_P(StoreConcurrencyTest, ReadersSeeExactSnapshotsWhileWritersAndCollectorsRun) {

  auto check = [&](size_t slot, Epoch version) {
    store.EnterSnapshot(slot);
    for (Key key = 0; key < kKeys; ++key) {
      std::string_view value;
      if (!store.ReadAt(slot, key, version, &value) || value != Value(key, ExpectedEpoch(key, version))) {
        wrong.fetch_add(1);
      }
    }
    store.ExitSnapshot(slot);
    checked.fetch_add(1);
  };
  // One reader holds an old snapshot for the whole run, as a long
  // transaction would, while the collector prunes around it.
  const Epoch old_snapshot = pinning.Register();
  std::thread long_reader([&, slot = store.RegisterThread()] {
    while (!done.load()) check(slot, old_snapshot);
    check(slot, old_snapshot);
  });
  std::vector<std::thread> threads = StartReadersAndCollector(&store, &pinning, &done, check, 3);
  const size_t writer = store.RegisterThread();
  for (Epoch epoch = 1; epoch <= kEpochs; ++epoch) {
    pinning.Advance(epoch, epoch - 1);
    WriteDenseKeys(&store, writer, epoch);
    if (epoch % (kEpochs / 20) == 0) {
      // Let the readers check a snapshot at this stage before going on: on
      // a loaded machine the writer can otherwise finish all its epochs
      // before a reader ran at all (a CI run checked once).
      const uint64_t target = checked.load() + 1;
      while (checked.load() < target) std::this_thread::yield();
    }
  }
  pinning.Advance(kEpochs, kEpochs);
  done.store(true);
  long_reader.join();
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(checked.load(), 10u);

  // Live versions stay bounded, far below the kEpochs / 4 per key written.
  // EPO prunes a key only when it is written, so each key keeps what the
  // pins of its last write needed (at most 5 pins, plus the head);
  // background and EPO-R reach the final pins' needs (2 per key) by a sweep
  // or a read.
  pinning.Unregister(old_snapshot);
  pinning.Advance(kEpochs, kEpochs);
  store.Sweep(writer);
  if (GetParam() == GcPolicy::kEpoRead) check(writer, kEpochs);
  EXPECT_LE(store.Metrics().live_versions, (GetParam() == GcPolicy::kEpo ? 6 : 2) * kKeys);
  EXPECT_GT(store.Metrics().reclaimed_versions, kEpochs * kKeys / 4 / 2);
}

// Snapshot scans over dense and sparse keys while the writer inserts new
// sparse keys and deletes old ones every epoch and the collector sweeps:
// each scan sees exactly the keys and values of its snapshot, in order.
TEST_P(StoreConcurrencyTest, ScansSeeExactSnapshotsWhileKeysComeAndGo) {
  constexpr Epoch kScanEpochs = 600;
  constexpr int kInserts = 3;      // new sparse keys per epoch
  constexpr Epoch kLifetime = 10;  // the first of them is deleted this many epochs later
  auto sparse_key = [](Epoch epoch, int i) {
    return kKeys + (Mix64(epoch * 8 + static_cast<uint64_t>(i)) >> 4);
  };
  auto check = [&](size_t slot, Epoch version) {
    std::vector<std::pair<Key, std::string>> expected;
    for (Key key = 0; key < kKeys; ++key) {
      expected.emplace_back(key, Value(key, ExpectedEpoch(key, version)));
    }
    for (Epoch e = 1; e <= version; ++e) {
      for (int i = 0; i < kInserts; ++i) {
        if (i == 0 && e + kLifetime <= version) continue;  // deleted by now
        expected.emplace_back(sparse_key(e, i), Value(sparse_key(e, i), e));
      }
    }
    std::sort(expected.begin(), expected.end());
    std::vector<std::pair<Key, std::string>> seen;
    store.EnterSnapshot(slot);
    store.ScanAt(slot, 0, UINT64_MAX, version,
                 [&](Key key, std::string_view value) { seen.emplace_back(key, value); });
    store.ExitSnapshot(slot);
    if (seen != expected) wrong.fetch_add(1);
    checked.fetch_add(1);
  };
  std::vector<std::thread> threads = StartReadersAndCollector(&store, &pinning, &done, check, 1);
  const size_t writer = store.RegisterThread();
  for (Epoch epoch = 1; epoch <= kScanEpochs; ++epoch) {
    pinning.Advance(epoch, epoch - 1);
    WriteDenseKeys(&store, writer, epoch);
    for (int i = 0; i < kInserts; ++i) {
      store.Write(writer, sparse_key(epoch, i), Value(sparse_key(epoch, i), epoch), epoch);
    }
    if (epoch > kLifetime) store.Delete(writer, sparse_key(epoch - kLifetime, 0), epoch);
    if (epoch % 50 == 0) {
      // Let the readers scan a few times at this stage before going on, so
      // the scans overlap the whole run whatever the scheduling.
      const uint64_t target = checked.load() + 2;
      while (checked.load() < target) std::this_thread::yield();
    }
  }
  pinning.Advance(kScanEpochs, kScanEpochs);
  done.store(true);
  for (auto& thread : threads) thread.join();
  check(writer, kScanEpochs);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(checked.load(), 2 * kScanEpochs / 50);
}

INSTANTIATE_TEST_SUITE_P(Policies, StoreConcurrencyTest,
                         ::testing::Values(GcPolicy::kBackground, GcPolicy::kEpo,
                                           GcPolicy::kEpoRead),
                         [](const ::testing::TestParamInfo<GcPolicy>& info) {
                           return std::string(info.param == GcPolicy::kEpoRead ? "epo_r"
                                                                               : GcPolicyName(info.param));
                         });

}  // namespace
}  // namespace paxflow

namespace paxflow {
namespace {

// Writers insert keys outside the dense range (forcing new generations)
// while readers look them up lock-free.
TEST(StoreConcurrencyTest, SparseIndexGrowsUnderConcurrentWritersAndReaders) {
  KeyIndex<std::atomic<uint64_t>> index(0, 1, 0, /*sparse_buckets=*/8);
  constexpr int kWriters = 2;
  constexpr uint64_t kPerWriter = 20000;
  std::atomic<bool> done{false};
  std::atomic<int> wrong{0};
  std::thread reader([&] {
    while (!done.load()) {
      for (uint64_t i = 0; i < kPerWriter; i += 97) {
        for (int w = 0; w < kWriters; ++w) {
          const Key key = (i << 1) | static_cast<Key>(w);
          const auto* record = index.Find(key);
          // A visible record is zero (not yet stored) or holds its key + 1.
          if (record) {
            const uint64_t value = record->load(std::memory_order_acquire);
            if (value != key + 1 && value != 0) wrong.fetch_add(1);
          }
        }
      }
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (uint64_t i = 0; i < kPerWriter; ++i) {
        const Key key = (i << 1) | static_cast<Key>(w);
        index.FindOrCreate(key)->store(key + 1, std::memory_order_release);
      }
    });
  }
  for (auto& writer : writers) writer.join();
  done.store(true);
  reader.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(index.sparse_count(), kWriters * kPerWriter);
  for (uint64_t i = 0; i < kPerWriter; ++i) {
    for (int w = 0; w < kWriters; ++w) {
      const Key key = (i << 1) | static_cast<Key>(w);
      ASSERT_NE(index.Find(key), nullptr) << key;
    }
  }
}

}  // namespace
}  // namespace paxflow
