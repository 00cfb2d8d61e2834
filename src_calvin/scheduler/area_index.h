// Which unresolved LTXs' write-preservation areas cover a key, in one hash
// probe: every short txn asks this for each of its keys, every read-only
// txn too while LTXs are pending. Each indexed LTX takes one of 64 slots;
// single keys and narrow ranges (most areas: an LTX's write set) map to the
// bitmask of the slots covering them, wider ranges are few and checked in
// turn. LTXs beyond 64 at once are checked in turn as well.
//
// Owns: the index. Threads: the LTX lane's (the scheduler thread).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/flat_key_map.h"
#include "common/key_area.h"
#include "common/types.h"

namespace paxflow {

class AreaIndex {
 public:
  void Add(TxnId ltx, const KeyArea& area) {
    int slot = -1;
    for (int s = 0; s < kSlots; ++s) {
      if (slot_ltx_[s] == 0) {
        slot = s;
        break;
      }
    }
    if (slot < 0) {
      overflow_.push_back({ltx, &area});
      return;
    }
    slot_ltx_[slot] = ltx;
    const uint64_t bit = uint64_t{1} << slot;
    for (const auto& [lo, hi] : area.ranges()) {
      if (hi - lo < kExpandUpTo) {
        for (Key key = lo;; ++key) {
          points_[key] |= bit;
          if (key == hi) break;
        }
      } else {
        wide_.push_back(Wide{lo, hi, ltx});
      }
    }
  }
  void Remove(TxnId ltx, const KeyArea& area) {
    overflow_.erase(std::remove_if(overflow_.begin(), overflow_.end(),
                                   [&](const Overflow& o) { return o.ltx == ltx; }),
                    overflow_.end());
    int slot = -1;
    for (int s = 0; s < kSlots; ++s) {
      if (slot_ltx_[s] == ltx) slot = s;
    }
    if (slot < 0) return;
    slot_ltx_[slot] = 0;
    const uint64_t bit = uint64_t{1} << slot;
    for (const auto& [lo, hi] : area.ranges()) {
      if (hi - lo >= kExpandUpTo) continue;
      for (Key key = lo;; ++key) {
        uint64_t* bits = points_.Find(key);
        if (bits && (*bits &= ~bit) == 0) points_.Erase(key);
        if (key == hi) break;
      }
    }
    wide_.erase(std::remove_if(wide_.begin(), wide_.end(),
                               [&](const Wide& w) { return w.ltx == ltx; }),
                wide_.end());
  }
  // Calls `visit(ltx)` for each LTX whose area holds `key` (an LTX may come
  // more than once when several of its ranges do; callers dedupe).
  template <typename Visit>
  void ForEachCovering(Key key, Visit&& visit) const {
    if (!points_.empty()) {
      if (const uint64_t* found = points_.Find(key)) {
        for (uint64_t bits = *found; bits; bits &= bits - 1) {
          visit(slot_ltx_[__builtin_ctzll(bits)]);
        }
      }
    }
    for (const Wide& w : wide_) {
      if (w.lo <= key && key <= w.hi) visit(w.ltx);
    }
    for (const Overflow& o : overflow_) {
      if (o.area->Contains(key)) visit(o.ltx);
    }
  }
  bool empty() const { return points_.empty() && wide_.empty() && overflow_.empty(); }
  // Gives back the memory of areas removed since (FlatKeyMap::Compact).
  void Compact() { points_.Compact(); }

 private:
  static constexpr int kSlots = 64;
  // Ranges narrower than this are indexed key by key.
  static constexpr Key kExpandUpTo = 64;
  struct Wide {
    Key lo, hi;
    TxnId ltx;
  };
  struct Overflow {
    TxnId ltx;
    const KeyArea* area;  // the LTX lane's; outlives the entry here
  };
  TxnId slot_ltx_[kSlots] = {};  // 0: free (txn ids are never 0: epochs start at 1)
  FlatKeyMap<uint64_t> points_;  // key -> bitmask of the slots covering it
  std::vector<Wide> wide_;
  std::vector<Overflow> overflow_;
};

}  // namespace paxflow
