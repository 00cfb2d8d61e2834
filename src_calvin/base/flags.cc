#include "base/flags.h"

#include <glog/logging.h>  // defines --log_dir, which names our input log directory

#include <sstream>

#include "applications/workload.h"

DEFINE_string(config, "", "Deployment config (protobuf text format), e.g. deployment/local-3.conf");
DEFINE_uint32(node_id, 0, "This node's id in the config");
DEFINE_string(replay, "",
              "Replay the input logs in this directory (no generator, no network), print the "
              "state digest and exit");
DEFINE_int32(replay_replica, 0, "With --replay: which replica's logs to replay");

DEFINE_string(mode, "paxflow",
              "Engine: paxflow (read-only txns on lock-free snapshots, multi-version store) or "
              "calvin (every txn through the lock manager, single-version store)");
DEFINE_uint32(epoch_ms, 10, "Epoch length in milliseconds (1..60000)");
DEFINE_uint32(max_batch, 2000, "Most txns a sequencer puts in one epoch's batch");
DEFINE_uint32(sequencers_per_node, 1,
              "Sequencers on each replica-0 node, each on its own thread with its share of the "
              "embedded load and of the client port's txns; a node sequences up to "
              "sequencers_per_node * max_batch txns per epoch (a cluster parameter)");
DEFINE_uint32(workers, 2, "Worker threads per node (1..256)");
DEFINE_uint32(ro_workers, 0,
              "Workers allowed to run read-only txns, the paper's RO dispatchers (0: all)");
DEFINE_uint64(max_inflight, 4000,
              "Most generated txns each sequencer keeps unfinished; bounds queues (0: unbounded)");
DEFINE_uint64(max_inflight_ltx, 64,
              "Most generated LTXs and long scans a node keeps unfinished; one drawn beyond "
              "it is held back in order (with 16 held the generator waits), so the mix stays "
              "and the load slows to the LTX lane's pace instead of its queue growing (0: "
              "unbounded). In paxflow mode the LTXs that are not locked at their begin are "
              "also kept to max_active_ltx / partitions, so that the nodes' generated LTXs "
              "together never abort busy");
DEFINE_uint64(max_ltx_backlog, 32,
              "Paxflow mode: most tasks a node's LTX threads may have waiting; while more wait, the "
              "generator holds new LTXs and long scans back as if max_inflight_ltx were full, "
              "so an LTX starts soon after its snapshot instead of reading an old one behind a "
              "queue (0: no limit)");
DEFINE_uint64(seed, 42, "Load generator seed (each node adds its id)");
DEFINE_bool(generate, true, "Run the embedded load generator");
DEFINE_double(duration, 10, "Seconds of load (0: until SIGINT/SIGTERM)");
DEFINE_uint64(run_epochs, 0, "Stop after this many epochs instead of after --duration");
DEFINE_bool(log_fsync, false, "fdatasync the input log after every epoch");
DEFINE_uint32(progress_ms, 1000, "Progress line period in ms (0: none)");
DEFINE_string(summary_json, "", "Write the end-of-run summary as JSON to this file");
DEFINE_string(digest_epochs, "",
              "Comma-separated epochs at which to print the state digest (besides the end)");
DEFINE_uint32(peer_wait_s, 60, "Seconds to wait for every peer at start-up");
DEFINE_double(drain_timeout_s, 30,
              "Seconds a stopping node waits without progress before giving up (a peer died?)");
DEFINE_uint64(client_admit_limit, 0,
              "Client txns a node admits and has not answered before it replies BUSY "
              "(0: one epoch of full batches, max_batch x sequencers_per_node, at least 256). "
              "Under overload an admitted "
              "txn waits about this many txns / throughput");
DEFINE_uint32(client_buffer_mb, 16,
              "Replies (MiB) a node holds for a client that does not read them before it "
              "refuses that client's txns with BUSY");
DEFINE_bool(recover, false,
            "Rejoin a running cluster after a crash: load this node's newest checkpoint from "
            "--log_dir, replay its input log after it, fetch from the peers what it missed, "
            "and go on (paxflow-cluster restart adds it)");
