#include "backend/multi_version_store.h"

#include <glog/logging.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/hash.h"
#include "common/single_writer.h"

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

bool MultiVersionStore::Pins::Needed(Epoch epoch, Epoch newer_epoch) const {
  if (epoch > epochs.back()) return true;  // the newest pin stands for every later snapshot
  auto pin = std::lower_bound(epochs.begin(), epochs.end(), epoch);
  return *pin < newer_epoch;
}

MultiVersionStore::MultiVersionStore(PartitionId partition, uint32_t partitions,
                                     uint64_t dense_keys, uint32_t /*value_size*/, GcOptions gc)
    : index_(partition, partitions, dense_keys),
      gc_(gc),
      pool_(gc.max_threads),
      reclaimer_(gc.max_threads, this),
      pins_(std::make_shared<const Pins>(Pins{{0}})) {
  for (size_t i = 0; i < gc.max_threads; ++i) slots_.push_back(std::make_unique<SlotState>());
  collector_slot_ = RegisterThread();
  load_slot_ = RegisterThread();
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
  // Pooled versions go with the pool's chunks; only malloc'ed ones are freed.
  index_.ForEach([](Key, Record& record) {
    Version* version = record.head.load(std::memory_order_relaxed);
    while (version) {
      Version* next = version->next.load(std::memory_order_relaxed);
      if (version->size_class == BlockPool::kUnpooled) std::free(version);
      version = next;
    }
  });
}

size_t MultiVersionStore::RegisterThread() {
  const size_t slot = next_slot_.fetch_add(1);
  CHECK_LT(slot, reclaimer_.slots()) << "more threads than GcOptions::max_threads";
  return slot;
}

void MultiVersionStore::Fill(Version* version, std::string_view value, bool tombstone) {
  version->tombstone = tombstone;
  version->size = tombstone ? 0 : static_cast<uint32_t>(value.size());
  if (!tombstone && !value.empty()) std::memcpy(version->data(), value.data(), value.size());
}

MultiVersionStore::Version* MultiVersionStore::NewVersion(size_t slot, Epoch epoch,
                                                          std::string_view value,
                                                          bool tombstone) {
  const size_t bytes = sizeof(Version) + (tombstone ? 0 : value.size());
  const uint16_t size_class = BlockPool::ClassFor(bytes);
  auto* version = new (pool_.Allocate(slot, size_class, bytes)) Version;
  version->epoch.store(epoch, std::memory_order_relaxed);
  version->next.store(nullptr, std::memory_order_relaxed);
  version->size_class = size_class;
  Fill(version, value, tombstone);
  return version;
}

// Runs on the thread of the slot that retired the version (EpochReclaimer),
// or at destruction; touches only the pool.
void MultiVersionStore::FreeVersion(void* store, size_t slot, void* memory) {
  auto* version = static_cast<Version*>(memory);
  const uint16_t size_class = version->size_class;
  version->~Version();
  static_cast<MultiVersionStore*>(store)->pool_.Free(slot, memory, size_class);
}

void MultiVersionStore::Retire(size_t slot, Version* version) {
  Count(slot, -1, -static_cast<int64_t>(version->size));
  reclaimer_.Retire(slot, version, &FreeVersion);
}

void MultiVersionStore::Count(size_t slot, int64_t versions, int64_t bytes) {
  // One thread per slot: plain read-modify-write, atomic only for Metrics.
  SlotState& state = *slots_[slot];
  SingleWriterAdd(state.live_versions, versions);
  SingleWriterAdd(state.live_bytes, bytes);
}

const MultiVersionStore::Pins& MultiVersionStore::CurrentPins(size_t slot) {
  SlotState& state = *slots_[slot];
  if (state.pins_generation != pins_generation_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(pins_mu_);
    state.pins = pins_;
    state.pins_generation = pins_generation_.load(std::memory_order_relaxed);
  }
  return *state.pins;
}

