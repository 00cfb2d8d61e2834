// Node: wiring the components, start-up (and the barrier with its peers),
// the sequencer and batch delivery, status, the run and its end, progress
// lines, summaries. The durable side (logs, recovery, heartbeats, catch-up
// requests) is in node_recovery.cc.
#include "node/node.h"

#include <glog/logging.h>
#include <sys/resource.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "applications/long_run.h"
#include "checkpoint/checkpoint.h"
#include "common/atomic_max.h"
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

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Where node `id` is in the config's node list; -1 if it is not there.
int ConfigIndex(const ClusterConfig& config, NodeId id) {
  for (int i = 0; i < config.node_size(); ++i) {
    if (config.node(i).id() == id) return i;
  }
  return -1;
}

// A random number, never 0, that tells this run of a node from any other.
uint64_t NewInstance() {
  std::random_device device;
  uint64_t instance = 0;
  while (instance == 0) instance = (uint64_t{device()} << 32) | device();
  return instance;
}

}  // namespace

Node::Node(NodeOptions options) : options_(std::move(options)), instance_(NewInstance()) {}

Node::~Node() { Shutdown(); }

const char* Node::StateName(State state) {
  switch (state) {
    case State::kStarting: return "starting";
    case State::kRecovering: return "recovering";
    case State::kRunning: return "running";
    case State::kStopping: return "stopping";
  }
  return "?";
}

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
  const bool recover = params.engine.recover;
  incarnation_ = NowMicros();
  error = ListenForMetrics();
  if (!error.empty()) return error;

  app_ = MakeApplication(params.workload);
  store_ = MakeStore(params.engine, partition, partitions, *app_, params.workload.value_size);
  store_slot_ = store_->RegisterThread();
  SchedulerOptions scheduler_options =
      SchedulerOptionsFor(params.engine, partition, partitions);
  // Replicated input: every replica may come to lead, and the LTX origin
  // role goes with leadership (node_replication.cc's lead and follow).
  scheduler_options.runs_procedures = self_->replica() == 0 || params.engine.replicated_input;
  scheduler_options.ltx_origin_follows_leadership = params.engine.replicated_input;
  // A node answers the clients of what its own sequencer cut, nothing else:
  // another replica's local read-only txns are skipped here, with or
  // without replicated input (docs/design.md, "Read-only txns run where
  // they were sequenced").
  scheduler_options.answering_node = options_.id;
  if (layout_.replicas() > 1) {
    kept_reads_ = std::make_unique<KeptReads>(partition, partitions);
    kept_token_ = (static_cast<uint64_t>(incarnation_) << 8) ^ options_.id;
  }
  stats_ = std::make_unique<NodeStats>(scheduler_options.stats_slots());
  // Room for the epochs a sequencer may run ahead, twice over (sequencers
  // are held back by their own partitions, which may trail this one).
  scheduler_options.max_buffered_epochs = 2 * params.engine.max_epochs_ahead + 16;
  scheduler_ = std::make_unique<Scheduler>(scheduler_options, store_.get(), app_.get(), this,
                                           stats_.get(), this, &ltx_records_);

  sequencer_count_ = partitions * params.engine.sequencers_per_node;
  batches_through_ = std::make_unique<std::atomic<Epoch>[]>(sequencer_count_);
  final_at_ = std::make_unique<std::atomic<Epoch>[]>(sequencer_count_);
  for (uint32_t s = 0; s < sequencer_count_; ++s) {
    batches_through_[s].store(0);
    final_at_[s].store(0);
  }
  // Nothing in the log directory changes before the peers agreed: what
  // it holds is only read here (and a start that would destroy history
  // refused); the logs are opened after WaitForPeers.
  Epoch sequenced_through = 0;
  error = InspectLogDir(&logged_through_, &sequenced_through);
  if (!error.empty()) return error;
  sequenced_epoch_.store(sequenced_through);
  MakeLogWriters();
  MakeCheckpointer();
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

  // The partition, before anything is heard: a fresh one, or rebuilt from
  // the newest checkpoint.
  Epoch restored_at = 0;
  error = recover ? RestorePartition(&restored_at) : "";
  if (!recover) {
    // A large initial database (TPC-C's warehouses) says how it goes.
    LoadPartition(*app_, partition, partitions, store_.get(),
                  [this](uint64_t rows, double seconds, bool done) {
                    if (done && seconds < 1) return;
                    char line[96];
                    snprintf(line, sizeof(line), "%s %llu rows in %.1f s",
                             done ? "loaded" : "loading:", static_cast<unsigned long long>(rows),
                             seconds);
                    Print(line);
                  });
  }
  if (!error.empty()) return error;
  held_at_start_.store(std::max(logged_through_, restored_at));

  if (options_.shared_context) {
    context_ = options_.shared_context;
  } else {
    own_context_ = std::make_unique<zmq::context_t>(1);
    context_ = own_context_.get();
  }
  if (options_.config.auth().curve()) {
    error = LoadNodeAuth(options_.config, options_.id, &auth_);
    if (!error.empty()) return "auth.curve: " + error;
    zap_ = std::make_unique<ZapHandler>(context_, auth_.policy);
    error = zap_->Start();
    if (!error.empty()) return error;
  }
  error = StartTransport();
  if (!error.empty()) return error;
  read_exchange_->SetSentBefore(restored_at);
  error = StartClients();
  if (!error.empty()) return error;
  if (metrics_) metrics_->Start();
  if (recover) state_ = State::kRecovering;
  error = WaitForPeers();
  if (!error.empty()) return error;
  error = OpenLogs(&logged_through_, &sequenced_through);
  if (!error.empty()) return error;
  Epoch finished_at = 0;
  // (Replicated input: the group's log says where sequencing resumes.)
  if (recover && self_->replica() == 0 && !params.engine.replicated_input) {
    // Where its sequencer got: never below what its logs, its checkpoint
    // or its peers hold of it (a lost unsynced tail of the sequencer log
    // must not make it cut those epochs again), and whether it finished.
    sequencer_log_through_ = sequenced_through;
    finished_at = ResumeSequencerAfter(restored_at, &sequenced_through);
    resumed_after_ = sequenced_through;
  }
  sequenced_epoch_.store(sequenced_through);

  if (recover) {
    // Results here of epochs sequenced before this start have nobody
    // waiting for them: in replica 0 those its own sequencer cut before; in
    // another replica (no clients) whatever its peers ran already, whose
    // reads they will not send again. With replicated input whichever
    // member led cut them, this one's sequencer or a peer's while it was
    // away: its client port opened with this process, and every epoch a
    // peer had admitted was committed before this member could lead, so
    // none of their read-only txns has a client here (a rejoining member
    // skips them instead of running a backlog nobody reads).
    recovered_through_ = params.engine.replicated_input ? std::max(sequenced_through, peers_admitted_)
                         : self_->replica() == 0          ? sequenced_through
                                                          : peers_admitted_;
    scheduler_->SetRecoveredThrough(recovered_through_);
    rejoin_epoch_ = std::max({logged_through_, peers_admitted_, restored_at});
  }
  if (checkpointer_) {
    checkpointer_->Start(restored_at,
                         Checkpointer::ReadStable(params.engine.log_dir, options_.id));
  }
  if (catch_up_) catch_up_->Start();
  // Built before the scheduler runs: a failed log stops it from any thread.
  if (params.engine.replicated_input) {
    error = MakeReplication(recover ? sequenced_through : 0);
    if (!error.empty()) return error;
  }
  // With replicated input every replica builds it; it runs while it leads.
  if ((self_->replica() == 0 || params.engine.replicated_input) && !sequencer_finished_) {
    StartSequencer(sequenced_through + 1, recover ? peers_sequenced_ : 0);
  } else if (sequencer_finished_) {
    Print("[node " + std::to_string(options_.id) + "] its sequencer finished its run at epoch " +
          std::to_string(finished_at ? finished_at : sequenced_through) +
          " before the restart; it only executes now");
    // Its load ended (it was stopped): new client txns would never be cut.
    if (clients_) clients_->BeginShutdown();
  }
  scheduler_->Start();
  if (recover) {
    Print("[node " + std::to_string(options_.id) + "] recovering: " +
          (restored_at > 0 ? "checkpoint at epoch " + std::to_string(restored_at)
                           : std::string("no checkpoint, from the initial state")) +
          ", input log through epoch " + std::to_string(logged_through_) +
          ", own sequencer through epoch " + std::to_string(sequenced_through) +
          ", recovered through " + std::to_string(recovered_through_) +
          "; the cluster is at epoch " + std::to_string(peers_admitted_));
    // Reads of read-write txns after the checkpoint that peers sent us:
    // we run those txns again and need them.
    ReadsRequest request;
    request.set_partition(partition);
    request.set_after_epoch(restored_at);
    const std::string bytes = request.SerializeAsString();
    for (uint32_t p = 0; p < partitions; ++p) {
      const NodeId peer = layout_.NodeOf(self_->replica(), p);
      if (peer != options_.id) transport_->Send(peer, READS_REQUEST, bytes);
    }
    // Replicated input: the committed epochs its sequencer log holds past
    // its input log run next; the group's log goes on after them.
    const Epoch replayed = std::max(logged_through_, restored_at);
    const Epoch tail = replicated_ ? std::max(sequenced_through, replayed) : replayed;
    if (tail > restored_at) {
      replaying_ = true;
      replay_thread_ = std::thread([this, restored_at, replayed, tail] {
        if (replayed > restored_at) ReplayOwnLog(restored_at + 1, replayed);
        if (tail > replayed) ReplayCommittedTail(replayed + 1, tail);
        replaying_ = false;
      });
    }
  }
  start_us_ = NowMicros();
  if (!params.engine.replicated_input) {
    for (auto& runner : runners_) runner->Start();
  }
  if (!recover) state_ = State::kRunning;
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
  if (params.engine.progress_ms > 0) reporter_ = std::thread([this] { ReportLoop(); });
  started_ = true;
  return replicated_ ? replicated_->Start() : "";
}