DEFINE_bool(wipe, false,
            "A fresh start (no --recover) over this node's history in --log_dir: remove its "
            "logs, checkpoints and recovery state (each file is named as it goes), once every "
            "peer agreed that the cluster starts afresh. Without it such a start is refused "
            "and nothing is touched (paxflow-cluster start --wipe passes it)");
DEFINE_int32(metrics_port, -1,
             "Serve Prometheus metrics (GET /metrics, text format) over HTTP on this port of the "
             "node's host; 0: none; -1: the port the config gives this node (metrics_port, "
             "none if it gives none). A port in use stops the node from starting. Not a "
             "cluster parameter: paxflow-cluster does not forward it (each node's port is in "
             "the config)");
DEFINE_double(checkpoint_every, 60,
              "With --log_dir: seconds between checkpoints (a cluster parameter: every node "
              "checkpoints at the same epochs); 0: none. Logs older than the newest "
              "checkpoint every node holds are removed");
DEFINE_bool(replicated_input, false,
            "Replicate each partition's input through consensus before it runs (a cluster "
            "parameter): the replicas of a partition form one Raft group (libraft, on each "
            "node's consensus_port in the config), its leader sequences, and an epoch's batches "
            "run, and clients are answered, only once a majority of the group holds them on "
            "disk; another replica takes over from a leader that dies. Needs --log_dir. Off: "
            "replica 0 sequences and the other replicas follow its batches as they come");
DEFINE_uint32(election_timeout_ms, 1000,
              "With --replicated_input: how long a follower waits without hearing its group's "
              "leader before it stands for election (libraft randomizes it to 1x-2x); a failover "
              "takes about 1-2 times this (50..60000)");
DEFINE_uint32(heartbeat_ms, 200, "How often a node tells every peer it is alive (ms)");
DEFINE_uint32(peer_timeout_ms, 1000,
              "A peer silent this long (ms) is reported in progress lines and status (time "
              "the node spent handling a message, when it could hear nobody, does not count); "
              "while the node waits for it, clients get UNAVAILABLE. So is a peer it waits for "
              "that speaks but recovers, or whose epochs have not moved for twice this. A peer "
              "silent for 10 times this that holds back log trimming is named in progress "
              "lines (paxflow-cluster remove takes it out)");
DEFINE_uint32(peer_queue_mb, 64,
              "Per peer, MiB of messages held for a peer that does not take them (dead or "
              "slow); beyond it they are dropped, and the peer fetches them again from the logs");
DEFINE_uint32(peer_max_message_mb, 0,
              "Largest message (MiB) taken on the peer port: a bigger frame closes its "
              "connection (ZMQ_MAXMSGSIZE) instead of exhausting memory, and the node goes on. "
              "0: 4x the largest message the parameters make (max_batch txns of the biggest "
              "kind, a long scan's reads), within 256..1024 MiB");
DEFINE_uint32(max_epochs_ahead, 200,
              "A sequencer waits rather than run more than this many epochs ahead of its own "
              "partition; a partition buffers at most twice this many epochs");
DEFINE_uint32(max_unpublished_epochs, 4,
              "Paxflow mode: the scheduler admits an epoch only this many epochs past its "
              "publish epoch (the newest whose writes all finished); later ones wait, sequenced "
              "and logged, in its buffer. A deeper queue inside the scheduler adds no "
              "throughput once the workers are busy, but keeps LTXs' snapshots pinned longer, "
              "so writes keep more versions. While every unresolved LTX is a locked run "
              "(an LTX in place run on a worker, its reads declared), while a locked run "
              "holds publication, and always in calvin mode: up to 2 x max_epochs_ahead "
              "past it. "
              "Either way a partition that cannot publish (waiting for a dead peer) stops "
              "taking in work (1..1000000)");
DEFINE_uint32(fault_stall_checkpoint, 0,
              "Testing: the n-th checkpoint this process writes stops half written, as if the "
              "node crashed meanwhile (0: never)");
DEFINE_int32(reads_retry_ms, 0,
             "A txn that has waited this long (ms) for another partition's reads, with every "
             "batch of its epoch here, asks that partition to send them again (a message may "
             "be lost on a full queue or a broken connection); 0: the longer of 2 x "
             "heartbeat_ms and 20 x epoch_ms; -1: never");
