#include "scheduler/rw_lane.h"

namespace paxflow {

bool RwLane::Settled(Key key, Epoch epoch) const {
  // The queue is in global order: its head is its oldest txn.
  const LockedTxn* oldest = locks_.Oldest(key);
  return !oldest || static_cast<const TxnWork*>(oldest)->epoch->epoch > epoch;
}

void RwLane::BuildRequests(TxnWork* work) {
  auto add = [&](Key key, bool exclusive) {
    LockRequest request;
    request.key = key;
    request.exclusive = exclusive;
    work->lock_requests.push_back(request);
  };
  if (work->install && work->install->in_place) {
    work->lock_requests.reserve(work->install->lock_keys.size());
    for (Key key : work->install->lock_keys) add(key, true);
    return;
  }
  if (work->install) {
    work->lock_requests.reserve(work->install->writes.size());
    for (const LtxWrite* write : work->install->writes) add(write->key(), true);
    return;
  }
  const Txn& txn = *work->txn;
  auto add_all = [&](const google::protobuf::RepeatedField<uint64_t>& keys, bool exclusive) {
    for (Key key : keys) {
      if (work->all_local || PartitionOf(key, partitions_) == self_) add(key, exclusive);
    }
  };
  work->lock_requests.reserve(static_cast<size_t>(txn.read_set_size() + txn.read_write_set_size() +
                                                  txn.write_set_size()));
  add_all(txn.read_set(), false);
  add_all(txn.read_write_set(), true);
  add_all(txn.write_set(), true);
}

bool RwLane::Acquire(TxnWork* work) {
  BuildRequests(work);
  return locks_.Acquire(work);
}

void RwLane::Release(TxnWork* work, std::vector<TxnWork*>* ready) {
  granted_.clear();
  locks_.Release(work, &granted_);
  for (LockedTxn* txn : granted_) ready->push_back(static_cast<TxnWork*>(txn));
}

}  // namespace paxflow
