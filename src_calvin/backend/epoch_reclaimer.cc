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
    const Slot& owner = *slots_[slot];
    for (size_t i = owner.first; i < owner.retired.size(); ++i) {
      owner.retired[i].deleter(context_, slot, owner.retired[i].pointer);
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
  if ((owner.retired.size() - owner.first) % kCollectEvery == 0) {
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
  std::vector<Retired>& retired = owner.retired;
  if (owner.first == retired.size()) return;
  // A reader inside since epoch r may hold anything retired at epoch >= r.
  // Tags never decrease along the list, so the first entry still held ends
  // what can go: a collect costs what it frees, not the whole list. A long
  // reader (an LTX's snapshot walk, a sweep inside its own section) keeps
  // everything after its entry, and rescanning that every kCollectEvery
  // retirements made the cost quadratic in what it kept.
  const uint64_t oldest = OldestActive();
  constexpr size_t kAhead = 8;  // deleters touch the memory: fetch it ahead
  size_t i = owner.first;
  for (; i < retired.size() && retired[i].epoch < oldest; ++i) {
    if (i + kAhead < retired.size()) __builtin_prefetch(retired[i + kAhead].pointer, 1);
    retired[i].deleter(context_, slot, retired[i].pointer);
  }
  freed_.fetch_add(i - owner.first, std::memory_order_relaxed);
  owner.first = i;
  // Drop the freed prefix once it is most of the list: amortized O(1) per
  // entry, and the list's memory stays bounded by what is kept.
  if (owner.first == retired.size()) {
    retired.clear();
    owner.first = 0;
  } else if (owner.first > retired.size() / 2) {
    retired.erase(retired.begin(), retired.begin() + static_cast<std::ptrdiff_t>(owner.first));
    owner.first = 0;
  }
}

}  // namespace paxflow
