#include "node/node.h"

#include <glog/logging.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>

#include "common/clock.h"
#include "common/paths.h"

namespace paxflow {
namespace {

// How long after the last node was ready the epoch clocks start.
constexpr int64_t kStartMarginMs = 50;

std::string Rate(uint64_t count, double seconds) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%.0f", seconds > 0 ? count / seconds : 0.0);
  return buffer;
}

}  // namespace

Node::Node(NodeOptions options) : options_(std::move(options)) {}

Node::~Node() { Shutdown(); }

void Node::Print(const std::string& line) const {
  if (options_.print) {
    options_.print(line);
  } else {
    fputs(line.c_str(), stdout);
    if (line.empty() || line.back() != '\n') fputc('\n', stdout);
    fflush(stdout);
  }
}

std::string Node::Start() {
  std::string error = ValidateClusterConfig(options_.config, &layout_);
  if (!error.empty()) return "config: " + error;
  self_ = layout_.Node(options_.id);
  if (!self_) return "node id " + std::to_string(options_.id) + " is not in the config";
  const NodeParams& params = options_.params;
  error = params.Validate(layout_.partitions());
  if (!error.empty()) return error;
  const PartitionId partition = self_->partition();
  const uint32_t partitions = layout_.partitions();

  app_ = MakeApplication(params.workload);
  store_ = MakeStore(params.engine, partition, partitions, *app_, params.workload.value_size);
  store_slot_ = store_->RegisterThread();
  LoadPartition(*app_, partition, partitions, store_.get());
  SchedulerOptions scheduler_options = SchedulerOptionsFor(params.engine, partition, partitions);
  scheduler_options.runs_procedures = self_->replica() == 0;
  stats_ = std::make_unique<NodeStats>(scheduler_options.stats_slots());
  scheduler_ = std::make_unique<Scheduler>(scheduler_options, store_.get(), app_.get(), this,
                                           stats_.get(), this, &ltx_records_);

  if (!params.engine.log_dir.empty()) {
    if (!MakeDirectories(params.engine.log_dir)) {
      return "cannot create the input log directory " + params.engine.log_dir + ": " +
             std::strerror(errno);
    }
    log_ = std::make_unique<InputLogWriter>();
    error = log_->Open(InputLogPath(params.engine.log_dir, options_.id),
                       MakeLogHeader(params, options_.id, partition, self_->replica(), partitions),
                       params.engine.log_fsync);
    if (!error.empty()) return error;
    scheduler_->SetBeforeExecute([this](const MergedEpoch& epoch) { log_->Append(epoch); });
  }
  for (Epoch epoch : params.engine.digest_epochs) {
    scheduler_->RequestDigest(epoch, [this](Epoch at, uint64_t digest) {
      {
        std::lock_guard<std::mutex> lock(digest_mu_);
        digests_.emplace_back(at, digest);
      }
      Print("[node " + std::to_string(options_.id) + "] state digest at epoch " +
            std::to_string(at) + ": " + DigestHex(digest));
    });
  }

  if (options_.shared_context) {
    context_ = options_.shared_context;
  } else {
    own_context_ = std::make_unique<zmq::context_t>(1);
    context_ = own_context_.get();
  }
  TransportOptions transport_options;
  transport_options.self = options_.id;
  transport_options.bind_endpoint = NodeEndpoint(options_.config, *self_);
  transport_options.context = context_;
  for (const NodeConfig& node : options_.config.node()) {
    transport_options.peers.push_back({node.id(), NodeEndpoint(options_.config, node)});
  }
  transport_ = std::make_unique<Transport>(transport_options);
  transport_->Subscribe(HELLO, [this](NodeId from, std::string&& payload) {
    OnHello(from, std::move(payload));
  });
  transport_->Subscribe(BATCH, [this, partition](NodeId from, std::string&& payload) {
    auto batch = std::make_unique<Batch>();
    if (!batch->ParseFromString(payload) || batch->partition() != partition) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_N(ERROR, 100) << "node " << options_.id << ": dropped a garbled batch from node "
                              << from << " (or one for another partition)";
      return;
    }
    scheduler_->DeliverBatch(std::move(batch));
  });
  transport_->Subscribe(REMOTE_READS, [this](NodeId from, std::string&& payload) {
    RemoteReads reads;
    if (!reads.ParseFromString(payload)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_N(ERROR, 100) << "node " << options_.id
                              << ": dropped garbled remote reads from node " << from;
      return;
    }
    scheduler_->DeliverRemoteReads(std::move(reads));
  });
  transport_->Subscribe(LTX_READ_REQUEST, [this](NodeId from, std::string&& payload) {
    LtxReadRequest request;
    if (!request.ParseFromString(payload) || request.from_partition() >= layout_.partitions()) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_N(ERROR, 100) << "node " << options_.id
                              << ": dropped a garbled LTX read request from node " << from;
      return;
    }
    scheduler_->DeliverLtxReadRequest(std::move(request));
  });
  transport_->Subscribe(LTX_READ_REPLY, [this](NodeId from, std::string&& payload) {
    LtxReadReply reply;
    if (!reply.ParseFromString(payload)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_N(ERROR, 100) << "node " << options_.id
                              << ": dropped a garbled LTX read reply from node " << from;
      return;
    }
    scheduler_->DeliverLtxReadReply(std::move(reply));
  });
  error = transport_->Start();
  if (!error.empty()) return error;
  if (self_->client_port() != 0) {
    ClientServiceOptions client_options;
    client_options.endpoint = ClientEndpoint(*self_);
    client_options.node = options_.id;
    client_options.sequences = self_->replica() == 0;
    const NodeConfig* leader = layout_.Node(layout_.NodeOf(0, partition));
    client_options.leader = "node " + std::to_string(leader->id()) + " (" + leader->host() + ":" +
                            std::to_string(leader->client_port()) + ")";
    client_options.epoch_ms = params.engine.epoch_ms;
    AdmissionLimits& admission = client_options.admission;
    admission.max_admitted = params.engine.client_admit_limit
                                 ? params.engine.client_admit_limit
                                 : DefaultAdmitLimit(params.engine.max_batch, 1);
    admission.max_admitted_per_client = admission.max_admitted;
    admission.max_unsent_bytes_per_client = size_t{params.engine.client_buffer_mb} << 20;
    admission.retry_after_ms = params.engine.epoch_ms;
    clients_ = std::make_unique<ClientService>(
        client_options, app_.get(), [this] { return NodeStatus(); },
        [this](Epoch epoch, std::function<void(DigestReply)> done) {
          ServeDigest(epoch, std::move(done));
        },
        context_);
    error = clients_->Start();
    if (!error.empty()) return error;
  }
  scheduler_->Start();
  error = WaitForPeers();
  if (!error.empty()) return error;

  if (self_->replica() == 0) {
    // Replica 0's sequencers fix the order; other replicas execute it. Each
    // sequencer has a generator of its own (the node's window bounds them
    // together), takes client txns from the shared client port, and runs on
    // its own thread; the first also sequences the LTX lane's records.
    const uint32_t per_node = params.engine.sequencers_per_node;
    if (params.engine.generate) {
      generated_window_ = std::make_unique<InflightWindow>(
          params.engine.max_inflight * per_node, [this] { return stats_->GeneratedDone(); });
    }
    // Every node computes the same start from the same hellos (a margin
    // later, so that none has to catch up).
    const int64_t now_unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
    const auto start = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(agreed_start_unix_ms_ + kStartMarginMs -
                                                 now_unix_ms);
    for (uint32_t index = 0; index < per_node; ++index) {
      std::vector<TxnSource*> sources;
      if (clients_) sources.push_back(clients_.get());
      if (params.engine.generate) {
        // The first generator keeps the seed a single-sequencer node used.
        generators_.push_back(std::make_unique<GeneratorSource>(
            app_->NewGenerator(partition, partitions,
                               params.engine.seed + options_.id + (uint64_t{index} << 32)),
            generated_window_.get()));
        sources.push_back(generators_.back().get());
      }
      SequencerOptions sequencer_options;
      sequencer_options.sequencer_id = SequencerId(partition, index, per_node);
      sequencer_options.partition = partition;
      sequencer_options.partitions = partitions;
      sequencer_options.node = options_.id;
      sequencer_options.max_batch = params.engine.max_batch;
      sequencers_.push_back(std::make_unique<Sequencer>(sequencer_options, sources,
                                                        index == 0 ? &ltx_records_ : nullptr));
      runners_.push_back(std::make_unique<SequencerRunner>(
          sequencers_.back().get(), params.engine.epoch_ms, params.engine.run_epochs,
          [this](PartitionId p, std::unique_ptr<Batch> batch) {
            DeliverFromSequencer(p, std::move(batch));
          },
          start));
    }
    // After the load ends, LTXs begun here still resolve: through their
    // records (which the first sequencer takes), or through the log's
    // timeout, which needs epochs to pass.
    SequencerRunner* first = runners_.front().get();
    first->SetDrain([this, first] {
      return ltx_records_.size() > 0 || scheduler_->OwesLtxWork(first->current_epoch());
    });
  }
  start_us_ = NowMicros();
  for (auto& runner : runners_) runner->Start();
  if (params.engine.progress_ms > 0) reporter_ = std::thread([this] { ReportLoop(); });
  started_ = true;
  return "";
}