DEFINE_double(fault_drop_peer_messages, 0,
              "Testing only (fault injection): drop this fraction (0..1) of the messages sent "
              "to peers on --fault_drop_channels, silently, as a broken connection would; "
              "which ones follows a generator seeded with --seed and the node id");
DEFINE_string(fault_drop_channels, "BATCH,REMOTE_READS",
              "Testing only: the channels --fault_drop_peer_messages drops from, "
              "comma-separated (BATCH, REMOTE_READS, READS_REQUEST, BATCH_REQUEST, HEARTBEAT, "
              "...)");
DEFINE_string(fault_pause_sequencer, "",
              "Testing only: ID:EPOCH: node ID's sequencer cuts no epoch after EPOCH and waits "
              "there, its run not ended (a restart of it that resumes after EPOCH is not held), "
              "so that a crash test knows every batch it cut reached its peers");
DEFINE_string(fault_deaf_to_hellos, "",
              "Testing only: NODE:FROM:FILE: while FILE exists, node NODE ignores every "
              "hello (start-up handshake) from node FROM, as if they were lost on the way, "
              "so that a start-up test has one node hear another last; empty: never");
DEFINE_string(fault_hold_ltx_file, "",
              "Testing only: while this file exists, an LTX whose procedure finished at this "
              "node (its origin, record protocol) holds its commit record, as a procedure "
              "that runs that long would, so that a crash test can kill the node while the LTX "
              "runs; empty: never");
DEFINE_string(gc, "epo",
              "Version garbage collection in paxflow mode: background (sweeps below the oldest "
              "snapshot), epo (prunes between snapshots on writes), epo-r (on reads)");

DEFINE_uint32(ltx_workers, 1,
              "Threads of the long-transaction lane per node: they run LTX procedures and serve "
              "LTX reads and long scans, oldest LTX first (1..64)");
DEFINE_uint64(ltx_timeout, 1000,
              "Cluster parameter: an LTX not committed within this many epochs of its begin "
              "record is aborted by the log; a long scan unfinished that long after its snapshot "
              "fails retryably");
DEFINE_uint32(max_active_ltx, 64,
              "Cluster parameter: an LTX begin that finds this many LTXs unresolved aborts at "
              "once (busy, retryable); each node's generator keeps at most its share "
              "(max_active_ltx / partitions) of LTXs unfinished, and its client port holds "
              "clients' LTXs to the same share, so that neither meets it alone: raise it with "
              "max_inflight_ltx on several partitions");
DEFINE_uint32(ltx_max_deferrals, 3,
              "Cluster parameter: after this many deferrals of a short txn by LTX write areas, a "
              "guard record makes new LTXs on its keys abort (busy) until it ran");

DEFINE_bool(ltx_in_place, true,
            "Cluster parameter, paxflow mode with one partition: an LTX locks its write area at "
            "its serialization point (the start of the epoch after its begin) and installs its "
            "writes there once its procedure finished, run by every replica; short txns on that "
            "area wait in the lock manager instead of being deferred, and no commit record is "
            "sequenced. false: the commit-record protocol (always used across partitions)");

DEFINE_bool(ltx_locked_run, true,
            "Paxflow mode, LTXs in place: an LTX whose procedure reads only keys of its write "
            "area and of its declared read area runs once its install holds its area's locks, on "
            "a worker, reading its area's current values (docs/ltx.md, \"Locked run\"); false: "
            "on an LTX thread from its snapshot. Either way it reads the same values, so this is "
            "each node's own choice");

DEFINE_string(workload, "mixed", "Workload preset (its values apply unless set explicitly)");
DEFINE_string(application, "ycsb", "Application: ycsb or bank");
DEFINE_uint64(records, 1000000, "YCSB record count (dense keys 0..records-1)");
DEFINE_uint32(value_size, 100, "YCSB value size in bytes");
DEFINE_double(ro_fraction, 0.9, "Share of read-only txns (0..1)");
DEFINE_uint32(ops_per_ro_txn, 100, "Reads per read-only txn");
DEFINE_uint32(ops_per_rw_txn, 10, "Operations per read-write txn");
DEFINE_double(read_proportion, 0.0,
              "Share of plain reads among a read-write txn's operations (rest: read-modify-write)");
