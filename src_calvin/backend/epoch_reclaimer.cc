#include "backend/epoch_reclaimer.h"

#include <algorithm>

namespace paxflow {
namespace {
constexpr size_t kCollectEvery = 128;
}  // namespace

EpochReclaimer::EpochReclaimer(size_t slots, void* context) : context_(context) {
  for (size_t i = 0; i < slots; ++i) slots_.push_back(std::make_unique<Slot>());
}

EpochReclaimer::~EpochReclaimer() {
  for (size_t slot = 0; slot < slots_.size(); ++slot) {
    for (const Retired& retired : slots_[slot]->retired) {
      retired.deleter(context_, slot, retired.pointer);
    }
  }
}

void EpochReclaimer::Enter(size_t slot) {
  // The announcement must be visible to every reclaimer before this reader
  // loads any pointer. A read-modify-write is the full barrier for that on
  // every CPU (a seq_cst store alone may let later acquire loads pass it).
  slots_[slot]->active_epoch.exchange(global_epoch_.load(std::memory_order_seq_cst),
                                      std::memory_order_seq_cst);
}

void EpochReclaimer::Exit(size_t slot) {
  slots_[slot]->active_epoch.store(0, std::memory_order_release);
}

void EpochReclaimer::Retire(size_t slot, void* pointer, Deleter deleter) {
  Slot& owner = *slots_[slot];
  // The unlink that made `pointer` unreachable must be ordered before the
  // epoch we tag it with: a read-modify-write is the full barrier
  // (store-load) that a plain load is not.
  owner.retired.push_back(
      Retired{pointer, deleter, global_epoch_.fetch_add(0, std::memory_order_seq_cst)});
  if (owner.retired.size() % kCollectEvery == 0) {
    global_epoch_.fetch_add(1, std::memory_order_seq_cst);
    Collect(slot);
  }
}

uint64_t EpochReclaimer::OldestActive() const {
  global_epoch_.fetch_add(0, std::memory_order_seq_cst);  // full barrier, as in Retire
  uint64_t oldest = UINT64_MAX;
  for (const auto& slot : slots_) {
    const uint64_t epoch = slot->active_epoch.load(std::memory_order_seq_cst);
    if (epoch != 0) oldest = std::min(oldest, epoch);
  }
  return oldest;
}

void EpochReclaimer::Collect(size_t slot) {
  Slot& owner = *slots_[slot];
  if (owner.retired.empty()) return;
  // A reader inside since epoch r may hold anything retired at epoch >= r.
  const uint64_t oldest = OldestActive();
  size_t kept = 0;
  uint64_t freed = 0;
  constexpr size_t kAhead = 8;  // deleters touch the memory: fetch it ahead
  for (size_t i = 0; i < owner.retired.size(); ++i) {
    if (i + kAhead < owner.retired.size()) __builtin_prefetch(owner.retired[i + kAhead].pointer, 1);
    const Retired retired = owner.retired[i];
    if (retired.epoch < oldest) {
      retired.deleter(context_, slot, retired.pointer);
      ++freed;
    } else {
      owner.retired[kept++] = retired;
    }
  }
  owner.retired.resize(kept);
  freed_.fetch_add(freed, std::memory_order_relaxed);
}

}  // namespace paxflow
