// The LTX lane's records (commit, abort, guard) on their way into this
// node's sequencer. Any thread submits; the sequencer takes them all into
// its next batch, ahead of new txns and outside max_batch: a record
// resolves work already in the system, so holding it back helps nobody.
//
// Owns: records submitted and not yet sequenced. Threads: any; one mutex.
#pragma once
#include <deque>
#include <mutex>

#include "scheduler/sinks.h"
#include "txn.pb.h"

namespace paxflow {

class RecordQueue : public RecordSubmitter {
 public:
  void SubmitRecord(Txn record) override {
    std::lock_guard<std::mutex> lock(mu_);
    records_.push_back(std::move(record));
  }
  // Moves every waiting record into `batch`; returns how many.
  size_t TakeAll(int64_t now_us, Batch* batch) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t taken = records_.size();
    for (Txn& record : records_) {
      record.set_submit_time_us(now_us);
      batch->add_txns()->Swap(&record);
    }
    records_.clear();
    return taken;
  }
  size_t size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return records_.size();
  }

 private:
  mutable std::mutex mu_;
  std::deque<Txn> records_;
};

}  // namespace paxflow
