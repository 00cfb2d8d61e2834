#include "backend/single_version_store.h"

#include <cstring>

#include "common/hash.h"

namespace paxflow {

SingleVersionStore::SingleVersionStore(PartitionId partition, uint32_t partitions,
                                       uint64_t dense_keys, uint32_t value_size)
    : index_(partition, partitions, dense_keys),
      slab_value_size_(value_size),
      slab_(index_.dense_count() * value_size) {}

SingleVersionStore::~SingleVersionStore() {
  index_.ForEach([](Key, Record& record) {
    if (record.owns_data) delete[] record.data;
  });
}

void SingleVersionStore::Assign(Record* record, std::string_view value) {
  record->present = true;
  if (record->data && value.size() <= record->capacity) {
    std::memmove(record->data, value.data(), value.size());
    record->size = static_cast<uint32_t>(value.size());
    return;
  }
  char* data = new char[value.size() + 1];
  std::memcpy(data, value.data(), value.size());
  if (record->owns_data) delete[] record->data;
  record->data = data;
  record->size = static_cast<uint32_t>(value.size());
  record->capacity = static_cast<uint32_t>(value.size());
  record->owns_data = true;
}

void SingleVersionStore::Load(Key key, std::string_view value) {
  Record* record = index_.FindOrCreate(key);
  const int64_t slot = index_.DenseSlot(key);
  if (!record->data && slot >= 0 && value.size() <= slab_value_size_) {
    // Loaded dense keys start in the slab: one allocation for the whole table.
    record->data = slab_.data() + static_cast<uint64_t>(slot) * slab_value_size_;
    record->capacity = slab_value_size_;
  }
  Assign(record, value);
}

bool SingleVersionStore::ReadLatest(size_t, Key key, std::string_view* value) {
  Record* record = index_.Find(key);
  if (!record || !record->present) return false;
  *value = std::string_view(record->data, record->size);
  return true;
}

void SingleVersionStore::Write(size_t, Key key, std::string_view value, Epoch) {
  Assign(index_.FindOrCreate(key), value);
}

void SingleVersionStore::Delete(size_t, Key key, Epoch) {
  Record* record = index_.Find(key);
  if (!record || !record->present) return;
  // The value goes; a large buffer of its own goes too, a slab slot stays
  // for the key's next value.
  record->present = false;
  record->size = 0;
  if (record->owns_data) {
    delete[] record->data;
    record->data = nullptr;
    record->capacity = 0;
    record->owns_data = false;
  }
}

void SingleVersionStore::ScanLatest(size_t, Key lo, Key hi, const ScanVisitor& visit) {
  index_.ForEachInRange(lo, hi, [&](Key key, Record& record) {
    if (record.present) visit(key, std::string_view(record.data, record.size));
  });
}

void SingleVersionStore::ScanAt(size_t slot, Key lo, Key hi, Epoch, const ScanVisitor& visit) {
  ScanLatest(slot, lo, hi, visit);
}

bool SingleVersionStore::ReadAt(size_t slot, Key key, Epoch, std::string_view* value) {
  return ReadLatest(slot, key, value);
}

void SingleVersionStore::Prefetch(Key key, int stage) {
  const int64_t slot = index_.DenseSlot(key);
  if (slot < 0) return;
  Record* record = index_.Find(key);
  if (stage == 1) {
    __builtin_prefetch(record);
  } else if (const char* data = record->present ? record->data : nullptr) {
    __builtin_prefetch(data);
    __builtin_prefetch(data + 64);
  }
}

void SingleVersionStore::Scan(size_t, Epoch, const Visitor& visit) {
  index_.ForEach([&](Key key, Record& record) {
    if (record.present) visit(key, std::string_view(record.data, record.size));
  });
}

StoreMetrics SingleVersionStore::Metrics() {
  StoreMetrics metrics;
  index_.ForEach([&](Key, Record& record) {
    if (!record.present) return;
    ++metrics.keys;
    metrics.bytes += record.size;
  });
  metrics.live_versions = metrics.keys;
  metrics.longest_chain = metrics.keys ? 1 : 0;
  return metrics;
}

}  // namespace paxflow