void Node::OnHello(NodeId from, std::string&& payload) {
  Hello hello;
  std::lock_guard<std::mutex> lock(hello_mu_);
  if (!hello.ParseFromString(payload)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    LOG(WARNING) << "node " << options_.id << ": garbled hello from node " << from;
    return;
  }
  if (hello.params_fingerprint() != options_.params.Fingerprint()) {
    hello_error_ = "node " + std::to_string(from) +
                   " runs with different cluster parameters. Ours:\n" +
                   options_.params.ClusterParamsText() + "theirs:\n" + hello.params_text();
  }
  start_unix_ms_ = std::max(start_unix_ms_, hello.ready_unix_ms());
  for (int i = 0; i < options_.config.node_size(); ++i) {
    if (options_.config.node(i).id() == from) {
      if (heard_from_.empty()) heard_from_.assign(options_.config.node_size(), false);
      heard_from_[i] = true;
    }
  }
  hello_cv_.notify_all();
}

std::string Node::WaitForPeers() {
  Hello hello;
  hello.set_node_id(options_.id);
  hello.set_params_fingerprint(options_.params.Fingerprint());
  hello.set_params_text(options_.params.ClusterParamsText());
  const int64_t ready = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  hello.set_ready_unix_ms(ready);
  const std::string payload = hello.SerializeAsString();
  const int n = options_.config.node_size();
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options_.params.engine.peer_wait_s);
  std::unique_lock<std::mutex> lock(hello_mu_);
  start_unix_ms_ = std::max(start_unix_ms_, ready);
  if (heard_from_.empty()) heard_from_.assign(n, false);
  for (int i = 0; i < n; ++i) {
    if (options_.config.node(i).id() == options_.id) heard_from_[i] = true;
  }
  bool said_waiting = false;
  while (true) {
    lock.unlock();
    for (const NodeConfig& node : options_.config.node()) {
      if (node.id() != options_.id) transport_->Send(node.id(), HELLO, payload);
    }
    lock.lock();
    hello_cv_.wait_for(lock, std::chrono::milliseconds(500), [&] {
      return !hello_error_.empty() ||
             std::all_of(heard_from_.begin(), heard_from_.end(), [](bool b) { return b; });
    });
    if (!hello_error_.empty()) return hello_error_;
    std::string missing;
    for (int i = 0; i < n; ++i) {
      if (heard_from_[i]) continue;
      const NodeConfig& node = options_.config.node(i);
      missing += (missing.empty() ? "" : ", ") + std::string("node ") + std::to_string(node.id()) +
                 " (" + NodeEndpoint(options_.config, node) + ")";
    }
    if (missing.empty()) {
      // Every node's ready time is fixed, so having heard all of them the
      // maximum is final (later hellos only repeat it).
      agreed_start_unix_ms_ = start_unix_ms_;
      return "";
    }
    if (!said_waiting) {
      LOG(INFO) << "node " << options_.id << ": waiting for " << missing;
      said_waiting = true;
    }
    if (options_.interrupted && options_.interrupted()) {
      return "interrupted while waiting for " + missing;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return "no answer within " + std::to_string(options_.params.engine.peer_wait_s) +
             " s from " + missing + "; is it running, and is the address reachable?";
    }
  }
}