std::string Node::StartTransport() {
  const PartitionId partition = self_->partition();
  TransportOptions transport_options;
  transport_options.self = options_.id;
  transport_options.bind_endpoint = NodeEndpoint(options_.config, *self_);
  transport_options.context = context_;
  transport_options.max_queued_bytes = uint64_t{options_.params.engine.peer_queue_mb} << 20;
  transport_options.fault_drop_fraction = options_.params.engine.fault_drop_peer_messages;
  ParseChannelList(options_.params.engine.fault_drop_channels,
                   &transport_options.fault_drop_channels);  // validated with the params
  transport_options.fault_seed = options_.params.engine.seed * 1000003 + options_.id;
  transport_options.max_message_bytes =
      static_cast<int64_t>(options_.params.PeerMaxMessageBytes());
  transport_options.curve = auth_.own;
  for (const NodeConfig& node : options_.config.node()) {
    transport_options.peers.push_back(
        {node.id(), NodeEndpoint(options_.config, node), auth_.node_keys[node.id()]});
  }
  transport_ = std::make_unique<Transport>(transport_options);
  ReadExchangeOptions exchange;
  exchange.self = options_.id;
  exchange.partition = partition;
  exchange.replica = self_->replica();
  exchange.layout = &layout_;
  exchange.transport = transport_.get();
  exchange.scheduler = scheduler_.get();
  const int64_t retry_ms = options_.params.engine.ReadsRetryMs();
  exchange.retry_us = retry_ms < 0 ? -1 : retry_ms * 1000;
  exchange.max_kept_bytes = transport_options.max_queued_bytes;
  exchange.serve_from_log = [this](NodeId from, const ReadsRequest& request) {
    if (catch_up_) catch_up_->RequestReads(from, request);
  };
  if (options_.params.engine.replicated_input) {
    // Renewed every heartbeat; lapses once the asking node is as good as dead.
    exchange.stand_in_lease_us = int64_t{options_.params.engine.peer_timeout_ms} * 1000;
    exchange.reads_holder = [this](PartitionId from) {
      const NodeId own = layout_.NodeOf(self_->replica(), from);
      if (!monitor_) return own;
      const std::vector<NodeId> live = monitor_->LiveReplicas(from, NowMicros());
      if (live.empty() || std::count(live.begin(), live.end(), own)) return own;
      return live.front();
    };
  }
  read_exchange_ = std::make_unique<ReadExchange>(exchange);
  membership_ = std::make_unique<Membership>(options_.config, options_.id,
                                             options_.params.engine.log_dir);
  const std::string removed_error = membership_->Load();
  if (!removed_error.empty()) return removed_error;
  monitor_ = std::make_unique<PeerMonitor>(
      options_.config, options_.id, transport_.get(),
      int64_t{options_.params.engine.peer_timeout_ms} * 1000, membership_.get());
  transport_->Subscribe(HELLO, [this](NodeId from, std::string&& payload) {
    OnHello(from, std::move(payload));
  });
  auto garbled = [this](NodeId from, const char* what) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(ERROR, 100) << "node " << options_.id << ": dropped garbled " << what
                            << " from node " << from;
  };
  transport_->Subscribe(BATCH, [this, partition, garbled](NodeId from, std::string&& payload) {
    auto batch = std::make_unique<Batch>();
    if (!batch->ParseFromString(payload) || batch->partition() != partition) {
      garbled(from, "batch (or one for another partition)");
      return;
    }
    DeliverBatch(std::move(batch));
  });
  transport_->Subscribe(REMOTE_READS, [this, garbled](NodeId from, std::string&& payload) {
    RemoteReads reads;
    if (!reads.ParseFromString(payload)) return garbled(from, "remote reads");
    scheduler_->DeliverRemoteReads(std::move(reads));
  });
  transport_->Subscribe(LTX_READ_REQUEST, [this, garbled](NodeId from, std::string&& payload) {
    LtxReadRequest request;
    if (!request.ParseFromString(payload) || request.from_partition() >= layout_.partitions()) {
      return garbled(from, "LTX read request");
    }
    scheduler_->DeliverLtxReadRequest(std::move(request));
  });
  transport_->Subscribe(LTX_READ_REPLY, [this, garbled](NodeId from, std::string&& payload) {
    LtxReadReply reply;
    if (!reply.ParseFromString(payload)) return garbled(from, "LTX read reply");
    scheduler_->DeliverLtxReadReply(std::move(reply));
  });
  transport_->Subscribe(HEARTBEAT, [this, garbled](NodeId from, std::string&& payload) {
    Heartbeat heartbeat;
    if (!heartbeat.ParseFromString(payload) || heartbeat.node_id() != from) {
      return garbled(from, "heartbeat");
    }
    LearnRemoved(from, heartbeat.removed());
    const NodeConfig* peer = layout_.Node(from);
    const bool restarted = monitor_->OnHeartbeat(heartbeat);
    // Its partition needs no more reads for the epochs it freed.
    if (peer && options_.params.engine.replicated_input) {
      // Any live replica of it may ask for them (when its own peer of this
      // partition died: ReadExchangeOptions::reads_holder), so they are
      // kept until every live replica of it freed the epoch.
      const std::vector<NodeId> live = monitor_->LiveReplicas(peer->partition(), NowMicros());
      Epoch freed = std::numeric_limits<Epoch>::max();
      for (NodeId node : live) {
        Heartbeat latest;
        freed = monitor_->Latest(node, &latest) ? std::min(freed, latest.freed_epoch()) : 0;
      }
      if (!live.empty()) {
        read_exchange_->Forget(peer->partition(), freed);
      }
    } else if (peer && peer->replica() == self_->replica()) {
      read_exchange_->Forget(peer->partition(), heartbeat.freed_epoch());
    }
    if (restarted && started_ && peer && peer->replica() == self_->replica()) {
      // It restarted: reads it sent us before, for txns we have not run
      // yet, may be lost with it, and it may not run those txns again.
      ReadsRequest request;
      request.set_partition(self_->partition());
      request.set_after_epoch(scheduler_->Status().published_epoch);
      transport_->Send(from, READS_REQUEST, request.SerializeAsString());
      // And the LTX read requests it had not answered.
      scheduler_->PartitionRestarted(peer->partition());
    }
  });
  transport_->Subscribe(BATCH_REQUEST, [this, garbled](NodeId from, std::string&& payload) {
    BatchRequest request;
    if (!request.ParseFromString(payload)) return garbled(from, "batch request");
    if (catch_up_) catch_up_->RequestBatches(from, request);
  });
  transport_->Subscribe(READS_REQUEST, [this, garbled](NodeId from, std::string&& payload) {
    ReadsRequest request;
    if (!request.ParseFromString(payload)) return garbled(from, "reads request");
    if (read_exchange_->Serve(from, request)) return;  // a live one: from memory
    if (catch_up_) catch_up_->RequestReads(from, request);
  });
  if (log_) {
    CatchUpOptions catch_up;
    catch_up.self = options_.id;
    catch_up.log_dir = options_.params.engine.log_dir;
    catch_up.log_name = NodeFileName(options_.id);
    catch_up.transport = transport_.get();
    catch_up.sequencer_log = sequencer_log_.get();
    catch_up.reads_log = reads_log_.get();
    catch_up.input_log = &log_->log();
    if (self_->replica() == 0 || options_.params.engine.replicated_input) {
      catch_up.own_sequencer =
          SequencerId(partition, 0, options_.params.engine.sequencers_per_node);
    }
    catch_up.deliver_local = [this](std::unique_ptr<Batch> batch) {
      DeliverBatch(std::move(batch));
    };
    catch_up_ = std::make_unique<CatchUpServer>(catch_up);
  }
  return transport_->Start();
}

