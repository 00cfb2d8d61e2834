#include "backend/multi_version_store.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/hash.h"

namespace paxflow {

const char* GcPolicyName(GcPolicy policy) {
  switch (policy) {
    case GcPolicy::kBackground: return "background";
    case GcPolicy::kEpo: return "epo";
    default: return "epo-r";
  }
}

bool ParseGcPolicy(const std::string& text, GcPolicy* policy) {
  if (text == "background") *policy = GcPolicy::kBackground;
  else if (text == "epo") *policy = GcPolicy::kEpo;
  else if (text == "epo-r") *policy = GcPolicy::kEpoRead;
  else return false;
  return true;
}

MultiVersionStore::MultiVersionStore(PartitionId partition, uint32_t partitions,
                                     uint64_t dense_keys, uint32_t value_size, GcOptions gc)
    : index_(partition, partitions, dense_keys),
      slab_stride_((sizeof(Version) + value_size + 7) / 8 * 8),
      slab_(index_.dense_count() * slab_stride_),
      gc_(gc),
      reclaimer_(gc.max_threads),
      pins_(new Pins{{0}}) {
  pins_slot_ = RegisterThread();
  collector_slot_ = RegisterThread();
}

MultiVersionStore::~MultiVersionStore() {
  if (collector_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(collector_mu_);
      collector_stop_ = true;
    }
    collector_cv_.notify_all();
    collector_.join();
  }
  index_.ForEach([](Key, Record& record) {
    Version* version = record.head.load(std::memory_order_relaxed);
    while (version) {
      Version* next = version->next.load(std::memory_order_relaxed);
      FreeVersion(version);
      version = next;
    }
  });
  delete pins_.load();
}

size_t MultiVersionStore::RegisterThread() {
  const size_t slot = next_slot_.fetch_add(1);
  CHECK_LT(slot, reclaimer_.slots()) << "more threads than GcOptions::max_threads";
  return slot;
}

MultiVersionStore::Version* MultiVersionStore::NewVersion(Epoch epoch, std::string_view value) {
  void* memory = std::malloc(sizeof(Version) + value.size());
  if (!memory) throw std::bad_alloc();
  auto* version = new (memory) Version;
  version->epoch = epoch;
  version->next.store(nullptr, std::memory_order_relaxed);
  version->size = static_cast<uint32_t>(value.size());
  version->in_slab = false;
  std::memcpy(version->data(), value.data(), value.size());
  return version;
}

void MultiVersionStore::FreeVersion(void* memory) {
  auto* version = static_cast<Version*>(memory);
  const bool in_slab = version->in_slab;
  version->~Version();
  if (!in_slab) std::free(memory);
}

void MultiVersionStore::Lock(Record* record) {
  uint32_t expected = 0;
  int spins = 0;
  while (!record->latch.compare_exchange_weak(expected, 1, std::memory_order_acquire)) {
    expected = 0;
    // Held only for a few pointer updates; yield rather than burn the core.
    if (++spins > 64) std::this_thread::yield();
  }
}

bool MultiVersionStore::TryLock(Record* record) {
  uint32_t expected = 0;
  return record->latch.compare_exchange_strong(expected, 1, std::memory_order_acquire);
}

