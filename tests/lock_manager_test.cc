// Unit tests for the deterministic lock manager (scheduler/lock_manager.h).
#include "scheduler/lock_manager.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <utility>
#include <vector>

namespace paxflow {
namespace {

struct Req {
  Key key;
  bool exclusive;
};

// Owns txns at stable addresses: the lock manager links requests by pointer, so neither the txn
// nor its lock_requests vector may move once Acquire has seen them.
class TxnPool {
 public:
  LockedTxn* Make(std::initializer_list<Req> requests) {
    return Make(std::vector<Req>(requests));
  }
  LockedTxn* Make(const std::vector<Req>& requests) {
    txns_.push_back(std::make_unique<LockedTxn>());
    LockedTxn* txn = txns_.back().get();
    for (const Req& r : requests) {
      LockRequest request;
      request.key = r.key;
      request.exclusive = r.exclusive;
      txn->lock_requests.push_back(request);
    }
    return txn;
  }

 private:
  std::vector<std::unique_ptr<LockedTxn>> txns_;
};

constexpr bool kShared = false;
constexpr bool kExclusive = true;

std::vector<LockedTxn*> ReleaseAndCollect(LockManager* locks, LockedTxn* txn) {
  std::vector<LockedTxn*> ready;
  locks->Release(txn, &ready);
  return ready;
}

using Ready = std::vector<LockedTxn*>;

TEST(LockManagerTest, ExclusiveRequestsAreGrantedInFifoOrder) {
  LockManager locks;
  TxnPool pool;
  LockedTxn* t1 = pool.Make({{7, kExclusive}});
  LockedTxn* t2 = pool.Make({{7, kExclusive}});
  LockedTxn* t3 = pool.Make({{7, kExclusive}});
  EXPECT_TRUE(locks.Acquire(t1));
  EXPECT_FALSE(locks.Acquire(t2));
  EXPECT_FALSE(locks.Acquire(t3));
  EXPECT_EQ(locks.locked_keys(), 1u);
  EXPECT_TRUE(t1->lock_requests[0].granted);
  EXPECT_FALSE(t2->lock_requests[0].granted);
  EXPECT_FALSE(t3->lock_requests[0].granted);

  EXPECT_EQ(ReleaseAndCollect(&locks, t1), Ready({t2}));
  EXPECT_FALSE(t3->lock_requests[0].granted);
  EXPECT_EQ(ReleaseAndCollect(&locks, t2), Ready({t3}));
  EXPECT_EQ(ReleaseAndCollect(&locks, t3), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

// Oldest names the head of a key's queue; fetching ahead for it
// (PrefetchOldest, every stage) is only a hint: it never faults, on a key
// never locked, one locked, or one whose queue is gone, and changes nothing.
TEST(LockManagerTest, OldestIsTheQueueHeadAndFetchingAheadForItChangesNothing) {
  LockManager locks;
  TxnPool pool;
  LockedTxn* first = pool.Make({{7, kShared}});
  LockedTxn* second = pool.Make({{7, kExclusive}});
  auto fetch_every_stage = [&](Key key) {
    for (int stage = 1; stage <= 3; ++stage) locks.PrefetchOldest(key, stage);
  };
  fetch_every_stage(7);
  EXPECT_EQ(locks.Oldest(7), nullptr);
  ASSERT_TRUE(locks.Acquire(first));
  ASSERT_FALSE(locks.Acquire(second));
  for (Key key : {Key{7}, Key{8}, ~Key{0}}) fetch_every_stage(key);
  EXPECT_EQ(locks.Oldest(7), first);
  EXPECT_EQ(locks.Oldest(8), nullptr);
  EXPECT_EQ(ReleaseAndCollect(&locks, first), Ready{second});
  fetch_every_stage(7);
  EXPECT_EQ(locks.Oldest(7), second);
  EXPECT_TRUE(ReleaseAndCollect(&locks, second).empty());
  fetch_every_stage(7);
  EXPECT_EQ(locks.Oldest(7), nullptr);
}

TEST(LockManagerTest, SharedReadersAreGrantedTogether) {
  LockManager locks;
  TxnPool pool;
  LockedTxn* r1 = pool.Make({{1, kShared}});
  LockedTxn* r2 = pool.Make({{1, kShared}});
  LockedTxn* r3 = pool.Make({{1, kShared}});
  EXPECT_TRUE(locks.Acquire(r1));
  EXPECT_TRUE(locks.Acquire(r2));
  EXPECT_TRUE(locks.Acquire(r3));
  EXPECT_EQ(locks.locked_keys(), 1u);
  // Readers may finish in any order; nobody waits, so nothing becomes ready.
  EXPECT_EQ(ReleaseAndCollect(&locks, r2), Ready());
  EXPECT_EQ(ReleaseAndCollect(&locks, r3), Ready());
  EXPECT_EQ(ReleaseAndCollect(&locks, r1), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerTest, WriterBehindReadersWaitsForTheLastReader) {
  LockManager locks;
  TxnPool pool;
  LockedTxn* r1 = pool.Make({{1, kShared}});
  LockedTxn* r2 = pool.Make({{1, kShared}});
  LockedTxn* r3 = pool.Make({{1, kShared}});
  LockedTxn* w = pool.Make({{1, kExclusive}});
  // A reader arriving after the writer must not overtake it.
  LockedTxn* late_reader = pool.Make({{1, kShared}});
  ASSERT_TRUE(locks.Acquire(r1));
  ASSERT_TRUE(locks.Acquire(r2));
  ASSERT_TRUE(locks.Acquire(r3));
  EXPECT_FALSE(locks.Acquire(w));
  EXPECT_FALSE(locks.Acquire(late_reader));

  EXPECT_EQ(ReleaseAndCollect(&locks, r2), Ready());
  EXPECT_EQ(ReleaseAndCollect(&locks, r1), Ready());
  EXPECT_FALSE(w->lock_requests[0].granted);
  EXPECT_EQ(ReleaseAndCollect(&locks, r3), Ready({w}));
  EXPECT_FALSE(late_reader->lock_requests[0].granted);
  EXPECT_EQ(ReleaseAndCollect(&locks, w), Ready({late_reader}));
  EXPECT_EQ(ReleaseAndCollect(&locks, late_reader), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerTest, ReadersBehindWriterAreGrantedTogetherUpToTheNextWriter) {
  LockManager locks;
  TxnPool pool;
  LockedTxn* w1 = pool.Make({{5, kExclusive}});
  LockedTxn* r2 = pool.Make({{5, kShared}});
  LockedTxn* r3 = pool.Make({{5, kShared}});
  LockedTxn* w4 = pool.Make({{5, kExclusive}});
  LockedTxn* r5 = pool.Make({{5, kShared}});
  ASSERT_TRUE(locks.Acquire(w1));
  EXPECT_FALSE(locks.Acquire(r2));
  EXPECT_FALSE(locks.Acquire(r3));
  EXPECT_FALSE(locks.Acquire(w4));
  EXPECT_FALSE(locks.Acquire(r5));

  EXPECT_EQ(ReleaseAndCollect(&locks, w1), Ready({r2, r3}));
  EXPECT_FALSE(w4->lock_requests[0].granted);
  EXPECT_FALSE(r5->lock_requests[0].granted);
  EXPECT_EQ(ReleaseAndCollect(&locks, r3), Ready());
  EXPECT_EQ(ReleaseAndCollect(&locks, r2), Ready({w4}));
  EXPECT_EQ(ReleaseAndCollect(&locks, w4), Ready({r5}));
  EXPECT_EQ(ReleaseAndCollect(&locks, r5), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerTest, ReleaseReportsEveryNewlyReadyTxnInGrantOrder) {
  LockManager locks;
  TxnPool pool;
  // t1 holds a, b, c; three queues form behind it. Releasing t1 walks its keys in request
  // order, so t4 (done at a) precedes t3 (done at b) which precedes t2 (done at c), although
  // the txns were ordered t2, t3, t4.
  LockedTxn* t1 = pool.Make({{100, kExclusive}, {200, kExclusive}, {300, kExclusive}});
  LockedTxn* t2 = pool.Make({{300, kExclusive}});
  LockedTxn* t3 = pool.Make({{100, kShared}, {200, kShared}});
  LockedTxn* t4 = pool.Make({{100, kShared}});
  LockedTxn* t5 = pool.Make({{300, kShared}, {100, kExclusive}});
  ASSERT_TRUE(locks.Acquire(t1));
  EXPECT_FALSE(locks.Acquire(t2));
  EXPECT_FALSE(locks.Acquire(t3));
  EXPECT_FALSE(locks.Acquire(t4));
  EXPECT_FALSE(locks.Acquire(t5));
  EXPECT_EQ(locks.locked_keys(), 3u);

  EXPECT_EQ(ReleaseAndCollect(&locks, t1), Ready({t4, t3, t2}));
  EXPECT_EQ(t5->locks_waiting, 2u);
  // t5 needs both t2 (key 300) and the readers t3, t4 (key 100) gone.
  EXPECT_EQ(ReleaseAndCollect(&locks, t2), Ready());
  EXPECT_EQ(t5->locks_waiting, 1u);
  EXPECT_EQ(ReleaseAndCollect(&locks, t4), Ready());
  EXPECT_EQ(ReleaseAndCollect(&locks, t3), Ready({t5}));
  EXPECT_EQ(ReleaseAndCollect(&locks, t5), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerTest, ReleaseChainsThroughSeveralWaiters) {
  LockManager locks;
  TxnPool pool;
  // A chain: each txn waits for its predecessor on one key and blocks its successor on another.
  constexpr int kChain = 50;
  std::vector<LockedTxn*> chain;
  for (int i = 0; i < kChain; ++i) {
    chain.push_back(pool.Make({{static_cast<Key>(i), kExclusive},
                               {static_cast<Key>(i + 1), kExclusive}}));
  }
  EXPECT_TRUE(locks.Acquire(chain[0]));
  for (int i = 1; i < kChain; ++i) EXPECT_FALSE(locks.Acquire(chain[i])) << i;
  for (int i = 0; i + 1 < kChain; ++i) {
    EXPECT_EQ(ReleaseAndCollect(&locks, chain[i]), Ready({chain[i + 1]})) << i;
  }
  EXPECT_EQ(ReleaseAndCollect(&locks, chain.back()), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerTest, TxnIsReadyOnlyWhenAllItsLocksAreGranted) {
  LockManager locks;
  TxnPool pool;
  LockedTxn* holder_a = pool.Make({{1, kExclusive}});
  LockedTxn* holder_b = pool.Make({{2, kShared}});
  LockedTxn* multi = pool.Make({{1, kShared}, {2, kExclusive}, {3, kShared}});
  ASSERT_TRUE(locks.Acquire(holder_a));
  ASSERT_TRUE(locks.Acquire(holder_b));
  EXPECT_FALSE(locks.Acquire(multi));
  EXPECT_EQ(multi->locks_waiting, 2u);  // key 3 is free
  EXPECT_TRUE(multi->lock_requests[2].granted);

  EXPECT_EQ(ReleaseAndCollect(&locks, holder_a), Ready());
  EXPECT_EQ(multi->locks_waiting, 1u);
  EXPECT_TRUE(multi->lock_requests[0].granted);
  EXPECT_FALSE(multi->lock_requests[1].granted);

  EXPECT_EQ(ReleaseAndCollect(&locks, holder_b), Ready({multi}));
  EXPECT_EQ(multi->locks_waiting, 0u);
  EXPECT_EQ(ReleaseAndCollect(&locks, multi), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerTest, TxnWithoutRequestsIsGrantedAtOnce) {
  LockManager locks;
  TxnPool pool;
  LockedTxn* busy = pool.Make({{9, kExclusive}});
  LockedTxn* empty = pool.Make(std::vector<Req>{});
  ASSERT_TRUE(locks.Acquire(busy));
  EXPECT_TRUE(locks.Acquire(empty));
  EXPECT_EQ(empty->locks_waiting, 0u);
  EXPECT_EQ(locks.locked_keys(), 1u);
  EXPECT_EQ(ReleaseAndCollect(&locks, empty), Ready());
  EXPECT_EQ(ReleaseAndCollect(&locks, busy), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerTest, SecondReleaseIsANoOp) {
  LockManager locks;
  TxnPool pool;
  LockedTxn* t1 = pool.Make({{4, kExclusive}});
  LockedTxn* t2 = pool.Make({{4, kExclusive}});
  ASSERT_TRUE(locks.Acquire(t1));
  ASSERT_FALSE(locks.Acquire(t2));
  EXPECT_EQ(ReleaseAndCollect(&locks, t1), Ready({t2}));
  // A duplicate release must not unlink t1's stale request pointers a second time.
  EXPECT_EQ(ReleaseAndCollect(&locks, t1), Ready());
  EXPECT_EQ(locks.locked_keys(), 1u);
  EXPECT_TRUE(t2->lock_requests[0].granted);
  EXPECT_EQ(ReleaseAndCollect(&locks, t2), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

// A straightforward model of the same contract: per key, the requests in arrival order; a
// request is grantable when it heads the queue or it and everything before it are shared.
class ReferenceLocks {
 public:
  struct Entry {
    int txn;
    bool exclusive;
  };
  void Acquire(int txn, const std::vector<Req>& requests) {
    for (const Req& r : requests) queues_[r.key].push_back({txn, r.exclusive});
  }
  void Release(int txn, const std::vector<Req>& requests) {
    for (const Req& r : requests) {
      auto& queue = queues_[r.key];
      auto it = std::find_if(queue.begin(), queue.end(),
                             [&](const Entry& e) { return e.txn == txn; });
      ASSERT_NE(it, queue.end());
      queue.erase(it);
      if (queue.empty()) queues_.erase(r.key);
    }
  }
  bool Grantable(int txn, Key key) const {
    const auto& queue = queues_.at(key);
    for (size_t i = 0; i < queue.size(); ++i) {
      if (queue[i].txn == txn) return i == 0 || !queue[i].exclusive;
      if (queue[i].exclusive) return false;
    }
    ADD_FAILURE() << "txn " << txn << " not queued on key " << key;
    return false;
  }
  // Txns of the grantable prefix of `key`'s queue.
  std::vector<int> GrantablePrefix(Key key) const {
    std::vector<int> out;
    auto it = queues_.find(key);
    if (it == queues_.end()) return out;
    for (size_t i = 0; i < it->second.size(); ++i) {
      if (i > 0 && it->second[i].exclusive) break;
      out.push_back(it->second[i].txn);
      if (it->second[i].exclusive) break;
    }
    return out;
  }
  size_t keys() const { return queues_.size(); }

 private:
  std::map<Key, std::deque<Entry>> queues_;
};

TEST(LockManagerTest, RandomWorkloadMatchesReferenceModel) {
  constexpr int kTxns = 10000;
  constexpr Key kKeys = 1000;
  std::mt19937_64 rng(20240611);
  std::vector<std::vector<Req>> plans(kTxns);
  for (auto& plan : plans) {
    const int n = 1 + static_cast<int>(rng() % 6);
    std::set<Key> keys;
    while (static_cast<int>(keys.size()) < n) keys.insert(rng() % kKeys);
    for (Key k : keys) plan.push_back({k, rng() % 3 == 0});
    // The lock manager does not require keys in sorted order; shuffle to prove it.
    std::shuffle(plan.begin(), plan.end(), rng);
  }

  LockManager locks;
  TxnPool pool;
  ReferenceLocks reference;
  std::vector<LockedTxn*> txns;
  std::map<LockedTxn*, int> index;
  for (int i = 0; i < kTxns; ++i) {
    txns.push_back(pool.Make(plans[i]));
    index[txns.back()] = i;
  }
  // Per key, the running (ready, not released) txns' modes, to check mutual exclusion.
  std::map<Key, std::pair<int, int>> holders;  // key -> (shared, exclusive)
  std::vector<int> running;
  std::vector<bool> became_ready(kTxns, false);
  int acquired = 0, released = 0, waited = 0;

  auto start_running = [&](int t) {
    ASSERT_FALSE(became_ready[t]) << "txn " << t << " reported ready twice";
    became_ready[t] = true;
    for (const Req& r : plans[t]) {
      EXPECT_TRUE(reference.Grantable(t, r.key)) << "txn " << t << " key " << r.key;
      auto& h = holders[r.key];
      if (r.exclusive) {
        EXPECT_EQ(h.first + h.second, 0) << "exclusive holder joins others on " << r.key;
        ++h.second;
      } else {
        EXPECT_EQ(h.second, 0) << "shared holder joins a writer on " << r.key;
        ++h.first;
      }
    }
    running.push_back(t);
  };

  while (released < kTxns) {
    const bool acquire = acquired < kTxns && (running.empty() || rng() % 5 < 3);
    if (acquire) {
      const int t = acquired++;
      reference.Acquire(t, plans[t]);
      bool all_grantable = true;
      for (const Req& r : plans[t]) all_grantable &= reference.Grantable(t, r.key);
      const bool granted = locks.Acquire(txns[t]);
      ASSERT_EQ(granted, all_grantable) << "txn " << t;
      if (granted) start_running(t);
      else ++waited;
      continue;
    }
    ASSERT_FALSE(running.empty()) << "no txn can run but " << kTxns - released
                                  << " are unfinished: a grant was lost";
    const size_t pick = rng() % running.size();
    const int t = running[pick];
    running[pick] = running.back();
    running.pop_back();
    for (const Req& r : plans[t]) {
      auto& h = holders[r.key];
      (r.exclusive ? h.second : h.first)--;
    }
    reference.Release(t, plans[t]);
    std::vector<LockedTxn*> ready;
    locks.Release(txns[t], &ready);
    ++released;
    for (LockedTxn* txn : ready) start_running(index.at(txn));
    // Nothing grantable may be left ungranted on the keys this release touched.
    for (const Req& r : plans[t]) {
      for (int waiter : reference.GrantablePrefix(r.key)) {
        for (const LockRequest& request : txns[waiter]->lock_requests) {
          if (request.key == r.key) {
            EXPECT_TRUE(request.granted) << "txn " << waiter << " key " << r.key;
          }
        }
      }
    }
    ASSERT_FALSE(HasFailure()) << "stopping after release of txn " << t;
  }
  EXPECT_EQ(std::count(became_ready.begin(), became_ready.end(), true), kTxns);
  // Otherwise the run would prove little about queueing.
  EXPECT_GT(waited, kTxns / 4);
  EXPECT_EQ(reference.keys(), 0u);
  EXPECT_EQ(locks.locked_keys(), 0u);
}

// The table's hash: replicated here only to build colliding keys; if it changes, these tests
// still pass, they just probe shorter clusters.
size_t InitialHome(Key key) { return (key * 0x9e3779b97f4a7c15ULL) >> (64 - 12); }

TEST(LockManagerTest, KeysStayFindableWhileAWrappingClusterIsErased) {
  // Keys whose home slots sit at the end of the 4096-slot table form one long cluster that
  // wraps to slot 0: every erase then backward-shifts entries across the wrap.
  std::vector<Key> keys;
  for (Key k = 0; keys.size() < 300; ++k) {
    const size_t home = InitialHome(k);
    if (home >= 4090 || home <= 2) keys.push_back(k);
  }
  LockManager locks;
  TxnPool pool;
  std::vector<LockedTxn*> holders;
  for (Key k : keys) {
    holders.push_back(pool.Make({{k, kExclusive}}));
    ASSERT_TRUE(locks.Acquire(holders.back()));
  }
  ASSERT_EQ(locks.locked_keys(), keys.size());

  std::mt19937_64 rng(7);
  std::vector<size_t> order(keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> held(keys.size(), true);
  for (size_t step = 0; step < order.size(); ++step) {
    EXPECT_EQ(ReleaseAndCollect(&locks, holders[order[step]]), Ready());
    held[order[step]] = false;
    ASSERT_EQ(locks.locked_keys(), keys.size() - step - 1);
    // A lost entry would let a probe through at once; a stale one would block it.
    for (size_t i = 0; i < keys.size(); ++i) {
      LockedTxn probe;
      probe.lock_requests.push_back(LockRequest{keys[i], false});
      ASSERT_EQ(locks.Acquire(&probe), !held[i]) << "key " << keys[i] << " at step " << step;
      std::vector<LockedTxn*> ready;
      locks.Release(&probe, &ready);
      ASSERT_TRUE(ready.empty());
    }
    ASSERT_EQ(locks.locked_keys(), keys.size() - step - 1);
  }
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerTest, TableGrowsPastInitialSizeAndShrinksBackToEmpty) {
  constexpr int kHolders = 20000;
  constexpr int kKeysPerTxn = 3;
  std::mt19937_64 rng(99);
  std::set<Key> distinct;
  while (distinct.size() < static_cast<size_t>(kHolders * kKeysPerTxn)) {
    // Half dense small keys (YCSB-like), half arbitrary 64-bit keys.
    distinct.insert(distinct.size() % 2 ? rng() : distinct.size());
  }
  std::vector<Key> keys(distinct.begin(), distinct.end());
  std::shuffle(keys.begin(), keys.end(), rng);

  LockManager locks;
  TxnPool pool;
  std::vector<LockedTxn*> holders;
  for (int t = 0; t < kHolders; ++t) {
    std::vector<Req> plan;
    for (int j = 0; j < kKeysPerTxn; ++j) plan.push_back({keys[t * kKeysPerTxn + j], kExclusive});
    holders.push_back(pool.Make(plan));
    ASSERT_TRUE(locks.Acquire(holders.back())) << t;
  }
  ASSERT_EQ(locks.locked_keys(), keys.size());

  // Release a random half, so the table has many backward shifts behind it.
  std::vector<int> order(kHolders);
  for (int t = 0; t < kHolders; ++t) order[t] = t;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<bool> held(kHolders, true);
  for (int i = 0; i < kHolders / 2; ++i) {
    ASSERT_EQ(ReleaseAndCollect(&locks, holders[order[i]]), Ready());
    held[order[i]] = false;
  }
  ASSERT_EQ(locks.locked_keys(), static_cast<size_t>(kHolders / 2 * kKeysPerTxn));

  // One shared probe per original key: it must wait exactly where a holder remains.
  std::vector<LockedTxn*> probes(kHolders * kKeysPerTxn);
  for (int t = 0; t < kHolders; ++t) {
    for (int j = 0; j < kKeysPerTxn; ++j) {
      LockedTxn* probe = pool.Make({{keys[t * kKeysPerTxn + j], kShared}});
      probes[t * kKeysPerTxn + j] = probe;
      ASSERT_EQ(locks.Acquire(probe), !held[t]) << "key " << keys[t * kKeysPerTxn + j];
    }
  }
  ASSERT_EQ(locks.locked_keys(), keys.size());

  for (int i = kHolders / 2; i < kHolders; ++i) {
    const int t = order[i];
    std::vector<LockedTxn*> ready = ReleaseAndCollect(&locks, holders[t]);
    ASSERT_EQ(ready.size(), static_cast<size_t>(kKeysPerTxn));
    for (int j = 0; j < kKeysPerTxn; ++j) EXPECT_EQ(ready[j], probes[t * kKeysPerTxn + j]);
  }
  ASSERT_EQ(locks.locked_keys(), keys.size());
  for (LockedTxn* probe : probes) ASSERT_EQ(ReleaseAndCollect(&locks, probe), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);

  // The emptied table is still usable.
  LockedTxn* again = pool.Make({{keys[0], kExclusive}, {keys[1], kShared}});
  EXPECT_TRUE(locks.Acquire(again));
  EXPECT_EQ(locks.locked_keys(), 2u);
  EXPECT_EQ(ReleaseAndCollect(&locks, again), Ready());
  EXPECT_EQ(locks.locked_keys(), 0u);
}

}  // namespace
}  // namespace paxflow

namespace paxflow {
namespace {

// A txn that names a key twice (a garbled batch, a hand-edited log) is
// locked once in the stronger mode instead of waiting on itself.
LockRequest Req(Key key, bool exclusive) {
  LockRequest request;
  request.key = key;
  request.exclusive = exclusive;
  return request;
}

TEST(LockManagerDuplicateKeys, TwiceSharedIsOneSharedLock) {
  LockManager locks;
  LockedTxn a;
  a.lock_requests = {Req(5, false), Req(5, false)};
  EXPECT_TRUE(locks.Acquire(&a));
  LockedTxn b;
  b.lock_requests = {Req(5, false)};
  EXPECT_TRUE(locks.Acquire(&b)) << "a reader behind a duplicate-shared reader";
  std::vector<LockedTxn*> ready;
  locks.Release(&a, &ready);
  locks.Release(&b, &ready);
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerDuplicateKeys, SharedThenExclusiveActsExclusive) {
  LockManager locks;
  LockedTxn a;
  a.lock_requests = {Req(5, false), Req(6, true), Req(5, true)};
  EXPECT_TRUE(locks.Acquire(&a));
  LockedTxn b;
  b.lock_requests = {Req(5, false)};
  EXPECT_FALSE(locks.Acquire(&b)) << "the upgraded lock must exclude readers";
  std::vector<LockedTxn*> ready;
  locks.Release(&a, &ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], &b);
  ready.clear();
  locks.Release(&b, &ready);
  EXPECT_EQ(locks.locked_keys(), 0u);
}

TEST(LockManagerDuplicateKeys, UpgradeBehindOtherReadersWaitsForThem) {
  LockManager locks;
  LockedTxn reader;
  reader.lock_requests = {Req(5, false)};
  ASSERT_TRUE(locks.Acquire(&reader));
  LockedTxn a;
  a.lock_requests = {Req(5, false), Req(5, true)};
  EXPECT_FALSE(locks.Acquire(&a));
  LockedTxn later;
  later.lock_requests = {Req(5, false)};
  EXPECT_FALSE(locks.Acquire(&later)) << "a reader may not pass the upgraded request";
  std::vector<LockedTxn*> ready;
  locks.Release(&reader, &ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], &a);
  ready.clear();
  locks.Release(&a, &ready);
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0], &later);
  ready.clear();
  locks.Release(&later, &ready);
  EXPECT_EQ(locks.locked_keys(), 0u);
}

}  // namespace
}  // namespace paxflow