std::string Node::StartClients() {
  if (self_->client_port() == 0) return "";
  const PartitionId partition = self_->partition();
  ClientServiceOptions client_options;
  client_options.endpoint = ClientEndpoint(*self_);
  client_options.node = options_.id;
  client_options.curve = auth_.own;
  client_options.sequences = self_->replica() == 0;
  const NodeConfig* leader = layout_.Node(layout_.NodeOf(0, partition));
  client_options.leader = "node " + std::to_string(leader->id()) + " (" + leader->host() + ":" +
                          std::to_string(leader->client_port()) + ")";
  const EngineParams& engine = options_.params.engine;
  if (engine.replicated_input) {
    // It takes txns once it leads (MakeReplication's lead hook).
    client_options.sequences = false;
    client_options.leader = "the leader of partition " + std::to_string(partition) +
                            "'s replicas (another replica; paxflow-cli status shows who)";
  }
  client_options.epoch_ms = engine.epoch_ms;
  AdmissionLimits& admission = client_options.admission;
  admission.max_admitted = engine.client_admit_limit
                               ? engine.client_admit_limit
                               : DefaultAdmitLimit(engine.max_batch, engine.sequencers_per_node);
  admission.max_admitted_per_client = admission.max_admitted;
  admission.max_unsent_bytes_per_client = size_t{engine.client_buffer_mb} << 20;
  admission.retry_after_ms = engine.epoch_ms;
  clients_ = std::make_unique<ClientService>(
      client_options, app_.get(), [this] { return NodeStatus(); },
      [this](Epoch epoch, std::function<void(DigestReply)> done) {
        ServeDigest(epoch, std::move(done));
      },
      context_);
  // Paxflow mode: client LTXs that will count against max_active_ltx wait
  // here for room in this node's share of it (as the generator's do),
  // instead of aborting busy; and wait while the LTX lane is behind. A node
  // that also generates holds each kind to the share apart: together they
  // may meet the limit.
  ClientLtxHold hold;
  hold.limit = engine.LtxShare(layout_.partitions());
  hold.counts = [this](const Txn& txn) { return TakesLtxShare(txn); };
  hold.behind = [this] { return LtxThreadsBehind(); };
  clients_->SetLtxHold(std::move(hold));
  ClientService::CheckpointProvider checkpoint;
  if (log_) {
    checkpoint = [this](Epoch wait_epoch, ClientService::CheckpointDone done) {
      ServeCheckpoint(wait_epoch, std::move(done));
    };
  }
  clients_->SetRecoveryHooks(
      [this] {
        if (state_.load() == State::kStarting) return std::string("it is starting");
        return Problem();
      },
      std::move(checkpoint), [this](const RemoveNodeRequest& request, std::string* detail) {
        return ServeRemoveNode(request, detail);
      });
  return clients_->Start();
}

bool Node::TakesLtxShare(const Txn& txn) const {
  return txn.txn_class() == LTX && txn.ltx().kind() == LTX_BEGIN &&
         !LtxLane::LockableAtBegin(*app_, txn, scheduler_->options().max_locked_ltx_keys);
}

bool Node::LtxThreadsBehind() const {
  const EngineParams& engine = options_.params.engine;
  return engine.mode != Mode::kCalvin && engine.max_ltx_backlog > 0 &&
         scheduler_->ltx_backlog() > engine.max_ltx_backlog;
}

