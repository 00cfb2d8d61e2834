// Node: the metrics endpoint (metrics/metrics_server.h) and what it shows,
// in Prometheus's text format. Every figure is one the node keeps anyway
// (the workers' counters and histograms, the scheduler's status, the
// client port's counters, the store's metrics, the peers' heartbeats); a
// scrape reads them from the server's thread, nothing is counted twice.
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "common/clock.h"
#include "metrics/exposition.h"
#include "node/node.h"

namespace paxflow {
namespace {

// The process's resident memory now (bytes), from /proc/self/statm; 0 if
// it cannot be read.
uint64_t ResidentBytes() {
  FILE* file = std::fopen("/proc/self/statm", "r");
  if (!file) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = std::fscanf(file, "%llu %llu", &size, &resident);
  std::fclose(file);
  return read == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}


}  // namespace

std::string Node::ListenForMetrics() {
  const int32_t flag = options_.params.engine.metrics_port;
  const uint32_t port = flag >= 0 ? static_cast<uint32_t>(flag) : self_->metrics_port();
  if (port == 0) return "";
  metrics_ = std::make_unique<MetricsServer>([this] { return MetricsText(); });
  const std::string error = metrics_->Listen(self_->host(), static_cast<uint16_t>(port));
  if (!error.empty()) {
    metrics_.reset();
    return "the metrics endpoint " +
           std::string(flag >= 0 ? "(--metrics_port)" : "(metrics_port in the config)") + ": " +
           error + "; give a free port, or --metrics_port=0 for none";
  }
  Print("[node " + std::to_string(options_.id) + "] metrics at http://" + self_->host() + ":" +
        std::to_string(metrics_->port()) + "/metrics");
  return "";
}

std::string Node::MetricsText() const {
  paxflow::MetricsText out;
  const EngineParams& engine = options_.params.engine;
  const int64_t now = NowMicros();
  out.Gauge("paxflow_node_info", "This node's mode and workload (always 1)", 1,
            {{"mode", ModeName(engine.mode)}, {"workload", options_.params.workload.workload}});
  const State state = state_.load();
  for (State each : {State::kStarting, State::kRecovering, State::kRunning, State::kStopping}) {
    out.Gauge("paxflow_node_state", "1 for the state the node is in (starting, recovering, "
              "running, stopping)", each == state ? 1 : 0, {{"state", StateName(each)}});
  }
  out.Gauge("paxflow_node_problem", "1 while the node cannot go on (a silent peer it waits for, "
            "a failed log; paxflow-cli status says why)", Problem().empty() ? 0 : 1);

  // Txns: the workers' counters and latency histograms, merged live.
  const char* kinds[kTxnKinds] = {"ro", "rw", "ltx"};
  for (int k = 0; k < kTxnKinds; ++k) {
    const MetricsText::Labels kind = {{"kind", kinds[k]}};
    out.Counter("paxflow_txns_committed_total", "Txns committed here, by kind (ro, rw, ltx); "
                "replicas other than 0 re-execute replica 0's", stats_->Committed(k), kind);
    out.Counter("paxflow_txns_declined_total", "Txns whose procedure chose not to write "
                "(e.g. insufficient funds), by kind", stats_->Declined(k), kind);
    out.Counter("paxflow_txns_aborted_total", "Txns that did not commit (the LTX lane), by kind",
                stats_->Aborted(k), kind);
    out.HistogramSeconds("paxflow_txn_latency_seconds", "Node-side latency, arrival at the "
                         "sequencer to result, by kind", stats_->Latency(k), kind);
  }
  const LtxCounters& ltx = stats_->ltx();
  for (int reason = 0; reason < kLtxAbortReasons; ++reason) {
    out.Counter("paxflow_ltx_aborts_total", "LTXs aborted, by reason",
                ltx.aborts[reason].load(std::memory_order_relaxed),
                {{"reason", LtxAbortReasonName(reason)}});
  }
  out.HistogramSeconds("paxflow_ro_visibility_delay_seconds", "Read-only txns: end of their "
                       "snapshot's epoch to their run", stats_->Visibility());
  out.Counter("paxflow_invariant_failures_total", "Txns whose application invariant failed "
              "(bank audits that saw a wrong total)", stats_->InvariantFailures());

  // Epochs and queues.
  const SchedulerStatus status = scheduler_->Status();
  if (started_.load()) {
    out.Gauge("paxflow_sequenced_epoch", "Newest epoch every sequencer of this node closed "
              "(replica 0 only)", static_cast<double>(LastSequencedEpoch()));
  }
  out.Gauge("paxflow_admitted_epoch", "Newest epoch in execution here",
            static_cast<double>(status.admitted_epoch));
  out.Gauge("paxflow_published_epoch", "Newest epoch whose writes read-only txns see",
            static_cast<double>(status.published_epoch));
  out.Gauge("paxflow_publish_lag_epochs", "Admitted epoch minus published epoch",
            static_cast<double>(status.admitted_epoch - std::min(status.admitted_epoch,
                                                                 status.published_epoch)));
  out.Gauge("paxflow_buffered_epochs", "Epochs received and waiting for other sequencers' "
            "batches", static_cast<double>(status.buffered_epochs));
  out.Gauge("paxflow_pending_txns", "Admitted txns waiting for locks or a snapshot",
            static_cast<double>(status.pending));
  out.Gauge("paxflow_executing_txns", "Txns handed to workers, not finished",
            static_cast<double>(status.executing));
  out.Gauge("paxflow_waiting_ro_txns", "Read-only txns waiting for their snapshot",
            static_cast<double>(status.waiting_ro));
  out.Gauge("paxflow_ltx_active", "LTXs begun and not resolved",
            static_cast<double>(status.active_ltx));
  out.Gauge("paxflow_ltx_deferred_txns", "Short txns set aside by an LTX's write area now",
            static_cast<double>(status.deferred));
  out.Gauge("paxflow_ltx_parked_reads", "Read-only txns waiting now for an LTX to resolve",
            static_cast<double>(status.parked));
  out.Counter("paxflow_ltx_deferred_txns_total", "Short txns deferred by an LTX's write area "
              "at least once", ltx.deferred_txns.load(std::memory_order_relaxed));
  out.Counter("paxflow_ltx_deferrals_total", "Times a short txn was set aside by an LTX",
              ltx.deferrals.load(std::memory_order_relaxed));
  out.Counter("paxflow_ltx_parked_reads_total", "Read-only txns that waited for an LTX to "
              "resolve", ltx.parked_reads.load(std::memory_order_relaxed));

  // Versions (multi-version store) and memory.
  if (store_->multi_version()) {
    const StoreMetrics metrics = store_->Metrics();
    out.Gauge("paxflow_store_versions", "Versions linked in some key's chain",
              static_cast<double>(metrics.live_versions));
    out.Gauge("paxflow_store_version_bytes", "Value bytes of those versions",
              static_cast<double>(metrics.bytes));
    out.Counter("paxflow_store_reclaimed_versions_total", "Versions unlinked by garbage "
                "collection", static_cast<double>(metrics.reclaimed_versions));
    out.Counter("paxflow_store_freed_versions_total", "Versions whose memory was returned",
                static_cast<double>(metrics.freed_versions));
  }
  out.Gauge("process_resident_memory_bytes", "Resident memory of the node's process",
            static_cast<double>(ResidentBytes()));
  struct rusage usage {};
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    out.Gauge("paxflow_peak_resident_memory_bytes", "Peak resident memory of the node's process",
              static_cast<double>(usage.ru_maxrss) * 1024);  // KiB on Linux
  }

