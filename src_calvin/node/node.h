// One PaxFlow node: the store, scheduler and workers of its partition, its
// sequencer (in replica 0) with the embedded generator, the transport, the
// durable logs and checkpoints, failure detection and catch-up, and the
// progress reporter, wired together.
//
// Durability (with a log directory): the sequencer's batches are logged
// before they are sent, each epoch the partition executes before it runs
// (sequencer/input_log.h); checkpoints come every --checkpoint_every and
// on request (node/checkpointer.h). A node started with --recover rebuilds
// its partition from its newest checkpoint and its log, fetches from its
// peers the batches and reads it missed (node/catch_up.h), resumes its
// sequencer after the last epoch it logged, and rejoins; the others waited.
// Every node tells every peer it lives (heartbeats); a silent peer that the
// partition waits for is reported in progress lines and status, and
// clients get UNAVAILABLE meanwhile (node/peer_monitor.h).
//
// Owns: all of the above. Several Nodes can live in one process (tests,
// inproc transport): nothing here is global.
// Threads: Start/RequestStop/Wait/Summary from the owner's thread; the
// components run their own threads (see their headers), plus a heartbeat
// thread here (heartbeats, stall reports, asking peers for missed batches,
// dropping old logs) and, while recovering, one that replays the log.
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "applications/application.h"
#include "auth/auth_config.h"
#include "backend/store.h"
#include "base/params.h"
#include "base/summary.h"
#include "client/client_service.h"
#include "common/config.h"
#include "common/stats.h"
#include "common/transport.h"
#include "node/catch_up.h"
#include "node/checkpointer.h"
#include "node/epoch_timeline.h"
#include "node/kept_reads.h"
#include "common/membership.h"
#include "metrics/metrics_server.h"
#include "node/peer_monitor.h"
#include "node/query_stats.h"
#include "node/read_exchange.h"
#include "node/replicated_sequencing.h"
#include "partition/partition_setup.h"
#include "scheduler/scheduler.h"
#include "sequencer/generator_source.h"
#include "sequencer/input_log.h"
#include "sequencer/planning_source.h"
#include "sequencer/sequencer.h"

namespace paxflow {

// <log_dir>/node-<id>.finished: the epoch at which this node's sequencer
// ended its run (written, fsynced, when it logs its final batch), so that a
// restart knows it even when its sequencer log was trimmed or lost its tail.
std::string FinishedPath(const std::string& dir, NodeId node);
Epoch ReadFinished(const std::string& dir, NodeId node);  // 0: not finished

struct NodeOptions {
  ClusterConfig config;
  NodeId id = 0;
  NodeParams params;
  zmq::context_t* shared_context = nullptr;  // required for inproc transport
  // Where progress lines and the summary go (default: stdout).
  std::function<void(const std::string&)> print;
  ResultSink* result_tap = nullptr;  // sees every result at this node (tests)
  // Polled while the node waits for its peers at start-up: true abandons
  // the start (a signal arrived).
  std::function<bool()> interrupted;
};

class Node : public PeerSender, public ResultSink {
 public:
  explicit Node(NodeOptions options);
  ~Node() override;

  // Loads the partition (or, with --recover, rebuilds it), binds, waits for
  // its peers, starts the threads. Empty on success, else why the node
  // cannot run.
  std::string Start();
  // Ends the load: the sequencer's next epoch is its last.
  void RequestStop();
  // Blocks until every txn of the run has executed here (or timeout).
  bool WaitFinished(int64_t timeout_ms);
  // Runs for the configured duration or epochs, then stops and drains.
  // `interrupted` lets a signal end the run early.
  void Run(const std::function<bool()>& interrupted);
  void Shutdown();

  RunSummary Summary() const;  // after the run
  uint64_t FinalDigest() const { return final_digest_; }
  // The run ended without every txn executing (see the log for why).
  bool drain_failed() const { return drain_failed_; }
  Epoch FinalEpoch() const { return final_epoch_; }
  const ClusterLayout& layout() const { return layout_; }
  Scheduler* scheduler() { return scheduler_.get(); }
  // PeerSender: this partition's reads, to a partition of our replica.
  void SendRemoteReads(PartitionId to, const RemoteReads& reads) override;
  void SendLtxReadRequest(PartitionId to, const LtxReadRequest& request) override;
  void SendLtxReadReply(PartitionId to, const LtxReadReply& reply) override;
  // ResultSink: hands each result to the client service and the test tap.
  void OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                const ReadValues& reads) override;
  NodeStats* stats() { return stats_.get(); }
  // Why the node cannot go on ("waiting for node 1 at ..., silent for
  // 3.2 s", a failed log), or empty.
  std::string Problem() const;

