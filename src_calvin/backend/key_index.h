// Finds a key's record on one partition. Keys [0, dense_keys) that belong
// to the partition live in a flat array (YCSB and bank keys are dense);
// other keys go to an insert-only hash table with lock-free lookups.
// The table grows by generations: when the newest bucket array averages two
// keys a bucket, a four times larger one takes new keys; lookups try the
// newest generation first. Nothing ever moves, so readers need no lock.
//
// Sparse keys are also kept in key order (OrderedKeys), so a range visit
// costs in proportion to the keys present in the range, not to its span.
//
// Threads: Find and ForEachInRange from any thread, lock-free (a range
// visit takes a mutex briefly). FindOrCreate from a thread that holds the
// key's exclusive lock (so one key is never created twice).
// Records never move and are never removed while the index lives.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "backend/huge_buffer.h"
#include "backend/ordered_keys.h"
#include "common/types.h"

namespace paxflow {

template <typename Record>
class KeyIndex {
 public:
  KeyIndex(PartitionId partition, uint32_t partitions, uint64_t dense_keys,
           size_t sparse_buckets = size_t{1} << 16)
      : partition_(partition),
        partitions_(partitions),
        dense_limit_(dense_keys),
        dense_count_(partition < dense_keys
                         ? (dense_keys - partition + partitions - 1) / partitions
                         : 0),
        dense_storage_(dense_count_ * sizeof(Record)),
        dense_(reinterpret_cast<Record*>(dense_storage_.data())) {
    for (uint64_t i = 0; i < dense_count_; ++i) new (&dense_[i]) Record();
    generations_[0] = new Generation(sparse_buckets);
    newest_.store(0, std::memory_order_release);
  }

  ~KeyIndex() {
    for (uint64_t i = 0; i < dense_count_; ++i) dense_[i].~Record();
    for (Generation* generation : generations_) {
      if (!generation) continue;
      for (auto& bucket : generation->buckets) {
        SparseNode* node = bucket.load(std::memory_order_relaxed);
        while (node) {
          SparseNode* next = node->next;
          delete node;
          node = next;
        }
      }
      delete generation;
    }
  }
  KeyIndex(const KeyIndex&) = delete;
  KeyIndex& operator=(const KeyIndex&) = delete;

  Record* Find(Key key) {
    const int64_t slot = DenseSlot(key);
    if (slot >= 0) return &dense_[slot];
    for (int g = newest_.load(std::memory_order_acquire); g >= 0; --g) {
      const Generation& generation = *generations_[g];
      for (SparseNode* node = generation.buckets[generation.Bucket(key)].load(
               std::memory_order_acquire);
           node; node = node->next) {
        if (node->key == key) return &node->record;
      }
    }
    return nullptr;
  }

  Record* FindOrCreate(Key key) {
    if (Record* record = Find(key)) return record;
    Generation* generation = generations_[newest_.load(std::memory_order_acquire)];
    if (generation->count.load(std::memory_order_relaxed) > 2 * generation->buckets.size()) {
      generation = Grow(generation);
    }
    auto* node = new SparseNode(key);
    std::atomic<SparseNode*>& head = generation->buckets[generation->Bucket(key)];
    SparseNode* expected = head.load(std::memory_order_acquire);
    do {
      node->next = expected;
    } while (!head.compare_exchange_weak(expected, node, std::memory_order_acq_rel));
    generation->count.fetch_add(1, std::memory_order_relaxed);
    sparse_count_.fetch_add(1, std::memory_order_relaxed);
    order_.Insert(key, &node->record);
    return &node->record;
  }

  // Position of a dense key in the flat array, -1 for sparse keys.
  int64_t DenseSlot(Key key) const {
    if (key >= dense_limit_) return -1;
    if (partitions_ == 1) return static_cast<int64_t>(key);
    const uint64_t slot = key / partitions_;
    return key - slot * partitions_ == partition_ ? static_cast<int64_t>(slot) : -1;
  }

