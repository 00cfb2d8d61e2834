// paxflow-load's engine: one LoadClient per connection drives a node with a
// PipelinedClient from the application's own generator, closed loop (a
// fixed number of txns in flight) or open loop (txns sent on a schedule,
// latency counted from the scheduled time, so a slow node cannot hide its
// queueing). BUSY replies are counted apart and, if asked, retried after a
// backoff (latency still counts from the first scheduled send).
//
// Owns: its client, generator, txns in flight and retry queue.
// Threads: Run on the client's own thread; Snapshot from any thread (the
// stats are under a mutex).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "applications/application.h"
#include "applications/workload.h"
#include "client/client.h"
#include "common/histogram.h"

namespace paxflow {

enum LoadKind : int { kLoadRO = 0, kLoadRW = 1, kLoadLTX = 2 };
constexpr int kLoadKinds = 3;
const char* LoadKindName(int kind);

struct LoadOptions {
  int outstanding = 16;          // closed loop: txns in flight per client
  size_t batch = 256;            // most txns per request message
  // Open loop: due txns leave together every tick. Closed loop: the window
  // is refilled once a quarter of it is free, or after a tick.
  int tick_ms = 1;
  bool retry_busy = true;        // resubmit BUSY txns after a backoff
  int busy_backoff_ms = 0;       // first backoff (0: the node's hint), doubled per retry
  int busy_backoff_max_ms = 500;
  int max_retries = 50;          // then the txn is given up (counted)
  int drain_ms = 10000;          // after a phase, wait this long for replies still due
  size_t max_open_in_flight = 200000;  // open loop: past this, scheduled txns are skipped
  int64_t timeline_us = 0;       // > 0: latency per interval of scheduled send time
  // Replicated input: the client endpoints of every replica of the
  // client's partition, its own node first (empty: one node, as before).
  // Each txn then carries a request id (client.proto), so a retry runs at
  // most once; NOT_LEADER sends what is in flight to the leader it names,
  // UNAVAILABLE, SHUTTING_DOWN or no reply for failover_timeout_ms to the
  // next replica (BUSY-style back-off per txn, max_retries in all).
  std::vector<std::string> replicas;
  int failover_timeout_ms = 2000;
};

// One step of an open-loop schedule: `rate` txn/s (over all clients) for
// `seconds`.
struct RateStep {
  double rate = 0;
  double seconds = 0;
};

struct TimelineBucket {
  Histogram latency_us;         // txns scheduled in this interval that ran
  Histogram server_latency_us;  // the same txns, from arrival at the node to their result
  uint64_t busy = 0;            // BUSY replies to txns scheduled in it
};

// One procedure's replies (OK ones): latency from the scheduled send, and
// how many committed or were declined by the procedure.
struct ProcedureStats {
  Histogram latency_us;
  uint64_t committed = 0;
  uint64_t declined = 0;
};

struct LoadStats {
  Histogram latency_us[kLoadKinds];
  Histogram visibility_us;           // RO: end of the snapshot's epoch -> result (node-side)
  // From a txn's admission at the node to its result (what the node's
  // admission control bounds), whatever the client added before and after.
  Histogram server_latency_us;
  uint64_t errors[8] = {};           // by ReplyStatus, BUSY excluded
  uint64_t busy = 0;                 // BUSY replies (each retry of a txn counts again)
  uint64_t busy_local = 0;           // of those, refused by the client while backing off
  uint64_t retries = 0;
  uint64_t failovers = 0;            // replicated input: moves to another replica
  uint64_t already_applied = 0;      // retries answered "already applied" (ran once, before)
  uint64_t gave_up = 0;              // BUSY past max_retries, or retry_busy off
  uint64_t declined = 0;             // the procedure chose not to write
  uint64_t audit_violations = 0;     // bank audits whose balances did not add up
  uint64_t lost = 0;                 // no reply by the end of the drain
  uint64_t skipped = 0;              // open loop: too far behind to send
  std::map<std::string, uint64_t> ltx_aborts;  // by reason
  std::map<uint32_t, ProcedureStats> by_procedure;  // by procedure id
  std::vector<TimelineBucket> timeline;
  std::vector<TimelineBucket> steps;  // by step of an open-loop schedule (several steps)

