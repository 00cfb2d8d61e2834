// An insert-only ordered set of keys, each with a pointer to its record:
// the key order of a partition's sparse keys, for range scans.
//
// Inserts append to an open run under a mutex (a push_back). Every kRunKeys
// keys the open run is sorted and sealed into an immutable run, and sealed
// runs merge like a binary counter (two runs merge when the older is not
// larger), so n keys make O(log n) runs and each key is copied O(log n)
// times. Merges bigger than kInlineMergeKeys are left to Compact(), which a
// background thread calls (the multi-version store's collector); without
// one, the inserter that finds more than kMaxRuns runs compacts itself.
// A scan copies the list of runs (shared, immutable) and the open run's
// keys in its range under the mutex, then merges them with no lock held:
// O(runs x log n) to position, then O(runs) per key in range, whatever
// the span of the range.
//
// Threads: Insert and Scan from any thread (each key inserted at most
// once); Compact from any thread, one at a time.
#pragma once
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "common/types.h"

namespace paxflow {

class OrderedKeys {
 public:
  struct Entry {
    Key key;
    void* record;
  };

  // Ascending walk over the entries of one scan.
  class Cursor {
   public:
    bool Next(Entry* entry);

   private:
    friend class OrderedKeys;
    struct Source {
      const Entry* next;
      const Entry* end;
    };
    std::vector<std::shared_ptr<const std::vector<Entry>>> runs_;  // keeps them alive
    std::vector<Entry> open_;    // the open run's entries in range, sorted
    std::vector<Source> sources_;   // runs with entries left in range
  };

  OrderedKeys();

  void Insert(Key key, void* record);
  // Every entry in [lo, hi] inserted before the call (later inserts may or
  // may not be seen), in ascending key order.
  Cursor Scan(Key lo, Key hi) const;
  // Performs the merges too large to do inline.
  void Compact();

  size_t size() const;
  size_t runs() const;

 private:
  static constexpr size_t kRunKeys = 1024;
  static constexpr size_t kInlineMergeKeys = size_t{1} << 16;
  static constexpr size_t kMaxRuns = 32;

  using Run = std::vector<Entry>;
  using RunPtr = std::shared_ptr<const Run>;

  static RunPtr Merge(const Run& a, const Run& b);
  // Merges the newest runs while the binary-counter rule asks and the
  // result stays within `limit` entries. Caller holds mu_.
  void MergeTail(size_t limit);

  mutable std::mutex mu_;
  std::vector<RunPtr> runs_;  // oldest (largest) first; under mu_
  Run open_;                  // unsorted; under mu_
  size_t size_ = 0;           // under mu_
  std::mutex compact_mu_;     // one Compact at a time
};

}  // namespace paxflow
