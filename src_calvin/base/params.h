// Everything a node is configured with, as one validated value.
// Built from flags by ResolveFlags (flags.h) or directly by tests.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "applications/workload.h"
#include "backend/multi_version_store.h"
#include "common/types.h"
#include "message.pb.h"

namespace paxflow {

struct EngineParams {
  Mode mode = Mode::kPaxflow;
  uint32_t epoch_ms = 10;
  uint32_t max_batch = 2000;     // per sequencer
  uint32_t sequencers_per_node = 1;  // sequencer threads on each replica-0 node
  uint32_t workers = 2;
  uint32_t ro_workers = 0;       // 0: every worker may run read-only work
  uint64_t max_inflight = 4000;  // generated txns unfinished per sequencer; 0: unbounded
  // Generated LTXs and long scans unfinished per node (0: unbounded): the
  // LTX lane's queue stays bounded when LTXs come faster than it runs them
  // (16 held bank-ltx's 1% of LTXs below what the lane runs; docs/performance-log.md).
  uint64_t max_inflight_ltx = 64;
  uint64_t max_ltx_backlog = 32;  // tasks waiting for LTX threads; beyond: hold LTXs (0: none)
  uint64_t seed = 42;
  bool generate = true;          // run the embedded load generator
  double duration_s = 10;        // load duration; 0: until stopped
  uint64_t run_epochs = 0;       // stop after this many epochs (0: use duration)
  std::string log_dir;           // input log directory; empty: no log
  bool log_fsync = false;
  uint32_t progress_ms = 1000;   // progress line period; 0: none
  std::string summary_json;      // where to write the JSON summary
  std::vector<Epoch> digest_epochs;
  uint32_t peer_wait_s = 60;     // how long start-up waits for peers
  double drain_timeout_s = 30;   // after the load stops, how long to wait for the last epochs
  GcPolicy gc = GcPolicy::kEpo;  // multi-version garbage collection (paxflow mode)
  // The long-transaction lane. ltx_workers is the node's own choice; the
  // bounds are cluster parameters (recorded in logs, compared at start-up).
  uint32_t ltx_workers = 1;
  uint64_t ltx_timeout = 1000;    // epochs from an LTX's begin to its commit
  uint32_t max_active_ltx = 16;   // unresolved LTXs; a begin beyond them aborts (busy)
  uint32_t ltx_max_deferrals = 3; // deferrals of a short txn before a guard protects it
  // One partition: an LTX holds its write area's locks from its serialization
  // point and installs in place (every replica runs it), no commit record.
  bool ltx_in_place = true;
  // In place: an LTX whose procedure reads only its write area and its
  // declared reads runs under its install's locks on a worker (a locked
  // run). Where a procedure runs, never what it reads: the node's choice.
  bool ltx_locked_run = true;
  // Client port admission (per node, not a cluster parameter).
  uint64_t client_admit_limit = 0;  // admitted, unanswered client txns; 0: max_batch
  uint32_t client_buffer_mb = 16;   // unsent reply bytes per connection before BUSY
  // Prometheus /metrics port (per node): -1: the config's metrics_port; 0: none.
  int32_t metrics_port = -1;

