// PaxFlow's two-layer store: per key, a chain of immutable versions tagged
// by epoch, newest first.
//
// The write buffer is the chain's prefix of versions whose epoch is not yet
// published; the committed layer is the rest. Publishing an epoch is one
// atomic store of publish_epoch in the scheduler: nothing is copied, readers
// at an older version simply skip the newer versions. Within an epoch the
// last writer in order replaces the epoch's version. A delete installs a
// tombstone version: readers at or after its epoch see the key absent.
//
// Readers of a snapshot take no lock: they walk the chain inside an
// epoch-reclamation section. Garbage collection unlinks versions that no
// snapshot pin needs, under a per-key latch that only writers and
// collectors take; unlinked versions are freed once no reader can reach
// them, into a pool of fixed-size blocks (block_pool.h) that new versions
// reuse. Policies (GcPolicy) choose the trigger: background prunes below
// the oldest pin on its sweeps only; EPO prunes between pins on every
// write; EPO-R when a read walks past a dead version. Under every policy a
// write that leaves more than one version lists its key for the collector,
// whose sweep (every scan_period_ms) prunes listed keys by the policy's
// rule, so keys written but never read again are reclaimed too, at a cost
// in proportion to the keys written, not to the database.
//
// Writes avoid allocating where no reader can notice: a second write in
// the same epoch overwrites that epoch's version in place (no snapshot
// reader reads an unpublished epoch), and a write whose older head no pin
// needs reuses the head's block (it would be garbage the moment the new
// version is linked). A head that a pin still needs stays, but if the
// version below it is garbage, that version's block becomes the new head
// (Recycle): under a steady write load with readers about, a key's chain
// then alternates between two blocks instead of allocating one per write
// and retiring one per write.
//
// Threads: see store.h. The background collector runs on its own thread.
#pragma once
#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backend/block_pool.h"
#include "backend/epoch_reclaimer.h"
#include "backend/key_index.h"
#include "backend/store.h"

namespace paxflow {

enum class GcPolicy { kBackground, kEpo, kEpoRead };
const char* GcPolicyName(GcPolicy policy);
bool ParseGcPolicy(const std::string& text, GcPolicy* policy);

struct GcOptions {
  GcPolicy policy = GcPolicy::kEpo;
  uint32_t scan_period_ms = 200;  // the collector's sweep of listed keys (every policy)
  size_t max_threads = 64;        // reader/writer slots
};

class MultiVersionStore : public Store {
 public:
  // `value_size` is a hint (the size of loaded values); values of any size work.
  MultiVersionStore(PartitionId partition, uint32_t partitions, uint64_t dense_keys,
                    uint32_t value_size, GcOptions gc);
  ~MultiVersionStore() override;

  size_t RegisterThread() override;
  void Load(Key key, std::string_view value) override;
  bool ReadLatest(size_t slot, Key key, std::string_view* value) override;
  void Write(size_t slot, Key key, std::string_view value, Epoch epoch) override;
  void Delete(size_t slot, Key key, Epoch epoch) override;
  void ScanLatest(size_t slot, Key lo, Key hi, const ScanVisitor& visit) override;
  void EnterSnapshot(size_t slot) override { reclaimer_.Enter(slot); }
  bool ReadAt(size_t slot, Key key, Epoch version, std::string_view* value) override;
  void ScanAt(size_t slot, Key lo, Key hi, Epoch version, const ScanVisitor& visit) override;
  void ExitSnapshot(size_t slot) override { reclaimer_.Exit(slot); }
  bool multi_version() const override { return true; }
  void Prefetch(Key key, int stage) override;
  void SetSnapshotPins(std::vector<Epoch> pins) override;
  void Scan(size_t slot, Epoch epoch, const Visitor& visit) override;
  StoreMetrics Metrics() override;

  // One garbage-collection sweep over the listed keys (the background
  // collector's step; tests call it directly). One sweep at a time.
  void Sweep(size_t slot);
  // Starts the background collector thread.
  void StartCollector();
  // Versions linked for `key`, tombstones included; only while no collector
  // or writer runs (tests).
  size_t ChainLength(Key key);
  // Bytes of memory the version pool has taken from the system.
  uint64_t pool_bytes() const { return pool_.reserved_bytes(); }