 private:
  enum class State { kStarting, kRecovering, kRunning, kStopping };
  static const char* StateName(State state);

  // Start-up, before the peers are heard: reads this node's files in its
  // log directory without changing them, and refuses a start that would
  // destroy its history (no --recover, no --wipe) or a --recover into a
  // directory that is not this node's, of this cluster, with these
  // parameters. Gives what the logs hold.
  std::string InspectLogDir(Epoch* logged_through, Epoch* sequenced_through);
  void MakeLogWriters();  // the writers, no file opened yet
  // After the peers agreed: reopens the logs (--recover), or removes what
  // an earlier run left and creates them (a fresh start).
  std::string OpenLogs(Epoch* logged_through, Epoch* sequenced_through);
  std::string StartTransport();
  std::string StartClients();
  std::string RestorePartition(Epoch* restored_at);
  void StartSequencer(Epoch first_epoch, Epoch catch_up_to);
  // Replicated input (node_replication.cc): the group's member, made
  // before the sequencer and started last in Start; the runners run only
  // while this node leads.
  // On --recover it resumes after `applied_through` (its sequencer log's
  // last committed epoch), with the request-id window of its checkpoint.
  std::string MakeReplication(Epoch applied_through);
  // A restarted member: its own batches of the committed epochs `from` to
  // `through` that its sequencer log holds and its input log does not.
  void ReplayCommittedTail(Epoch from, Epoch through);
  // Replay thread: waits until `epoch` is within max_epochs_ahead of what
  // the scheduler published (or the replay is stopped).
  void WaitForReplayRoom(Epoch epoch);
  // `committed_us`: when its consensus member learned it (0: fetched from a peer).
  void OnCommittedEpoch(Epoch epoch, const std::string& record, bool leading,
                        int64_t committed_us);
  // Sequencer `sequencer` is its own partition's, whose batches come from
  // the group's log (replicated input), not from a peer.
  bool FromOwnGroup(uint32_t sequencer) const {
    return replicated_ && sequencer == SequencerId(self_->partition(), 0, 1);
  }
  // This node runs its partition's sequencer now (replica 0's; with
  // replicated input, the group leader's).
  bool Sequences() const { return !runners_.empty() && (!replicated_ || replicated_->leads()); }
  // OLLP: the txn to sequence again after `txn`'s reconnaissance went
  // stale (handed to the generators or the client port, planned afresh
  // there). Worker threads.
  static Txn Replanned(const Txn& txn);
  // A restart of a replica-0 node, after the peers answered: moves
  // `sequenced_through` to the newest epoch its sequencer is known to have
  // cut (its logs, its checkpoint, its peers), and sets sequencer_finished_
  // if it had ended its run; returns that final epoch (0: unknown).
  Epoch ResumeSequencerAfter(Epoch restored_at, Epoch* sequenced_through);
  std::string RecordFinished(Epoch epoch);  // writes FinishedPath, synced
  void MakeCheckpointer();
  // Every batch for this partition goes to the scheduler through here.
  void DeliverBatch(std::unique_ptr<Batch> batch);
  // On runner `runner`'s thread: its epoch's batches, serialized once.
  bool BeforeSend(size_t runner, Epoch epoch, const std::vector<std::unique_ptr<Batch>>& batches);
  void DeliverFromSequencer(size_t runner, PartitionId partition, std::unique_ptr<Batch> batch);
  bool AppendToInputLog(const MergedEpoch& epoch);
  void LogFailed(const std::string& error);
  void ReplayOwnLog(Epoch from, Epoch through);
  // Heartbeat thread: epochs a damaged input log segment lost, fetched
  // from peers, or the node stops where no peer can send them.
  void WatchLogDamage();
  // Heartbeat thread: a log failed and its log directory refuses writes
  // now (EROFS; an EIO as the file system aborted): the failure says so.
  void NoteReadOnlyLogDir();
  StatusReply NodeStatus() const;
  void ServeDigest(Epoch epoch, std::function<void(DigestReply)> done);
  void ServeCheckpoint(Epoch wait_epoch,
                       std::function<void(const CheckpointReply&, const std::string&)> done);
  // Membership (node_membership.cc): an operator's removal, removals a
  // peer knows of, and the warnings for peers that hold back trimming.
  std::string ServeRemoveNode(const RemoveNodeRequest& request, std::string* detail);
  void LearnRemoved(NodeId from, const google::protobuf::RepeatedField<uint32_t>& removed);
  std::vector<std::string> KeptLogsWarnings(int64_t now_us) const;
  // Why the partition waits for `peer`, which speaks: it recovers, or its
  // epochs have not moved for long; empty if it is on its way.
  std::string AlivePeerProblem(NodeId peer, const Heartbeat& heartbeat, int64_t now_us) const;
  // A peer whose epochs stood still for --peer_timeout_ms x this is stuck.
  static constexpr int kStuckFactor = 2;
  void OnHello(NodeId from, std::string&& payload);
  Hello MakeHello(bool reply) const;
  std::string WaitForPeers();
  void HeartbeatLoop();
  void SendHeartbeats();
  void UpdateProblems();
  void KeepSequencerInStep();
  // The newest epoch every one of this node's sequencers has closed.
  Epoch LastSequencedEpoch() const;
  void AskForMissedBatches();
  void WaitForStragglers();
  void ReportLoop();
  void Print(const std::string& line) const;
  // The metrics endpoint (node_metrics.cc): listens at the start of Start
  // (a port in use refuses the start at once, naming --metrics_port), and
  // serves once every component it reads exists. MetricsText runs on its
  // thread: it reads only atomics, live histograms and locked state.
  std::string ListenForMetrics();
  std::string MetricsText() const;