uint32_t MultiVersionStore::Lock(Record* record) {
  uint32_t state = record->state.load(std::memory_order_relaxed);
  int spins = 0;
  while (true) {
    if (!(state & kLatched)) {
      if (record->state.compare_exchange_weak(state, state | kLatched,
                                              std::memory_order_acquire,
                                              std::memory_order_relaxed)) {
        return state | kLatched;
      }
      continue;
    }
    // Held only for a few pointer updates; yield rather than burn the core.
    if (++spins > 64) std::this_thread::yield();
    state = record->state.load(std::memory_order_relaxed);
  }
}

bool MultiVersionStore::TryLock(Record* record, uint32_t* state) {
  uint32_t expected = record->state.load(std::memory_order_relaxed);
  if (expected & kLatched) return false;
  if (!record->state.compare_exchange_strong(expected, expected | kLatched,
                                             std::memory_order_acquire)) {
    return false;
  }
  *state = expected | kLatched;
  return true;
}

void MultiVersionStore::Load(Key key, std::string_view value) {
  Record* record = index_.FindOrCreate(key);
  Version* version = NewVersion(load_slot_, 0, value, false);
  version->next.store(record->head.load(std::memory_order_relaxed), std::memory_order_relaxed);
  record->head.store(version, std::memory_order_release);
  Count(load_slot_, 1, static_cast<int64_t>(value.size()));
}

bool MultiVersionStore::ReadLatest(size_t, Key key, std::string_view* value) {
  Record* record = index_.Find(key);
  if (!record) return false;
  // The caller's lock keeps writers away, and collectors never unlink a head.
  Version* head = record->head.load(std::memory_order_acquire);
  if (!head) return false;
  // A value spills into the block's second cache line: fetch both at once.
  __builtin_prefetch(reinterpret_cast<const char*>(head) + 64);
  // A write of this key (most reads under a lock precede one) looks at the
  // version below the head (Recycle, Prune): fetch it while the txn runs.
  __builtin_prefetch(head->next.load(std::memory_order_relaxed), 1);
  if (head->tombstone) return false;
  *value = std::string_view(head->data(), head->size);
  return true;
}

void MultiVersionStore::Write(size_t slot, Key key, std::string_view value, Epoch epoch) {
  Install(slot, index_.FindOrCreate(key), value, epoch, /*tombstone=*/false);
}

void MultiVersionStore::Delete(size_t slot, Key key, Epoch epoch) {
  Record* record = index_.Find(key);
  if (!record) return;  // never existed: nothing to hide
  Install(slot, record, std::string_view(), epoch, /*tombstone=*/true);
}

void MultiVersionStore::Install(size_t slot, Record* record, std::string_view value, Epoch epoch,
                                bool tombstone) {
  uint32_t state = Lock(record);
  Version* head = record->head.load(std::memory_order_relaxed);
  const int64_t size = tombstone ? 0 : static_cast<int64_t>(value.size());
  if (tombstone && (!head || (head->tombstone &&
                              head->epoch.load(std::memory_order_relaxed) <= epoch))) {
    Unlock(record, state);  // already absent at `epoch` and after
    return;
  }
  bool done = false;
  if (head && head->capacity() >= static_cast<size_t>(size)) {
    const Epoch head_epoch = head->epoch.load(std::memory_order_relaxed);
    if (head_epoch == epoch) {
      // Same epoch: the later writer in order wins. No snapshot reader reads
      // an epoch before it is published, so the version is rewritten in place.
      Count(slot, 0, size - head->size);
      Fill(head, value, tombstone);
      done = true;
    } else if (head_epoch < epoch &&
               !CurrentPins(slot).Needed(head_epoch, epoch)) {
      // No pin lies in [head_epoch, epoch): the head is garbage the moment a
      // version at `epoch` exists, and no reader will read its value (new
      // pins start at or above the newest). Its block becomes that version.
      Count(slot, 0, size - head->size);
      head->epoch.store(epoch, std::memory_order_relaxed);
      Fill(head, value, tombstone);
      done = true;
    }
  }
  if (!done && head && head->epoch.load(std::memory_order_relaxed) < epoch) {
    done = Recycle(slot, record, head, value, epoch, tombstone);
  }
  if (!done) {
    Version* fresh = NewVersion(slot, epoch, value, tombstone);
    Count(slot, 1, size);
    // Versions stay sorted newest first. Short txns always write at or above
    // the head's epoch; the general walk keeps any other writer correct too.
    std::atomic<Version*>* link = &record->head;
    Version* current = head;
    while (current && current->epoch.load(std::memory_order_relaxed) > epoch) {
      link = &current->next;
      current = link->load(std::memory_order_relaxed);
    }
    if (current && current->epoch.load(std::memory_order_relaxed) == epoch) {
      fresh->next.store(current->next.load(std::memory_order_relaxed), std::memory_order_relaxed);
      link->store(fresh, std::memory_order_release);
      Retire(slot, current);
    } else {
      fresh->next.store(current, std::memory_order_relaxed);
      link->store(fresh, std::memory_order_release);
    }
  }
  head = record->head.load(std::memory_order_relaxed);
  size_t length = head->next.load(std::memory_order_relaxed) ? 2 : 1;
  if (length > 1 && gc_.policy == GcPolicy::kEpo) {
    length = Prune(slot, record, /*below_oldest_only=*/false);
  }
  if (length > 1 && !(state & kListed)) {
    // Older versions stay for now: the collector revisits the key.
    state |= kListed;
    SlotState& owner = *slots_[slot];
    std::lock_guard<std::mutex> lock(owner.mu);
    owner.listed.push_back(record);
  }
  Unlock(record, state);
}

