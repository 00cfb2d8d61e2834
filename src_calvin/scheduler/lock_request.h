// What the lock manager and a txn agree on: the txn's lock requests and
// how many of them still wait. The scheduler's per-txn state derives from
// LockedTxn; only the RW lane hands it to the lock manager.
#pragma once
#include <cstdint>
#include <vector>

#include "common/types.h"

namespace paxflow {

struct LockEntry;
class LockedTxn;

struct LockRequest {
  Key key = 0;
  bool exclusive = false;
  bool granted = false;
  LockedTxn* owner = nullptr;
  LockEntry* entry = nullptr;
  LockRequest* prev = nullptr;
  LockRequest* next = nullptr;
};

// The lock manager's view of a txn; the scheduler's per-txn state derives from it.
class LockedTxn {
 public:
  // Filled before Acquire. Must not be resized while queued. A key named
  // twice is locked once, in the stronger mode (the second request is
  // left out of the queue: its entry stays null).
  std::vector<LockRequest> lock_requests;
  uint32_t locks_waiting = 0;
  bool locks_held = false;  // between Acquire and Release
};

}  // namespace paxflow