void Node::DeliverFromSequencer(PartitionId partition, std::unique_ptr<Batch> batch) {
  bool to_self = false;
  std::string bytes;
  for (uint32_t replica = 0; replica < layout_.replicas(); ++replica) {
    const NodeId node = layout_.NodeOf(replica, partition);
    if (node == options_.id) {
      to_self = true;
      continue;
    }
    if (bytes.empty()) bytes = batch->SerializeAsString();
    transport_->Send(node, BATCH, bytes);
  }
  if (to_self) scheduler_->DeliverBatch(std::move(batch));
}

void Node::SendRemoteReads(PartitionId to, const RemoteReads& reads) {
  transport_->Send(layout_.NodeOf(self_->replica(), to), REMOTE_READS, reads.SerializeAsString());
}

void Node::SendLtxReadRequest(PartitionId to, const LtxReadRequest& request) {
  transport_->Send(layout_.NodeOf(self_->replica(), to), LTX_READ_REQUEST,
                   request.SerializeAsString());
}

void Node::SendLtxReadReply(PartitionId to, const LtxReadReply& reply) {
  transport_->Send(layout_.NodeOf(self_->replica(), to), LTX_READ_REPLY,
                   reply.SerializeAsString());
}

void Node::RequestStop() {
  if (clients_) clients_->BeginShutdown();
  for (auto& runner : runners_) runner->RequestStop();
}