  NodeOptions options_;
  // Declared before every socket's owner, so it is destroyed after them.
  // The node's zmq context (one I/O thread for peers and clients) unless the
  // owner shares one (inproc clusters in one process).
  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_ = nullptr;
  // CURVE (config auth.curve): the node's keys and whom it admits, and the
  // ZAP handler that says so to its sockets (destroyed after them).
  NodeAuth auth_;
  std::unique_ptr<ZapHandler> zap_;
  ClusterLayout layout_;
  const NodeConfig* self_ = nullptr;
  int64_t incarnation_ = 0;
  std::atomic<State> state_{State::kStarting};
  std::unique_ptr<Application> app_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<NodeStats> stats_;
  std::unique_ptr<Scheduler> scheduler_;
  // Durable logs (with a log directory).
  std::unique_ptr<InputLogWriter> log_;
  std::unique_ptr<SegmentedLogWriter> sequencer_log_;
  std::unique_ptr<SegmentedLogWriter> reads_log_;
  Epoch logged_through_ = 0;     // epochs the input log held at start: not appended again
  Epoch recovered_through_ = 0;  // epochs sequenced before this start
  Epoch rejoin_epoch_ = 0;       // recovering until the partition admitted this one
  bool sequencer_finished_ = false;  // it ended its run (final batch) before a restart
  Epoch checkpoint_says_finished_ = 0;  // its sequencer's final epoch, per the checkpoint loaded
  std::vector<std::string> history_files_;  // this node's files in log_dir at start (names)
  mutable std::mutex failure_mu_;
  std::string log_failure_;      // the first failed write of a log: the node stopped
  std::atomic<bool> log_failed_{false};
  int read_only_probes_ = 0;  // NoteReadOnlyLogDir's (heartbeat thread)
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<Membership> membership_;  // before monitor_, which reads it
  std::unique_ptr<PeerMonitor> monitor_;
  std::unique_ptr<CatchUpServer> catch_up_;
  // Remote reads sent (kept until the receiver frees their epoch), asked
  // for again when they do not come, and failed sends counted.
  std::unique_ptr<ReadExchange> read_exchange_;
  std::unique_ptr<Checkpointer> checkpointer_;
  std::unique_ptr<InflightWindow> generated_window_;  // shared by the generators
  std::unique_ptr<InflightWindow> generated_ltx_window_;  // their LTXs and long scans; null: unbounded
  // Their LTXs that count against max_active_ltx (TakesLtxShare), to this
  // node's share of it; null in calvin mode. Its results are counted by
  // OnResult (worker, LTX and scheduler threads).
  std::unique_ptr<InflightWindow> generated_ltx_share_window_;
  std::vector<std::unique_ptr<GeneratorSource>> generators_;
  // What each sequencer polls: the client port and its generator, their
  // dependent txns planned (OLLP's reconnaissance).
  std::vector<std::unique_ptr<PlanningSource>> planned_;
  // Generated txns an OLLP restart sends back (calvin mode's LTXs, short
  // dependent txns in both modes), taken by the generators; filled from
  // worker threads (OnResult).
  std::unique_ptr<ResubmitQueue> resubmits_;
  // Results at this origin by procedure (ids below kCountedProcedures):
  // committed, declined, OLLP restarts among the declined. Worker threads.
  static constexpr uint32_t kCountedProcedures = 16;
  std::atomic<uint64_t> by_procedure_[kCountedProcedures][3] = {};
  QueryStats query_stats_;  // generated long txns' latency and freshness
  EpochTimeline epoch_timeline_;  // its epochs' input from the cut to the scheduler
  std::string consistency_;  // the application's check of the final state (WaitFinished)
  std::unique_ptr<ClientService> clients_;
  // Last progress period's rates, for status requests.
  std::atomic<double> ro_rate_{0}, rw_rate_{0};
  std::atomic<uint64_t> dropped_{0};  // messages that did not parse, or not for us
  RecordQueue ltx_records_;  // the LTX lane's records for our first sequencer
  // Replica 0: sequencers_per_node sequencers, each on its own runner thread
  // (the sequencer log, catch-up and restarts need one).
  std::vector<std::unique_ptr<Sequencer>> sequencers_;
  std::vector<std::unique_ptr<SequencerRunner>> runners_;
  // By runner, each on its own thread: that epoch's batches, serialized.
  std::vector<std::vector<std::string>> sequenced_bytes_;
  // More than one replica: this node's local read-only txns go only to its
  // own scheduler (kept_reads.h). With replicated input kept by epoch until
  // the group commits the entry (entries name the process, kept_token_);
  // without, by runner from the cut to the delivery right after it.
  std::unique_ptr<KeptReads> kept_reads_;
  uint64_t kept_token_ = 0;
  std::vector<std::vector<Txn>> held_reads_;
  std::atomic<bool> checkpoint_asked_{false};  // the next batch carries the checkpoint flag