DEFINE_string(distribution, "hot",
              "Key choice: hot (one of hot_records per partition, rest uniform), zipfian, uniform");
DEFINE_double(zipfian_constant, 0.99, "Zipfian theta, strictly between 0 and 1");
DEFINE_uint64(hot_records, 10, "Hot records per partition (distribution=hot)");
DEFINE_double(multi_partition_pct, 0.0, "Percent of txns that span two partitions");
DEFINE_double(ltx_fraction, 0.0, "Share of generated txns that are long (the LTX lane), 0..1");
DEFINE_string(long_kind, "update",
              "Long txns the generator makes: update (WL1: ltx_ops ops, half read-modify-writes, "
              "whose keys form the write area), scan (WL2: read-only scans of scan_length keys; "
              "short txns then insert new keys) or report (a range of report_fraction of the "
              "keys read, 4 summary keys written)");
DEFINE_uint32(ltx_ops, 1000, "Operations per generated long txn (WL1; bank-ltx: accounts)");
DEFINE_uint64(scan_length, 10000, "Consecutive keys per generated long scan (WL2)");
DEFINE_double(report_fraction, 0.1,
              "long_kind=report: share of the records one report LTX reads (a range), 0..1");
DEFINE_uint32(report_range_writes, 0,
              "long_kind=report: updates of each short read-write txn that land in the range "
              "the reports read; above 0 every report reads the first report_fraction of the "
              "records (the period the short txns update), at 0 a range placed at random");
DEFINE_uint64(bom_products, 100, "Bom: part trees (products), a multiple of the partitions");
DEFINE_uint32(bom_fanout, 10, "Bom: child pointers per part");
DEFINE_uint32(bom_levels, 4, "Bom: levels of a part tree (the root is level 0)");
DEFINE_uint32(warehouses, 0,
              "TPC-C: warehouses, a multiple of the partitions (each partition holds whole "
              "warehouses); 0: one per partition");
DEFINE_uint32(ch_streams, 0,
              "CH-benCHmark (application tpcc): closed-loop analytic streams over the cluster, "
              "each running Q1, Q6, Q3, Q5 in turn as long read-only scans of whole tables "
              "beside the TPC-C mix; in paxflow-load, the streams its clients run "
              "(0..256; the ch preset sets 1, tpcc 0)");
DEFINE_bool(tpcc_delivery_ltx, false,
            "TPC-C: issue Delivery as an LTX (its write area declared by its reconnaissance; "
            "calvin mode locks it, paxflow mode runs it in the LTX lane) instead of a short "
            "txn; off by default: it measured no faster (README, TPC-C); paxflow-load refuses it");
DEFINE_uint64(bank_accounts, 100, "Bank: number of accounts");
DEFINE_int64(bank_initial_balance, 1000, "Bank: initial balance of every account");
DEFINE_bool(bank_ltx_read_outside, false,
            "Bank: each generated bank-ltx also declares a read of one account outside its "
            "ring (which it does not read), so it keeps the record protocol instead of being "
            "locked at its begin (docs/ltx.md); for tests of that protocol under bank's audits");
DEFINE_double(audit_fraction, 0.1, "Bank: share of audit txns (read every account)");

namespace paxflow {
namespace {

// Flags that describe one node or one invocation, never a cluster param.
const std::set<std::string>& LocalOnlyFlags() {
  static const std::set<std::string> kFlags = {"config", "node_id", "replay", "replay_replica",
                                               "recover", "wipe", "metrics_port"};
  return kFlags;
}

bool ParseEpochList(const std::string& text, std::vector<Epoch>* out, std::string* error) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    unsigned long long epoch = std::strtoull(item.c_str(), &end, 10);
    if (*end != '\0') {
      *error = "digest_epochs: '" + item + "' is not an epoch number";
      return false;
    }
    out->push_back(epoch);
  }
  return true;
}

}  // namespace

std::set<std::string> ExplicitFlags() {
  std::set<std::string> names;
  std::vector<gflags::CommandLineFlagInfo> flags;
  gflags::GetAllFlags(&flags);
  for (const auto& flag : flags) {
    if (!flag.is_default) names.insert(flag.name);
  }
  return names;
}

