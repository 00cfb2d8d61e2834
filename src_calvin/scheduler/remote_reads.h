// Gathers the reads of multi-partition txns that this partition executes.
//
// Owns: for each such txn not yet run, the values received so far.
// In: other partitions' reads (transport thread, AddRemote) and the txn's
// local part (a worker, AddLocal), in either order.
// Out: the txn, once every expected participant's reads are here, exactly
// once. A message that is malformed, from a partition that reads nothing
// for the txn, or repeated, is dropped and reported, whatever the arrival
// order: the txn then waits for a well-formed one. A message marked as sent
// again (resent) that repeats one already taken is expected, and said so.
// Also: which parked txns have waited too long for whose reads (Overdue),
// so that the node asks those partitions again (a message can be lost).
// Threads: any; one mutex.
#pragma once
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "applications/application.h"
#include "message.pb.h"
#include "scheduler/txn_work.h"

namespace paxflow {

// The epoch a txn's reads are used in: where it runs, which is later than
// its id's epoch for a txn the LTX lane deferred.
inline Epoch RunEpochOf(const RemoteReads& reads) {
  return reads.run_epoch() ? reads.run_epoch() : TxnEpoch(reads.txn_id());
}

// Reads a partition has waited for too long: the txns of ours (parked, in
// admitted epochs) whose reads from `from` have not come.
struct OverdueReads {
  PartitionId from = 0;
  Epoch first_epoch = 0, last_epoch = 0;  // their run epochs
  std::vector<TxnId> txns;                // oldest run epoch first
};

class RemoteReadTable {
 public:
  // Records another partition's reads. Returns the txn when this completed a
  // txn whose local part is parked here (the caller schedules it to resume).
  TxnWork* AddRemote(RemoteReads&& reads, std::string* error);
  // Parks the local part of `work` with its local reads. Returns true if
  // every remote read had already arrived: `reads` then holds them all and
  // the caller runs the txn now. Early messages that do not fit the txn are
  // dropped, and said in `error`.
  // `now_us`: when it parks (for Overdue).
  bool AddLocal(TxnWork* work, ReadValues* reads, std::string* error, int64_t now_us = 0);
  // The reads of a txn that AddRemote reported complete.
  std::unique_ptr<ReadValues> Take(TxnId id);
  // Forgets what arrived for txns of epochs <= `epoch` that never ran here
  // (garbage, or duplicates after the txn ran); returns how many, of which
  // `expected` (if given) were repeats after a restart: for txns of epochs
  // <= `expected_through`, or only in messages marked as sent again.
  size_t DropThrough(Epoch epoch, Epoch expected_through = 0, size_t* expected = nullptr);
  // Txns whose local part has been parked here for at least `wait_us`
  // (counted from when it parked, or from when it was last reported here)
  // and still misses some partitions' reads: by partition, at most
  // `max_txns` each, oldest run epoch first. Those reported are marked as
  // asked at `now_us`: the next report of them comes `wait_us` later.
  std::vector<OverdueReads> Overdue(int64_t now_us, int64_t wait_us, size_t max_txns);

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    std::vector<RemoteReads> early;  // arrived before the local part, shape checked
    Epoch run_epoch = 0;             // the epoch the txn runs in (DropThrough)
    std::unique_ptr<ReadValues> values;
    std::vector<PartitionId> senders;  // accepted so far
    TxnWork* work = nullptr;
    bool complete = false;  // handed back once; later messages are dropped
    bool resent_only = true;  // every message so far was marked as sent again
    int64_t parked_us = 0;    // when the local part parked (AddLocal's `now_us`)
    int64_t asked_us = 0;     // when Overdue last reported it
  };
  // Checks that does not need the txn: every field has one entry per position.
  static bool WellFormed(const RemoteReads& reads, std::string* error);
  // Checks against the txn, then merges. Nothing is merged on error.
  static bool Accept(const RemoteReads& reads, const TxnWork& work, const Entry& entry,
                     ReadValues* values, std::string* error);

  mutable std::mutex mu_;
  std::unordered_map<TxnId, Entry> entries_;
};

}  // namespace paxflow