  // Durability.
  if (log_) {
    out.Counter("paxflow_input_log_written_bytes_total", "Bytes appended to the input log",
                static_cast<double>(log_->bytes_written()));
    out.HistogramSeconds("paxflow_input_log_sync_seconds", "Each epoch's input log write-out "
                         "before it runs (fdatasync included with --log_fsync)",
                         log_->sync_us());
  }
  if (checkpointer_) {
    const std::vector<Epoch> held = checkpointer_->Held();
    const Epoch newest = held.empty() ? 0 : held.back();
    out.Gauge("paxflow_checkpoint_epoch", "Epoch of the newest checkpoint held (0: none)",
              static_cast<double>(newest));
    // Wall clock: the written time comes from the checkpoint's header, so
    // the age holds across restarts.
    const int64_t written_ms = checkpointer_->NewestWrittenUnixMs();
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
    const double age_s = written_ms > 0 ? std::max<int64_t>(now_ms - written_ms, 0) / 1000.0
                                        : std::max<int64_t>(now - start_us_.load(), 0) / 1e6;
    out.Gauge("paxflow_checkpoint_age_seconds", "Seconds since the newest checkpoint held was "
              "written (wall clock, from its header); since the node started if it holds none",
              age_s);
  }

  // Peers.
  out.Counter("paxflow_peer_garbled_messages_total", "Peer messages that did not parse or were "
              "not for this node", static_cast<double>(dropped_.load(std::memory_order_relaxed)));
  for (const NodeConfig& peer : options_.config.node()) {
    if (peer.id() == options_.id) continue;
    const MetricsText::Labels labels = {{"peer", std::to_string(peer.id())}};
    const int64_t silent_us = monitor_->SilentForUs(peer.id(), now);
    out.Gauge("paxflow_peer_up", "1 if the peer was heard within --peer_timeout_ms",
              silent_us <= int64_t{engine.peer_timeout_ms} * 1000 ? 1 : 0, labels);
    out.Gauge("paxflow_peer_silence_seconds", "Time since anything came from the peer",
              static_cast<double>(std::max<int64_t>(silent_us, 0)) / 1e6, labels);
    const Transport::PeerQueue queue = transport_->Queue(peer.id());
    out.Gauge("paxflow_peer_queued_bytes", "Bytes held for the peer, not yet taken",
              static_cast<double>(queue.queued_bytes), labels);
    out.Counter("paxflow_peer_dropped_messages_total", "Messages to the peer dropped on a full "
                "queue (fetched again from the logs)", static_cast<double>(queue.dropped), labels);
  }

