// Epoch-based memory reclamation for the lock-free readers of the
// multi-version store.
//
// Owns: per-slot retire lists of unlinked versions.
// A reader announces the reclamation epoch it started in (Enter) and
// withdraws (Exit); memory unlinked while any reader that started at or
// before its retirement is still inside is kept. Only then is it freed.
// Memory is freed by the slot that retired it, on that slot's thread (in
// Retire or Collect), so a deleter may use per-slot state such as a pool's
// free lists; it gets the reclaimer's context and the slot.
// Threads: slot i is used by one thread at a time; slots are independent.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace paxflow {

class EpochReclaimer {
 public:
  using Deleter = void (*)(void* context, size_t slot, void* pointer);

  // `context` is passed to every deleter.
  explicit EpochReclaimer(size_t slots, void* context = nullptr);
  ~EpochReclaimer();  // frees everything still retired
  EpochReclaimer(const EpochReclaimer&) = delete;
  EpochReclaimer& operator=(const EpochReclaimer&) = delete;

  size_t slots() const { return slots_.size(); }
  void Enter(size_t slot);
  void Exit(size_t slot);
  // `pointer` is unreachable for readers that enter from now on; `deleter`
  // frees it once no reader can hold it any more.
  void Retire(size_t slot, void* pointer, Deleter deleter);
  // Frees what slot `slot` retired that no reader can still reach.
  void Collect(size_t slot);

  uint64_t freed() const { return freed_.load(std::memory_order_relaxed); }

 private:
  struct Retired {
    void* pointer;
    Deleter deleter;
    uint64_t epoch;
  };
  struct alignas(64) Slot {
    std::atomic<uint64_t> active_epoch{0};  // 0: not reading
    // Owner thread only. Tagged in retirement order, so epochs never
    // decrease along it: what can be freed is always a prefix, from `first`.
    std::vector<Retired> retired;
    size_t first = 0;  // retired[0, first) already freed
  };
  uint64_t OldestActive() const;

  mutable std::atomic<uint64_t> global_epoch_{1};  // mutable: scans use it as a barrier
  void* const context_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::atomic<uint64_t> freed_{0};
};

}  // namespace paxflow
