// The storage interface both engines run on.
//
// Owns: every key's value(s) on one partition.
// Threads: every thread that reads or writes first takes a slot
// (RegisterThread) and passes it on each call: a multi-version store keeps
// its reclamation state per slot. Load runs on one thread before execution.
// ReadLatest, ScanLatest, Write and Delete are called by workers holding the
// keys' locks from the lock manager (or, for a scan, the range's). Snapshot
// reads and scans run between EnterSnapshot and ExitSnapshot on any thread
// and take no lock. SetSnapshotPins comes from the scheduler thread.
// Publishing an epoch needs nothing from a store: readers only ever read
// snapshots the scheduler has published, and writes are tagged with epochs
// not yet published.
//
// Keys of a partition are those with key % partitions == partition; dense
// keys (below the application's DenseKeys()) sit in an array, others in a
// hash index that also keeps them in key order, so a scan over any span
// costs in proportion to the keys present in it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"

namespace paxflow {

struct StoreMetrics {
  uint64_t keys = 0;
  uint64_t live_versions = 0;       // versions still linked in some chain
  uint64_t bytes = 0;               // value bytes of those versions
  uint64_t reclaimed_versions = 0;  // unlinked by GC since start
  uint64_t freed_versions = 0;      // memory returned since start
  uint64_t longest_chain = 0;       // as of the last full scan
};

// Receives one key and its value in a scan; the view is valid during the call.
using ScanVisitor = std::function<void(Key, std::string_view)>;

class Store {
 public:
  virtual ~Store() = default;

  // A slot for the calling thread; each thread uses its own.
  virtual size_t RegisterThread() = 0;

  virtual void Load(Key key, std::string_view value) = 0;

  // Newest value, including writes of epochs not yet published. The view
  // stays valid while the caller holds the key's lock.
  virtual bool ReadLatest(size_t slot, Key key, std::string_view* value) = 0;
  // Installs `value` as written by a txn of `epoch`; within an epoch the
  // last writer in order wins. Caller holds the key's exclusive lock.
  virtual void Write(size_t slot, Key key, std::string_view value, Epoch epoch) = 0;
  // Removes `key` as of `epoch`, under the same contract as Write: reads at
  // or after `epoch` (and the newest value, and the digest) see it absent.
  virtual void Delete(size_t slot, Key key, Epoch epoch) = 0;
  // Visits, in ascending key order, every key of this partition in [lo, hi]
  // with its newest value (as ReadLatest). Caller holds the range's locks.
  virtual void ScanLatest(size_t slot, Key lo, Key hi, const ScanVisitor& visit) = 0;

  // Snapshot reads: the newest value written at an epoch <= `version`. Views
  // stay valid until ExitSnapshot. Multi-version stores only.
  virtual void EnterSnapshot(size_t slot) = 0;
  virtual bool ReadAt(size_t slot, Key key, Epoch version, std::string_view* value) = 0;
  // Visits, in ascending key order, every key of this partition in [lo, hi]
  // that has a value at `version` (as ReadAt). Concurrent writers of other
  // keys and inserts of new keys go on meanwhile.
  virtual void ScanAt(size_t slot, Key lo, Key hi, Epoch version, const ScanVisitor& visit) = 0;
  virtual void ExitSnapshot(size_t slot) = 0;
  virtual bool multi_version() const = 0;

  // Hint that `key` is read soon, so a txn's independent reads overlap their
  // cache misses: stage 1 fetches the key's record; stage 2, issued later
  // once the record is cached, fetches its newest value. Never faults.
  virtual void Prefetch(Key key, int stage) = 0;

  // Every snapshot version some reader may still read, ascending; the last
  // one also stands for every later snapshot. Versions no pin needs are
  // garbage. A new set never adds a pin below the previous last one that
  // was not already a pin (readers start at snapshots already pinned), so a
  // version found garbage stays garbage.
  virtual void SetSnapshotPins(std::vector<Epoch> pins) = 0;
  // Visits every (key, value) as of `epoch`, in no particular order (a
  // checkpoint). A multi-version store walks that snapshot, which must stay
  // pinned meanwhile (SetSnapshotPins), concurrently with writers of later
  // epochs; a single-version store visits its current state: the caller
  // makes sure no write is under way (the partition is paused). The views
  // are valid during the call only.
  using Visitor = std::function<void(Key, std::string_view)>;
  virtual void Scan(size_t slot, Epoch epoch, const Visitor& visit) = 0;
  // Order-independent hash of every (key, value) as of `epoch`, under
  // Scan's conditions.
  uint64_t Digest(size_t slot, Epoch epoch);

  virtual StoreMetrics Metrics() = 0;
};

}  // namespace paxflow