 private:
  struct Version {
    // Changes only while no reader may read this version's value: when a
    // writer reuses a head that no pin needs (see Install).
    std::atomic<Epoch> epoch;
    std::atomic<Version*> next;
    uint32_t size;
    uint16_t size_class;  // BlockPool class; kUnpooled: malloc'ed, exactly `size` bytes
    bool tombstone;
    char* data() { return reinterpret_cast<char*>(this + 1); }
    size_t capacity() const {
      return size_class == BlockPool::kUnpooled ? size
                                                : BlockPool::ClassBytes(size_class) - sizeof(Version);
    }
  };
  struct Record {
    std::atomic<Version*> head{nullptr};
    std::atomic<uint32_t> state{0};  // kLatched | kListed
  };
  static constexpr uint32_t kLatched = 1;  // writers and collectors; never readers
  static constexpr uint32_t kListed = 2;   // in a prune list (chain may hold garbage)
  struct Pins {
    std::vector<Epoch> epochs;  // ascending, non-empty
    // Whether a version at `epoch`, below a newer one at `newer_epoch`, is
    // the newest version at or below some pin (or above the newest pin).
    bool Needed(Epoch epoch, Epoch newer_epoch) const;
  };
  // Per-slot state, touched by the slot's thread (and the collector, which
  // drains `listed` under `mu`).
  struct alignas(64) SlotState {
    // The slot's copy of the pins, refreshed when pins_generation_ moves:
    // the fast paths read pins without a shared atomic or an EBR section.
    uint64_t pins_generation = 0;
    std::shared_ptr<const Pins> pins;
    std::atomic<int64_t> live_versions{0};
    std::atomic<int64_t> live_bytes{0};
    std::atomic<uint64_t> reclaimed{0};
    std::mutex mu;
    std::vector<Record*> listed;  // records whose chains the collector revisits
  };

  Version* NewVersion(size_t slot, Epoch epoch, std::string_view value, bool tombstone);
  static void FreeVersion(void* store, size_t slot, void* version);
  void Retire(size_t slot, Version* version);
  static void Fill(Version* version, std::string_view value, bool tombstone);
  void Count(size_t slot, int64_t versions, int64_t bytes);
  // The pins as of the latest SetSnapshotPins this thread has seen (a
  // thread handed work after a SetSnapshotPins sees at least that one).
  const Pins& CurrentPins(size_t slot);
  uint32_t Lock(Record* record);  // returns the state with kLatched set
  bool TryLock(Record* record, uint32_t* state);
  void Unlock(Record* record, uint32_t state) {
    record->state.store(state & ~kLatched, std::memory_order_release);
  }
  // Writes or deletes under the latch.
  void Install(size_t slot, Record* record, std::string_view value, Epoch epoch, bool tombstone);
  // Under the latch, for a write above `head` that `head` must survive
  // (a pin needs it): turns the version below it into the new head if no
  // pin needs that one and its block is large enough. Returns whether it did.
  bool Recycle(size_t slot, Record* record, Version* head, std::string_view value, Epoch epoch,
               bool tombstone);
  // The version a reader at `version` sees (nullptr: none), pruning for
  // EPO-R on the way. Caller is in an EBR section.
  Version* Visible(size_t slot, Record* record, Epoch version);
  // Unlinks the versions of `record` that no pin needs (below the oldest
  // pin only if `below_oldest_only`), and a tombstone left at the tail.
  // Caller holds the latch. Returns the chain length.
  size_t Prune(size_t slot, Record* record, bool below_oldest_only);
  void CollectorLoop();

  KeyIndex<Record> index_;
  const GcOptions gc_;
  BlockPool pool_;             // before reclaimer_: freed versions go back to it
  EpochReclaimer reclaimer_;
  std::vector<std::unique_ptr<SlotState>> slots_;
  std::atomic<size_t> next_slot_{0};
  size_t collector_slot_ = 0;
  size_t load_slot_ = 0;
  std::mutex pins_mu_;
  std::shared_ptr<const Pins> pins_;             // under pins_mu_
  std::atomic<uint64_t> pins_generation_{1};     // bumped under pins_mu_

  std::mutex sweep_mu_;             // one sweep at a time
  std::vector<Record*> carried_;    // under sweep_mu_: still listed after a sweep
  std::atomic<uint64_t> longest_chain_{0};

  std::thread collector_;
  std::mutex collector_mu_;
  std::condition_variable collector_cv_;
  bool collector_stop_ = false;
};

}  // namespace paxflow
