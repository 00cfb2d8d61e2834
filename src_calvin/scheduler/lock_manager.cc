#include "scheduler/lock_manager.h"

#include <algorithm>

namespace paxflow {

struct LockEntry {
  Key key = 0;
  LockRequest* head = nullptr;
  LockRequest* tail = nullptr;
  uint32_t granted = 0;           // requests holding the lock
  uint32_t exclusive_queued = 0;  // exclusive requests in the queue
  LockEntry* next_free = nullptr;
};

namespace {
constexpr size_t kInitialSlots = 1 << 12;
constexpr size_t kEntryChunk = 1 << 10;
}  // namespace

LockManager::LockManager() : slots_(kInitialSlots, Slot{0, nullptr}) {
  mask_ = kInitialSlots - 1;
  shift_ = 64 - __builtin_ctzll(kInitialSlots);
}

LockManager::~LockManager() = default;

LockEntry* LockManager::NewEntry(Key key) {
  if (!free_entries_) {
    entry_chunks_.emplace_back(new LockEntry[kEntryChunk]);
    LockEntry* chunk = entry_chunks_.back().get();
    for (size_t i = 0; i < kEntryChunk; ++i) {
      chunk[i].next_free = free_entries_;
      free_entries_ = &chunk[i];
    }
  }
  LockEntry* entry = free_entries_;
  free_entries_ = entry->next_free;
  *entry = LockEntry{};
  entry->key = key;
  return entry;
}

void LockManager::FreeEntry(LockEntry* entry) {
  entry->next_free = free_entries_;
  free_entries_ = entry;
}

const LockedTxn* LockManager::Oldest(Key key) const {
  size_t i = Home(key);
  while (slots_[i].entry) {
    if (slots_[i].key == key) {
      const LockRequest* head = slots_[i].entry->head;
      return head ? head->owner : nullptr;
    }
    i = (i + 1) & mask_;
  }
  return nullptr;
}

void LockManager::PrefetchOldest(Key key, int stage) const {
  const Slot& home = slots_[Home(key)];
  if (stage == 1) {
    __builtin_prefetch(&home);
  } else if (home.entry && home.key == key) {
    if (stage == 2) __builtin_prefetch(home.entry);
    else if (const LockRequest* head = home.entry->head) __builtin_prefetch(head);
  }
}

LockEntry* LockManager::FindOrInsert(Key key) {
  size_t i = Home(key);
  while (slots_[i].entry) {
    if (slots_[i].key == key) return slots_[i].entry;
    i = (i + 1) & mask_;
  }
  if ((size_ + 1) * 2 > slots_.size()) {
    Grow();
    return FindOrInsert(key);
  }
  slots_[i] = Slot{key, NewEntry(key)};
  ++size_;
  return slots_[i].entry;
}

void LockManager::Erase(Key key) {
  size_t i = Home(key);
  while (slots_[i].key != key || !slots_[i].entry) i = (i + 1) & mask_;
  // Backward-shift deletion keeps probe sequences intact without tombstones.
  size_t j = i;
  while (true) {
    j = (j + 1) & mask_;
    if (!slots_[j].entry) break;
    size_t home = Home(slots_[j].key);
    if (((j - home) & mask_) >= ((j - i) & mask_)) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Slot{0, nullptr};
  --size_;
}

void LockManager::Grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(old.size() * 2, Slot{0, nullptr});
  mask_ = slots_.size() - 1;
  shift_ -= 1;
  for (const Slot& slot : old) {
    if (!slot.entry) continue;
    size_t i = Home(slot.key);
    while (slots_[i].entry) i = (i + 1) & mask_;
    slots_[i] = slot;
  }
}

void LockManager::Grant(LockRequest* request, std::vector<LockedTxn*>* ready) {
  request->granted = true;
  ++request->entry->granted;
  if (--request->owner->locks_waiting == 0 && ready) ready->push_back(request->owner);
}

void LockManager::PrefetchSlot(Key key) const { __builtin_prefetch(&slots_[Home(key)]); }

void LockManager::PrefetchEntry(Key key) const {
  const Slot& home = slots_[Home(key)];
  if (home.entry && home.key == key) __builtin_prefetch(home.entry);
}

bool LockManager::Acquire(LockedTxn* txn) {
  std::vector<LockRequest>& requests = txn->lock_requests;
  const size_t count = requests.size();
  txn->locks_waiting = static_cast<uint32_t>(count);
  txn->locks_held = true;
  // Every request's slot, then its entry, is a cache miss once the table
  // outgrows the cache: fetching them a few requests ahead keeps several in
  // flight instead of one at a time.
  for (size_t i = 0; i < std::min(count, kPrefetchAhead); ++i) PrefetchSlot(requests[i].key);
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count) PrefetchSlot(requests[i + kPrefetchAhead].key);
    if (i + kPrefetchAhead / 2 < count) PrefetchEntry(requests[i + kPrefetchAhead / 2].key);
    LockRequest& request = requests[i];
    LockEntry* entry = FindOrInsert(request.key);
    if (entry->tail && entry->tail->owner == txn) {
      // The same txn named this key before (its requests are queued back to
      // back, so that one is the tail): fold this request into it.
      MergeDuplicate(entry, &request);
      continue;
    }
    request.owner = txn;
    request.entry = entry;
    request.granted = false;
    request.next = nullptr;
    request.prev = entry->tail;
    if (entry->tail) entry->tail->next = &request;
    else entry->head = &request;
    entry->tail = &request;
    // Granted at once when first in line, or shared behind only shared holders.
    const bool grant =
        entry->head == &request || (!request.exclusive && entry->exclusive_queued == 0);
    if (request.exclusive) ++entry->exclusive_queued;
    if (grant) Grant(&request, nullptr);
  }
  return txn->locks_waiting == 0;
}