  // Authentication (auth.curve): refused connections by port and reason
  // (the ZAP handler's: keys not in the config; libzmq's before it, seen
  // by the sockets' handshake monitors), and impersonating peer messages.
  if (zap_) {
    const struct {
      const char* domain;
      uint64_t keys;
      const HandshakeMonitor* handshakes;
    } ports[] = {{"peer", zap_->refused_peers(), transport_ ? &transport_->handshakes() : nullptr},
                 {"client", zap_->refused_clients(), clients_ ? &clients_->handshakes() : nullptr}};
    const char* help = "Connections refused on the peer and client ports, by reason: "
                       "key_not_listed (the ZAP handler); no_curve, bad_handshake, no_zap_handler, "
                       "handshake_incomplete (libzmq, before the ZAP handler is asked; a client "
                       "without a key often shows as handshake_incomplete, as do port probes)";
    for (const auto& port : ports) {
      out.Counter("paxflow_auth_refused_connections_total", help, static_cast<double>(port.keys),
                  {{"domain", port.domain}, {"reason", "key_not_listed"}});
      for (int reason = 0; reason < static_cast<int>(HandshakeRefusal::kCount); ++reason) {
        const HandshakeRefusal each = static_cast<HandshakeRefusal>(reason);
        out.Counter("paxflow_auth_refused_connections_total", help,
                    port.handshakes ? static_cast<double>(port.handshakes->count(each)) : 0,
                    {{"domain", port.domain}, {"reason", HandshakeRefusalName(each)}});
      }
    }
    out.Counter("paxflow_auth_impersonations_total", "Peer messages dropped because their header "
                "named another node than the key that sent them",
                transport_ ? static_cast<double>(transport_->impersonations()) : 0);
  }

  // Clients.
  if (clients_) {
    const ClientPortCounters client = clients_->Counters();
    out.Counter("paxflow_client_busy_replies_total", "BUSY replies (overload: the client "
                "should back off)", static_cast<double>(client.busy));
    out.Gauge("paxflow_client_admitted_txns", "Client txns admitted and not answered",
              static_cast<double>(client.admitted));
    out.Gauge("paxflow_client_admit_limit_txns", "Admitted txns beyond which clients get BUSY",
              static_cast<double>(client.admit_limit));
    out.Gauge("paxflow_client_unsent_reply_bytes", "Replies waiting for their client to read "
              "them", static_cast<double>(client.unsent_bytes));
    out.Gauge("paxflow_client_connections", "Client connections open",
              static_cast<double>(client.connections));
    out.Counter("paxflow_client_txns_received_total", "Txns received on the client port",
                static_cast<double>(client.txns_received));
    out.Counter("paxflow_client_txns_answered_total", "Txns answered on the client port",
                static_cast<double>(client.txns_answered));
    out.Counter("paxflow_client_dropped_replies_total", "Refusals not sent to clients that do "
                "not read their replies", static_cast<double>(client.dropped_replies));
    out.Gauge("paxflow_client_ltxs_held", "Client LTXs waiting at the client port for room in "
              "this node's share of max_active_ltx", static_cast<double>(client.ltxs_held));
    out.Counter("paxflow_client_ltx_holds_total", "Client LTXs that waited so",
                static_cast<double>(client.ltx_holds));
  }
  return out.Text();
}

}  // namespace paxflow