bool MultiVersionStore::Recycle(size_t slot, Record* record, Version* head,
                                std::string_view value, Epoch epoch, bool tombstone) {
  Version* older = head->next.load(std::memory_order_relaxed);
  const size_t size = tombstone ? 0 : value.size();
  if (!older || older->capacity() < size ||
      CurrentPins(slot).Needed(older->epoch.load(std::memory_order_relaxed),
                               head->epoch.load(std::memory_order_relaxed))) {
    return false;
  }
  // No pin lies in [older, head): no snapshot reader reads `older`'s value,
  // now or later (new pins start at or above the newest). A reader walking
  // past it (to a version below) may hold it; it reads only its epoch and
  // link. Both stay sound at every step: the epoch goes from one above the
  // reader's snapshot to another (`epoch` is unpublished), and the links
  // change head -> older -> below into older -> head -> below without a
  // cycle, the unlink first, so a walk that reaches the block again
  // continues at head and then below. No reader ever sees the value being
  // written. The block thus skips retirement, the pool and a fresh block's
  // cache misses: in a write-heavy load this is the common case, a head
  // still pinned by a reader's snapshot over one that is garbage.
  head->next.store(older->next.load(std::memory_order_relaxed), std::memory_order_release);
  Count(slot, 0, static_cast<int64_t>(size) - static_cast<int64_t>(older->size));
  older->epoch.store(epoch, std::memory_order_relaxed);
  Fill(older, value, tombstone);
  older->next.store(head, std::memory_order_release);
  record->head.store(older, std::memory_order_release);
  SlotState& counters = *slots_[slot];
  SingleWriterAdd(counters.reclaimed);
  return true;
}

MultiVersionStore::Version* MultiVersionStore::Visible(size_t slot, Record* record,
                                                       Epoch version) {
  Version* head = record->head.load(std::memory_order_acquire);
  Version* current = head;
  // EPO-R looks at the versions this read walks anyway: a skipped version
  // (other than the head) or the one just below what it reads that no pin
  // needs is garbage, and the reader prunes the chain if the latch is free.
  const bool collect = gc_.policy == GcPolicy::kEpoRead;
  const Pins* pins = nullptr;
  auto dead = [&](const Version* v, Epoch newer_epoch) {
    if (!pins) pins = &CurrentPins(slot);
    return !pins->Needed(v->epoch.load(std::memory_order_relaxed), newer_epoch);
  };
  bool saw_dead = false;
  Epoch newer_epoch = UINT64_MAX;
  while (current) {
    const Epoch epoch = current->epoch.load(std::memory_order_relaxed);
    if (epoch <= version) break;
    if (collect && current != head && !saw_dead) saw_dead = dead(current, newer_epoch);
    newer_epoch = epoch;
    current = current->next.load(std::memory_order_acquire);
  }
  if (collect && current) {
    const Version* older = current->next.load(std::memory_order_acquire);
    if (!saw_dead && older) saw_dead = dead(older, current->epoch.load(std::memory_order_relaxed));
    uint32_t state;
    if (saw_dead && TryLock(record, &state)) {
      Prune(slot, record, /*below_oldest_only=*/false);
      Unlock(record, state);
    }
  }
  // Even if a collector unlinked it meanwhile, `current` stays readable until
  // the caller leaves its EBR section.
  return current;
}

