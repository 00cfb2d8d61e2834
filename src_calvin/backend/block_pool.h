// Memory for the multi-version store's versions: fixed-size blocks by size
// class, carved from large huge-page chunks and recycled through per-slot
// free lists. Writers neither call malloc nor fault in fresh pages once the
// pool is warm, and memory that garbage collection frees (initial versions
// included) is reused for new versions. Chunks are returned to the system
// only when the pool is destroyed, so the resident size follows the peak
// number of live versions.
//
// Owns: the chunks, and every block in them.
// In: Allocate / Free from the thread that owns a slot (the store's slots).
// Slots trade full batches of free blocks through a central list under a
// mutex, so a slot that frees more than it allocates (a collector) feeds
// the slots that allocate (writers).
// Blocks larger than kMaxPooledBytes come from malloc.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/huge_buffer.h"

namespace paxflow {

class BlockPool {
 public:
  static constexpr size_t kMaxPooledBytes = 4096;
  static constexpr uint16_t kUnpooled = 0xffff;  // size class of malloc'ed blocks

  explicit BlockPool(size_t slots);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // The size class that holds `bytes`, and its block size.
  static uint16_t ClassFor(size_t bytes);
  static size_t ClassBytes(uint16_t size_class);

  // A block of ClassBytes(size_class) bytes (at least `bytes` for kUnpooled).
  void* Allocate(size_t slot, uint16_t size_class, size_t bytes);
  void Free(size_t slot, void* block, uint16_t size_class);

  uint64_t reserved_bytes() const { return reserved_.load(std::memory_order_relaxed); }

 private:
  static constexpr int kClasses = 88;
  static constexpr uint32_t kBatch = 64;
  static constexpr size_t kChunkBytes = size_t{4} << 20;

  struct FreeBlock {
    FreeBlock* next;
  };
  // A list of exactly kBatch free blocks.
  struct Batch {
    FreeBlock* head = nullptr;
  };
  struct alignas(64) SlotCache {
    FreeBlock* current[kClasses] = {};  // allocation pops from here
    uint32_t count[kClasses] = {};      // blocks in `current`
    FreeBlock* spare[kClasses] = {};    // one full batch held back, or null
  };

  // Refills `cache` for `size_class` from the central lists or a chunk.
  void Refill(SlotCache* cache, uint16_t size_class);

  std::vector<std::unique_ptr<SlotCache>> caches_;
  std::mutex mu_;
  std::vector<Batch> central_[kClasses];  // under mu_
  std::vector<HugeBuffer> chunks_;        // under mu_
  char* bump_ = nullptr;                  // under mu_: free space in the newest chunk
  char* bump_end_ = nullptr;
  std::atomic<uint64_t> reserved_{0};
};

}  // namespace paxflow