  // Durability and recovery.
  bool recover = false;            // rejoin a running cluster from the log directory
  bool wipe = false;               // a fresh start may remove this node's history in log_dir
  double checkpoint_every_s = 60;  // checkpoint period (cluster parameter); 0: none
  // Replicated input (node/replicated_sequencing.h): a partition's replicas
  // agree on its batches through a Raft group before they run. A cluster
  // parameter; election_timeout_ms is the node's own.
  bool replicated_input = false;
  uint32_t election_timeout_ms = 1000;
  uint32_t heartbeat_ms = 200;     // how often a node tells its peers it lives
  uint32_t peer_timeout_ms = 1000; // silence after which a peer is reported
  uint32_t peer_queue_mb = 64;     // per peer: bytes held for one that does not take them
  uint32_t peer_max_message_mb = 0;  // largest peer message taken; 0: derived (PeerMaxMessageBytes)
  uint32_t max_epochs_ahead = 200; // a sequencer waits this far ahead of its partition
  uint32_t max_unpublished_epochs = 4;  // admission stops this far past the publish epoch
  uint32_t fault_stall_checkpoint = 0;  // testing: the n-th checkpoint stalls half written
  // A txn that waited this long (ms) for another partition's reads asks it
  // again (a message may be lost); 0: automatic (ReadsRetryMs), -1: never.
  int32_t reads_retry_ms = 0;
  // Testing: this fraction of the messages to peers on these channels
  // (comma-separated names of message.proto's Channel) is lost on purpose.
  double fault_drop_peer_messages = 0;
  std::string fault_drop_channels = "BATCH,REMOTE_READS";
  // Testing: "ID:EPOCH": node ID's sequencer cuts no epoch after EPOCH (a
  // run of it that starts after EPOCH is not held), its run not ended, as
  // one held back would: a crash test then knows every batch it cut has
  // reached its peers. Empty: none.
  std::string fault_pause_sequencer;
  // Testing: while this file exists, LTXs finished at this node (their
  // origin) hold their commit record (--fault_hold_ltx_file). Empty: never.
  std::string fault_hold_ltx_file;
  // Testing: "NODE:FROM:FILE": while FILE exists, node NODE ignores the
  // hellos of node FROM (--fault_deaf_to_hellos). Empty: never.
  std::string fault_deaf_to_hellos;

  // Epochs between checkpoints (0: none): every node checkpoints at the
  // same epochs, multiples of this.
  uint64_t CheckpointEpochs() const;
  // reads_retry_ms resolved: with 0, twice the heartbeat period or 20
  // epochs, whichever is longer (a partition a few epochs behind is not
  // asked for what it has not run yet; one heartbeat tick checks). -1: never.
  int64_t ReadsRetryMs() const;
  // The epoch after which node `node`'s sequencer pauses
  // (fault_pause_sequencer); 0: it does not.
  Epoch SequencerPauseAfter(uint32_t node) const;
  // The file while which node `node` ignores the hellos of node `from`
  // (fault_deaf_to_hellos); empty: it hears them.
  std::string HellosIgnoredWhile(uint32_t node, uint32_t from) const;
  // In paxflow mode a begin that finds max_active_ltx LTXs unresolved
  // anywhere in the cluster aborts (busy). Each origin node of `partitions`
  // keeps its own LTXs in flight to its share of that limit (at least 1):
  // together they then never meet it. 0 in calvin mode, which has no such
  // limit (its LTXs run locked).
  uint64_t LtxShare(uint32_t partitions) const;
};

// "BATCH,REMOTE_READS" into channels; empty on success, else the problem.
std::string ParseChannelList(const std::string& text, std::vector<Channel>* channels);

struct NodeParams {
  EngineParams engine;
  WorkloadParams workload;

  // Parameters every node of a cluster must agree on, as name=value pairs
  // (flag names): recorded in input logs and compared at start-up.
  std::vector<std::pair<std::string, std::string>> ClusterParams() const;
  std::string ClusterParamsText() const;  // "name=value\n..."
  uint64_t Fingerprint() const;
  // Empty if valid on `partitions` partitions, else the problem.
  std::string Validate(uint32_t partitions) const;
  // The largest message a peer may legitimately send (a batch of max_batch
  // of the biggest txns, or a long scan's reads), estimated generously.
  uint64_t LargestPeerMessageBytes() const;
  // The limit set on the peer port (ZMQ_MAXMSGSIZE): --peer_max_message_mb,
  // or by default 4x the largest legitimate message, within 256 MiB..1 GiB.
  // A bigger frame closes its connection instead of exhausting memory.
  uint64_t PeerMaxMessageBytes() const;
};

}  // namespace paxflow
