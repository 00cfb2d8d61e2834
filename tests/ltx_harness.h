// A step-driven test bench for the LTX lane: the schedulers of 1..n
// partitions in this process, never started. The test is the sequencer: it
// builds each epoch's txns, hands the LTX lane's records back into the
// epochs it chooses, and runs every thread's work itself (Drain), so each
// interleaving is chosen, not hoped for. A partition can be restarted from
// a checkpoint taken at an epoch boundary (Checkpoint, Restart): a fresh
// store holding the old one's state at that epoch, and a fresh scheduler
// brought there the way a restarted node does it (Scheduler::RestoreAt with
// the LTX lane's saved state, then SetRecoveredThrough); or with no
// checkpoint at all (RestartWithoutCheckpoint: the initial state, the log
// replayed from epoch 1). Either way the other partitions hear of the
// restart (Scheduler::PartitionRestarted), as peers do by hello and
// heartbeat; what sat in the old scheduler's inbox is lost with it.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "applications/application.h"
#include "backend/store.h"
#include "base/params.h"
#include "common/stats.h"
#include "scheduler/scheduler.h"
#include "tests/result_log.h"

namespace paxflow::testing {

struct LtxBenchOptions {
  Mode mode = Mode::kPaxflow;
  uint32_t partitions = 1;
  uint64_t records = 100;
  uint64_t ltx_timeout = 1000;
  uint32_t max_active_ltx = 16;
  uint32_t ltx_max_deferrals = 3;
  // One partition only: LTXs install in place (the node's default there).
  // Off, the step tests drive the commit-record protocol on one partition.
  bool ltx_in_place = false;
  // In place: LTXs that declare their reads run locked, on a worker (the
  // node's default); off, every LTX runs on an LTX thread.
  bool ltx_locked_run = true;
  GcPolicy gc = GcPolicy::kEpo;
  // Calvin mode: the most keys an LTX may lock (0: the scheduler's default).
  uint64_t max_locked_ltx_keys = 0;
  // Admission stops max_unpublished_epochs past publication, as on a node;
  // off, every delivered epoch is admitted at once.
  bool bound_admission = true;
};

// What a checkpoint of one partition holds (what the node's checkpointer
// writes, in memory).
struct LtxCheckpoint {
  PartitionId partition = 0;
  Epoch epoch = 0;
  Epoch read_only_snapshot = 0;  // the newest read-write epoch up to `epoch`
  std::vector<std::pair<Key, std::string>> rows;  // the store at `epoch`
  std::string lane_state;                         // Scheduler::SaveLtxLaneState
  bool lane_state_ready = false;                  // Scheduler::LtxLaneStateReady
};

class LtxBench : public RecordSubmitter, public PeerSender {
 public:
  explicit LtxBench(const LtxBenchOptions& options);
  ~LtxBench() override;

  // Txns to sequence (ids, classes and origins are set by Sequence).
  static Txn Rmw(std::vector<Key> keys, std::vector<Key> reads = {});
  static Txn Read(std::vector<Key> keys);
  // ycsb-ltx: reads `reads`, read-modify-writes `rmw`; write area = rmw.
  static Txn Long(std::vector<Key> reads, std::vector<Key> rmw);
  // ltx-kv: reads `reads`, writes `values` to `keys`; write area given.
  static Txn LongKv(std::vector<Key> reads, std::vector<std::pair<Key, std::string>> writes,
                    std::vector<std::pair<Key, Key>> write_area);
  static Txn Scan(Key lo, Key hi);
  // ycsb-report (the report preset's LTX): scans [lo, hi], writes its
  // summary into the keys of [summary_lo, summary_hi] (its write area).
  static Txn Report(Key lo, Key hi, Key summary_lo, Key summary_hi);
  static Txn Insert(std::vector<Key> keys);

  // Sequences `txns` as epoch `epoch` (the next one) and delivers every
  // partition's batch; `origin` is the partition each txn came from. Returns
  // the ids given, in order.
  std::vector<TxnId> Sequence(Epoch epoch, std::vector<Txn> txns, PartitionId origin = 0);
  // Runs everything runnable on every partition until nothing moves;
  // without `ltx_threads`, leaves the LTX threads' work queued (an LTX
  // then has not read yet, however long short txns run).
  void Drain(bool ltx_threads = true);
  // Drain, but the LTX threads' tasks of LTX `held` stay queued: that LTX
  // runs as long as the test wants, while the others go on.
  void DrainHolding(TxnId held);
  // The records the LTX lanes submitted since the last call.
  std::vector<Txn> TakeRecords();

