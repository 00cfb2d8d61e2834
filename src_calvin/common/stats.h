// Per-node execution statistics.
//
// Owns: one WorkerStats slot per worker thread (cache-line aligned).
// Threads: each worker writes only its own slot; counters are atomics that
// the progress reporter and the sequencer read at any time; so are the
// histograms (single writer, see common/histogram.h: the metrics endpoint
// merges them live).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/histogram.h"
#include "common/single_writer.h"
#include "common/types.h"

namespace paxflow {

enum TxnKind : int { kKindReadOnly = 0, kKindReadWrite = 1, kKindLong = 2 };
constexpr int kTxnKinds = 3;
const char* TxnKindName(int kind);  // "RO", "RW", "LTX"

// The stages of an LTX's life at its origin, each measured separately.
enum LtxStage : int {
  kLtxSequencing = 0,  // submitted -> its begin record reaches the scheduler
  kLtxStartWait = 1,   // end of its begin epoch -> its first round runs (snapshot, thread)
  kLtxReadWait = 2,    // rounds waiting for reads (earlier LTXs, other partitions)
  kLtxRun = 3,         // its procedure's rounds running on an LTX thread
  kLtxCommitWait = 4,  // finished -> its commit record reaches the scheduler
  kLtxInstall = 5,     // commit record reached -> installed (held installs included)
  // Parts of the reads wait, per read task on the partition serving it:
  kLtxParkedRead = 6,    // parked until earlier LTXs' writes were known
  kLtxSnapshotWait = 7,  // waiting for the LTX's snapshot to be published here
};
constexpr int kLtxStages = 8;
const char* LtxStageName(int stage);  // "sequencing", "start wait", ...

// The stages of an epoch's input at the node that cuts it, from the cut to
// its batch at the node's scheduler (node/epoch_timeline.h). Without
// replicated input only kInputDeliver and kInputTotal are recorded.
enum InputStage : int {
  kInputPropose = 0,  // cut -> in the leader's consensus log
  kInputCommit = 1,   // -> committed by its group (the leader learns it)
  kInputHandOut = 2,  // -> taken by the node's consumer thread
  kInputDeliver = 3,  // -> its batch at the scheduler
  kInputTotal = 4,    // cut -> its batch at the scheduler
};
constexpr int kInputStages = 5;
const char* InputStageName(int stage);  // "propose", "commit", ...

struct alignas(64) WorkerStats {
  // Single writer: bump with Add(), never fetch_add.
  std::atomic<uint64_t> committed[kTxnKinds] = {};
  std::atomic<uint64_t> declined[kTxnKinds] = {};  // procedure chose not to write
  std::atomic<uint64_t> aborted[kTxnKinds] = {};   // LTX lane: did not commit
  std::atomic<uint64_t> invariant_failures{0};
  // Generated (not client) txns finished here: the generator's window.
  std::atomic<uint64_t> generated_done{0};
  Histogram latency_us[kTxnKinds];
  Histogram visibility_us;  // RO: end of the snapshot's epoch -> run
  // Time a txn spent set aside by the LTX lane: RW deferred by an LTX's
  // write area, RO parked until an LTX resolved.
  Histogram ltx_wait_us[kTxnKinds];
  Histogram ltx_stage_us[kLtxStages];  // LTXs at their origin, by stage

  static void Add(std::atomic<uint64_t>& counter, uint64_t n = 1) { SingleWriterAdd(counter, n); }

  // A txn's result where it is reported: committed, or aborted with
  // `abort_reason`, and a latency sample (`latency`, from its first
  // submit). A long txn's OLLP restart (reason recon: its reconnaissance
  // went stale and it runs again, keeping its first submit time) is
  // neither: the attempt that resolves counts the txn and its latency,
  // once. So committed + aborted of long txns, which the generator's LTX
  // window takes as done, counts each LTX once however often it restarts.
  // A `generated` txn (no client's) also leaves the generator's window,
  // restart or not: a restart is generated again. Returns whether it was
  // a restart.
  bool RecordResult(int kind, bool was_aborted, const std::string& abort_reason, int64_t latency,
                    bool generated);
};

// The LTX lane's counters (its scheduler thread writes, anyone reads;
// aborts and pushed-down shares are counted from other threads too).
struct LtxCounters {
  // By reason. Workers (LTXs locked at their begin, calvin mode's LTXs),
  // LTX threads (long scans) and the scheduler thread count aborts, so
  // with fetch_add, through CountAbort.
  std::atomic<uint64_t> aborts[kLtxAbortReasons] = {};
  void CountAbort(int reason) { aborts[reason].fetch_add(1, std::memory_order_relaxed); }
  std::atomic<uint64_t> deferrals{0};       // times a short txn was set aside
  std::atomic<uint64_t> deferred_txns{0};   // short txns deferred at least once
  std::atomic<uint64_t> max_deferrals{0};   // most deferrals any txn took
  std::atomic<uint64_t> parked_reads{0};    // RO txns that waited for an LTX to resolve
  std::atomic<uint64_t> guards{0};          // guard records applied
  std::atomic<uint64_t> late_records{0};    // commit/abort for an LTX already resolved
  std::atomic<uint64_t> held_installs{0};   // installs held behind an earlier LTX
  std::atomic<uint64_t> early_reads{0};     // LTXs that read an unresolved LTX's writes
  std::atomic<uint64_t> locked_runs{0};     // LTXs in place run under their install's locks
  std::atomic<uint64_t> locked_runs_given_back{0};  // of those, given back to an LTX thread
  // Of those, the ones whose record kept their writes for the LTXs begun
  // after them in their epoch (the others' records carry their outcome alone).
  std::atomic<uint64_t> locked_runs_writes_kept{0};
  // Long-scan shares this node summarized in place (Application::
  // SummarizesScans) and the rows they folded: what did not travel. LTX
  // threads add to these concurrently, so with fetch_add, not Add.
  std::atomic<uint64_t> pushed_down_shares{0};
  std::atomic<uint64_t> pushed_down_rows{0};

  static void Add(std::atomic<uint64_t>& counter, uint64_t n = 1) { SingleWriterAdd(counter, n); }
};

class NodeStats {
 public:
  // `slots`: one per thread that reports results (workers, LTX threads and
  // the scheduler thread).
  explicit NodeStats(size_t slots);
  WorkerStats& worker(size_t index) { return *slots_[index]; }
  size_t workers() const { return slots_.size(); }

  uint64_t Committed(int kind) const;
  uint64_t CommittedAll() const;
  uint64_t GeneratedDone() const;
  uint64_t LongDone() const;  // LTXs and long scans reported (committed or aborted)
  uint64_t Declined(int kind) const;
  uint64_t Aborted(int kind) const;
  uint64_t InvariantFailures() const;
  // Merged histograms: exact once the workers have stopped; meanwhile (a
  // metrics scrape) each counter read whole, not all at one instant.
  Histogram Latency(int kind) const;
  Histogram Visibility() const;
  Histogram LtxWait(int kind) const;
  Histogram LtxStage(int stage) const;
  LtxCounters& ltx() { return ltx_; }
  const LtxCounters& ltx() const { return ltx_; }

 private:
  std::vector<std::unique_ptr<WorkerStats>> slots_;
  LtxCounters ltx_;
};

}  // namespace paxflow
