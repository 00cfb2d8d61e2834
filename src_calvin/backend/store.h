// The storage interface both engines run on.
//
// Owns: every key's value(s) on one partition.
// Threads: Load runs on one thread before execution starts. ReadLatest and
// Write are called by workers holding the key's lock from the lock manager.
// Snapshot reads (multi-version stores) run on any thread inside a
// SnapshotScope and take no lock. Publish runs on the scheduler thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/types.h"

namespace paxflow {

struct StoreMetrics {
  uint64_t keys = 0;
  uint64_t live_versions = 0;
  uint64_t bytes = 0;             // value bytes held, all versions
  uint64_t reclaimed_versions = 0;// since start
  uint64_t longest_chain = 0;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual void Load(Key key, std::string_view value) = 0;

  // Newest value, including writes of epochs not yet published. The view
  // stays valid while the caller holds the key's lock.
  virtual bool ReadLatest(Key key, std::string_view* value) = 0;
  // Installs `value` as written by a txn of `epoch`; within an epoch the
  // last writer in order wins. Caller holds the key's exclusive lock.
  virtual void Write(Key key, std::string_view value, Epoch epoch) = 0;

  // Newest value written at an epoch <= `version`. Multi-version stores
  // only; the caller is inside a snapshot scope for `version` (see below).
  virtual bool ReadAt(Key key, Epoch version, std::string_view* value) = 0;
  virtual bool multi_version() const = 0;

  // Epoch `epoch` (and all before it) is complete on this partition.
  virtual void Publish(Epoch epoch) = 0;

  // Order-independent hash of every (key, value) as of `epoch`. A
  // single-version store hashes its current state: the caller makes sure no
  // write of a later epoch has been applied.
  virtual uint64_t Digest(Epoch epoch) = 0;

  virtual StoreMetrics Metrics() = 0;
};

}  // namespace paxflow