const std::vector<std::string>& NodeFlagNames() {
  static const std::vector<std::string> kNames = {
      "mode", "epoch_ms", "max_batch", "sequencers_per_node", "workers", "ro_workers",
      "max_inflight", "max_inflight_ltx", "max_ltx_backlog", "seed",
      "generate", "duration", "run_epochs", "log_fsync", "progress_ms", "digest_epochs",
      "peer_wait_s", "drain_timeout_s", "client_admit_limit", "client_buffer_mb", "gc",
      "checkpoint_every", "heartbeat_ms", "peer_timeout_ms", "peer_queue_mb", "max_epochs_ahead",
      "max_unpublished_epochs",
      "fault_stall_checkpoint", "reads_retry_ms", "fault_drop_peer_messages",
      "fault_drop_channels", "fault_pause_sequencer", "fault_deaf_to_hellos", "fault_hold_ltx_file", "replicated_input", "election_timeout_ms", "peer_max_message_mb", "wipe", "ltx_workers", "ltx_timeout",
      "max_active_ltx",
      "ltx_max_deferrals", "ltx_in_place", "ltx_locked_run", "workload", "application", "records", "value_size", "ro_fraction",
      "ops_per_ro_txn", "ops_per_rw_txn", "read_proportion", "distribution",
      "zipfian_constant", "hot_records", "multi_partition_pct", "ltx_fraction", "long_kind",
      "ltx_ops", "scan_length", "report_fraction", "report_range_writes", "bank_accounts",
      "bank_initial_balance", "bank_ltx_read_outside", "audit_fraction", "bom_products", "bom_fanout", "bom_levels",
      "warehouses", "ch_streams", "tpcc_delivery_ltx"};
  return kNames;
}