void Node::OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                    const ReadValues& reads) {
  if (clients_) clients_->OnResult(txn, outcome, read_version, reads);
  if (options_.result_tap) options_.result_tap->OnResult(txn, outcome, read_version, reads);
}

StatusReply Node::NodeStatus() const {
  StatusReply reply;
  const SchedulerStatus status = scheduler_->Status();
  reply.set_node_id(options_.id);
  reply.set_partition(self_->partition());
  reply.set_replica(self_->replica());
  reply.set_mode(ModeName(options_.params.engine.mode));
  reply.set_workload(options_.params.workload.workload);
  reply.set_admitted_epoch(status.admitted_epoch);
  reply.set_published_epoch(status.published_epoch);
  reply.set_pending(status.pending);
  reply.set_executing(status.executing);
  reply.set_waiting_ro(status.waiting_ro);
  reply.set_ro_per_s(ro_rate_.load());
  reply.set_rw_per_s(rw_rate_.load());
  reply.set_committed(stats_->CommittedAll());
  reply.set_client_txns_waiting(clients_ ? clients_->waiting_txns() : 0);
  if (store_->multi_version()) reply.set_live_versions(store_->Metrics().live_versions);
  reply.set_uptime_s((NowMicros() - start_us_) / 1e6);
  return reply;
}

void Node::ServeDigest(Epoch epoch, std::function<void(DigestReply)> done) {
  if (epoch == 0) epoch = scheduler_->Status().published_epoch;
  const PartitionId partition = self_->partition();
  const uint32_t replica = self_->replica();
  scheduler_->RequestDigest(epoch, [done, partition, replica](Epoch at, uint64_t digest) {
    DigestReply reply;
    reply.set_epoch(at);
    reply.set_digest(digest);
    reply.set_partition(partition);
    reply.set_replica(replica);
    done(reply);
  });
}