void Node::StartSequencer(Epoch first_epoch, Epoch catch_up_to) {
  const NodeParams& params = options_.params;
  const PartitionId partition = self_->partition();
  const uint32_t partitions = layout_.partitions();
  // Replica 0's sequencers fix the order; other replicas execute it. Each
  // sequencer has a generator of its own (the node's window bounds them
  // together), takes client txns from the shared client port, and runs on
  // its own thread; the first also sequences the LTX lane's records.
  const uint32_t per_node = params.engine.sequencers_per_node;
  if (params.engine.generate) {
    generated_window_ = std::make_unique<InflightWindow>(
        params.engine.max_inflight * per_node, [this] { return stats_->GeneratedDone(); });
    // Counted by what the node reports of long txns, client LTXs too (which
    // only ever makes the window looser). An LTX's snapshot is fixed when it
    // is sequenced, so one sequenced while the LTX threads are behind waits
    // in their queue and then reads an older snapshot, through more
    // versions per key, which puts the threads further behind: past
    // max_ltx_backlog waiting tasks the window is closed, and LTXs are
    // held before they are sequenced, where waiting costs nothing. (Calvin
    // mode runs LTXs locked, on workers: its window is only the limit.)
    if (params.engine.max_inflight_ltx > 0) {
      generated_ltx_window_ = std::make_unique<InflightWindow>(
          params.engine.max_inflight_ltx, [this] { return stats_->LongDone(); },
          [this] { return LtxThreadsBehind(); });
    }
    // Paxflow mode: the LTXs that count against max_active_ltx (not those
    // locked at their begin, which run as short txns do) are also kept to
    // this node's share of it, so that the nodes' generated LTXs together
    // never abort busy. Their results are counted as they come (OnResult).
    const uint64_t share = params.engine.LtxShare(partitions);
    if (share > 0) {
      if (share < params.engine.max_inflight_ltx) {
        LOG(INFO) << "node " << options_.id << ": the generator keeps at most " << share
                  << " LTXs of the LTX lane unfinished (this node's share of max_active_ltx="
                  << params.engine.max_active_ltx << " over " << partitions
                  << " partitions, beyond which begins abort busy)";
      }
      generated_ltx_share_window_ = std::make_unique<InflightWindow>(
          share, nullptr, nullptr, [this](const Txn& txn) { return TakesLtxShare(txn); });
    }
    // OLLP (the Calvin paper's way with dependent txns): a generated txn
    // whose keys depend on values is first run on this partition's current
    // state, outside the order and without locks, to declare what it reads;
    // at its position it gives up (retryable) if that changed, and OnResult
    // hands it back to the generators. Short dependent txns are planned so
    // in both modes (Application::PlanDependent); LTXs only in calvin mode
    // (paxflow's LTX lane reads its snapshot round by round), but for those
    // whose write area the plan declares (Application::PlansLtxAreas). Calvin's
    // store has no snapshots: the recon reads values in place, possibly
    // mid-write (a torn value only costs a restart); they are read only,
    // never freed under it (a key's fixed-size value stays where it is).
    // The multi-version store's newest versions are read inside an EBR
    // section, on a slot of the generator's own.
    resubmits_ = std::make_unique<ResubmitQueue>();
  }
  // Every node computes the same start from the same hellos (a margin
  // later, so that none has to catch up). A restarted one starts now, and
  // closes back to back the epochs the others are ahead.
  auto start = std::chrono::steady_clock::now();
  if (first_epoch == 1) {
    start += std::chrono::milliseconds(agreed_start_unix_ms_ + kStartMarginMs - UnixMillis());
  } else {
    start -= std::chrono::milliseconds(params.engine.epoch_ms) * static_cast<int64_t>(first_epoch);
  }
  const Epoch ahead = params.engine.max_epochs_ahead;
  sequenced_bytes_.resize(per_node);
  held_reads_.resize(per_node);
  for (uint32_t index = 0; index < per_node; ++index) {
    std::vector<TxnSource*> sources;
    std::function<void(Txn*)> recon;
    if (params.engine.generate || clients_) {
      const bool calvin = params.engine.mode == Mode::kCalvin;
      const size_t slot = calvin ? 0 : store_->RegisterThread();
      recon = [this, partition, partitions, calvin, slot](Txn* txn) {
        if (!app_->NeedsRecon(txn->procedure())) return;
        // A long scan's ranges are planned in both modes (PlanDependent: CH's queries).
        const bool scan = txn->txn_class() == LTX && txn->ltx().kind() == LTX_SCAN;
        // So are the areas of an LTX whose write area depends on values
        // (PlansLtxAreas: TPC-C's Delivery as an LTX).
        const bool planned = txn->txn_class() == LTX && app_->PlansLtxAreas(txn->procedure());
        if (txn->txn_class() == LTX && !calvin && !scan && !planned) return;
        if (!calvin) store_->EnterSnapshot(slot);
        auto read = [&](Key key, std::string* value) {
          std::string_view view;
          if (PartitionOf(key, partitions) != partition ||
              !store_->ReadAt(slot, key, calvin ? 0 : UINT64_MAX, &view)) {
            return false;
          }
          value->assign(view.data(), view.size());
          return true;
        };
        if (planned) app_->PlanDependent(txn, read);
        if (txn->txn_class() == LTX && !scan && calvin) Reconnoiter(*app_, txn, read);
        else if (!planned) app_->PlanDependent(txn, read);
        if (!calvin) store_->ExitSnapshot(slot);
      };
    }
    if (clients_) {
      // Client txns are planned the same way, on this sequencer's thread
      // (clients cannot read the state; an OLLP restart of theirs is
      // queued again at the client port, see OnResult). LTXs from clients
      // declare their own keys.
      planned_.push_back(std::make_unique<PlanningSource>(clients_.get(), [recon](Txn* txn) {
        // A long scan whose procedure plans its ranges (CH's queries) is
        // planned here too; other LTXs declare their own.
        if (txn->txn_class() != LTX || txn->ltx().kind() == LTX_SCAN) recon(txn);
      }));
      sources.push_back(planned_.back().get());
    }
    if (params.engine.generate) {
      // The first generator keeps the seed a single-sequencer node used.
      generators_.push_back(std::make_unique<GeneratorSource>(
          app_->NewGenerator(partition, partitions,
                             params.engine.seed + options_.id + (uint64_t{index} << 32)),
          generated_window_.get(), resubmits_.get(), generated_ltx_window_.get(),
          generated_ltx_share_window_.get()));
      planned_.push_back(std::make_unique<PlanningSource>(generators_.back().get(), recon));
      sources.push_back(planned_.back().get());
    }
    SequencerOptions sequencer_options;
    sequencer_options.sequencer_id = SequencerId(partition, index, per_node);
    sequencer_options.partition = partition;
    sequencer_options.partitions = partitions;
    sequencer_options.node = options_.id;
    sequencer_options.max_batch = params.engine.max_batch;
    sequencers_.push_back(std::make_unique<Sequencer>(sequencer_options, sources,
                                                      index == 0 ? &ltx_records_ : nullptr));
    auto runner = std::make_unique<SequencerRunner>(
        sequencers_.back().get(), params.engine.epoch_ms, params.engine.run_epochs,
        [this, index](PartitionId p, std::unique_ptr<Batch> batch) {
          DeliverFromSequencer(index, p, std::move(batch));
        },
        start);
    runner->SetFirstEpoch(first_epoch);
    runner->CatchUpTo(catch_up_to);
    runner->SetBeforeSend(
        [this, index](Epoch epoch, const std::vector<std::unique_ptr<Batch>>& batches) {
          return BeforeSend(index, epoch, batches);
        });
    // --fault_pause_sequencer (testing): held for good after that epoch.
    Epoch pause = params.engine.SequencerPauseAfter(options_.id);
    if (pause > 0 && first_epoch <= pause) {
      Print("[node " + std::to_string(options_.id) + "] --fault_pause_sequencer: its sequencer "
            "cuts no epoch after " + std::to_string(pause));
    } else {
      pause = std::numeric_limits<Epoch>::max();
    }
    runner->SetLimit([this, ahead, pause] {
      return log_failed_.load() ? 0
                                : std::min(pause, scheduler_->Status().admitted_epoch + ahead);
    });
    runners_.push_back(std::move(runner));
  }
  // After the load ends, LTXs begun here still resolve: through their
  // records (which the first sequencer takes), or through the log's
  // timeout, which needs epochs to pass.
  SequencerRunner* first = runners_.front().get();
  first->SetDrain([this, first] {
    return ltx_records_.size() > 0 || scheduler_->OwesLtxWork(first->current_epoch());
  });
}

