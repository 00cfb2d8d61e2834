// Vanilla Calvin's store: one value per key, updated in place.
// Every access (reads and scans included) happens under the lock manager's
// locks, so records need no synchronisation of their own; only the key
// index (shared with the multi-version store) is safe for concurrent
// inserts. Snapshot reads are not supported: --mode=calvin has no
// snapshots, and ReadAt / ScanAt read the current state.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "backend/key_index.h"
#include "backend/store.h"

namespace paxflow {

class SingleVersionStore : public Store {
 public:
  // `dense_keys` and `value_size` size the preallocated slab for loaded keys.
  SingleVersionStore(PartitionId partition, uint32_t partitions, uint64_t dense_keys,
                     uint32_t value_size);
  ~SingleVersionStore() override;

  size_t RegisterThread() override { return 0; }
  void Load(Key key, std::string_view value) override;
  bool ReadLatest(size_t slot, Key key, std::string_view* value) override;
  void Write(size_t slot, Key key, std::string_view value, Epoch epoch) override;
  void Delete(size_t slot, Key key, Epoch epoch) override;
  void ScanLatest(size_t slot, Key lo, Key hi, const ScanVisitor& visit) override;
  // Read the current value: --mode=calvin reads under locks, never snapshots.
  void EnterSnapshot(size_t) override {}
  bool ReadAt(size_t slot, Key key, Epoch version, std::string_view* value) override;
  void ScanAt(size_t slot, Key lo, Key hi, Epoch version, const ScanVisitor& visit) override;
  void ExitSnapshot(size_t) override {}
  bool multi_version() const override { return false; }
  void Prefetch(Key key, int stage) override;
  void SetSnapshotPins(std::vector<Epoch>) override {}
  void Scan(size_t slot, Epoch epoch, const Visitor& visit) override;
  StoreMetrics Metrics() override;

 private:
  struct Record {
    char* data = nullptr;  // a buffer of `capacity` bytes, kept when deleted
    uint32_t size = 0;
    uint32_t capacity = 0;
    bool owns_data = false;  // false: points into the slab (or nowhere)
    bool present = false;    // holds a value
  };
  void Assign(Record* record, std::string_view value);

  KeyIndex<Record> index_;
  const uint32_t slab_value_size_;
  HugeBuffer slab_;  // one value_size slot per dense key
};

}  // namespace paxflow