bool Node::WaitFinished(int64_t timeout_ms) {
  if (!scheduler_->WaitFinished(timeout_ms)) return false;
  if (end_us_ == 0) {
    end_us_ = NowMicros();
    final_epoch_ = scheduler_->last_epoch();
    final_digest_ = store_->Digest(store_slot_, final_epoch_);
  }
  return true;
}

void Node::Run(const std::function<bool()>& interrupted) {
  const double duration = options_.params.engine.duration_s;
  const bool timed = duration > 0 && options_.params.engine.run_epochs == 0;
  const int64_t stop_at = start_us_ + static_cast<int64_t>(duration * 1e6);
  bool stopping = false;
  int64_t last_progress_us = NowMicros();
  std::pair<Epoch, Epoch> last_epochs{0, 0};
  while (!WaitFinished(100)) {
    const int64_t now = NowMicros();
    if (!stopping && ((interrupted && interrupted()) || (timed && now >= stop_at))) {
      RequestStop();
      stopping = true;
    }
    // A node whose own load has ended (stopped, or run_epochs reached) still
    // executes what the others send. It gives up only when nothing moves for
    // the drain timeout: a peer died and its epochs will never come.
    if (!runners_.empty() &&
        std::all_of(runners_.begin(), runners_.end(), [](const auto& r) { return r->done(); })) {
      stopping = true;
    }
    const SchedulerStatus progress = scheduler_->Status();
    const std::pair<Epoch, Epoch> epochs{progress.admitted_epoch, progress.published_epoch};
    if (epochs != last_epochs) {
      last_epochs = epochs;
      last_progress_us = now;
    }
    if (stopping && now - last_progress_us > options_.params.engine.drain_timeout_s * 1e6) {
      const SchedulerStatus status = scheduler_->Status();
      LOG(ERROR) << "node " << options_.id << ": gave up draining after "
                 << options_.params.engine.drain_timeout_s << " s without progress at epoch "
                 << status.admitted_epoch << " (" << status.waiting_for << ")";
      drain_failed_ = true;
      break;
    }
  }
  Shutdown();
}

void Node::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  for (auto& runner : runners_) runner->Abort();
  for (auto& runner : runners_) runner->Join();
  if (reporter_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(report_mu_);
      report_stop_ = true;
    }
    report_cv_.notify_all();
    reporter_.join();
  }
  // The scheduler first: its workers and digests still report to clients.
  if (scheduler_) scheduler_->Stop();
  if (clients_) clients_->Stop();
  // Flush what a finished run still has queued for its peers (remote reads
  // they wait for); after a failed start there is nothing worth waiting for.
  if (transport_) transport_->Stop(/*flush=*/started_ && !drain_failed_);
  if (end_us_ == 0) end_us_ = NowMicros();
}