  // Visits every record (dense ones whether or not they hold a value).
  template <typename Visitor>
  void ForEach(Visitor&& visit) {
    for (uint64_t i = 0; i < dense_count_; ++i) visit(i * partitions_ + partition_, dense_[i]);
    for (int g = newest_.load(std::memory_order_acquire); g >= 0; --g) {
      for (auto& bucket : generations_[g]->buckets) {
        for (SparseNode* node = bucket.load(std::memory_order_acquire); node;
             node = node->next) {
          visit(node->key, node->record);
        }
      }
    }
  }

  // Visits, in ascending key order, every record of this partition's keys
  // in [lo, hi] (dense ones whether or not they hold a value). Keys created
  // during the visit may or may not be seen.
  template <typename Visitor>
  void ForEachInRange(Key lo, Key hi, Visitor&& visit) {
    if (lo > hi) return;
    // Every dense key of the partition lies below dense_limit_, every
    // sparse one at or above it: dense first keeps the order.
    if (dense_count_ > 0 && lo < dense_limit_) {
      const Key last = std::min(hi, dense_limit_ - 1);
      if (last >= partition_) {
        const uint64_t first_slot =
            lo <= partition_ ? 0 : (lo - partition_ + partitions_ - 1) / partitions_;
        const uint64_t last_slot = std::min<uint64_t>((last - partition_) / partitions_,
                                                      dense_count_ - 1);
        for (uint64_t slot = first_slot; slot <= last_slot; ++slot) {
          visit(slot * partitions_ + partition_, dense_[slot]);
        }
      }
    }
    if (hi < dense_limit_) return;
    OrderedKeys::Cursor cursor = order_.Scan(std::max(lo, dense_limit_), hi);
    OrderedKeys::Entry entry;
    while (cursor.Next(&entry)) {
      if (entry.key % partitions_ == partition_) {
        visit(entry.key, *static_cast<Record*>(entry.record));
      }
    }
  }

  // Merges the sparse key order's large runs (a background thread's job).
  void CompactOrder() { order_.Compact(); }

  uint32_t partitions() const { return partitions_; }
  uint64_t dense_count() const { return dense_count_; }
  uint64_t sparse_count() const { return sparse_count_.load(std::memory_order_relaxed); }

 private:
  struct SparseNode {
    explicit SparseNode(Key k) : key(k) {}
    Key key;
    Record record{};  // value-initialised: records start zeroed, as dense ones do
    SparseNode* next = nullptr;
  };
  struct Generation {
    explicit Generation(size_t size) : buckets(size), mask(size - 1) {}
    size_t Bucket(Key key) const {
      return static_cast<size_t>((key * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
    }
    std::vector<std::atomic<SparseNode*>> buckets;
    const size_t mask;
    std::atomic<size_t> count{0};
  };
  static constexpr int kMaxGenerations = 16;  // x4 each: 2^16 .. 2^46 buckets

  // Installs a larger generation unless another writer just did.
  Generation* Grow(Generation* full) {
    std::lock_guard<std::mutex> lock(grow_mu_);
    const int newest = newest_.load(std::memory_order_acquire);
    if (generations_[newest] != full || newest + 1 == kMaxGenerations) {
      return generations_[newest];
    }
    generations_[newest + 1] = new Generation(full->buckets.size() * 4);
    newest_.store(newest + 1, std::memory_order_release);
    return generations_[newest + 1];
  }

  const PartitionId partition_;
  const uint32_t partitions_;
  const uint64_t dense_limit_;
  const uint64_t dense_count_;
  HugeBuffer dense_storage_;
  Record* dense_;
  Generation* generations_[kMaxGenerations] = {};  // slots fill once, never change
  std::atomic<int> newest_{0};
  std::mutex grow_mu_;  // writers only, once per generation
  std::atomic<uint64_t> sparse_count_{0};
  OrderedKeys order_;  // sparse keys in key order
};

}  // namespace paxflow