void MultiVersionStore::Load(Key key, std::string_view value) {
  Record* record = index_.FindOrCreate(key);
  const int64_t slot = index_.DenseSlot(key);
  Version* version;
  if (slot >= 0 && !record->head.load(std::memory_order_relaxed) &&
      sizeof(Version) + value.size() <= slab_stride_) {
    version = new (slab_.data() + static_cast<uint64_t>(slot) * slab_stride_) Version;
    version->epoch = 0;
    version->size = static_cast<uint32_t>(value.size());
    version->in_slab = true;
    std::memcpy(version->data(), value.data(), value.size());
  } else {
    version = NewVersion(0, value);
  }
  version->next.store(record->head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  record->head.store(version, std::memory_order_release);
  live_versions_.fetch_add(1, std::memory_order_relaxed);
  live_bytes_.fetch_add(value.size(), std::memory_order_relaxed);
}

bool MultiVersionStore::ReadLatest(size_t, Key key, std::string_view* value) {
  Record* record = index_.Find(key);
  if (!record) return false;
  // The caller's lock keeps writers away, and collectors never unlink a head.
  Version* head = record->head.load(std::memory_order_acquire);
  if (!head) return false;
  *value = std::string_view(head->data(), head->size);
  return true;
}

void MultiVersionStore::Write(size_t slot, Key key, std::string_view value, Epoch epoch) {
  Record* record = index_.FindOrCreate(key);
  Version* fresh = NewVersion(epoch, value);
  live_versions_.fetch_add(1, std::memory_order_relaxed);
  live_bytes_.fetch_add(value.size(), std::memory_order_relaxed);
  Lock(record);
  // Versions stay sorted newest first. Short txns always write at or above
  // the head's epoch; the general walk keeps any other writer correct too.
  std::atomic<Version*>* link = &record->head;
  Version* current = link->load(std::memory_order_relaxed);
  while (current && current->epoch > epoch) {
    link = &current->next;
    current = link->load(std::memory_order_relaxed);
  }
  if (current && current->epoch == epoch) {
    // Same epoch: the later writer in order replaces the version.
    fresh->next.store(current->next.load(std::memory_order_relaxed), std::memory_order_relaxed);
    link->store(fresh, std::memory_order_release);
    live_versions_.fetch_sub(1, std::memory_order_relaxed);
    live_bytes_.fetch_sub(current->size, std::memory_order_relaxed);
    reclaimer_.Retire(slot, current, &FreeVersion);
  } else {
    fresh->next.store(current, std::memory_order_relaxed);
    link->store(fresh, std::memory_order_release);
  }
  if (gc_.policy == GcPolicy::kEpo) {
    reclaimer_.Enter(slot);
    Prune(slot, record, /*below_oldest_only=*/false);
    reclaimer_.Exit(slot);
  }
  Unlock(record);
}

bool MultiVersionStore::ReadAt(size_t slot, Key key, Epoch version, std::string_view* value) {
  Record* record = index_.Find(key);
  if (!record) return false;
  Version* head = record->head.load(std::memory_order_acquire);
  Version* current = head;
  // EPO-R looks at the versions this read walks anyway: a skipped version
  // (other than the head) or the one just below what it reads that no pin
  // needs is garbage, and the reader prunes the chain if the latch is free.
  const bool collect = gc_.policy == GcPolicy::kEpoRead;
  const Pins* pins = nullptr;
  auto dead = [&](const Version* v, Epoch newer_epoch) {
    if (!pins) pins = pins_.load(std::memory_order_acquire);
    const std::vector<Epoch>& epochs = pins->epochs;
    if (v->epoch > epochs.back()) return false;
    auto pin = std::lower_bound(epochs.begin(), epochs.end(), v->epoch);
    return pin == epochs.end() || *pin >= newer_epoch;
  };
  bool saw_dead = false;
  Epoch newer_epoch = UINT64_MAX;
  while (current && current->epoch > version) {
    if (collect && current != head && !saw_dead) saw_dead = dead(current, newer_epoch);
    newer_epoch = current->epoch;
    current = current->next.load(std::memory_order_acquire);
  }
  if (!current) return false;
  *value = std::string_view(current->data(), current->size);
  if (collect) {
    const Version* older = current->next.load(std::memory_order_acquire);
    if (!saw_dead && older) saw_dead = dead(older, current->epoch);
    if (saw_dead && TryLock(record)) {
      Prune(slot, record, /*below_oldest_only=*/false);
      Unlock(record);
    }
  }
  return true;
}

void MultiVersionStore::Prefetch(Key key, int stage) {
  if (index_.DenseSlot(key) < 0) return;  // sparse lookups walk a chain: not worth it
  Record* record = index_.Find(key);
  if (stage == 1) {
    __builtin_prefetch(record);
  } else if (const Version* head = record->head.load(std::memory_order_relaxed)) {
    __builtin_prefetch(head);
    __builtin_prefetch(reinterpret_cast<const char*>(head) + 64);
  }
}

void MultiVersionStore::Prune(size_t slot, Record* record, bool below_oldest_only) {
  const std::vector<Epoch>& pins = pins_.load(std::memory_order_acquire)->epochs;
  const Epoch oldest = pins.front();
  const Epoch horizon = pins.back();
  Version* kept = record->head.load(std::memory_order_relaxed);
  if (!kept) return;
  Epoch newer_epoch = kept->epoch;
  Version* current = kept->next.load(std::memory_order_relaxed);
  while (current) {
    Version* older = current->next.load(std::memory_order_relaxed);
    bool needed;
    if (current->epoch > horizon) {
      needed = true;
    } else if (below_oldest_only) {
      needed = current->epoch > oldest || newer_epoch > oldest;
    } else {
      // Needed iff it is the newest version at or below some pin.
      auto pin = std::lower_bound(pins.begin(), pins.end(), current->epoch);
      needed = pin != pins.end() && *pin < newer_epoch;
    }
    newer_epoch = current->epoch;
    if (needed) {
      kept = current;
    } else {
      kept->next.store(older, std::memory_order_release);
      live_versions_.fetch_sub(1, std::memory_order_relaxed);
      live_bytes_.fetch_sub(current->size, std::memory_order_relaxed);
      reclaimed_.fetch_add(1, std::memory_order_relaxed);
      reclaimer_.Retire(slot, current, &FreeVersion);
    }
    current = older;
  }
}

void MultiVersionStore::SetSnapshotPins(std::vector<Epoch> pins) {
  if (pins.empty()) return;
  std::sort(pins.begin(), pins.end());
  pins.erase(std::unique(pins.begin(), pins.end()), pins.end());
  const Pins* old = pins_.exchange(new Pins{std::move(pins)}, std::memory_order_acq_rel);
  reclaimer_.Retire(pins_slot_, const_cast<Pins*>(old), &FreePins);
}

void MultiVersionStore::Scan(size_t slot, Epoch epoch, const Visitor& visit) {
  reclaimer_.Enter(slot);
  index_.ForEach([&](Key key, Record& record) {
    for (Version* v = record.head.load(std::memory_order_acquire); v;
         v = v->next.load(std::memory_order_acquire)) {
      if (v->epoch <= epoch) {
        visit(key, std::string_view(v->data(), v->size));
        break;
      }
    }
  });
  reclaimer_.Exit(slot);
}

void MultiVersionStore::Sweep(size_t slot) {
  uint64_t longest = 0;
  const bool prune = gc_.policy == GcPolicy::kBackground;
  reclaimer_.Enter(slot);
  index_.ForEach([&](Key, Record& record) {
    Version* head = record.head.load(std::memory_order_acquire);
    if (!head) return;
    uint64_t length = 0;
    for (Version* v = head; v; v = v->next.load(std::memory_order_acquire)) ++length;
    longest = std::max(longest, length);
    if (prune && length > 1 && TryLock(&record)) {
      Prune(slot, &record, /*below_oldest_only=*/true);
      Unlock(&record);
    }
  });
  reclaimer_.Exit(slot);
  reclaimer_.Collect(slot);
  longest_chain_.store(longest, std::memory_order_relaxed);
}

void MultiVersionStore::StartCollector() {
  collector_ = std::thread([this] { CollectorLoop(); });
}

void MultiVersionStore::CollectorLoop() {
  // Background policy: prune on every sweep. EPO and EPO-R prune on their
  // own triggers; for them the sweep only measures chains, less often.
  const auto period = std::chrono::milliseconds(
      gc_.policy == GcPolicy::kBackground ? gc_.scan_period_ms : 5 * gc_.scan_period_ms);
  std::unique_lock<std::mutex> lock(collector_mu_);
  while (!collector_cv_.wait_for(lock, period, [&] { return collector_stop_; })) {
    lock.unlock();
    Sweep(collector_slot_);
    lock.lock();
  }
}

size_t MultiVersionStore::ChainLength(Key key) {
  Record* record = index_.Find(key);
  size_t length = 0;
  if (!record) return 0;
  for (Version* v = record->head.load(std::memory_order_acquire); v;
       v = v->next.load(std::memory_order_acquire)) {
    ++length;
  }
  return length;
}

StoreMetrics MultiVersionStore::Metrics() {
  StoreMetrics metrics;
  metrics.keys = index_.dense_count() + index_.sparse_count();
  metrics.live_versions = static_cast<uint64_t>(std::max<int64_t>(0, live_versions_.load()));
  metrics.bytes = static_cast<uint64_t>(std::max<int64_t>(0, live_bytes_.load()));
  metrics.reclaimed_versions = reclaimed_.load(std::memory_order_relaxed);
  metrics.freed_versions = reclaimer_.freed();
  metrics.longest_chain = longest_chain_.load(std::memory_order_relaxed);
  return metrics;
}

}  // namespace paxflow