void Node::ReportLoop() {
  const auto period = std::chrono::milliseconds(options_.params.engine.progress_ms);
  uint64_t last[kTxnKinds] = {};
  uint64_t last_reclaimed = 0;
  int64_t last_us = start_us_;
  std::unique_lock<std::mutex> lock(report_mu_);
  while (!report_cv_.wait_for(lock, period, [&] { return report_stop_; })) {
    const int64_t now = NowMicros();
    const double seconds = (now - last_us) / 1e6;
    std::string line = "[node " + std::to_string(options_.id) + "] " +
                       std::to_string((now - start_us_) / 1000000) + "s ";
    for (int k = 0; k < kTxnKinds; ++k) {
      const uint64_t committed = stats_->Committed(k);
      line += " " + std::string(TxnKindName(k)) + " " + Rate(committed - last[k], seconds) + "/s";
      if (k == kKindReadOnly) ro_rate_.store(seconds > 0 ? (committed - last[k]) / seconds : 0);
      if (k == kKindReadWrite) rw_rate_.store(seconds > 0 ? (committed - last[k]) / seconds : 0);
      last[k] = committed;
    }
    last_us = now;
    const SchedulerStatus status = scheduler_->Status();
    line += " | pending " + std::to_string(status.pending) + "  executing " +
            std::to_string(status.executing) + "  waiting-RO " +
            std::to_string(status.waiting_ro) + " | epoch " +
            std::to_string(status.admitted_epoch) + "  published " +
            std::to_string(status.published_epoch) + "  lag " +
            std::to_string(status.admitted_epoch - status.published_epoch);
    if (!runners_.empty()) {
      Epoch sequenced = runners_.front()->current_epoch();
      for (const auto& runner : runners_) sequenced = std::min(sequenced, runner->current_epoch());
      line += "  sequenced " + std::to_string(sequenced);
    }
    if (store_->multi_version()) {
      const StoreMetrics metrics = store_->Metrics();
      line += " | versions " + std::to_string(metrics.live_versions) + " (" +
              std::to_string(metrics.bytes >> 20) + " MiB)  reclaimed " +
              Rate(metrics.reclaimed_versions - last_reclaimed, seconds) + "/s  chain<=" +
              std::to_string(metrics.longest_chain);
      last_reclaimed = metrics.reclaimed_versions;
    }
    if (status.active_ltx + status.deferred + status.parked > 0 ||
        options_.params.workload.ltx_fraction > 0) {
      const LtxCounters& ltx = stats_->ltx();
      uint64_t aborted = 0;
      for (const auto& n : ltx.aborts) aborted += n.load(std::memory_order_relaxed);
      line += " | LTX active " + std::to_string(status.active_ltx) + "  aborted " +
              std::to_string(aborted) + "  deferred " + std::to_string(status.deferred) +
              "  parked-RO " + std::to_string(status.parked);
    }
    if (!status.waiting_for.empty() && status.buffered_epochs > 0) {
      line += " | " + status.waiting_for;
    }
    Print(line);
  }
}

RunSummary Node::Summary() const {
  RunSummary summary;
  summary.node = options_.id;
  summary.partition = self_ ? self_->partition() : 0;
  summary.replica = self_ ? self_->replica() : 0;
  summary.mode = ModeName(options_.params.engine.mode);
  summary.workload = options_.params.workload.workload;
  summary.seconds = (end_us_ - start_us_) / 1e6;
  for (int k = 0; k < kTxnKinds; ++k) {
    summary.kinds[k].committed = stats_->Committed(k);
    summary.kinds[k].declined = stats_->Declined(k);
    summary.kinds[k].aborted = stats_->Aborted(k);
    summary.kinds[k].latency_us = stats_->Latency(k);
  }
  summary.visibility_us = stats_->Visibility();
  summary.invariant_failures = stats_->InvariantFailures();
  summary.dropped_messages = scheduler_->dropped_messages() +
                             (transport_ ? transport_->garbled() : 0) + dropped_.load();
  summary.waited_ro = scheduler_->Status().waited_ro;
  rusage usage;
  if (getrusage(RUSAGE_SELF, &usage) == 0) {
    summary.peak_rss_bytes = static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
  }
  const LtxCounters& ltx = stats_->ltx();
  for (int r = 0; r < kLtxAbortReasons; ++r) summary.ltx.aborts[r] = ltx.aborts[r].load();
  summary.ltx.deferrals = ltx.deferrals.load();
  summary.ltx.deferred_txns = ltx.deferred_txns.load();
  summary.ltx.max_deferrals = ltx.max_deferrals.load();
  summary.ltx.parked_reads = ltx.parked_reads.load();
  summary.ltx.held_installs = ltx.held_installs.load();
  summary.ltx.guards = ltx.guards.load();
  summary.ltx.late_records = ltx.late_records.load();
  summary.ltx.deferred_wait_us = stats_->LtxWait(kKindReadWrite);
  summary.ltx.parked_wait_us = stats_->LtxWait(kKindReadOnly);
  summary.digest_epoch = final_epoch_;
  summary.digest = final_digest_;
  std::lock_guard<std::mutex> lock(digest_mu_);
  summary.epoch_digests = digests_;
  return summary;
}

}  // namespace paxflow
