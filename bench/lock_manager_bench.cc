// Micro-benchmarks of the deterministic lock manager (scheduler/lock_manager.h)
// driven the way Calvin's single lock-manager thread drives it: a steady-state
// pipeline in which txns are acquired in global order and released in the same
// order, with a fixed window of txns in flight (about an epoch's worth).
//
// One benchmark iteration = release the oldest in-flight txn (collecting the
// txns its release made ready) + acquire the next txn. The oldest in-flight txn
// always holds all its locks (everything ahead of it in each queue has been
// released), so in-order release is always legal; the benchmark checks this.
//
// Keys are pre-generated into a pool of LockedTxns outside the timed loop; the
// pool is reused cyclically (a pool slot is released long before it is
// re-acquired) and its lock_requests vectors are never resized after setup.
//
// Reported: items_processed = lock requests (acquired and released once each),
// so "items_per_second" is locks/s; "txns/s"; "ready_on_acquire" and
// "ready_on_release" = fraction of txns that became ready in Acquire and
// through a Release cascade respectively (they sum to 1 in steady state).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/random.h"
#include "common/types.h"
#include "scheduler/lock_manager.h"

namespace paxflow {
namespace {

constexpr uint64_t kRecords = 1000000;
constexpr uint64_t kHotRecords = 10;
constexpr size_t kWindow = 1000;  // txns in flight

enum class LockMode { kShared, kExclusive, kHotExclusive };

const char* LockModeName(LockMode mode) {
  switch (mode) {
    case LockMode::kShared: return "shared";
    case LockMode::kExclusive: return "exclusive";
    case LockMode::kHotExclusive: return "exclusive_hot10";
  }
  return "?";
}

struct BenchTxn : LockedTxn {
  uint64_t seq = 0;    // position in the global order of its latest Acquire
  bool ready = false;  // holds all its locks (set by Acquire or by a cascade)
};

// Pool large enough that a slot is released well before it is reused, small
// enough to stay a few tens of MB at 100 keys/txn.
size_t PoolSize(size_t keys_per_txn) { return keys_per_txn >= 100 ? 4096 : 16384; }

// Distinct keys per txn (the lock manager requires it), uniform over kRecords;
// for kHotExclusive the first key is one of kHotRecords hot records and the
// others are uniform over the remaining records (as applications/key_picker.cc
// does for the "hot" distribution).
std::vector<BenchTxn> MakeTxns(size_t count, size_t keys_per_txn, LockMode mode, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<BenchTxn> txns(count);
  for (BenchTxn& txn : txns) {
    txn.lock_requests.resize(keys_per_txn);  // sized once, never resized again
    for (size_t i = 0; i < keys_per_txn; ++i) {
      Key key;
      bool duplicate;
      do {
        if (mode == LockMode::kHotExclusive) {
          key = i == 0 ? rng.Uniform(kHotRecords)
                       : kHotRecords + rng.Uniform(kRecords - kHotRecords);
        } else {
          key = rng.Uniform(kRecords);
        }
        duplicate = false;
        for (size_t j = 0; j < i; ++j) duplicate |= txn.lock_requests[j].key == key;
      } while (duplicate);
      txn.lock_requests[i].key = key;
      txn.lock_requests[i].exclusive = mode != LockMode::kShared;
    }
  }
  return txns;
}

void BM_LockManager(benchmark::State& state, size_t keys_per_txn, LockMode mode) {
  const size_t pool = PoolSize(keys_per_txn);
  std::vector<BenchTxn> txns = MakeTxns(pool, keys_per_txn, mode, 0x10c4 + keys_per_txn);
  LockManager locks;
  std::vector<LockedTxn*> ready;
  ready.reserve(kWindow);

  uint64_t acquired = 0;  // txns acquired so far; [released, acquired) are in flight
  uint64_t released = 0;
  uint64_t counted_from = ~uint64_t{0};  // readiness is counted for txns with seq >= this
  uint64_t ready_on_acquire = 0;
  uint64_t ready_on_release = 0;
  bool order_violation = false;

  auto acquire_next = [&] {
    BenchTxn* txn = &txns[acquired % pool];
    txn->seq = acquired++;
    txn->ready = false;
    if (locks.Acquire(txn)) {
      txn->ready = true;
      ready_on_acquire += txn->seq >= counted_from;
    }
  };
  auto release_oldest = [&] {
    BenchTxn* txn = &txns[released++ % pool];
    order_violation |= !txn->ready;  // the oldest in flight must hold all its locks
    ready.clear();
    locks.Release(txn, &ready);
    for (LockedTxn* r : ready) {
      BenchTxn* t = static_cast<BenchTxn*>(r);
      order_violation |= t->ready;  // a txn must become ready exactly once
      t->ready = true;
      ready_on_release += t->seq >= counted_from;
    }
  };

  // Untimed warm-up: fill the window, then run a full pool cycle so the lock
  // table has grown to its steady-state size and the entry free list is warm.
  while (acquired < kWindow) acquire_next();
  for (size_t i = 0; i < pool; ++i) {
    release_oldest();
    acquire_next();
  }
  const uint64_t base_acquired = acquired;
  counted_from = base_acquired;

  for (auto _ : state) {
    release_oldest();
    acquire_next();
  }
  benchmark::DoNotOptimize(ready.data());
  const uint64_t txns_done = acquired - base_acquired;
  const size_t locked_keys = locks.locked_keys();

  // Untimed drain: every in-flight txn must become ready in turn, and the lock
  // table must end empty.
  while (released < acquired) release_oldest();
  if (order_violation || locks.locked_keys() != 0) {
    state.SkipWithError("readiness inconsistent with in-order release");
    return;
  }
  state.SetItemsProcessed(static_cast<int64_t>(txns_done * keys_per_txn));
  state.counters["txns/s"] =
      benchmark::Counter(static_cast<double>(txns_done), benchmark::Counter::kIsRate);
  // Of the txns acquired in the timed loop that became ready (all but the
  // tail of the window), where they became ready; the fractions sum to 1.
  const uint64_t became_ready = ready_on_acquire + ready_on_release;
  const double n = became_ready ? static_cast<double>(became_ready) : 1.0;
  state.counters["ready_on_acquire"] = static_cast<double>(ready_on_acquire) / n;
  state.counters["ready_on_release"] = static_cast<double>(ready_on_release) / n;
  state.counters["locked_keys"] = static_cast<double>(locked_keys);
}

[[maybe_unused]] const bool registered = [] {
  struct Case {
    size_t keys;
    LockMode mode;
  };
  const Case cases[] = {
      {10, LockMode::kShared},  {10, LockMode::kExclusive},  {100, LockMode::kShared},
      {100, LockMode::kExclusive}, {10, LockMode::kHotExclusive},
  };
  for (const Case& c : cases) {
    const std::string name = "BM_LockManager/keys:" + std::to_string(c.keys) + "/" +
                             LockModeName(c.mode) + "/window:" + std::to_string(kWindow);
    benchmark::RegisterBenchmark(name.c_str(), BM_LockManager, c.keys, c.mode);
  }
  return true;
}();

}  // namespace
}  // namespace paxflow
