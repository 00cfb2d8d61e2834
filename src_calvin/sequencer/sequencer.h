// A sequencer: cuts its node's incoming txns into one batch per epoch,
// fixes their place in the global order (txn ids), classifies them RO/RW,
// and splits the batch into one sub-batch per partition.
//
// Owns: the txn sources' output until it is handed over.
// In: txns from its TxnSources. Out: per-partition batches (CloseEpoch).
// Threads: CloseEpoch runs on one thread (SequencerRunner's, or a test's).
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <memory>
#include <thread>
#include <vector>

#include "common/types.h"
#include "sequencer/record_queue.h"
#include "sequencer/txn_source.h"
#include "txn.pb.h"

namespace paxflow {

struct SequencerOptions {
  // Unique in the cluster: partition * sequencers_per_node + the sequencer's
  // index on its node (SequencerId). Orders batches within an epoch.
  uint32_t sequencer_id = 0;
  PartitionId partition = 0;  // of the node it runs on: its txns' origin
  uint32_t partitions = 1;
  NodeId node = 0;
  uint32_t max_batch = 2000;
};

// The cluster-wide id of sequencer `index` of the node on `partition`.
inline uint32_t SequencerId(PartitionId partition, uint32_t index, uint32_t per_node) {
  return partition * per_node + index;
}

class Sequencer {
 public:
  // `records`: the LTX lane's records for this sequencer (null: none).
  Sequencer(const SequencerOptions& options, std::vector<TxnSource*> sources,
            RecordQueue* records = nullptr);

  // Closes `epoch`: one batch per partition, indexed by partition; empty
  // ones included so no scheduler waits for them. Without `take_new` only
  // LTX records go in (the load has ended; the lane is draining).
  std::vector<std::unique_ptr<Batch>> CloseEpoch(Epoch epoch, int64_t now_us, bool final,
                                                 bool take_new = true);

  // RO when the txn writes nothing; the client's LTX request is kept.
  static TxnClass Classify(const Txn& txn);
  // LTX records go to every partition; a commit record takes along only
  // the writes of the partition it goes to.
  static void SplitLtxRecord(const Txn& txn, uint32_t partitions,
                             std::vector<std::unique_ptr<Batch>>* out);

  // Epochs closed that took new txns, and of those, the ones whose batch
  // reached max_batch: how often the batch cap bounded the load. Written by
  // the sequencer's thread, read by any.
  uint64_t epochs_taking_new() const { return epochs_taking_new_.load(std::memory_order_relaxed); }
  uint64_t epochs_at_batch_cap() const {
    return epochs_at_batch_cap_.load(std::memory_order_relaxed);
  }

 private:
  const SequencerOptions options_;
  std::atomic<uint64_t> epochs_taking_new_{0};
  std::atomic<uint64_t> epochs_at_batch_cap_{0};
  std::vector<TxnSource*> sources_;
  RecordQueue* const records_;
  std::vector<uint8_t> marks_;  // by partition, CloseEpoch scratch
};

// Drives a Sequencer on a timer: one epoch every `epoch_ms`, until asked to
// stop or `run_epochs` epochs (0: no limit). The last epoch is marked final.
class SequencerRunner {
 public:
  using Deliver = std::function<void(PartitionId, std::unique_ptr<Batch>)>;
  // Epoch e closes at `start` + e * epoch_ms; a runner that falls behind
  // closes epochs back to back until it is on schedule again, so sequencers
  // started together stay in step.
  SequencerRunner(Sequencer* sequencer, uint32_t epoch_ms, uint64_t run_epochs, Deliver deliver,
                  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now());
  ~SequencerRunner();

  // Before Start. Durability and flow control:
  // - the first epoch to close (a restarted node resumes after the last
  //   epoch its sequencer log holds);
  // - `before_send` sees each epoch's batches before any is delivered (the
  //   sequencer log); false stops the runner for good (failed());
  // - `limit` returns the highest epoch it may close now: while the next
  //   one is beyond it the runner waits (peers that cannot keep up, or a
  //   dead one, stop it instead of filling memory), then resumes at its pace.
  using BeforeSend = std::function<bool(Epoch, const std::vector<std::unique_ptr<Batch>>&)>;
  void SetFirstEpoch(Epoch epoch) { first_epoch_ = epoch; }
  void SetBeforeSend(BeforeSend hook) { before_send_ = std::move(hook); }
  void SetLimit(std::function<Epoch()> limit) { limit_ = std::move(limit); }
  // Epochs up to `epoch` are closed back to back, not on the clock: a
  // sequencer behind the others (restarted, or held back) catches up, so
  // that no epoch waits long for its batch. Any thread.
  void CatchUpTo(Epoch epoch);

  void Start();
  // A runner whose before_send refused an epoch (failed(): a deposed
  // leader's proposal) starts again at `first_epoch` (its member leads
  // again). False, and nothing changes, if it is still running.
  bool Restart(Epoch first_epoch);
  // Ends the load: the next epoch is the last to take new txns. Without a
  // drain (SetDrain) it is the final one. With one, epochs keep closing on
  // schedule, with records only, until `drain` says this sequencer owes
  // nothing (no LTX begun here unresolved, no record unsequenced); the
  // epoch that took the last new txns is never final, since LTXs it begins
  // are not known to `drain` yet.
  void RequestStop();
  // Ends at the next epoch whatever is unresolved (shutdown).
  void Abort();
  void SetDrain(std::function<bool()> drain) { drain_ = std::move(drain); }
  void Join();
  Epoch current_epoch() const { return epoch_.load(std::memory_order_relaxed); }
  bool done() const { return done_.load(); }
  bool failed() const { return failed_.load(); }  // before_send refused an epoch

 private:
  void Run();
  bool WaitForLimit(Epoch epoch);  // true if it had to wait

  Sequencer* const sequencer_;
  const uint32_t epoch_ms_;
  const uint64_t run_epochs_;
  Deliver deliver_;
  const std::chrono::steady_clock::time_point start_;
  std::atomic<Epoch> epoch_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> abort_{false};
  std::atomic<bool> done_{false};
  std::function<bool()> drain_;
  std::atomic<bool> failed_{false};
  Epoch first_epoch_ = 1;
  BeforeSend before_send_;
  std::function<Epoch()> limit_;
  std::atomic<Epoch> catch_up_to_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace paxflow
