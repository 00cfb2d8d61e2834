// The read-write lane: Calvin's deterministic lock manager, fed in global
// order. A txn asks for all its locks on this partition (shared for keys it
// only reads, exclusive for keys it writes) before the next txn asks for
// any; it goes to a worker once it holds them all. An LTX install asks for
// exclusive locks on the keys its commit record writes here, at its place
// in the order, like a write-only txn.
//
// Owns: the lock manager. In: txns in global order (Acquire), finished
// txns (Release). Out: txns that now hold every lock.
// Threads: the scheduler thread only.
#pragma once
#include <cstddef>
#include <vector>

#include "common/types.h"
#include "scheduler/lock_manager.h"
#include "scheduler/txn_work.h"

namespace paxflow {

class RwLane {
 public:
  RwLane(PartitionId self, uint32_t partitions) : self_(self), partitions_(partitions) {}

  // Queues `work`'s lock requests; true if it holds them all at once.
  bool Acquire(TxnWork* work);
  // Drops `work`'s locks; appends the txns that thereby hold all of theirs.
  void Release(TxnWork* work, std::vector<TxnWork*>* ready);

  size_t locked_keys() const { return locks_.locked_keys(); }
  // Whether `key`'s value at `epoch` is final here: no txn of `epoch` or
  // before holds or waits for its lock. Valid once every epoch up to
  // `epoch` is admitted (their txns asked for their locks in order).
  bool Settled(Key key, Epoch epoch) const;
  // Fetches ahead what Settled(key, ...) will touch (LockManager::PrefetchOldest).
  void PrefetchSettled(Key key, int stage) const { locks_.PrefetchOldest(key, stage); }

 private:
  void BuildRequests(TxnWork* work);

  const PartitionId self_;
  const uint32_t partitions_;
  LockManager locks_;
  std::vector<LockedTxn*> granted_;  // Release scratch
};

}  // namespace paxflow
