// One PaxFlow node: the store, scheduler and workers of its partition, its
// sequencer (in replica 0) with the embedded generator, the transport, the
// input log and the progress reporter, wired together.
//
// Owns: all of the above. Several Nodes can live in one process (tests,
// inproc transport): nothing here is global.
// Threads: Start/RequestStop/Wait/Summary from the owner's thread; the
// components run their own threads (see their headers).
#pragma once
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "applications/application.h"
#include "client/client_service.h"
#include "backend/store.h"
#include "common/config.h"
#include "common/stats.h"
#include "common/transport.h"
#include "base/params.h"
#include "base/summary.h"
#include "partition/partition_setup.h"
#include "scheduler/scheduler.h"
#include "sequencer/generator_source.h"
#include "sequencer/input_log.h"
#include "sequencer/sequencer.h"

namespace paxflow {

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

  // Loads the partition, binds, waits for every peer, starts the threads.
  // Empty on success, else why the node cannot run.
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

 private:
  void DeliverFromSequencer(PartitionId partition, std::unique_ptr<Batch> batch);
  StatusReply NodeStatus() const;
  void ServeDigest(Epoch epoch, std::function<void(DigestReply)> done);
  void OnHello(NodeId from, std::string&& payload);
  std::string WaitForPeers();
  void ReportLoop();
  void Print(const std::string& line) const;

  NodeOptions options_;
  // Declared before every socket's owner, so it is destroyed after them.
  // The node's zmq context (one I/O thread for peers and clients) unless the
  // owner shares one (inproc clusters in one process).
  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_ = nullptr;
  ClusterLayout layout_;
  const NodeConfig* self_ = nullptr;
  std::unique_ptr<Application> app_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<NodeStats> stats_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<InputLogWriter> log_;
  std::unique_ptr<Transport> transport_;
  std::unique_ptr<InflightWindow> generated_window_;  // shared by the generators
  std::vector<std::unique_ptr<GeneratorSource>> generators_;
  std::unique_ptr<ClientService> clients_;
  // Last progress period's rates, for status requests.
  std::atomic<double> ro_rate_{0}, rw_rate_{0};
  std::atomic<uint64_t> dropped_{0};  // messages that did not parse, or not for us
  RecordQueue ltx_records_;  // the LTX lane's records for our sequencer
  // Replica 0: sequencers_per_node sequencers, each on its own runner thread.
  std::vector<std::unique_ptr<Sequencer>> sequencers_;
  std::vector<std::unique_ptr<SequencerRunner>> runners_;

  // Start-up barrier.
  std::mutex hello_mu_;
  std::condition_variable hello_cv_;
  std::vector<bool> heard_from_;  // by node index in the config
  int64_t start_unix_ms_ = 0;     // latest "ready" time heard, ours included (hello_mu_)
  int64_t agreed_start_unix_ms_ = 0;  // its final value, copied once every node was heard
  std::string hello_error_;

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
  bool started_ = false;
  bool drain_failed_ = false;
  bool shut_down_ = false;
};

}  // namespace paxflow