  // Start-up barrier.
  std::mutex hello_mu_;
  std::condition_variable hello_cv_;
  std::vector<bool> heard_from_;  // by node index in the config
  int64_t start_unix_ms_ = 0;     // latest "ready" time heard, ours included (hello_mu_)
  int64_t agreed_start_unix_ms_ = 0;  // its final value, copied once every node was heard
  std::string hello_error_;
  std::vector<bool> answered_;    // by node index: a reply to our hello came
  // What the peers' replies said they hold of this node's sequencer: in
  // all, and by partition.
  Epoch peers_hold_ours_ = 0;
  std::map<PartitionId, Epoch> peers_hold_by_partition_;
  Epoch peers_saw_our_final_ = 0;
  Epoch peers_sequenced_ = 0;     // highest epoch a peer's hello said it sequenced
  Epoch peers_admitted_ = 0;
  // A peer ran epochs already, or recovers a history (--recover): a fresh
  // start is refused.
  bool peer_running_ = false;
  NodeId running_peer_ = 0;
  bool running_peer_recovers_ = false;  // it recovers (and may report epoch 0 meanwhile)
  const uint64_t instance_;       // this process's Hello.instance (random, never 0)
  std::vector<uint64_t> heard_instance_;     // by node index: the latest instance heard
  std::vector<uint64_t> instance_at_start_;  // heard_instance_ as this node started
  bool said_started_with_us_ = false;

