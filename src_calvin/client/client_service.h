// A node's client endpoint: a ROUTER socket on the node's client_port.
//
// Owns: the socket and its thread, client txns waiting to be sequenced,
// and the clients waiting for results.
// In: ClientRequests (any number in flight per client); results of client
// txns at this node (OnResult, worker threads); digests (scheduler thread).
// Out: txns for this node's sequencer (Fill, sequencer thread), replies.
// Threads: one service thread owns the socket; other threads hand replies
// over through a queue and an eventfd the service thread polls.
// A client that vanishes costs nothing but its own replies, which are
// dropped; malformed requests get an error reply and nothing else.
#pragma once
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>
#include <zmq.hpp>

#include "applications/application.h"
#include "client/request.h"
#include "scheduler/scheduler.h"
#include "sequencer/txn_source.h"

namespace paxflow {

struct ClientServiceOptions {
  std::string endpoint;          // tcp://host:client_port
  NodeId node = 0;
  bool sequences = true;         // replica 0: accepts txns; others redirect
  std::string leader;            // who to send txns to when !sequences
  RequestLimits limits;
  size_t max_waiting_txns = 100000;  // not yet sequenced, before OVERLOADED
  uint32_t max_pending_digests = 64;   // each is a full scan on the scheduler thread
};

class ClientService : public TxnSource, public ResultSink {
 public:
  using StatusProvider = std::function<StatusReply()>;
  // Asks for the digest at an epoch (0: a few epochs ahead); calls back once.
  using DigestProvider = std::function<void(Epoch, std::function<void(DigestReply)>)>;
  // Asks for a checkpoint; calls back once (an empty error: done).
  using CheckpointDone = std::function<void(const CheckpointReply&, const std::string& error)>;
  using CheckpointProvider = std::function<void(CheckpointDone)>;
  // Why the node cannot run txns now (a silent peer it waits for, a failed
  // log); empty when it can.
  using Unavailable = std::function<std::string()>;

  ClientService(ClientServiceOptions options, const Application* app, StatusProvider status,
                DigestProvider digest, zmq::context_t* context);
  ~ClientService() override;

  // Before Start. Without them checkpoint requests are refused and txns
  // are always taken.
  void SetRecoveryHooks(Unavailable unavailable, CheckpointProvider checkpoint) {
    unavailable_ = std::move(unavailable);
    checkpoint_ = std::move(checkpoint);
  }

  std::string Start();  // binds; empty on success
  // New txns are refused with SHUTTING_DOWN from now on.
  void BeginShutdown() { shutting_down_.store(true); }
  // Answers what is still waiting with SHUTTING_DOWN, then stops. Later
  // results and digests (late callers) are dropped.
  void Stop();

  // Answers every txn still waiting with UNAVAILABLE and `why` (the node
  // can no longer run them: its log failed).
  void FailWaiting(const std::string& why);

  // TxnSource, on the sequencer thread: waiting client txns first come.
  size_t Fill(size_t max, int64_t now_us, Batch* batch) override;
  // ResultSink, on worker threads.
  void OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                const ReadValues& reads) override;

  uint64_t waiting_txns() const;

 private:
  struct Waiter {
    std::string identity;
    uint64_t request_id = 0;
    int64_t arrival_us = 0;
    bool sequenced = false;  // taken into a batch: its outcome is the cluster's
  };
  struct Outgoing {
    std::string identity;
    std::string payload;
  };
  void Loop();
  void Handle(const std::string& identity, const zmq::message_t& message);
  void Reply(const std::string& identity, const ClientReply& reply);  // service thread
  void Post(std::string identity, const ClientReply& reply);          // any thread
  void FlushOutgoing();

  const ClientServiceOptions options_;
  const Application* const app_;
  StatusProvider status_;
  DigestProvider digest_;
  Unavailable unavailable_;
  CheckpointProvider checkpoint_;
  zmq::context_t* const context_;
  std::unique_ptr<zmq::socket_t> socket_;
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> shutting_down_{false};

  mutable std::mutex mu_;
  std::deque<Txn> incoming_;                     // validated, not yet sequenced
  std::unordered_map<uint64_t, Waiter> waiting_; // by client_request_id
  uint64_t next_client_txn_ = 1;
  std::vector<Outgoing> outgoing_;

  std::atomic<uint32_t> digests_pending_{0};
  bool stopped_ = false;  // under mu_: Post drops replies from now on
};

}  // namespace paxflow
