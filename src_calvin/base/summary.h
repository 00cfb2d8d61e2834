// End-of-run summary of one node, and of a whole cluster: throughput,
// latency percentiles per txn kind, RO visibility delay, state digest.
// Printed as text (YCSB's spirit) and written as JSON for scripts; the
// launcher reads the nodes' JSON back to print the cluster's total.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "common/histogram.h"
#include "common/stats.h"
#include "common/types.h"
#include "files.pb.h"

namespace paxflow {

struct KindSummary {
  uint64_t committed = 0;
  uint64_t declined = 0;  // procedure chose not to write (e.g. insufficient funds)
  uint64_t aborted = 0;   // LTX lane: did not commit (see LtxSummary::aborts)
  Histogram latency_us;   // committed and aborted alike
};

// Whether a limit on new txns bounded the load: a run bounded there
// measures the limit, not the engine.
// - Of the epochs whose batches took new txns, those whose batch reached
//   max_batch, and generator fills that stopped because the LTX window
//   (max_inflight_ltx) was full; of those, the fills that stopped while
//   the LTX threads were behind (max_ltx_backlog) rather than at the limit.
// - The window's ceiling: a generated txn enters the batch of the next
//   epoch to close, and each close takes at most the window's room, so
//   generated txns never run faster than max_inflight per epoch per
//   sequencer, however fast the engine is (0: no window).
struct AdmissionSummary {
  uint64_t epochs = 0;
  uint64_t at_batch_cap = 0;
  uint64_t ltx_window_full = 0;
  uint64_t ltx_lane_behind = 0;  // of ltx_window_full
  double window_ceiling = 0;  // txn/s
  void Add(const AdmissionSummary& other) {
    epochs += other.epochs;
    at_batch_cap += other.at_batch_cap;
    ltx_window_full += other.ltx_window_full;
    ltx_lane_behind += other.ltx_lane_behind;
    window_ceiling += other.window_ceiling;
  }
  // What bounded a run of `throughput` txn/s, if anything did: the batch
  // cap or the LTX window's limit in at least half the epochs (not the
  // fills held while the LTX threads were behind: that is the lane's own
  // pace), or a throughput at 90% of the window's ceiling or more; else
  // empty.
  std::string Bound(double throughput) const;
};

// What the long-transaction lane did on a node.
struct LtxSummary {
  uint64_t aborts[kLtxAbortReasons] = {};  // LTXs aborted, by reason
  uint64_t deferrals = 0;       // times a short txn was set aside by an LTX's write area
  uint64_t deferred_txns = 0;   // short txns deferred at least once
  uint64_t max_deferrals = 0;   // most deferrals any one txn took
  uint64_t parked_reads = 0;    // read-only txns that waited for an LTX to resolve
  uint64_t held_installs = 0;   // installs held behind an earlier overlapping LTX
  uint64_t early_reads = 0;     // LTXs that read an unresolved (finished) LTX's writes
  uint64_t locked_runs = 0;     // LTXs in place run under their install's locks
  uint64_t locked_runs_given_back = 0;  // of those, given back to an LTX thread
  uint64_t locked_runs_writes_kept = 0;  // of those, whose record kept their writes
  uint64_t pushed_down_shares = 0;  // long-scan shares summarized where their rows are
  uint64_t pushed_down_rows = 0;    // the rows those shares folded (not shipped)
  uint64_t guards = 0;          // guard records against starvation
  uint64_t late_records = 0;    // commit or abort records for an LTX already resolved
  Histogram deferred_wait_us;   // what deferral added to a short txn's latency
  Histogram parked_wait_us;     // how long a read-only txn waited for an LTX
  Histogram stage_us[kLtxStages];  // an LTX's life at its origin, by stage
  bool any() const;
  void Add(const LtxSummary& other);
  // Starvation of the long side: the share of the `begun` LTXs (committed +
  // aborted) that a guard aborted, in 0..1 (0 when none began).
  double GuardAbortShare(uint64_t begun) const {
    return begun ? static_cast<double>(aborts[kAbortGuard]) / begun : 0;
  }
};

// Generated txns of one procedure that finished at their origin.
struct ProcedureSummary {
  std::string name;
  uint64_t committed = 0, declined = 0;
  uint64_t restarts = 0;  // OLLP restarts, among the declined
  // Long txns only (CH's analytic queries): latency, and freshness: how old
  // the snapshot a result read was when it came back, in us and in epochs
  // (node/query_stats.h).
  Histogram latency_us, age_us, age_epochs;
};

struct RunSummary {
  std::string scope = "node";  // "node" or "cluster"
  NodeId node = 0;
  PartitionId partition = 0;
  uint32_t replica = 0;
  uint32_t nodes = 1;
  std::string mode, workload;
  double seconds = 0;
  KindSummary kinds[kTxnKinds];
  Histogram visibility_us;
  uint64_t invariant_failures = 0;
  uint64_t dropped_messages = 0;
  uint64_t waited_ro = 0;  // read-only txns that waited for their snapshot
  uint64_t peak_rss_bytes = 0;  // the node process's peak resident memory (cluster: largest node)
  AdmissionSummary admission;
  LtxSummary ltx;
  // An epoch's input from its cut to its batch at the scheduler, at the
  // node that cut it, by stage (InputStage; node/epoch_timeline.h).
  Histogram input_stage_us[kInputStages];
  std::string consistency;  // the final state's consistency violations (empty: none)
  std::vector<ProcedureSummary> procedures;
  Epoch digest_epoch = 0;
  uint64_t digest = 0;
  std::vector<std::pair<Epoch, uint64_t>> epoch_digests;

  uint64_t Committed() const;
  double Throughput() const { return seconds > 0 ? Committed() / seconds : 0; }
  std::string ToText() const;
  // As JSON (files.proto's SummaryFile, through protobuf's JSON mapping).
  std::string ToJson() const;
  static std::string FromJson(const std::string& json, RunSummary* out);  // empty: ok
  SummaryFile ToFile() const;
  static std::string FromFile(const SummaryFile& file, RunSummary* out);  // empty: ok
  // Cluster total over replica 0 (every other replica re-executes the same
  // txns): counts and histograms add up, digests of the partitions sum to
  // the digest of the whole database.
  static RunSummary Combine(const std::vector<RunSummary>& nodes);
};

std::string DigestHex(uint64_t digest);
// Reads DigestHex's text back (the 0x is optional); false if it is not one.
bool ParseDigestHex(const std::string& text, uint64_t* digest);

}  // namespace paxflow