Epoch Node::LastSequencedEpoch() const {
  Epoch sequenced = runners_.empty() ? 0 : runners_.front()->current_epoch();
  for (const auto& runner : runners_) sequenced = std::min(sequenced, runner->current_epoch());
  return sequenced;
}

bool Node::BeforeSend(size_t runner, Epoch epoch,
                      const std::vector<std::unique_ptr<Batch>>& batches) {
  if (runner == 0) {
    sequenced_epoch_.store(epoch);
    const int64_t cut_us = NowMicros();
    query_stats_.NoteClosed(epoch, cut_us);
    epoch_timeline_.Cut(epoch, cut_us);
  }
  if (runner == 0 && checkpoint_asked_.exchange(false)) {
    for (const auto& batch : batches) batch->set_checkpoint(true);
  }
  // The other replicas skip this node's local read-only txns: they go to
  // its own scheduler only, not into the bytes below (kept_reads.h).
  size_t kept = 0;
  const PartitionId own = self_->partition();
  held_reads_[runner].clear();
  if (kept_reads_ && own < batches.size()) {
    if (replicated_) {
      kept = kept_reads_->Keep(epoch, batches[own].get());
    } else {
      kept = TakeLocalReads(own, layout_.partitions(), batches[own].get(), &held_reads_[runner]);
    }
  }
  std::vector<std::string>& bytes = sequenced_bytes_[runner];
  bytes.resize(batches.size());
  for (size_t p = 0; p < batches.size(); ++p) batches[p]->SerializeToString(&bytes[p]);
  if (!sequencer_log_ && !replicated_) return true;
  // A SequencedEpoch from the batches' bytes, without serializing them again.
  std::string record;
  {
    google::protobuf::io::StringOutputStream stream(&record);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.WriteTag(8);  // field 1: epoch
    out.WriteVarint64(epoch);
    out.WriteTag(16);  // field 2: sequencer
    out.WriteVarint32(self_->partition());
    for (const std::string& batch : bytes) {
      out.WriteTag((3 << 3) | 2);  // field 3: batches
      out.WriteVarint32(static_cast<uint32_t>(batch.size()));
      out.WriteRaw(batch.data(), static_cast<int>(batch.size()));
    }
    if (replicated_ && kept > 0) {
      out.WriteTag(4 << 3);  // field 4: kept_by
      out.WriteVarint64(kept_token_);
    }
  }
  // Replicated: nothing goes out before the group commits it (OnCommittedEpoch).
  if (replicated_) {
    if (!replicated_->Propose(epoch, std::move(record))) return false;
    if (runner == 0) epoch_timeline_.Proposed(epoch, NowMicros());
    return true;
  }
  std::string error = sequencer_log_->Append(epoch, record);
  const bool final = runner == 0 && !batches.empty() && batches[0]->final();
  if (error.empty()) error = sequencer_log_->Flush(options_.params.engine.log_fsync || final);
  // Remembered apart from the sequencer log, which checkpoints trim: a
  // restart must know its part of the run is over (the final record is
  // synced first, so that peers can still fetch it).
  if (error.empty() && final) error = RecordFinished(epoch);
  if (error.empty()) return true;
  LogFailed(error);
  return false;
}

void Node::DeliverFromSequencer(size_t runner, PartitionId partition,
                                std::unique_ptr<Batch> batch) {
  if (replicated_) return;  // its committed entry is delivered instead
  bool to_self = false;
  const std::string& bytes = sequenced_bytes_[runner][partition];
  for (uint32_t replica = 0; replica < layout_.replicas(); ++replica) {
    const NodeId node = layout_.NodeOf(replica, partition);
    if (node == options_.id) {
      to_self = true;
      continue;
    }
    // A full queue drops it: the peer asks for it again from our log.
    if (!transport_->Send(node, BATCH, bytes)) read_exchange_->NoteUnsent(BATCH, node);
  }
  if (to_self) {
    const Epoch epoch = batch->epoch();
    if (partition == self_->partition()) PutBackById(&held_reads_[runner], batch.get());
    DeliverBatch(std::move(batch));
    if (runner == 0) epoch_timeline_.Delivered(epoch, NowMicros());
  }
}

void Node::DeliverBatch(std::unique_ptr<Batch> batch) {
  if (batch->sequencer() < sequencer_count_) {
    RaiseTo(&batches_through_[batch->sequencer()], batch->epoch());
    if (batch->final()) final_at_[batch->sequencer()].store(batch->epoch());
  }
  if (batch->checkpoint() && checkpointer_ &&
      batch->epoch() >= scheduler_->Status().next_epoch) {
    // Asked before the epoch can run: the scheduler holds its snapshot.
    checkpointer_->CheckpointAt(batch->epoch());
  }
  scheduler_->DeliverBatch(std::move(batch));
}

void Node::SendRemoteReads(PartitionId to, const RemoteReads& reads) {
  if (reads.writes() && reads_log_) {
    // Kept for the peer, should it restart and run the txn again.
    SentReads record;
    record.set_to_partition(to);
    *record.mutable_reads() = reads;
    const std::string error =
        reads_log_->Append(RunEpochOf(reads), record.SerializeAsString());
    if (!error.empty()) LogFailed(error);
  }
  if (RunEpochOf(reads) <= logged_through_) {
    // Run again after a restart: the peer may have them.
    RemoteReads again = reads;
    again.set_resent(true);
    read_exchange_->Send(to, again);
    return;
  }
  // Kept too, should the peer ask for them again (a lost message).
  read_exchange_->Send(to, reads);
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
  state_ = State::kStopping;
  if (clients_) clients_->BeginShutdown();
  for (auto& runner : runners_) runner->RequestStop();
}

Txn Node::Replanned(const Txn& txn) {
  // What the generator or client sent, not what the reconnaissance
  // declared: that is planned again. It keeps its first submit time, so its
  // latency counts its restarts, and its client request id, so that the
  // client is answered once, by the attempt that resolves.
  Txn again;
  again.set_txn_class(txn.txn_class());
  again.set_procedure(txn.procedure());
  again.set_args(txn.args());
  again.set_submit_time_us(txn.submit_time_us());
  again.set_client_request_id(txn.client_request_id());
  again.set_client_id(txn.client_id());
  again.set_client_seq(txn.client_seq());
  again.set_attempt(txn.attempt() + 1);  // not a duplicate of the attempt that gave up
  if (txn.txn_class() == LTX) {
    again.mutable_ltx()->set_kind(txn.ltx().kind() == LTX_SCAN ? LTX_SCAN : LTX_BEGIN);
    *again.mutable_ltx()->mutable_write_area() = txn.ltx().write_area();
  }
  return again;
}