std::string ResolveFlags(const std::vector<std::pair<std::string, std::string>>& params,
                         const std::set<std::string>& explicit_flags, uint32_t partitions,
                         NodeParams* out) {
  std::set<std::string> from_params;
  std::string workload = FLAGS_workload;
  for (const auto& [name, value] : params) {
    gflags::CommandLineFlagInfo info;
    if (LocalOnlyFlags().count(name) || !gflags::GetCommandLineFlagInfo(name.c_str(), &info)) {
      return "unknown parameter '" + name + "' (see paxflow-node --help for the parameters)";
    }
    if (!from_params.insert(name).second) return "parameter '" + name + "' is set twice";
    if (name == "workload" && !explicit_flags.count("workload")) workload = value;
  }
  const WorkloadPreset* preset = FindWorkloadPreset(workload);
  if (!preset) {
    return "unknown workload '" + workload + "' (expected one of: " + WorkloadPresetNames() + ")";
  }
  gflags::SetCommandLineOption("workload", workload.c_str());
  for (const auto& [name, value] : preset->settings) {
    if (explicit_flags.count(name) || from_params.count(name)) continue;
    gflags::SetCommandLineOption(name.c_str(), value.c_str());
  }
  for (const auto& [name, value] : params) {
    if (explicit_flags.count(name)) continue;
    if (gflags::SetCommandLineOption(name.c_str(), value.c_str()).empty()) {
      return "parameter " + name + "='" + value + "' is not a valid value";
    }
  }

  NodeParams p;
  EngineParams& e = p.engine;
  if (!ParseMode(FLAGS_mode, &e.mode)) {
    return "mode '" + FLAGS_mode + "' is not one of paxflow, calvin";
  }
  e.epoch_ms = FLAGS_epoch_ms;
  e.max_batch = FLAGS_max_batch;
  e.sequencers_per_node = FLAGS_sequencers_per_node;
  e.workers = FLAGS_workers;
  e.ro_workers = FLAGS_ro_workers;
  e.max_inflight = FLAGS_max_inflight;
  e.max_inflight_ltx = FLAGS_max_inflight_ltx;
  e.max_ltx_backlog = FLAGS_max_ltx_backlog;
  e.seed = FLAGS_seed;
  e.generate = FLAGS_generate;
  e.duration_s = FLAGS_duration;
  e.run_epochs = FLAGS_run_epochs;
  e.log_dir = FLAGS_log_dir;
  e.log_fsync = FLAGS_log_fsync;
  e.progress_ms = FLAGS_progress_ms;
  e.summary_json = FLAGS_summary_json;
  e.peer_wait_s = FLAGS_peer_wait_s;
  e.drain_timeout_s = FLAGS_drain_timeout_s;
  e.ltx_workers = FLAGS_ltx_workers;
  e.ltx_timeout = FLAGS_ltx_timeout;
  e.max_active_ltx = FLAGS_max_active_ltx;
  e.ltx_max_deferrals = FLAGS_ltx_max_deferrals;
  e.ltx_in_place = FLAGS_ltx_in_place;
  e.ltx_locked_run = FLAGS_ltx_locked_run;
  e.client_admit_limit = FLAGS_client_admit_limit;
  e.client_buffer_mb = FLAGS_client_buffer_mb;
  e.recover = FLAGS_recover;
  e.wipe = FLAGS_wipe;
  e.peer_max_message_mb = FLAGS_peer_max_message_mb;
  e.checkpoint_every_s = FLAGS_checkpoint_every;
  e.metrics_port = FLAGS_metrics_port;
  e.replicated_input = FLAGS_replicated_input;
  e.election_timeout_ms = FLAGS_election_timeout_ms;
  e.heartbeat_ms = FLAGS_heartbeat_ms;
  e.peer_timeout_ms = FLAGS_peer_timeout_ms;
  e.peer_queue_mb = FLAGS_peer_queue_mb;
  e.max_epochs_ahead = FLAGS_max_epochs_ahead;
  e.max_unpublished_epochs = FLAGS_max_unpublished_epochs;
  e.fault_stall_checkpoint = FLAGS_fault_stall_checkpoint;
  e.reads_retry_ms = FLAGS_reads_retry_ms;
  e.fault_drop_peer_messages = FLAGS_fault_drop_peer_messages;
  e.fault_drop_channels = FLAGS_fault_drop_channels;
  e.fault_pause_sequencer = FLAGS_fault_pause_sequencer;
  e.fault_hold_ltx_file = FLAGS_fault_hold_ltx_file;
  e.fault_deaf_to_hellos = FLAGS_fault_deaf_to_hellos;
  if (!ParseGcPolicy(FLAGS_gc, &e.gc)) {
    return "gc '" + FLAGS_gc + "' is not one of background, epo, epo-r";
  }
  std::string error;
  if (!ParseEpochList(FLAGS_digest_epochs, &e.digest_epochs, &error)) return error;

  WorkloadParams& w = p.workload;
  w.workload = workload;
  w.application = FLAGS_application;
  w.records = FLAGS_records;
  w.value_size = FLAGS_value_size;
  w.ro_fraction = FLAGS_ro_fraction;
  w.ops_per_ro_txn = FLAGS_ops_per_ro_txn;
  w.ops_per_rw_txn = FLAGS_ops_per_rw_txn;
  w.read_proportion = FLAGS_read_proportion;
  w.distribution = FLAGS_distribution;
  w.zipfian_constant = FLAGS_zipfian_constant;
  w.hot_records = FLAGS_hot_records;
  w.multi_partition_pct = FLAGS_multi_partition_pct;
  w.ltx_fraction = FLAGS_ltx_fraction;
  w.long_kind = FLAGS_long_kind;
  w.ltx_ops = FLAGS_ltx_ops;
  w.scan_length = FLAGS_scan_length;
  w.bank_accounts = FLAGS_bank_accounts;
  w.bank_ltx_read_outside = FLAGS_bank_ltx_read_outside;
  w.bank_initial_balance = FLAGS_bank_initial_balance;
  w.audit_fraction = FLAGS_audit_fraction;
  w.report_fraction = FLAGS_report_fraction;
  w.report_range_writes = FLAGS_report_range_writes;
  w.bom_products = FLAGS_bom_products;
  w.bom_fanout = FLAGS_bom_fanout;
  w.bom_levels = FLAGS_bom_levels;
  w.warehouses = FLAGS_warehouses ? FLAGS_warehouses : partitions;
  w.ch_streams = FLAGS_ch_streams;
  w.tpcc_delivery_ltx = FLAGS_tpcc_delivery_ltx;

  error = p.Validate(partitions);
  if (!error.empty()) return error;
  *out = std::move(p);
  return "";
}

}  // namespace paxflow