bool MultiVersionStore::ReadAt(size_t slot, Key key, Epoch version, std::string_view* value) {
  Record* record = index_.Find(key);
  if (!record) return false;
  Version* found = Visible(slot, record, version);
  if (!found || found->tombstone) return false;
  *value = std::string_view(found->data(), found->size);
  return true;
}

void MultiVersionStore::ScanAt(size_t slot, Key lo, Key hi, Epoch version,
                               const ScanVisitor& visit) {
  // A long scan is bound by memory latency (record, then its head version,
  // then the value, each a miss for a sparse key): records go through a
  // ring, their record fetched kAhead keys before their visit and their
  // head version kAhead / 2 before, so several misses are in flight at once.
  constexpr size_t kAhead = 8;
  struct Pending {
    Key key;
    Record* record;
  };
  Pending ring[kAhead];
  size_t pushed = 0, visited = 0;
  auto visit_next = [&] {
    const Pending& p = ring[visited++ % kAhead];
    Version* found = Visible(slot, p.record, version);
    if (found && !found->tombstone) visit(p.key, std::string_view(found->data(), found->size));
  };
  index_.ForEachInRange(lo, hi, [&](Key key, Record& record) {
    if (pushed - visited == kAhead) visit_next();
    __builtin_prefetch(&record);
    ring[pushed++ % kAhead] = {key, &record};
    if (pushed > kAhead / 2) {
      const Record* half = ring[(pushed - 1 - kAhead / 2) % kAhead].record;
      if (const Version* head = half->head.load(std::memory_order_relaxed)) {
        __builtin_prefetch(head);
        __builtin_prefetch(reinterpret_cast<const char*>(head) + 64);
      }
    }
  });
  while (visited < pushed) visit_next();
}