void Node::OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                    const ReadValues& reads) {
  const bool generated = txn.client_request_id() == 0;
  // An LTX whose reads (calvin mode's Reconnoiter) or areas its
  // reconnaissance planned, and which found them stale.
  const bool ltx_recon = txn.txn_class() == LTX && outcome.aborted &&
                         LtxAbortReasonOf(outcome.abort_reason) == kAbortRecon;
  // Only a txn planned by a reconnaissance restarts (OLLP): a short txn,
  // or a long scan whose ranges the node planned (CH's queries; other
  // LTXs from clients declare their own areas). A generated one goes back
  // to the generators, a client's to the client port's queue, unanswered
  // (the client waits for the attempt that commits or declines for good).
  // Every generated LTX that found its plan stale goes back too.
  const bool planned_ltx = ltx_recon && (txn.ltx().kind() == LTX_SCAN ||
                                         app_->PlansLtxAreas(txn.procedure()));
  const bool restart = !outcome.committed && outcome.retryable &&
                       (txn.txn_class() != LTX || planned_ltx) &&
                       app_->NeedsRecon(txn.procedure());
  // What goes back to the generators to run again: besides the restarts
  // above, every generated LTX whose plan went stale (calvin mode's
  // reconnoitered walks, bom's roll-ups). Each is an OLLP restart, counted
  // as one and not as a result of its own.
  const bool resubmitted = generated && resubmits_ && (restart || ltx_recon);
  if (txn.procedure() < kCountedProcedures) {
    by_procedure_[txn.procedure()][outcome.committed ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
    if (restart || resubmitted) {
      // Its latency is counted once, by the attempt that resolves (it
      // keeps its first submit time, so its latency counts its restarts).
      by_procedure_[txn.procedure()][2].fetch_add(1, std::memory_order_relaxed);
    } else if ((generated || app_->IsLongProcedure(txn.procedure())) && txn.txn_class() == LTX) {
      // Its snapshot: the one it read (paxflow), else its own epoch (calvin
      // mode's locked run reads the state at its position there).
      query_stats_.Record(app_->ProcedureName(txn.procedure()),
                          read_version ? read_version : TxnEpoch(txn.id()), txn.submit_time_us(),
                          NowMicros());
    } else if (generated) {
      query_stats_.RecordLatency(app_->ProcedureName(txn.procedure()), txn.submit_time_us(),
                                 NowMicros());
    }
    if (generated) app_->OnGeneratedResult(txn, outcome);
  }
  // A resubmitted LTX keeps its room: it is the same LTX, still in flight.
  if (generated && txn.txn_class() == LTX && !resubmitted && generated_ltx_share_window_ &&
      generated_ltx_share_window_->TakesRoom(txn)) {
    generated_ltx_share_window_->Finished();
  }
  bool answered_later = false;
  if (resubmitted) resubmits_->Push(Replanned(txn));
  if (restart && !generated && clients_ && txn.origin_node() == options_.id) answered_later = clients_->Resubmit(Replanned(txn));
  if (clients_ && !answered_later) clients_->OnResult(txn, outcome, read_version, reads);
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
  reply.set_state(StateName(state_.load()));
  reply.set_problem(Problem());
  if (zap_) {
    // The ZAP handler's refusals (keys) and libzmq's before it (no CURVE).
    reply.set_auth_refused_peers(zap_->refused_peers() +
                                 (transport_ ? transport_->handshakes().refused() : 0));
    reply.set_auth_refused_clients(zap_->refused_clients() +
                                   (clients_ ? clients_->handshakes().refused() : 0));
  }
  if (transport_) reply.set_auth_impersonations(transport_->impersonations());
  if (checkpointer_) {
    const std::vector<Epoch> held = checkpointer_->Held();
    if (!held.empty()) reply.set_checkpoint_epoch(held.back());
  }
  if (replicated_) replicated_->FillStatus(&reply);
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

// ------------------------------------------------------------ start-up

Hello Node::MakeHello(bool reply) const {
  Hello hello;
  hello.set_node_id(options_.id);
  hello.set_params_fingerprint(options_.params.Fingerprint());
  hello.set_params_text(options_.params.ClusterParamsText());
  hello.set_recovering(options_.params.engine.recover && state_.load() != State::kRunning);
  hello.set_reply(reply);
  hello.set_sequenced_epoch(sequenced_epoch_.load());
  hello.set_admitted_epoch(scheduler_->Status().admitted_epoch);
  for (NodeId node : membership_->List()) hello.add_removed(node);
  hello.set_instance(instance_);
  return hello;
}

void Node::OnHello(NodeId from, std::string&& payload) {
  Hello hello;
  if (!hello.ParseFromString(payload)) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    LOG(WARNING) << "node " << options_.id << ": garbled hello from node " << from;
    return;
  }
  const std::string deaf_while = options_.params.engine.HellosIgnoredWhile(options_.id, from);
  if (!deaf_while.empty() && access(deaf_while.c_str(), F_OK) == 0) return;
  const int from_index = ConfigIndex(options_.config, from);
  if (!hello.reply()) {
    // A peer starting (or restarting) wants to know who is there, and what
    // we hold of its sequencer.
    Hello answer = MakeHello(/*reply=*/true);
    const NodeConfig* peer = layout_.Node(from);
    if (peer && peer->replica() == 0 && sequencer_count_ > 0) {
      const uint32_t sequencer =
          SequencerId(peer->partition(), 0, options_.params.engine.sequencers_per_node);
      if (sequencer < sequencer_count_) {
        // A node restarting too has delivered nothing yet, but its input
        // log holds every sequencer's batches through what it logged.
        answer.set_your_batches_through(
            std::max(batches_through_[sequencer].load(), held_at_start_.load()));
        answer.set_your_final_epoch(final_at_[sequencer].load());
      }
    }
    // Only a fresh start counts: a node that recovered ran the cluster's
    // history, which a fresh node must not start beside.
    if (!options_.params.engine.recover && from_index >= 0) {
      std::lock_guard<std::mutex> lock(hello_mu_);
      // Sized once this node's start-up wait passed (empty before).
      if (static_cast<size_t>(from_index) < instance_at_start_.size()) {
        answer.set_your_instance(instance_at_start_[from_index]);
      }
    }
    transport_->Send(from, HELLO, answer.SerializeAsString());
    // A peer saying hello after this node started is restarting: LTXs begun
    // here ask its partition again for the reads it had not answered (the
    // requests wait in its scheduler's inbox until it runs).
    if (started_ && peer && peer->replica() == self_->replica()) {
      scheduler_->PartitionRestarted(peer->partition());
    }
  }
  LearnRemoved(from, hello.removed());
  std::lock_guard<std::mutex> lock(hello_mu_);
  peers_hold_ours_ = std::max<Epoch>(peers_hold_ours_, hello.your_batches_through());
  if (const NodeConfig* peer = hello.reply() ? layout_.Node(from) : nullptr) {
    Epoch& held = peers_hold_by_partition_[peer->partition()];
    held = std::max<Epoch>(held, hello.your_batches_through());
  }
  peers_saw_our_final_ = std::max<Epoch>(peers_saw_our_final_, hello.your_final_epoch());
  if (hello.params_fingerprint() != options_.params.Fingerprint()) {
    hello_error_ = "node " + std::to_string(from) +
                   " runs with different cluster parameters. Ours:\n" +
                   options_.params.ClusterParamsText() + "theirs:\n" + hello.params_text();
  }
  if (!started_ && std::count(hello.removed().begin(), hello.removed().end(), options_.id)) {
    hello_error_ = "node " + std::to_string(from) + " says node " + std::to_string(options_.id) +
                   " was removed from the cluster (paxflow-cluster remove): the others no "
                   "longer keep the logs it would need to catch up, so it cannot rejoin";
  }
  start_unix_ms_ = std::max(start_unix_ms_, hello.ready_unix_ms());
  // Its partition ran epochs: a fresh cluster starts only once every node
  // has heard every other, so this cluster ran before, without this run of
  // this node, unless the peer started having heard this very process
  // (it heard every node before this one did: a fresh start all the same).
  // A peer that recovers has a history (--recover refuses to start
  // without one) even while it reports no epoch yet (no checkpoint, still
  // waiting for its peers): a fresh node beside it would start a second
  // history.
  const bool peer_has_history =
      (hello.admitted_epoch() > 0 && hello.your_instance() != instance_) || hello.recovering();
  if (peer_has_history && !peer_running_) {
    peer_running_ = true;
    running_peer_ = from;
    running_peer_recovers_ = hello.recovering();
  }
  if (hello.admitted_epoch() > 0 && hello.your_instance() == instance_ &&
      instance_at_start_.empty() && !peer_running_ && !said_started_with_us_) {
    said_started_with_us_ = true;
    LOG(INFO) << "node " << options_.id << ": node " << from
              << " runs already, having heard this node's hello before it started: this node "
                 "starts with the cluster as soon as it has heard every node";
  }
  peers_sequenced_ = std::max<Epoch>(peers_sequenced_, hello.sequenced_epoch());
  peers_admitted_ = std::max<Epoch>(peers_admitted_, hello.admitted_epoch());
  if (from_index >= 0) {
    const int n = options_.config.node_size();
    if (heard_from_.empty()) heard_from_.assign(n, false);
    if (answered_.empty()) answered_.assign(n, false);
    if (heard_instance_.empty()) heard_instance_.assign(n, 0);
    heard_from_[from_index] = true;
    heard_instance_[from_index] = hello.instance();
    if (hello.reply()) answered_[from_index] = true;
  }
  hello_cv_.notify_all();
}

std::string Node::WaitForPeers() {
  Hello hello = MakeHello(/*reply=*/false);
  const int64_t ready = UnixMillis();
  hello.set_ready_unix_ms(ready);
  const std::string payload = hello.SerializeAsString();
  const bool recover = options_.params.engine.recover;
  const int n = options_.config.node_size();
  // A fresh cluster starts together; a restarted node needs the nodes of its
  // replica (reads) and of replica 0 (batches), not a dead replica elsewhere.
  std::vector<bool> needed(n, true);
  for (int i = 0; i < n; ++i) {
    const NodeConfig& node = options_.config.node(i);
    if (recover && node.replica() != 0 && node.replica() != self_->replica()) needed[i] = false;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options_.params.engine.peer_wait_s);
  // A restarting sequencer resumes after what its peers hold of it (their
  // replies say): it waits for the replies of the nodes it needs, and for
  // those of every other replica too, any of which may hold epochs its
  // logs lost, for --peer_timeout_ms at most (a dead one never answers).
  const bool resumes_sequencer = recover && self_->replica() == 0;
  std::unique_lock<std::mutex> lock(hello_mu_);
  start_unix_ms_ = std::max(start_unix_ms_, ready);
  if (heard_from_.empty()) heard_from_.assign(n, false);
  if (answered_.empty()) answered_.assign(n, false);
  for (int i = 0; i < n; ++i) {
    if (options_.config.node(i).id() == options_.id) heard_from_[i] = answered_[i] = true;
  }
  // A node removed from the cluster (common/membership.h) is not waited for.
  auto removed = [&](int i) { return membership_->Removed(options_.config.node(i).id()); };
  auto waiting_for = [&](int i) {
    return needed[i] && !removed(i) && (!heard_from_[i] || (resumes_sequencer && !answered_[i]));
  };
  auto all_heard = [&] {
    for (int i = 0; i < n; ++i) {
      if (waiting_for(i)) return false;
    }
    return true;
  };
  bool said_waiting = false;
  while (true) {
    lock.unlock();
    for (const NodeConfig& node : options_.config.node()) {
      if (node.id() != options_.id) transport_->Send(node.id(), HELLO, payload);
    }
    lock.lock();
    hello_cv_.wait_for(lock, std::chrono::milliseconds(500),
                       [&] { return !hello_error_.empty() || all_heard(); });
    if (!hello_error_.empty()) return hello_error_;
    if (!recover && peer_running_) {
      const std::string where =
          running_peer_recovers_
              ? " recovers its history (--recover)"
              : " is at epoch " + std::to_string(std::max(peers_admitted_, peers_sequenced_));
      return "the cluster runs already (node " + std::to_string(running_peer_) + where +
             "): a node that stopped rejoins it with --recover (paxflow-cluster restart)";
    }
    std::string missing;
    for (int i = 0; i < n; ++i) {
      if (!waiting_for(i)) continue;
      const NodeConfig& node = options_.config.node(i);
      missing += (missing.empty() ? "" : ", ") + std::string("node ") + std::to_string(node.id()) +
                 " (" + NodeEndpoint(options_.config, node) + ")";
    }
    if (missing.empty()) {
      if (resumes_sequencer) {
        const auto until = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(options_.params.engine.peer_timeout_ms);
        hello_cv_.wait_until(lock, until, [&] {
          for (int i = 0; i < n; ++i) {
            if (!answered_[i] && !removed(i)) return !hello_error_.empty();
          }
          return true;
        });
        if (!hello_error_.empty()) return hello_error_;
      }
      // Every node's ready time is fixed, so having heard all of them the
      // maximum is final (later hellos only repeat it).
      agreed_start_unix_ms_ = start_unix_ms_;
      instance_at_start_ = heard_instance_;
      instance_at_start_.resize(n, 0);
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

// ------------------------------------------------------------ run, stop

bool Node::WaitFinished(int64_t timeout_ms) {
  if (!scheduler_->WaitFinished(timeout_ms)) return false;
  if (end_us_ == 0) {
    end_us_ = NowMicros();
    final_epoch_ = scheduler_->last_epoch();
    final_digest_ = store_->Digest(store_slot_, final_epoch_);
    // The application's consistency conditions (TPC-C's clause 3.3.2) on
    // the final state: a violation fails the run (Summary counts it).
    consistency_ = app_->CheckState([this](const std::function<void(Key, std::string_view)>& visit) {
      store_->Scan(store_slot_, final_epoch_, visit);
    });
    if (!consistency_.empty()) LOG(ERROR) << "consistency check FAILED: " << consistency_;
  }
  return true;
}

void Node::Run(const std::function<bool()>& interrupted) {
  const double duration = options_.params.engine.duration_s;
  const bool timed = duration > 0 && options_.params.engine.run_epochs == 0;
  const int64_t stop_at = start_us_ + static_cast<int64_t>(duration * 1e6);
  bool stopping = false;
  int64_t last_progress_us = NowMicros();
  std::tuple<Epoch, Epoch, Epoch> last_epochs{0, 0, 0};
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
    if (stopping && log_failed_.load()) {
      // Nothing can run any more: there is nothing to drain.
      LOG(ERROR) << "node " << options_.id << ": stops without draining: " << Problem();
      drain_failed_ = true;
      break;
    }
    // Freed counts too: a node finishing the read-only txns of published
    // epochs (a member that caught up on a backlog) is draining, not stuck.
    const SchedulerStatus progress = scheduler_->Status();
    const std::tuple<Epoch, Epoch, Epoch> epochs{progress.admitted_epoch,
                                                 progress.published_epoch, progress.freed_epoch};
    if (epochs != last_epochs) {
      last_epochs = epochs;
      last_progress_us = now;
    }
    if (stopping && now - last_progress_us > options_.params.engine.drain_timeout_s * 1e6) {
      const SchedulerStatus status = scheduler_->Status();
      const std::string problem = Problem();
      LOG(ERROR) << "node " << options_.id << ": gave up draining after "
                 << options_.params.engine.drain_timeout_s << " s without progress at epoch "
                 << status.admitted_epoch << " ("
                 << (problem.empty() ? status.waiting_for : problem) << ")";
      drain_failed_ = true;
      break;
    }
  }
  if (!drain_failed_) WaitForStragglers();
  Shutdown();
}

void Node::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  state_ = State::kStopping;
  if (metrics_) metrics_->Stop();  // its thread reads the components stopped below
  for (auto& runner : runners_) runner->Abort();
  for (auto& runner : runners_) runner->Join();
  if (replicated_) replicated_->Stop();  // no committed entry is delivered after this
  replay_stop_ = true;
  if (replay_thread_.joinable()) replay_thread_.join();
  for (auto* thread : {&reporter_, &heartbeat_thread_}) {
    if (!thread->joinable()) continue;
    {
      std::lock_guard<std::mutex> lock(report_mu_);
      report_stop_ = true;
    }
    {
      std::lock_guard<std::mutex> lock(heartbeat_mu_);
      heartbeat_stop_ = true;
    }
    report_cv_.notify_all();
    heartbeat_cv_.notify_all();
    thread->join();
  }
  if (catch_up_) catch_up_->Stop();
  // The scheduler first: its workers and digests still report to clients.
  if (scheduler_) scheduler_->Stop();
  if (checkpointer_) checkpointer_->Stop();
  if (clients_) clients_->Stop();
  // Flush what a finished run still has queued for its peers (remote reads
  // they wait for); after a failed start there is nothing worth waiting for.
  if (transport_) transport_->Stop(/*flush=*/started_ && !drain_failed_);
  if (read_exchange_) {
    std::string lost = read_exchange_->Summary();
    if (transport_ && transport_->injected_drops() > 0) {
      lost += (lost.empty() ? "" : "; ") + std::to_string(transport_->injected_drops()) +
              " peer message(s) dropped on purpose (--fault_drop_peer_messages)";
    }
    if (!lost.empty()) Print("[node " + std::to_string(options_.id) + "] lost messages: " + lost);
  }
  for (SegmentedLogWriter* log :
       {log_ ? &log_->log() : nullptr, sequencer_log_.get(), reads_log_.get()}) {
    if (log) log->Close(options_.params.engine.log_fsync);
  }
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
    if (Sequences()) line += "  sequenced " + std::to_string(LastSequencedEpoch());
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
      // OLLP restarts (recon) run again: they have their own count, below.
      uint64_t aborted = 0;
      for (int r = 0; r < kLtxAbortReasons; ++r) {
        if (r != kAbortRecon) aborted += ltx.aborts[r].load(std::memory_order_relaxed);
      }
      line += " | LTX active " + std::to_string(status.active_ltx) + "  aborted " +
              std::to_string(aborted) + "  deferred " + std::to_string(status.deferred) +
              "  parked-RO " + std::to_string(status.parked);
      // Starvation both ways: the most deferrals one short txn took, and the
      // share of this node's LTXs that guards aborted.
      const uint64_t begun = stats_->Committed(kKindLong) + stats_->Aborted(kKindLong);
      const uint64_t guarded = ltx.aborts[kAbortGuard].load(std::memory_order_relaxed);
      char starvation[96];
      snprintf(starvation, sizeof(starvation), "  max-deferrals %llu  guard-aborted %.1f%%",
               static_cast<unsigned long long>(ltx.max_deferrals.load(std::memory_order_relaxed)),
               begun ? 100.0 * guarded / begun : 0.0);
      line += starvation;
      const uint64_t restarts = ltx.aborts[kAbortRecon].load(std::memory_order_relaxed);
      if (restarts > 0) line += "  OLLP-restarts " + std::to_string(restarts);
    }
    if (state_.load() == State::kRecovering) {
      line += " | recovering (to epoch " + std::to_string(rejoin_epoch_) + ")";
    }
    const std::string problem = Problem();
    std::string warnings;
    {
      std::lock_guard<std::mutex> problems(problem_mu_);
      warnings = warnings_;
    }
    if (!problem.empty()) {
      line += " | " + problem;
    } else if (!status.waiting_for.empty() && status.buffered_epochs > 0) {
      line += " | " + status.waiting_for;
    }
    if (!warnings.empty()) line += " | " + warnings;
    // Peers that do not take what is sent to them: what is held, what went.
    for (const NodeConfig& node : options_.config.node()) {
      if (node.id() == options_.id) continue;
      const Transport::PeerQueue queue = transport_->Queue(node.id());
      if (queue.queued_bytes == 0 && queue.dropped == 0) continue;
      char held[128];
      snprintf(held, sizeof(held), " | held for node %u: %.1f MiB, %llu dropped", node.id(),
               queue.queued_bytes / 1048576.0, static_cast<unsigned long long>(queue.dropped));
      line += held;
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
  summary.invariant_failures = stats_->InvariantFailures() + (consistency_.empty() ? 0 : 1);
  summary.consistency = consistency_;
  for (uint32_t p = 0; p < kCountedProcedures; ++p) {
    const uint64_t committed = by_procedure_[p][0].load(), declined = by_procedure_[p][1].load();
    if (committed + declined == 0) continue;
    ProcedureSummary procedure;
    procedure.name = app_->ProcedureName(p);
    procedure.committed = committed;
    procedure.declined = declined;
    procedure.restarts = by_procedure_[p][2].load();
    summary.procedures.push_back(std::move(procedure));
  }
  query_stats_.Fill(&summary.procedures);
  summary.dropped_messages = scheduler_->dropped_messages() +
                             (transport_ ? transport_->garbled() : 0) + dropped_.load();
  summary.waited_ro = scheduler_->Status().waited_ro;
  for (const auto& sequencer : sequencers_) {
    summary.admission.epochs += sequencer->epochs_taking_new();
    summary.admission.at_batch_cap += sequencer->epochs_at_batch_cap();
  }
  for (const auto& generator : generators_) {
    summary.admission.ltx_window_full += generator->ltx_window_full();
    summary.admission.ltx_lane_behind += generator->ltx_lane_behind();
  }
  if (generated_window_ && generated_window_->limit() > 0) {
    // Each epoch's closes together take at most the window's room.
    summary.admission.window_ceiling =
        1000.0 * generated_window_->limit() / options_.params.engine.epoch_ms;
  }
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
  summary.ltx.early_reads = ltx.early_reads.load();
  summary.ltx.locked_runs = ltx.locked_runs.load();
  summary.ltx.locked_runs_given_back = ltx.locked_runs_given_back.load();
  summary.ltx.locked_runs_writes_kept = ltx.locked_runs_writes_kept.load();
  summary.ltx.pushed_down_shares = ltx.pushed_down_shares.load();
  summary.ltx.pushed_down_rows = ltx.pushed_down_rows.load();
  summary.ltx.guards = ltx.guards.load();
  summary.ltx.late_records = ltx.late_records.load();
  summary.ltx.deferred_wait_us = stats_->LtxWait(kKindReadWrite);
  summary.ltx.parked_wait_us = stats_->LtxWait(kKindReadOnly);
  for (int stage = 0; stage < kLtxStages; ++stage) {
    summary.ltx.stage_us[stage] = stats_->LtxStage(stage);
  }
  epoch_timeline_.Fill(summary.input_stage_us);
  summary.digest_epoch = final_epoch_;
  summary.digest = final_digest_;
  std::lock_guard<std::mutex> lock(digest_mu_);
  summary.epoch_digests = digests_;
  return summary;
}

}  // namespace paxflow
