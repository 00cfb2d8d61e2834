#include "backend/block_pool.h"

#include <cstdlib>
#include <new>

namespace paxflow {

// Classes 0..31: 16..512 bytes in steps of 16; 32..87: 576..4096 in steps of 64.
uint16_t BlockPool::ClassFor(size_t bytes) {
  if (bytes > kMaxPooledBytes) return kUnpooled;
  if (bytes <= 512) return static_cast<uint16_t>(bytes <= 16 ? 0 : (bytes + 15) / 16 - 1);
  return static_cast<uint16_t>(31 + (bytes - 512 + 63) / 64);
}

size_t BlockPool::ClassBytes(uint16_t size_class) {
  if (size_class < 32) return (size_class + 1u) * 16u;
  return 512u + (size_class - 31u) * 64u;
}

BlockPool::BlockPool(size_t slots) {
  for (size_t i = 0; i < slots; ++i) caches_.push_back(std::make_unique<SlotCache>());
}

BlockPool::~BlockPool() = default;

void* BlockPool::Allocate(size_t slot, uint16_t size_class, size_t bytes) {
  if (size_class == kUnpooled) {
    void* block = std::malloc(bytes);
    if (!block) throw std::bad_alloc();
    return block;
  }
  SlotCache* cache = caches_[slot].get();
  if (!cache->current[size_class]) Refill(cache, size_class);
  FreeBlock* block = cache->current[size_class];
  cache->current[size_class] = block->next;
  --cache->count[size_class];
  // Freed blocks are cold (often freed on another core): fetch the next
  // one's link now, so the next allocation does not wait for it.
  __builtin_prefetch(block->next, 1);
  return block;
}

void BlockPool::Free(size_t slot, void* memory, uint16_t size_class) {
  if (size_class == kUnpooled) {
    std::free(memory);
    return;
  }
  SlotCache* cache = caches_[slot].get();
  auto* block = static_cast<FreeBlock*>(memory);
  if (cache->count[size_class] == kBatch) {
    // `current` is a full batch: it becomes the spare, and an older spare
    // goes to the central list for other slots.
    if (FreeBlock* spare = cache->spare[size_class]) {
      std::lock_guard<std::mutex> lock(mu_);
      central_[size_class].push_back(Batch{spare});
    }
    cache->spare[size_class] = cache->current[size_class];
    cache->current[size_class] = nullptr;
    cache->count[size_class] = 0;
  }
  block->next = cache->current[size_class];
  cache->current[size_class] = block;
  ++cache->count[size_class];
}

void BlockPool::Refill(SlotCache* cache, uint16_t size_class) {
  if (FreeBlock* spare = cache->spare[size_class]) {
    cache->spare[size_class] = nullptr;
    cache->current[size_class] = spare;
    cache->count[size_class] = kBatch;
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Batch>& central = central_[size_class];
  if (!central.empty()) {
    cache->current[size_class] = central.back().head;
    cache->count[size_class] = kBatch;
    central.pop_back();
    return;
  }
  // Carve a new batch from the newest chunk (the tail of a chunk too small
  // for a whole batch is left unused).
  const size_t block_bytes = ClassBytes(size_class);
  const size_t batch_bytes = block_bytes * kBatch;
  if (static_cast<size_t>(bump_end_ - bump_) < batch_bytes) {
    chunks_.emplace_back(kChunkBytes);
    bump_ = chunks_.back().data();
    bump_end_ = bump_ + chunks_.back().size();
    reserved_.fetch_add(kChunkBytes, std::memory_order_relaxed);
  }
  FreeBlock* head = nullptr;
  for (uint32_t i = kBatch; i-- > 0;) {
    auto* block = reinterpret_cast<FreeBlock*>(bump_ + i * block_bytes);
    block->next = head;
    head = block;
  }
  bump_ += batch_bytes;
  cache->current[size_class] = head;
  cache->count[size_class] = kBatch;
}

}  // namespace paxflow