  // Adds `other`'s figures; its timeline and steps too unless `buckets` is
  // false (a progress line needs neither).
  void Merge(const LoadStats& other, bool buckets = true);
  uint64_t Completed() const;        // txns that ran (OK replies)
  uint64_t Errors() const;
};

// How long to wait before resubmitting a txn refused BUSY for the
// `attempts`-th time (0: first): `base_ms` doubled per earlier attempt,
// capped at `max_ms` (at least 1 ms), then a point in the upper half of
// that picked by `random` (any 64-bit value): jitter, so that refused
// clients do not come back in one wave, and never more than `max_ms`.
int64_t BusyBackoffMicros(int64_t base_ms, int attempts, int64_t max_ms, uint64_t random);

class LoadClient {
 public:
  LoadClient(const Application* app, const WorkloadParams& workload, PartitionId partition,
             uint32_t partitions, uint64_t seed, std::string endpoint, LoadOptions options,
             zmq::context_t* context);

  std::string Connect();
  // Closed loop until `stop_us` (steps empty), or open loop on `steps`
  // (this client's share of the rates) from `start_us`; then drains.
  void Run(int64_t start_us, int64_t stop_us, const std::vector<RateStep>& steps);
  // A copy of what was measured so far; Reset starts over (between phases).
  // Without `buckets` the timeline and steps are left out: copying them
  // (two histograms a bucket, hundreds of buckets once a run is long) holds
  // the lock for milliseconds, and Record, on this client's thread, waits
  // for it: a once-a-second progress line showed up as latency spikes that
  // grew with the run.
  LoadStats Snapshot(bool buckets = true) const;
  void Reset();

 private:
  struct InFlight {
    int64_t scheduled_us = 0;
    int kind = kLoadRW;
    uint32_t procedure = 0;
    bool audit = false;
    int attempts = 0;
    uint64_t seq = 0;          // its request id's sequence number (replicas: 0 otherwise)
    std::unique_ptr<Txn> txn;  // kept only for retries
  };
  bool failover() const { return !options_.replicas.empty(); }
  // Replicated input: reconnects to `endpoint` and sends every txn in
  // flight there again (same request ids). Never inside Poll.
  void SwitchTo(const std::string& endpoint);
  // A refusal that names no leader, or silence: the next replica (at the
  // next SubmitDueRetries).
  void NextReplica(int64_t now);
  void SubmitNew(int64_t scheduled_us);
  // Submits `flight` (whose txn is `*txn`, or flight.txn when retrying).
  void Submit(InFlight flight, Txn* txn);
  void SubmitDueRetries(int64_t now);
  void OnResult(const TxnResult& result);
  void Record(const InFlight& flight, const TxnResult& result, int64_t now);
  // A txn that will not be sent again: a generated LTX (CH's query) gives
  // its analytic stream back to the generator (OnGeneratedResult).
  void Finished(const InFlight& flight);
  // Under mu_: a result (or a BUSY reply) of a txn scheduled at
  // `scheduled_us`, into the timeline and step buckets.
  void TallyLocked(int64_t scheduled_us, bool busy, uint64_t latency, uint64_t server_latency);
  int64_t Backoff(const InFlight& flight, const TxnResult& result);

  const Application* app_;
  const WorkloadParams workload_;
  const PartitionId partition_;
  std::unique_ptr<TxnGenerator> generator_;
  const std::string endpoint_;
  const LoadOptions options_;
  PipelinedClient client_;
  std::unordered_map<uint64_t, InFlight> in_flight_;
  std::multimap<int64_t, InFlight> retries_;  // BUSY txns by when to resubmit
  int64_t phase_start_us_ = 0;
  std::vector<int64_t> step_ends_us_;  // of the open-loop schedule
  uint64_t jitter_ = 0x9e3779b97f4a7c15ULL;
  // Replicated input (failover()).
  uint64_t client_id_ = 0;
  uint64_t next_seq_ = 1;
  std::string current_;          // the replica it sends to
  ReplicaRing ring_;             // which replica next, which redirect to believe
  int64_t last_heard_us_ = 0;    // a reply, or the first txn in flight
  int64_t last_switch_us_ = 0;
  std::string switch_to_;        // where to move at the next SubmitDueRetries

  mutable std::mutex mu_;
  LoadStats stats_;
};

}  // namespace paxflow