void MultiVersionStore::ScanLatest(size_t, Key lo, Key hi, const ScanVisitor& visit) {
  index_.ForEachInRange(lo, hi, [&](Key key, Record& record) {
    Version* head = record.head.load(std::memory_order_acquire);
    if (head && !head->tombstone) visit(key, std::string_view(head->data(), head->size));
  });
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

size_t MultiVersionStore::Prune(size_t slot, Record* record, bool below_oldest_only) {
  const Pins& pins = CurrentPins(slot);
  const Epoch oldest = pins.epochs.front();
  const Epoch horizon = pins.epochs.back();
  Version* head = record->head.load(std::memory_order_relaxed);
  if (!head) return 0;
  SlotState& counters = *slots_[slot];
  uint64_t reclaimed = 0;
  size_t length = 1;
  Version* kept = head;
  Version* before_kept = nullptr;
  Epoch newer_epoch = head->epoch.load(std::memory_order_relaxed);
  Version* current = head->next.load(std::memory_order_relaxed);
  while (current) {
    Version* older = current->next.load(std::memory_order_relaxed);
    const Epoch epoch = current->epoch.load(std::memory_order_relaxed);
    bool needed;
    if (epoch > horizon) {
      needed = true;
    } else if (below_oldest_only) {
      needed = epoch > oldest || newer_epoch > oldest;
    } else {
      needed = pins.Needed(epoch, newer_epoch);
    }
    newer_epoch = epoch;
    if (needed) {
      before_kept = kept;
      kept = current;
      ++length;
    } else {
      kept->next.store(older, std::memory_order_release);
      Retire(slot, current);
      ++reclaimed;
    }
    current = older;
  }
  // A tombstone at the tail hides nothing: a reader that reaches it sees the
  // key absent, as it would past the end of the chain. (The head stays:
  // lock holders read it without an EBR section.)
  if (before_kept && kept->tombstone) {
    before_kept->next.store(nullptr, std::memory_order_release);
    Retire(slot, kept);
    ++reclaimed;
    --length;
  }
  if (reclaimed) {
    SingleWriterAdd(counters.reclaimed, reclaimed);
  }
  return length;
}

void MultiVersionStore::SetSnapshotPins(std::vector<Epoch> pins) {
  if (pins.empty()) return;
  std::sort(pins.begin(), pins.end());
  pins.erase(std::unique(pins.begin(), pins.end()), pins.end());
  auto fresh = std::make_shared<const Pins>(Pins{std::move(pins)});
  std::lock_guard<std::mutex> lock(pins_mu_);
  pins_ = std::move(fresh);
  pins_generation_.fetch_add(1, std::memory_order_release);
}

void MultiVersionStore::Scan(size_t slot, Epoch epoch, const Visitor& visit) {
  reclaimer_.Enter(slot);
  index_.ForEach([&](Key key, Record& record) {
    for (Version* v = record.head.load(std::memory_order_acquire); v;
         v = v->next.load(std::memory_order_acquire)) {
      if (v->epoch.load(std::memory_order_relaxed) <= epoch) {
        if (!v->tombstone) visit(key, std::string_view(v->data(), v->size));
        break;
      }
    }
  });
  reclaimer_.Exit(slot);
}

void MultiVersionStore::Sweep(size_t slot) {
  std::lock_guard<std::mutex> sweeping(sweep_mu_);
  std::vector<Record*> listed;
  listed.swap(carried_);
  for (auto& owner : slots_) {
    std::lock_guard<std::mutex> lock(owner->mu);
    listed.insert(listed.end(), owner->listed.begin(), owner->listed.end());
    owner->listed.clear();
  }
  const bool below_oldest_only = gc_.policy == GcPolicy::kBackground;
  uint64_t longest = 1;
  reclaimer_.Enter(slot);
  // Listed records are scattered and cold: fetch a few ahead.
  constexpr size_t kAhead = 8;
  for (size_t i = 0; i < listed.size(); ++i) {
    if (i + kAhead < listed.size()) __builtin_prefetch(listed[i + kAhead], 1);
    if (i + kAhead / 2 < listed.size()) {
      __builtin_prefetch(listed[i + kAhead / 2]->head.load(std::memory_order_relaxed));
    }
    Record* record = listed[i];
    uint32_t state;
    if (!TryLock(record, &state)) {
      carried_.push_back(record);  // a writer has it; next time
      continue;
    }
    const size_t length = Prune(slot, record, below_oldest_only);
    longest = std::max<uint64_t>(longest, length);
    if (length > 1) {
      carried_.push_back(record);
    } else {
      state &= ~kListed;
    }
    Unlock(record, state);
  }
  reclaimer_.Exit(slot);
  reclaimer_.Collect(slot);
  index_.CompactOrder();
  longest_chain_.store(longest, std::memory_order_relaxed);
}

void MultiVersionStore::StartCollector() {
  collector_ = std::thread([this] { CollectorLoop(); });
}

void MultiVersionStore::CollectorLoop() {
  const auto period = std::chrono::milliseconds(gc_.scan_period_ms);
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
  int64_t versions = 0, bytes = 0;
  for (const auto& owner : slots_) {
    versions += owner->live_versions.load(std::memory_order_relaxed);
    bytes += owner->live_bytes.load(std::memory_order_relaxed);
    metrics.reclaimed_versions += owner->reclaimed.load(std::memory_order_relaxed);
  }
  metrics.live_versions = static_cast<uint64_t>(std::max<int64_t>(0, versions));
  metrics.bytes = static_cast<uint64_t>(std::max<int64_t>(0, bytes));
  metrics.freed_versions = reclaimer_.freed();
  metrics.longest_chain = longest_chain_.load(std::memory_order_relaxed);
  return metrics;
}

}  // namespace paxflow
