// Micro-benchmarks of PaxFlow's multi-version store
// (backend/multi_version_store.h):
//  - snapshot reads (ReadAt) and writes as chains grow to 1, 4 and 16
//    versions per key (every version pinned, so nothing is collected);
//  - garbage collection under a long-lived reader: a reader pins an old
//    snapshot while writes advance epochs and short readers come and go;
//    EPO prunes on writes, EPO-R on reads, background by sweeps. Reported:
//    ops/s and the live versions per key left at the end.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/multi_version_store.h"
#include "common/random.h"

namespace paxflow {
namespace {

constexpr uint64_t kRecords = 1 << 16;
constexpr uint32_t kValueSize = 100;

std::string ValueFor(Key key, Epoch epoch) {
  std::string value(kValueSize, 'v');
  std::memcpy(value.data(), &key, 8);
  std::memcpy(value.data() + 8, &epoch, 8);
  return value;
}

// A store whose every key has `chain` versions (epochs 0..chain-1), all pinned.
std::unique_ptr<MultiVersionStore> ChainedStore(int chain, size_t* slot) {
  GcOptions gc;
  gc.policy = GcPolicy::kEpo;
  auto store = std::make_unique<MultiVersionStore>(0, 1, kRecords, kValueSize, gc);
  *slot = store->RegisterThread();
  std::vector<Epoch> pins;
  for (int e = 0; e < chain; ++e) pins.push_back(static_cast<Epoch>(e));
  store->SetSnapshotPins(pins);
  for (Key key = 0; key < kRecords; ++key) store->Load(key, ValueFor(key, 0));
  for (int e = 1; e < chain; ++e) {
    for (Key key = 0; key < kRecords; ++key) store->Write(*slot, key, ValueFor(key, e), e);
  }
  return store;
}

std::vector<Key> RandomKeys(size_t n, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<Key> keys(n);
  for (Key& key : keys) key = rng.Uniform(kRecords);
  return keys;
}

// Reads at the oldest snapshot walk the whole chain; at the newest, one hop.
void BM_VersionedRead(benchmark::State& state) {
  const int chain = static_cast<int>(state.range(0));
  const bool oldest = state.range(1) != 0;
  size_t slot;
  auto store = ChainedStore(chain, &slot);
  const std::vector<Key> keys = RandomKeys(1 << 16, 7);
  const Epoch version = oldest ? 0 : static_cast<Epoch>(chain - 1);
  char buffer[kValueSize];
  size_t i = 0;
  for (auto _ : state) {
    store->EnterSnapshot(slot);
    std::string_view value;
    store->ReadAt(slot, keys[i++ & (keys.size() - 1)], version, &value);
    std::memcpy(buffer, value.data(), value.size());
    store->ExitSnapshot(slot);
    benchmark::DoNotOptimize(buffer);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(oldest ? "oldest snapshot" : "newest snapshot");
}
BENCHMARK(BM_VersionedRead)
    ->ArgsProduct({{1, 4, 16}, {0, 1}})
    ->ArgNames({"chain", "oldest"});

// A write prepends a version (pinned chains: nothing is pruned).
void BM_VersionedWrite(benchmark::State& state) {
  const int chain = static_cast<int>(state.range(0));
  size_t slot;
  auto store = ChainedStore(chain, &slot);
  const std::vector<Key> keys = RandomKeys(1 << 16, 11);
  const std::string value = ValueFor(1, 1);
  // Every write lands in the same new epoch: last-writer-wins replaces it,
  // so chains keep their length while the benchmark runs.
  const Epoch epoch = static_cast<Epoch>(chain);
  size_t i = 0;
  for (auto _ : state) store->Write(slot, keys[i++ & (keys.size() - 1)], value, epoch);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_VersionedWrite)->Arg(1)->Arg(4)->Arg(16)->ArgName("chain");

// Writes advance one epoch per 256 writes; every epoch the short readers'
// snapshot moves to the newest published one, while a long reader stays
// pinned at epoch 1. Each iteration: one write and four snapshot reads.
void BM_GcUnderLongReader(benchmark::State& state) {
  GcOptions gc;
  gc.policy = static_cast<GcPolicy>(state.range(0));
  MultiVersionStore store(0, 1, kRecords, kValueSize, gc);
  const size_t slot = store.RegisterThread();
  for (Key key = 0; key < kRecords; ++key) store.Load(key, ValueFor(key, 0));
  const std::vector<Key> keys = RandomKeys(1 << 16, 13);
  const Epoch long_reader = 1;
  Epoch epoch = 2;
  store.SetSnapshotPins({long_reader, epoch - 1, epoch});
  char buffer[kValueSize];
  size_t i = 0;
  for (auto _ : state) {
    const Key key = keys[i & (keys.size() - 1)];
    store.Write(slot, key, ValueFor(key, epoch), epoch);
    store.EnterSnapshot(slot);
    for (int r = 1; r <= 4; ++r) {
      std::string_view value;
      store.ReadAt(slot, keys[(i * 5 + r) & (keys.size() - 1)], epoch - 1, &value);
      std::memcpy(buffer, value.data(), value.size());
    }
    store.ExitSnapshot(slot);
    benchmark::DoNotOptimize(buffer);
    if ((++i & 255) == 0) {
      ++epoch;
      store.SetSnapshotPins({long_reader, epoch - 1, epoch});
      if (gc.policy == GcPolicy::kBackground && (epoch & 63) == 0) {
        state.PauseTiming();  // the sweep runs on its own thread in a node
        store.Sweep(slot);
        state.ResumeTiming();
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
  const StoreMetrics metrics = store.Metrics();
  state.counters["versions_per_key"] = static_cast<double>(metrics.live_versions) / kRecords;
  state.counters["reclaimed"] = static_cast<double>(metrics.reclaimed_versions);
  state.SetLabel(GcPolicyName(gc.policy));
}
BENCHMARK(BM_GcUnderLongReader)
    ->Arg(static_cast<int>(GcPolicy::kBackground))
    ->Arg(static_cast<int>(GcPolicy::kEpo))
    ->Arg(static_cast<int>(GcPolicy::kEpoRead))
    ->ArgName("policy")
    ->Iterations(1 << 20);

}  // namespace
}  // namespace paxflow
