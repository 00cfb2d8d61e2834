// The LTX lane's threads (--ltx_workers): they run long txns' procedures
// at their origin (replica 0), serve the reads participants owe to LTXs and
// long scans, and finish long scans at their origin. Work is taken oldest
// LTX first. Nothing here decides what a read returns: the LTX lane (on the
// scheduler thread) applies the read rule and hands over tasks whose every
// read is either a store read at the snapshot or a value it chose.
//
// Owns: the origin-side state of each running LTX and long scan (rounds,
// reads gathered, requests in flight), the task queue and the threads.
// In: LTXs to run and scans to finish (scheduler thread), read tasks
// (scheduler thread), read replies (transport thread or this partition).
// Out: read requests (PeerSender, or `deliver_request` for this partition),
// replies, LTX commit and abort records (RecordSubmitter), long scans'
// results (ResultSink), `scan_served` when a participant's scan task ran.
// Threads: its own (`threads` of them) after Start(); any thread calls in.
// Tests without Start() run queued tasks with RunQueued().
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "applications/application.h"
#include "backend/store.h"
#include "common/key_area.h"
#include "common/stats.h"
#include "message.pb.h"
#include "scheduler/sinks.h"

namespace paxflow {

// Reads one participant owes an LTX (or a long scan), ready to run: what the
// LTX lane chose for keys an unresolved LTX had in its area rides along.
struct LtxReadTask {
  TxnId ltx = 0;
  uint32_t round = 0;
  PartitionId reply_to = 0;
  Epoch snapshot = 0;
  std::vector<Key> keys;
  // Chosen values are views into the LTX records in `records`, which the
  // task keeps alive (no copy of thousands of values on the scheduler).
  std::vector<std::pair<bool, std::string_view>> key_values;  // per key, if chosen
  std::vector<bool> key_chosen;
  std::vector<KeyRange> scans;
  // Per scan: keys whose value the lane chose (found=false: deleted), ascending.
  std::vector<std::map<Key, std::pair<bool, std::string_view>>> scan_values;
  std::vector<std::shared_ptr<const Txn>> records;  // what the views above point into
  bool long_scan = false;  // a long scan's share: tell the lane when served
  // The record (procedure and ranges) of a long scan, or of an LTX whose
  // round reads these scans, that summarizes its shares
  // (Application::SummarizesScans): summarized here, not shipped.
  std::shared_ptr<const Txn> scan_txn;
  int64_t waiting_since_us = 0;  // parked, or waiting for its snapshot: since
  size_t settled_keys = 0;  // waiting for its snapshot: keys[0..this) are settled
  // Waiting for its snapshot: scans[0..settled_scans) are settled, and so
  // are the first `settled_in_scan` keys of this partition in
  // scans[settled_scans].
  size_t settled_scans = 0;
  uint64_t settled_in_scan = 0;
  // LTXs, finished but not resolved, whose writes the lane chose (early reads).
  std::vector<TxnId> read_from;
};

// A participant's answer to (part of) a read request: what LtxReadReply
// carries, as plain values (a reply to this partition never becomes one).
struct LtxReadResult {
  TxnId ltx = 0;
  uint32_t round = 0;
  PartitionId from = 0;
  std::vector<Key> keys;
  std::vector<bool> found;
  // Value i is value_data[value_end[i-1] .. value_end[i]): back to back, so
  // thousands of reads make one allocation, not one each.
  std::string value_data;
  std::vector<size_t> value_end;
  void AddValue(std::string_view value) {
    value_data.append(value.data(), value.size());
    value_end.push_back(value_data.size());
  }
  std::string_view value(size_t i) const {
    const size_t begin = i == 0 ? 0 : value_end[i - 1];
    return std::string_view(value_data).substr(begin, value_end[i] - begin);
  }
  bool scans_included = false;
  std::vector<LtxReads::Rows> scans;
  // The scans' share summarized (scans then hold no rows).
  bool summarized = false;
  std::string summary;
  std::vector<TxnId> read_from;  // LtxReadTask::read_from
  std::string error;
};

struct LtxExecutorOptions {
  PartitionId partition = 0;
  uint32_t partitions = 1;
  uint32_t threads = 1;
  size_t first_stats_slot = 0;  // NodeStats slots first_stats_slot.. (one per thread)
  // Testing (--fault_hold_ltx_file): while this file exists, an LTX that
  // finished at its origin holds its commit record on its thread, as a
  // procedure that long would; a crash test kills its node meanwhile.
  std::string hold_file;
};

// The abort record of LTX `begin`, its reason `reason` (LtxAbortReason)
// with `text`.
Txn LtxAbortRecord(const Txn& begin, int reason, const std::string& text);
// The lowest key `round` wrote or deleted outside `write_area`, if any: a
// procedure that did commits nothing (LtxFinishRecord makes it an abort).
std::optional<Key> LowestWriteOutside(const LtxRound& round, const KeyArea& write_area);
// The record of LTX `begin` whose procedure ended with `round`: its commit
// record (each key's last write, in key order; `read_from` named), or its
// abort record if it wrote outside `write_area`.
Txn LtxFinishRecord(const Txn& begin, const LtxRound& round, const KeyArea& write_area,
                    const std::set<TxnId>& read_from);
// The same, built into `out` (cleared first), which may live on an arena.
void LtxFinishRecord(const Txn& begin, const LtxRound& round, const KeyArea& write_area,
                     const std::set<TxnId>& read_from, Txn* out);
// The commit record of LTX `begin` without its writes: its outcome
// (`checksum`) alone, into `out` (cleared first). For a locked run in place
// whose writes no other LTX reads from its record (LtxInstall::keep_writes).
void LtxCommitOutcome(const Txn& begin, uint64_t checksum, Txn* out);

class LtxExecutor {
 public:
  struct Callbacks {
    // A read request for this partition's own scheduler.
    std::function<void(LtxReadRequest&&)> deliver_request;
    // A participant's share of long scan `id` was read and sent.
    std::function<void(TxnId id)> scan_served;
    // Origin: long scan `id` has its result (or failed).
    std::function<void(TxnId id)> scan_finished;
    // Origin: an LTX finished with this commit record, now on its way to
    // the sequencer (LTXs after it may read its writes early).
    std::function<void(std::shared_ptr<const Txn> record)> finished;
  };

