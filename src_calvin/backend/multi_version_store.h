// PaxFlow's two-layer store: per key, a chain of immutable versions tagged
// by epoch, newest first.
//
// The write buffer is the chain's prefix of versions whose epoch is not yet
// published; the committed layer is the rest. Publishing an epoch is one
// atomic store of publish_epoch: nothing is copied, readers at an older
// version simply skip the newer versions. Within an epoch the last writer
// in order replaces the epoch's version.
//
// Readers of a snapshot take no lock: they walk the chain inside an
// epoch-reclamation section. Garbage collection unlinks versions that no
// snapshot pin needs, under a per-key latch that only writers and
// collectors take; unlinked versions are freed once no reader can reach
// them. Policies (GcPolicy): background scans below the oldest pin; EPO
// prunes between pins on every write; EPO-R prunes between pins when a read
// walks past a dead version.
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

#include "backend/epoch_reclaimer.h"
#include "backend/key_index.h"
#include "backend/store.h"

namespace paxflow {

enum class GcPolicy { kBackground, kEpo, kEpoRead };
const char* GcPolicyName(GcPolicy policy);
bool ParseGcPolicy(const std::string& text, GcPolicy* policy);

struct GcOptions {
  GcPolicy policy = GcPolicy::kEpo;
  uint32_t scan_period_ms = 200;  // background sweep (all policies; EPO/EPO-R rely on it less)
  size_t max_threads = 64;        // reader/writer slots
};

class MultiVersionStore : public Store {
 public:
  // `value_size`: the size of loaded values, to lay the initial versions of
  // dense keys out in one huge-page slab (others are allocated one by one).
  MultiVersionStore(PartitionId partition, uint32_t partitions, uint64_t dense_keys,
                    uint32_t value_size, GcOptions gc);
  ~MultiVersionStore() override;

  size_t RegisterThread() override;
  void Load(Key key, std::string_view value) override;
  bool ReadLatest(size_t slot, Key key, std::string_view* value) override;
  void Write(size_t slot, Key key, std::string_view value, Epoch epoch) override;
  void EnterSnapshot(size_t slot) override { reclaimer_.Enter(slot); }
  bool ReadAt(size_t slot, Key key, Epoch version, std::string_view* value) override;
  void ExitSnapshot(size_t slot) override { reclaimer_.Exit(slot); }
  bool multi_version() const override { return true; }
  void Prefetch(Key key, int stage) override;
  void SetSnapshotPins(std::vector<Epoch> pins) override;
  void Scan(size_t slot, Epoch epoch, const Visitor& visit) override;
  StoreMetrics Metrics() override;

  // One full garbage-collection sweep over every key (the background
  // collector's step; tests call it directly).
  void Sweep(size_t slot);
  // Starts the background collector thread.
  void StartCollector();
  // Versions linked for `key`; only while no collector or writer runs (tests).
  size_t ChainLength(Key key);

 private:
  struct Version {
    Epoch epoch;
    std::atomic<Version*> next;
    uint32_t size;
    bool in_slab;  // part of the initial-load slab: never freed on its own
    char* data() { return reinterpret_cast<char*>(this + 1); }
  };
  struct Record {
    std::atomic<Version*> head{nullptr};
    std::atomic<uint32_t> latch{0};  // writers and collectors; never readers
  };
  struct Pins {
    std::vector<Epoch> epochs;  // ascending, non-empty
  };

  static Version* NewVersion(Epoch epoch, std::string_view value);
  static void FreeVersion(void* version);
  void Lock(Record* record);
  bool TryLock(Record* record);
  void Unlock(Record* record) { record->latch.store(0, std::memory_order_release); }
  // Unlinks the versions of `record` that no pin needs. Caller holds the latch.
  void Prune(size_t slot, Record* record, bool below_oldest_only);
  static void FreePins(void* pins) { delete static_cast<const Pins*>(pins); }
  void CollectorLoop();

  KeyIndex<Record> index_;
  size_t slab_stride_ = 0;
  HugeBuffer slab_;
  const GcOptions gc_;
  EpochReclaimer reclaimer_;
  std::atomic<size_t> next_slot_{0};
  size_t collector_slot_ = 0;
  // Read inside an epoch-reclamation section; replaced copies are retired.
  std::atomic<const Pins*> pins_;
  size_t pins_slot_ = 0;  // the scheduler thread's, for retiring old pins

  std::atomic<int64_t> live_versions_{0};
  std::atomic<int64_t> live_bytes_{0};
  std::atomic<uint64_t> reclaimed_{0};
  std::atomic<uint64_t> longest_chain_{0};

  std::thread collector_;
  std::mutex collector_mu_;
  std::condition_variable collector_cv_;
  bool collector_stop_ = false;
};

}  // namespace paxflow