void LockManager::MergeDuplicate(LockEntry* entry, LockRequest* request) {
  LockRequest* first = entry->tail;
  LockedTxn* txn = first->owner;
  request->owner = txn;
  request->entry = nullptr;
  request->granted = false;
  --txn->locks_waiting;  // this request is never queued
  if (!request->exclusive || first->exclusive) return;
  // Upgrade the first request. It is the tail, so nothing waits behind it;
  // if it shares the lock with other readers it waits for them instead.
  first->exclusive = true;
  ++entry->exclusive_queued;
  if (first->granted && entry->granted > 1) {
    first->granted = false;
    --entry->granted;
    ++txn->locks_waiting;
  }
}

void LockManager::Release(LockedTxn* txn, std::vector<LockedTxn*>* ready) {
  if (!txn->locks_held) return;
  txn->locks_held = false;
  std::vector<LockRequest>& requests = txn->lock_requests;
  const size_t count = requests.size();
  for (size_t i = 0; i < std::min(count, kPrefetchAhead); ++i) {
    if (requests[i].entry) __builtin_prefetch(requests[i].entry);
  }
  for (size_t i = 0; i < count; ++i) {
    if (i + kPrefetchAhead < count && requests[i + kPrefetchAhead].entry) {
      __builtin_prefetch(requests[i + kPrefetchAhead].entry);
    }
    // A key left with no queue is erased from its slot.
    if (i + kPrefetchAhead / 2 < count) PrefetchSlot(requests[i + kPrefetchAhead / 2].key);
    LockRequest& request = requests[i];
    LockEntry* entry = request.entry;
    if (!entry) continue;  // folded into an earlier request of the same key
    if (request.prev) request.prev->next = request.next;
    else entry->head = request.next;
    if (request.next) request.next->prev = request.prev;
    else entry->tail = request.prev;
    if (request.exclusive) --entry->exclusive_queued;
    if (request.granted) --entry->granted;
    request.entry = nullptr;
    if (!entry->head) {
      Erase(entry->key);
      FreeEntry(entry);
      continue;
    }
    if (entry->granted > 0) continue;  // other holders remain; nothing changes
    LockRequest* head = entry->head;
    if (head->exclusive) {
      Grant(head, ready);
    } else {
      for (LockRequest* r = head; r && !r->exclusive; r = r->next) {
        if (!r->granted) Grant(r, ready);
      }
    }
  }
}

}  // namespace paxflow
