// Micro-benchmarks of Calvin's single-version store
// (backend/single_version_store.h): point reads by ReadLatest, each followed by
// a copy of the value into a buffer as a read-only txn does, point writes, and
// reads of sparse keys (above dense_keys, kept in the insert-only hash index).
//
// The stores are built once per process (function-local statics) before any
// timed loop; keys are pre-generated. Zipfian keys use common/random.h's
// ZipfianSampler with rank = key, as applications/key_picker.cc does on one
// partition (so the hottest records are also adjacent in the slab).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/single_version_store.h"
#include "common/random.h"
#include "common/types.h"

namespace paxflow {
namespace {

constexpr uint64_t kRecords = 1000000;
constexpr uint32_t kValueSize = 100;
constexpr size_t kKeyCount = size_t{1} << 20;  // pre-generated keys, used cyclically
constexpr size_t kKeyMask = kKeyCount - 1;

std::string MakeValue(uint64_t key) {
  std::string value(kValueSize, '\0');
  SplitMix64 rng(key);
  for (size_t i = 0; i < value.size(); i += 8) {
    const uint64_t word = rng.Next();
    std::memcpy(&value[i], &word, std::min<size_t>(8, value.size() - i));
  }
  return value;
}

// 1,000,000 dense records of 100 bytes on one partition, as --partitions=1 loads them.
SingleVersionStore& DenseStore() {
  static SingleVersionStore* store = [] {
    auto* s = new SingleVersionStore(0, 1, kRecords, kValueSize);
    for (Key key = 0; key < kRecords; ++key) s->Load(key, MakeValue(key));
    return s;
  }();
  return *store;
}

const std::vector<Key>& UniformKeys() {
  static const std::vector<Key> keys = [] {
    SplitMix64 rng(0x5707e);
    std::vector<Key> k(kKeyCount);
    for (Key& key : k) key = rng.Uniform(kRecords);
    return k;
  }();
  return keys;
}

const std::vector<Key>& ZipfianKeys() {
  static const std::vector<Key> keys = [] {
    ZipfianSampler zipf(kRecords, 0.99);
    SplitMix64 rng(0x21bf);
    std::vector<Key> k(kKeyCount);
    for (Key& key : k) key = zipf.Sample(rng);
    return k;
  }();
  return keys;
}

enum class Dist { kUniform, kZipfian };
const std::vector<Key>& Keys(Dist dist) {
  return dist == Dist::kUniform ? UniformKeys() : ZipfianKeys();
}

// Reads `value` into `buffer` as a read-only txn copies a read result.
inline void ReadInto(SingleVersionStore& store, Key key, char* buffer, uint64_t* misses) {
  std::string_view value;
  if (store.ReadLatest(0, key, &value)) {
    std::memcpy(buffer, value.data(), value.size());
  } else {
    ++*misses;
  }
  benchmark::DoNotOptimize(buffer);
  benchmark::ClobberMemory();  // the copy must really happen, every read
}

void FinishReads(benchmark::State& state, uint64_t reads, uint64_t misses) {
  if (misses) {
    state.SkipWithError("ReadLatest missed a loaded key");
    return;
  }
  state.SetItemsProcessed(static_cast<int64_t>(reads));
  state.SetBytesProcessed(static_cast<int64_t>(reads * kValueSize));
}

// One point read (+ 100-byte copy) per iteration.
void BM_StoreRead(benchmark::State& state, Dist dist) {
  SingleVersionStore& store = DenseStore();
  const std::vector<Key>& keys = Keys(dist);
  alignas(64) char buffer[kValueSize];
  uint64_t i = 0;
  uint64_t misses = 0;
  for (auto _ : state) {
    ReadInto(store, keys[i++ & kKeyMask], buffer, &misses);
  }
  FinishReads(state, i, misses);
}

// A read-only txn's store work: 100 point reads, each copied into its own
// result slot (the txn's read set), per iteration.
void BM_StoreReadTxn(benchmark::State& state, Dist dist) {
  constexpr size_t kReadsPerTxn = 100;
  SingleVersionStore& store = DenseStore();
  const std::vector<Key>& keys = Keys(dist);
  std::vector<char> results(kReadsPerTxn * kValueSize);
  uint64_t i = 0;
  uint64_t misses = 0;
  uint64_t txns = 0;
  for (auto _ : state) {
    char* out = results.data();
    for (size_t r = 0; r < kReadsPerTxn; ++r, out += kValueSize) {
      ReadInto(store, keys[i++ & kKeyMask], out, &misses);
    }
    ++txns;
  }
  FinishReads(state, i, misses);
  state.counters["txns/s"] =
      benchmark::Counter(static_cast<double>(txns), benchmark::Counter::kIsRate);
}

// One in-place Write of a same-size (100-byte) value per iteration.
void BM_StoreWrite(benchmark::State& state, Dist dist) {
  SingleVersionStore& store = DenseStore();
  const std::vector<Key>& keys = Keys(dist);
  // A few distinct values so consecutive writes do not copy identical bytes.
  std::vector<std::string> values;
  for (uint64_t v = 0; v < 8; ++v) values.push_back(MakeValue(kRecords + v));
  uint64_t i = 0;
  for (auto _ : state) {
    const Key key = keys[i & kKeyMask];
    store.Write(0, key, values[i & 7], /*epoch=*/1);
    ++i;
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(i));
  state.SetBytesProcessed(static_cast<int64_t>(i * kValueSize));
}

// Sparse keys: `sparse` records with keys >= dense_keys, inserted by Write
// (the path a txn's insert takes) after the dense keys were loaded; then
// uniform point reads of those keys.
struct SparseFixture {
  std::unique_ptr<SingleVersionStore> store;
  std::vector<Key> inserted;
  std::vector<Key> keys;  // read sequence, kKeyCount long
};

const SparseFixture& Sparse(uint64_t sparse) {
  // One fixture per size, built on first use (kept for the process lifetime).
  static std::vector<std::pair<uint64_t, std::unique_ptr<SparseFixture>>> fixtures;
  for (auto& [n, f] : fixtures) {
    if (n == sparse) return *f;
  }
  auto f = std::make_unique<SparseFixture>();
  // A small dense range: only the sparse path is under test here, and a second
  // 1M-record dense slab would just cost memory.
  f->store = std::make_unique<SingleVersionStore>(0, 1, /*dense_keys=*/1024, kValueSize);
  SplitMix64 rng(0x5ba45e + sparse);
  f->inserted.reserve(sparse);
  for (uint64_t i = 0; i < sparse; ++i) {
    // Keys spread over a 2^40 range above dense_keys (like hashed or
    // generated ids); a rare duplicate just overwrites.
    const Key key = kRecords + rng.Uniform(uint64_t{1} << 40);
    f->store->Write(0, key, MakeValue(key), /*epoch=*/1);
    f->inserted.push_back(key);
  }
  f->keys.resize(kKeyCount);
  for (Key& key : f->keys) key = f->inserted[rng.Uniform(sparse)];
  fixtures.emplace_back(sparse, std::move(f));
  return *fixtures.back().second;
}

void BM_StoreReadSparse(benchmark::State& state, uint64_t sparse) {
  const SparseFixture& fixture = Sparse(sparse);
  SingleVersionStore& store = *fixture.store;
  const std::vector<Key>& keys = fixture.keys;
  alignas(64) char buffer[kValueSize];
  uint64_t i = 0;
  uint64_t misses = 0;
  for (auto _ : state) {
    ReadInto(store, keys[i++ & kKeyMask], buffer, &misses);
  }
  FinishReads(state, i, misses);
  state.counters["sparse_keys"] = static_cast<double>(sparse);
}

[[maybe_unused]] const bool registered = [] {
  const struct {
    Dist dist;
    const char* name;
  } dists[] = {{Dist::kUniform, "uniform"}, {Dist::kZipfian, "zipfian:0.99"}};
  for (const auto& d : dists) {
    benchmark::RegisterBenchmark(
        (std::string("BM_Store/read/value:100/") + d.name).c_str(), BM_StoreRead, d.dist);
  }
  for (const auto& d : dists) {
    benchmark::RegisterBenchmark(
        (std::string("BM_Store/read_txn/reads:100/value:100/") + d.name).c_str(),
        BM_StoreReadTxn, d.dist);
  }
  benchmark::RegisterBenchmark("BM_Store/write/value:100/uniform", BM_StoreWrite, Dist::kUniform);
  for (uint64_t sparse : {uint64_t{100000}, uint64_t{1000000}}) {
    benchmark::RegisterBenchmark(
        ("BM_Store/read_sparse/value:100/sparse_keys:" + std::to_string(sparse) + "/uniform")
            .c_str(),
        BM_StoreReadSparse, sparse);
  }
  return true;
}();

}  // namespace
}  // namespace paxflow
