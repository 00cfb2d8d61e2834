// Gathers the reads of multi-partition txns that this partition executes.
//
// Owns: for each such txn not yet run, the values received so far.
// In: other partitions' reads (transport thread, AddRemote) and the txn's
// local part (a worker, AddLocal), in either order.
// Out: the txn, once every participant's reads are here.
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

class RemoteReadTable {
 public:
  // Records another partition's reads. Returns the txn when this completed a
  // txn whose local part is parked here (the caller schedules it to resume).
  TxnWork* AddRemote(RemoteReads&& reads, std::string* error);
  // Parks the local part of `work` with its local reads. Returns true if
  // every remote read had already arrived: `reads` then holds them all and
  // the caller runs the txn now.
  bool AddLocal(TxnWork* work, ReadValues* reads);
  // The reads of a txn that AddRemote reported complete.
  std::unique_ptr<ReadValues> Take(TxnId id);

  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    std::vector<RemoteReads> early;  // arrived before the local part
    std::unique_ptr<ReadValues> values;
    std::vector<PartitionId> senders;
    TxnWork* work = nullptr;
  };
  static bool Merge(const RemoteReads& reads, ReadValues* values, std::string* error);

  mutable std::mutex mu_;
  std::unordered_map<TxnId, Entry> entries_;
};

}  // namespace paxflow