  // Heartbeat thread: stall reports and catch-up requests.
  std::thread heartbeat_thread_;
  std::mutex heartbeat_mu_;
  std::condition_variable heartbeat_cv_;
  bool heartbeat_stop_ = false;
  mutable std::mutex problem_mu_;
  std::string stall_;     // why the partition cannot go on (empty: it can)
  std::string warnings_;  // silent peers it does not wait for
  struct Asked {
    Epoch waiting_epoch = 0;  // the epoch the partition waits to admit
    int64_t since_us = 0;     // since when
    Epoch through = 0;        // the last request's last epoch
    int64_t at_us = 0;        // when it was sent
  };
  std::map<uint32_t, Asked> asked_;  // by sequencer, heartbeat thread only
  std::thread replay_thread_;
  std::atomic<bool> replay_stop_{false};
  std::atomic<bool> replaying_{false};
  // A closed input log segment the replay found damaged (issue 15, point 5).
  struct LogDamage {
    std::string what;         // the file and what is wrong with it
    Epoch first = 0, last = 0;  // the epochs lost that recovery needs
    Epoch waiting_epoch = 0;  // progress seen last, and since when
    int64_t since_us = 0;
  };
  std::mutex damage_mu_;
  std::unique_ptr<LogDamage> damage_;  // null: none (left to fetch)
  std::atomic<Epoch> sequenced_epoch_{0};  // newest epoch this node's sequencer logged
  // Its sequencer log's last epoch at start: epochs after it, up to where
  // the sequencer resumed, were cut before but their record was lost (an
  // unsynced tail); they are fetched from other replicas, never cut again.
  Epoch sequencer_log_through_ = 0;
  // Replicated input: the request-id window of the checkpoint it restarted
  // from (node_replication.cc).
  RequestWindow restored_window_;
  Epoch resumed_after_ = 0;
  // Epochs its sequencer cut whose batches for `partition` nobody holds
  // any more (its sequencer log lost them, and no node of the partition
  // had them at the restart): that partition cannot run them. Set at start
  // (ResumeSequencerAfter), read by the heartbeat thread; reported until a
  // node of the partition gets past them.
  struct LostEpochs {
    PartitionId partition = 0;
    Epoch first = 0, last = 0;
  };
  std::vector<LostEpochs> lost_;
  std::string LostEpochsText(const LostEpochs& lost) const;
  std::string LostEpochsProblem() const;  // empty: none (any more)
  // Paxflow mode: more than max_ltx_backlog tasks wait for this node's LTX
  // threads, so the generator and the client port hold LTXs back (calvin
  // mode's LTXs run locked, on workers: never). Sequencer threads.
  bool LtxThreadsBehind() const;
  // Paxflow mode: an LTX begin that will count against max_active_ltx
  // while unresolved (not one locked at its begin, LtxLane::
  // LockableAtBegin). Its begin record alone decides, so the generator,
  // the client port and OnResult agree on every LTX.
  bool TakesLtxShare(const Txn& txn) const;
  // What its input log or checkpoint held at start: every sequencer's
  // batches through it had come here (told to a restarting sequencer).
  std::atomic<Epoch> held_at_start_{0};
  // By sequencer id, from every batch delivered here: the newest epoch of
  // one, and the epoch of its final batch (0: none). Told to a restarting
  // sequencer (hello replies).
  uint32_t sequencer_count_ = 0;
  std::unique_ptr<std::atomic<Epoch>[]> batches_through_;
  std::unique_ptr<std::atomic<Epoch>[]> final_at_;

  std::unique_ptr<MetricsServer> metrics_;  // null: no metrics port
  std::unique_ptr<ReplicatedSequencing> replicated_;  // null: replicated_input off
  bool led_ = false;  // replicated_'s consumer thread: its runners were started once

  std::thread reporter_;
  std::mutex report_mu_;
  std::condition_variable report_cv_;
  bool report_stop_ = false;

  std::atomic<int64_t> start_us_{0};  // read by the client thread (status uptime)
  int64_t end_us_ = 0;
  uint64_t final_digest_ = 0;
  Epoch final_epoch_ = 0;
  std::vector<std::pair<Epoch, uint64_t>> digests_;
  mutable std::mutex digest_mu_;
  size_t store_slot_ = 0;  // the owner thread's, for the final digest
  std::atomic<bool> started_{false};  // read by the transport thread
  bool drain_failed_ = false;
  bool shut_down_ = false;
};

}  // namespace paxflow
