// The store work of whole txns, both stores side by side (what a worker
// does between locking and reporting, with nothing else around it): the
// bound the engine cannot beat on this machine for the ro and rmw presets.
//
//  - BM_TxnStore/ro: a read-only txn of the `ro` preset: 100 reads (1 of
//    10 hot records + 99 uniform over 1M records of 100 B) with the
//    worker's two-stage prefetch, each value copied into the txn's read
//    buffer. Snapshot reads (ReadAt) in the multi-version store, ReadLatest
//    in the single-version one. 1 and 2 threads.
//  - BM_TxnStore/rmw: a read-modify-write txn of the `rmw` preset: 10 keys
//    (1 of 10,000 hot + 9 uniform), prefetched as the worker does, each
//    ReadLatest + copy, then a Write of a new value; the epoch advances every 1,000 txns and, in the
//    multi-version store, pins follow it as the scheduler sets them (the
//    newest read-write epoch only, as on a write-only load). mv=2: the
//    multi-version store with a reader always one epoch behind (pins at the
//    previous and the newest epoch, as a trickle of read-only txns keeps
//    them on a write-heavy load): every write must keep the version below
//    it, so this is the two-layer store's steady write cost. Its keys are
//    those of the `long` preset (100,000 records, uniform), so each is
//    written again every ten epochs or so, as there.
// Keys are pre-generated; stores are built once per process.
#include <benchmark/benchmark.h>

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/multi_version_store.h"
#include "backend/single_version_store.h"
#include "common/random.h"