  LtxExecutor(const LtxExecutorOptions& options, Store* store, const Application* app,
              PeerSender* peers, RecordSubmitter* records, NodeStats* stats,
              ResultSink* results, Callbacks callbacks);
  ~LtxExecutor();
  LtxExecutor(const LtxExecutor&) = delete;
  LtxExecutor& operator=(const LtxExecutor&) = delete;

  void Start();
  void Stop();
  // Runs queued tasks on the calling thread (tests); returns how many ran.
  // The tasks of LTX `held` (if not 0) stay queued: a test keeps it running.
  size_t RunQueued(TxnId held = 0);

  // Origin: run LTX `begin` (an LTX_BEGIN record) at snapshot `snapshot`.
  // `in_place` (one partition, every replica runs it): its commit or abort
  // record goes only to the `finished` callback, never to the sequencer.
  void StartLtx(std::shared_ptr<const Txn> begin, Epoch snapshot, bool in_place = false);
  // Origin: gather long scan `scan` (an LTX_SCAN record) from every partition.
  void StartScan(std::shared_ptr<const Txn> scan, Epoch snapshot);
  // The LTX was resolved (or the scan is over): forget it.
  void Forget(TxnId id);
  // Origin: the scan ran out of time; its client gets a retryable error
  // unless it already has its result.
  void FailScan(TxnId id, const std::string& reason);
  // Participant: read and reply.
  void Serve(LtxReadTask task);
  // The snapshots serve tasks still read (queued or running), for the
  // store's pins. Any thread.
  void ServingSnapshots(std::vector<Epoch>* pins) const;
  // Origin: a participant's reads arrived.
  void OnReply(LtxReadReply&& reply);
  // Origin: partition `p` restarted, and with it went the requests it had
  // not answered: each LTX still waiting for `p` in its current round asks
  // again (a repeated answer is ignored). Any thread.
  void AskAgain(PartitionId p);

  size_t running() const;
  // Tasks queued for an LTX thread and not yet taken: how far the threads
  // are behind. Any thread.
  size_t queued() const { return queued_.load(std::memory_order_relaxed); }
  // Read tasks handed to Serve and not done yet, queued or running (a
  // checkpoint lists them as reads this partition owes).
  std::vector<LtxReadTask> QueuedServes() const;

