// Draws distinct keys of one partition for a generated txn. One per generator.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/random.h"
#include "common/types.h"

namespace paxflow {

// Remembers the keys of the txn being built, so a repeat is redrawn.
// Open addressing with generation stamps: clearing is O(1).
class DistinctKeySet {
 public:
  explicit DistinctKeySet(size_t max_keys);
  // Empties the set. With `expected` keys to come (at most max_keys), only
  // a table of about 4x that is used, which stays in cache for small txns.
  void Clear(size_t expected = 0) {
    // After 2^32 clears the stamps would repeat: start them over.
    if (++generation_ == 0) {
      std::fill(stamp_.begin(), stamp_.end(), 0);
      generation_ = 1;
    }
    mask_ = full_mask_;
    if (expected > 0) {
      size_t size = 16;
      while (size < 4 * expected && size - 1 < full_mask_) size <<= 1;
      mask_ = size - 1;
    }
  }
  bool Insert(Key key);  // false if already present

 private:
  std::vector<Key> keys_;
  std::vector<uint32_t> stamp_;
  uint32_t generation_ = 1;
  size_t full_mask_;
  size_t mask_;
};

struct KeyDistribution {
  enum Kind { kHot, kZipfian, kUniform } kind = kHot;
  uint64_t hot_records = 10;
  double zipfian_constant = 0.99;
};

// Number of keys k < records with k % partitions == partition.
uint64_t RecordsInPartition(uint64_t records, uint32_t partitions, PartitionId partition);

class KeyPicker {
 public:
  KeyPicker(uint64_t records, uint32_t partitions, const KeyDistribution& distribution,
            size_t max_keys_per_txn);
  void StartTxn() { chosen_.Clear(); }
  // Appends `count` distinct keys of `partition` to `out`; with the hot
  // distribution the first one is a hot record.
  void Pick(PartitionId partition, uint32_t count, SplitMix64& rng, std::vector<Key>* out);
  // Appends `count` distinct keys of `partition` uniformly among its first
  // `ranks` keys (fewer than `count` if `ranks` is smaller); later Picks of
  // the same txn avoid them.
  void PickAmongFirst(PartitionId partition, uint64_t ranks, uint32_t count, SplitMix64& rng,
                      std::vector<Key>* out);

 private:
  uint64_t records_;
  uint32_t partitions_;
  KeyDistribution distribution_;
  std::vector<uint64_t> per_partition_;
  std::vector<std::unique_ptr<ZipfianSampler>> zipf_;  // by partition size, shared when equal
  DistinctKeySet chosen_;
};

}  // namespace paxflow