namespace paxflow {
namespace {

constexpr uint64_t kRecords = 1000000;
constexpr uint32_t kValueSize = 100;
constexpr size_t kTxnKeys = size_t{1} << 22;  // pre-generated, used cyclically

enum StoreKind { kSingleVersion = 0, kMultiVersion = 1, kMultiVersionReader = 2 };

Store& SharedStore(StoreKind kind) {
  static Store* stores[2] = {};
  if (!stores[kind]) {
    Store* store;
    if (kind == kSingleVersion) {
      store = new SingleVersionStore(0, 1, kRecords, kValueSize);
    } else {
      auto* mv = new MultiVersionStore(0, 1, kRecords, kValueSize, GcOptions());
      mv->StartCollector();
      store = mv;
    }
    std::string value(kValueSize, 'x');
    for (Key key = 0; key < kRecords; ++key) {
      std::memcpy(value.data(), &key, sizeof(key));
      store->Load(key, value);
    }
    stores[kind] = store;
  }
  return *stores[kind];
}

// Txns of `ops` keys each: the first hot (of `hot`), the rest uniform.
const std::vector<Key>& TxnKeys(uint32_t ops, uint64_t hot) {
  static std::vector<std::pair<uint64_t, std::vector<Key>>> cache;
  const uint64_t tag = ops * 1000003ULL + hot;
  for (const auto& [t, keys] : cache) {
    if (t == tag) return keys;
  }
  SplitMix64 rng(tag);
  std::vector<Key> keys(kTxnKeys);
  for (size_t i = 0; i < kTxnKeys; ++i) {
    keys[i] = i % ops == 0 ? rng.Uniform(hot) : hot + rng.Uniform(kRecords - hot);
  }
  cache.emplace_back(tag, std::move(keys));
  return cache.back().second;
}

// Uniform over the first 100,000 records (the `long` preset's table).
const std::vector<Key>& LongPresetKeys() {
  static const std::vector<Key> keys = [] {
    SplitMix64 rng(100000);
    std::vector<Key> all(kTxnKeys);
    for (Key& key : all) key = rng.Uniform(100000);
    return all;
  }();
  return keys;
}

void BM_ReadOnlyTxn(benchmark::State& state) {
  constexpr uint32_t kOps = 100;
  constexpr size_t kRecordAhead = 16, kValueAhead = 8;  // as the worker stages them
  static std::mutex setup;
  Store* store;
  {
    std::lock_guard<std::mutex> lock(setup);
    store = &SharedStore(static_cast<StoreKind>(state.range(0)));
  }
  const std::vector<Key>& keys = TxnKeys(kOps, 10);
  const size_t slot = store->RegisterThread();
  std::vector<char> reads(kOps * kValueSize);
  size_t base = (static_cast<size_t>(state.thread_index()) * 7919 * kOps) % kTxnKeys;
  uint64_t txns = 0;
  for (auto _ : state) {
    const Key* txn = &keys[base];
    base = (base + kOps) % kTxnKeys;
    store->EnterSnapshot(slot);
    for (size_t i = 0; i < kRecordAhead; ++i) store->Prefetch(txn[i], 1);
    for (size_t i = 0; i < kOps; ++i) {
      if (i + kRecordAhead < kOps) store->Prefetch(txn[i + kRecordAhead], 1);
      if (i + kValueAhead < kOps) store->Prefetch(txn[i + kValueAhead], 2);
      std::string_view value;
      store->ReadAt(slot, txn[i], 1, &value);
      std::memcpy(&reads[i * kValueSize], value.data(), value.size());
    }
    store->ExitSnapshot(slot);
    benchmark::DoNotOptimize(reads.data());
    ++txns;
  }
  state.SetItemsProcessed(static_cast<int64_t>(txns));  // items/s: txns/s, all threads
  state.SetLabel(state.range(0) == kMultiVersion ? "multi-version" : "single-version");
}
// Registered slots: each store hands out a few dozen at most (GcOptions).
BENCHMARK(BM_ReadOnlyTxn)->Arg(kSingleVersion)->Arg(kMultiVersion)->ArgName("mv")
    ->Threads(1)->Threads(2)->UseRealTime()->MinTime(1.0);

void BM_ReadModifyWriteTxn(benchmark::State& state) {
  constexpr uint32_t kOps = 10;
  const bool reader = state.range(0) == kMultiVersionReader;
  const StoreKind kind = reader ? kMultiVersion : static_cast<StoreKind>(state.range(0));
  Store& store = SharedStore(kind);
  const std::vector<Key>& keys = reader ? LongPresetKeys() : TxnKeys(kOps, 10000);
  const size_t slot = store.RegisterThread();
  char value[kValueSize];
  static Epoch epoch = 1;  // continues across repetitions: epochs only grow
  size_t base = 0;
  uint64_t txns = 0;
  for (auto _ : state) {
    if (txns % 1000 == 0) {
      ++epoch;
      if (reader) store.SetSnapshotPins({epoch - 1, epoch});
      else store.SetSnapshotPins({epoch});
    }
    const Key* txn = &keys[base];
    base = (base + kOps) % kTxnKeys;
    // As the worker stages a short txn: every record, then every value.
    for (size_t i = 0; i < kOps; ++i) store.Prefetch(txn[i], 1);
    for (size_t i = 0; i < kOps; ++i) store.Prefetch(txn[i], 2);
    for (size_t i = 0; i < kOps; ++i) {
      std::string_view old;
      store.ReadLatest(slot, txn[i], &old);
      std::memcpy(value, old.data(), kValueSize);
      value[8] ^= 1;
      store.Write(slot, txn[i], std::string_view(value, kValueSize), epoch);
    }
    ++txns;
  }
  state.SetItemsProcessed(static_cast<int64_t>(txns));  // items/s: txns/s
  state.SetLabel(reader ? "multi-version, reader one epoch behind"
                        : kind == kMultiVersion ? "multi-version" : "single-version");
}
BENCHMARK(BM_ReadModifyWriteTxn)
    ->Arg(kSingleVersion)->Arg(kMultiVersion)->Arg(kMultiVersionReader)->ArgName("mv")
    ->MinTime(1.0);

}  // namespace
}  // namespace paxflow