 private:
  struct Run;
  struct Task {
    // kReport: a scan's failure, found on another thread (a timeout on the
    // scheduler thread, a participant's error on the transport thread),
    // reported from an LTX thread, whose statistics slot it may write.
    enum Kind { kRound, kServe, kReport } kind;
    TxnId ltx;
    std::shared_ptr<Run> run;
    std::unique_ptr<LtxReadTask> serve;
    TxnOutcome outcome;  // kReport
    uint64_t sequence;  // FIFO among equals
  };
  struct Older {
    bool operator()(const Task* a, const Task* b) const {
      return a->ltx != b->ltx ? a->ltx > b->ltx : a->sequence > b->sequence;
    }
  };

  void Push(std::unique_ptr<Task> task);
  // After the queue changed (mu_ held).
  void NoteQueuedLocked() { queued_.store(queue_.size(), std::memory_order_relaxed); }
  // Takes the next task (mu_ held); a serve counts as running until done.
  Task* PopLocked();
  // Whether partition `p` still owes `run` reads of its round (mu_ held).
  bool OwesLocked(const Run& run, PartitionId p) const;
  void Loop(size_t index);
  void Execute(Task* task, size_t index);
  void RunRound(const std::shared_ptr<Run>& run, size_t index);
  void AskForReads(const std::shared_ptr<Run>& run, const LtxRound& round);
  // To this partition's own scheduler, or to partition `p` over the network.
  void SendRequest(PartitionId p, LtxReadRequest&& request);
  // Waits while options_.hold_file exists (and the executor runs).
  void HoldWhileFileExists();
  void Finish(const std::shared_ptr<Run>& run, const LtxRound& round, size_t index);
  void SubmitAbort(const Run& run, int reason, const std::string& text);
  // Its record is made: nothing more runs for it (Absorb, AskForReads).
  void MarkFinished(const Run& run);
  // A finished LTX's commit or abort record: to the `finished` callback,
  // and to the sequencer unless it runs in place.
  void Deliver(const Run& run, Txn record);
  void ServeReads(const LtxReadTask& task, size_t slot);
  // Takes a participant's answer into the LTX (or scan) it is for.
  void Absorb(LtxReadResult&& result);
  void ReportScan(Run* run, const TxnOutcome& outcome, size_t index);
  // Any thread: a failed scan's retryable error, reported by an LTX thread.
  void QueueScanFailure(std::shared_ptr<Run> run, const std::string& reason);

  const LtxExecutorOptions options_;
  Store* const store_;
  const Application* const app_;
  PeerSender* const peers_;
  RecordSubmitter* const records_;
  NodeStats* const stats_;
  ResultSink* const results_;
  const Callbacks callbacks_;
  std::vector<size_t> store_slots_;  // per thread; the last one for RunQueued

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::priority_queue<Task*, std::vector<Task*>, Older> queue_;  // owned
  std::atomic<size_t> queued_{0};  // queue_.size(), written under mu_
  // Snapshots of the serve tasks queued or running: they read the store
  // there, so those snapshots stay pinned until they are done, whatever
  // became of the LTX meanwhile (ServingSnapshots).
  std::multiset<Epoch> serving_;
  std::set<const Task*> running_serves_;  // serves taken off the queue, not done
  std::map<TxnId, std::shared_ptr<Run>> runs_;
  // Summarized scan shares that came before their scan started here: a
  // participant serves its share from the log at its own pace, and a
  // summary (tens of ms of work, a small message) can beat the origin's
  // StartScan. Taken by StartScan; the oldest ids
  // go first past kMaxEarlyShares (shares of scans already over). mu_.
  static constexpr size_t kMaxEarlyShares = 256;
  std::map<TxnId, std::vector<LtxReadResult>> early_shares_;
  // What the application kept from this partition's last summaries
  // (ScanMemo); an LTX thread takes it out while it summarizes (memo_busy_).
  // mu_.
  std::unique_ptr<ScanMemo> memo_;
  bool memo_busy_ = false;
  uint64_t next_sequence_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace paxflow