  // Checkpoint of partition `p` at the epoch admitted last (every txn of
  // it and before finished: Drain first).
  LtxCheckpoint Checkpoint(PartitionId p);
  // Replaces partition `checkpoint.partition` by a fresh one restored from
  // `checkpoint` (Scheduler::RestoreAt), epochs up to `replay_through` (0:
  // none after the checkpoint) counting as sequenced before the restart
  // (SetRecoveredThrough): what a restarted node does before it takes new
  // epochs. The epochs after the checkpoint are the test's to deliver again
  // (Redeliver). Empty, or why the scheduler refused the state.
  std::string Restart(const LtxCheckpoint& checkpoint, Epoch replay_through = 0,
                      const std::string* lane_state = nullptr);
  // Replaces partition `p` by a fresh one at the initial state, as a node
  // restarted with no checkpoint: epochs up to `replay_through` were
  // sequenced before (the test delivers them again with Redeliver).
  void RestartWithoutCheckpoint(PartitionId p, Epoch replay_through);
  // Whether the other partitions hear of a restart (default: yes).
  void set_announce_restarts(bool announce) { announce_restarts_ = announce; }
  // The epochs the scheduler now running partition `p` admitted, in order.
  std::vector<Epoch> AdmittedEpochs(PartitionId p) const;
  // Delivers to partition `p` the batches sequenced for it in epochs
  // [from, to] again (a restarted partition catching up from the log).
  void Redeliver(PartitionId p, Epoch from, Epoch to);

  Scheduler& scheduler(PartitionId p) { return *partitions_[p]->scheduler; }
  Store& store(PartitionId p) { return *partitions_[p]->store; }
  const NodeStats& stats(PartitionId p) const { return *partitions_[p]->stats; }
  const ResultLog& results() const { return results_; }
  bool Result(TxnId id, ResultLog::Result* out) const { return results_.Find(id, out); }
  // The value of `key` on partition `p` at `epoch` (the newest version
  // tagged `epoch` or before): false if it had none.
  bool ValueAt(PartitionId p, Key key, Epoch epoch, std::string* value);
  // The checksum LTX `ltx`'s procedure reports when its point reads return
  // `values` (a key missing there reads as absent): what a test compares an
  // LTX's result with to pin the exact values it read.
  uint64_t ChecksumReading(const Txn& ltx, const std::map<Key, std::string>& values) const;
  // Digest of the whole database as of `epoch` (published on every partition).
  uint64_t Digest(Epoch epoch);
  Epoch Published() const;
  // Checks every result against a serial execution in position order, and
  // that every txn sequenced (not the lanes' records) got exactly one
  // result; a txn whose origin restarted before it had one may have none
  // (its client went with the old process).
  std::string CheckSerialOrder(uint64_t* serial_digest = nullptr);
  const WorkloadParams& workload() const { return workload_; }

  // RecordSubmitter: every partition's LTX lane hands its records here.
  void SubmitRecord(Txn record) override;
  // PeerSender: messages go straight to the other partition's scheduler
  // (the one running now, after a restart).
  void SendRemoteReads(PartitionId to, const RemoteReads& reads) override;
  void SendLtxReadRequest(PartitionId to, const LtxReadRequest& request) override;
  void SendLtxReadReply(PartitionId to, const LtxReadReply& reply) override;

 private:
  struct Partition {
    std::unique_ptr<Store> store;
    size_t owner_slot = 0;
    std::unique_ptr<NodeStats> stats;
    std::unique_ptr<Scheduler> scheduler;
    std::vector<Epoch> admitted;  // by the scheduler's input hook
  };
  std::unique_ptr<Partition> MakePartition(PartitionId p, bool load);
  void DrainAll(bool ltx_threads, TxnId held);
  // `partition` takes partition p's place: the old one stops, what it had
  // not answered is lost, and the other partitions hear of the restart.
  void Replace(PartitionId p, std::unique_ptr<Partition> partition);

  LtxBenchOptions options_;
  WorkloadParams workload_;
  std::unique_ptr<Application> app_;
  ResultLog results_;
  NodeParams params_;
  std::vector<std::unique_ptr<Partition>> partitions_;  // never started: the test drives them
  std::vector<std::unique_ptr<Partition>> stopped_;     // replaced by a restart
  // Every batch sequenced, by partition and epoch (a restart delivers them again).
  std::vector<std::map<Epoch, Batch>> sequenced_;
  // Every txn sequenced (not records): whether it must get a result (false:
  // its origin restarted before it had one).
  std::map<TxnId, bool> submitted_;
  std::map<TxnId, PartitionId> origins_;
  bool announce_restarts_ = true;
  std::mutex records_mu_;
  std::vector<Txn> records_;
};

// A short txn deferred twice on key 5: an ltx-kv LTX on key 5 begins in
// epoch 1; in epoch 2 the short txn (deferred by it) and a second such LTX.
// Then the first LTX's commit is sequenced in epoch 3, which releases the
// txn into the second LTX's area: deferred again (with ltx_max_deferrals
// 2, a guard record follows). Empty `error` unless the lanes did not make
// the two commit records.
struct TwiceDeferred {
  TxnId starving = 0;
  Txn second_commit;  // not sequenced yet
  std::string error;
};
TwiceDeferred DeferTwiceOnKey5(LtxBench* bench);

// The records the lanes made since the last TakeRecords: exactly one, of
// `kind` (a test failure otherwise; an empty Txn if there was none).
Txn OnlyRecord(LtxBench* bench, LtxRecordKind kind);

}  // namespace paxflow::testing
