// FlatKeyMap<V>: a hash map from Key to V in one array (open addressing,
// linear probing, backward-shift deletion), for per-key indexes that take
// and drop thousands of keys at a time: an LTX's write area is indexed when
// it begins and dropped when it resolves, 4,000 keys each under `long`. A
// node-based map spent a malloc and a free per key there, on the scheduler
// thread every txn waits for.
//
// Grows at half full. It shrinks only when its owner says so (Compact, at
// a quiet moment such as an epoch's end), not on erase: an index that
// drops one LTX's keys and takes the next one's right after would
// otherwise halve and double its table for each. Pointers and references
// into it are invalidated by any insert, erase or Compact.
//
// Owns: its slots. Threads: one at a time (no locking).
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "common/types.h"

namespace paxflow {

template <typename V>
class FlatKeyMap {
 public:
  FlatKeyMap() { Reset(kMinCapacity); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  V* Find(Key key) {
    for (size_t i = Home(key);; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (!slot.used) return nullptr;
      if (slot.key == key) return &slot.value;
    }
  }
  const V* Find(Key key) const { return const_cast<FlatKeyMap*>(this)->Find(key); }

  // The value of `key`, default-constructed if absent.
  V& operator[](Key key) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.size() * 2);
    size_t i = Home(key);
    for (;; i = (i + 1) & mask_) {
      Slot& slot = slots_[i];
      if (!slot.used) break;
      if (slot.key == key) return slot.value;
    }
    Slot& slot = slots_[i];
    slot.used = true;
    slot.key = key;
    slot.value = V();
    ++size_;
    return slot.value;
  }

  // Removes `key` if present; returns whether it was.
  bool Erase(Key key) {
    size_t hole = Home(key);
    for (;; hole = (hole + 1) & mask_) {
      if (!slots_[hole].used) return false;
      if (slots_[hole].key == key) break;
    }
    // Backward shift: move later members of the probe run into the hole
    // when their home does not lie (cyclically) between the hole and them.
    for (size_t next = (hole + 1) & mask_;; next = (next + 1) & mask_) {
      Slot& candidate = slots_[next];
      if (!candidate.used) break;
      const size_t home = Home(candidate.key);
      const bool stays = hole <= next ? (hole < home && home <= next)
                                      : (hole < home || home <= next);
      if (stays) continue;
      slots_[hole] = std::move(candidate);
      hole = next;
    }
    slots_[hole].used = false;
    slots_[hole].value = V();
    --size_;
    return true;
  }

  // Gives back memory when under an eighth full: to four times its size
  // (at least the initial capacity), so a burst of keys does not pin it.
  void Compact() {
    if (slots_.size() <= kMinCapacity || size_ * 8 >= slots_.size()) return;
    size_t capacity = kMinCapacity;
    while (capacity < size_ * 4) capacity *= 2;
    Rehash(capacity);
  }
  size_t capacity() const { return slots_.size(); }

  void clear() { Reset(kMinCapacity); }

  // Calls visit(key, value) for every member, in no particular order.
  template <typename Visit>
  void ForEach(Visit&& visit) const {
    for (const Slot& slot : slots_) {
      if (slot.used) visit(slot.key, slot.value);
    }
  }

 private:
  static constexpr size_t kMinCapacity = 64;
  struct Slot {
    Key key = 0;
    bool used = false;
    V value{};
  };

  size_t Home(Key key) const {
    // Fibonacci hashing: consecutive keys (a range expanded key by key)
    // spread over the table.
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void Reset(size_t capacity) {
    slots_.clear();
    slots_.resize(capacity);
    mask_ = capacity - 1;
    shift_ = 64 - __builtin_ctzll(capacity);
    size_ = 0;
  }
  void Rehash(size_t capacity) {
    std::vector<Slot> old;
    old.swap(slots_);
    Reset(capacity);
    for (Slot& slot : old) {
      if (!slot.used) continue;
      size_t i = Home(slot.key);
      while (slots_[i].used) i = (i + 1) & mask_;
      slots_[i] = std::move(slot);
      ++size_;
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 0;
  size_t size_ = 0;
};

}  // namespace paxflow
