// Calvin's deterministic lock manager.
//
// Owns: the lock table (per locked key, a FIFO queue of requests).
// In: a txn's requests, in global order (Acquire); releases, any order.
// Out: the txns that now hold every lock they asked for.
// Threads: the scheduler thread only; no internal synchronisation.
//
// Locks are granted strictly in request order: shared requests at the head
// of a queue share the lock; an exclusive request waits for everything
// ahead of it, and everything behind it waits for it. A txn requests all its
// locks before the next txn requests any, so there are no deadlocks.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "common/types.h"
#include "scheduler/lock_request.h"

namespace paxflow {

class LockManager {
 public:
  LockManager();
  ~LockManager();
  LockManager(const LockManager&) = delete;
  LockManager& operator=(const LockManager&) = delete;

  // Queues every request of `txn`. Returns true if all were granted at once.
  bool Acquire(LockedTxn* txn);
  // Drops all of `txn`'s requests and appends every txn that thereby came to
  // hold all its locks to `ready`, in the order their last lock was granted.
  void Release(LockedTxn* txn, std::vector<LockedTxn*>* ready);

  size_t locked_keys() const { return size_; }
  // The txn at the head of `key`'s queue (the oldest that holds or waits
  // for it), or nullptr if no txn asked for the key.
  const LockedTxn* Oldest(Key key) const;
  // Fetches ahead what Oldest(key) will touch, one dependent step per
  // stage (1: its slot; 2: its entry; 3: the request at the head of its
  // queue), each once the previous stage's line is likely in the cache.
  void PrefetchOldest(Key key, int stage) const;

 private:
  struct Slot {
    Key key;
    LockEntry* entry;  // nullptr: empty slot
  };
  LockEntry* FindOrInsert(Key key);
  void Erase(Key key);
  void Grow();
  size_t Home(Key key) const { return (key * 0x9e3779b97f4a7c15ULL) >> shift_; }
  // How many requests ahead Acquire and Release fetch what they will touch.
  static constexpr size_t kPrefetchAhead = 8;
  void PrefetchSlot(Key key) const;
  // The key's entry, if it sits in its home slot (the usual case).
  void PrefetchEntry(Key key) const;
  LockEntry* NewEntry(Key key);
  void FreeEntry(LockEntry* entry);
  void Grant(LockRequest* request, std::vector<LockedTxn*>* ready);
  // `request` names the key of the txn's request at the tail of `entry`.
  void MergeDuplicate(LockEntry* entry, LockRequest* request);

  std::vector<Slot> slots_;  // open addressing, linear probing, backward-shift deletion
  size_t mask_ = 0;
  int shift_ = 0;
  size_t size_ = 0;
  std::vector<std::unique_ptr<LockEntry[]>> entry_chunks_;
  LockEntry* free_entries_ = nullptr;
};

}  // namespace paxflow
