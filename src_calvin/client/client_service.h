// A node's client endpoint: a ROUTER socket on the node's client_port.
//
// Owns: the socket and its thread, the connections it has heard from
// (their unanswered txns and their replies not yet sent), client txns
// waiting to be sequenced, the table of admitted txns, admission control.
// In: ClientRequests: single txns, batches of txns (LTXs among them),
// status, digest and checkpoint requests; results of client txns at this node
// (OnResult: worker, LTX or scheduler threads); digests (scheduler thread).
// Out: txns for this node's sequencer (Fill, sequencer threads), replies.
// Threads: one service thread owns the socket: it decodes, admits and
// queues whole batches under one lock, and sends replies. Result threads
// encode each result straight into its connection's pending reply (one
// message per connection collects every result due to it) and wake the
// service thread only when it is not already awake.
// Bounds: admitted txns (node-wide and per connection, admission.h),
// reply bytes per connection (a client that does not read is refused, its
// zmq pipe holds a few messages, the rest waits here, bounded), requests
// per message and their sizes (request.h). A client that vanishes costs
// nothing but its own replies, which are dropped; malformed requests get
// an error reply and nothing else.
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
#include "client/admission.h"
#include "client/reply.h"
#include "client/request.h"
#include "common/curve.h"
#include "common/handshake_monitor.h"
#include "scheduler/sinks.h"
#include "sequencer/txn_source.h"

namespace paxflow {

struct ClientServiceOptions {
  std::string endpoint;          // tcp://host:client_port
  NodeId node = 0;
  bool sequences = true;         // replica 0: accepts txns; others redirect
  std::string leader;            // who to send txns to when !sequences
  RequestLimits limits;
  AdmissionLimits admission;
  uint32_t epoch_ms = 10;        // for read-only txns' visibility delay
  uint32_t max_pending_digests = 64;   // each is a full scan on the scheduler thread
  size_t reply_message_bytes = size_t{256} << 10;  // a reply message is cut past this
  uint32_t reply_delay_us = 500;  // replies leave at most this often (0: at once)
  int send_hwm = 16;             // reply messages zmq queues per connection
  // CURVE: the node's key pair (empty: plain). Clients are then admitted
  // by the node's ZAP handler (domain "client"), and only operator keys may
  // ask for checkpoints, digests, node removal and status details.
  CurveKeyPair curve;
};

// What the client port did, for status replies and summaries.
struct ClientPortCounters {
  uint64_t admitted = 0;        // admitted, result not yet produced
  uint64_t admit_limit = 0;
  uint64_t busy = 0;            // BUSY replies given (a message refused whole counts once)
  uint64_t unsent_bytes = 0;    // replies produced, not yet taken by their connection
  uint64_t dropped_replies = 0; // refusals to clients that do not read (never of admitted txns)
  uint64_t connections = 0;
  uint64_t request_messages = 0, reply_messages = 0;  // since start
  uint64_t txns_received = 0, txns_answered = 0;
  uint64_t ltxs_held = 0;       // client LTXs waiting for room in the node's LTX share (now)
  uint64_t ltx_holds = 0;       // client LTXs that waited so, since start
};

// Paxflow mode: client LTXs that count against max_active_ltx are
// sequenced at most `limit` at a time, and none while `behind()` (the LTX
// lane's backlog); the rest wait at the client port, in arrival order,
// instead of aborting busy. An LTX holds its room from its batch until its
// answer, which comes after its resolution is in the log: whatever is
// sequenced into the room it frees is ordered after that resolution
// (docs/ltx.md, "Records and order", with the exceptions, which cost at
// most a busy abort: a stop, a failed log or a deposed node answers at once).
struct ClientLtxHold {
  uint64_t limit = 0;                        // 0: no hold (calvin mode)
  std::function<bool(const Txn&)> counts;    // the LTXs held to the limit
  std::function<bool()> behind;              // may be empty
};

class ClientService : public TxnSource, public ResultSink {
 public:
  using StatusProvider = std::function<StatusReply()>;
  // Asks for the digest at an epoch (0: a few epochs ahead); calls back once.
  using DigestProvider = std::function<void(Epoch, std::function<void(DigestReply)>)>;
  // Asks for a checkpoint (wait_epoch 0), or waits for one at wait_epoch
  // or later; calls back once (an empty error: done).
  using CheckpointDone = std::function<void(const CheckpointReply&, const std::string& error)>;
  using CheckpointProvider = std::function<void(Epoch wait_epoch, CheckpointDone)>;
  // An operator removes a node from the cluster: empty error on success,
  // and what was done in `detail`.
  using RemoveProvider =
      std::function<std::string(const RemoveNodeRequest& request, std::string* detail)>;
  // Replicated input: a member that copies this node's state asks for a
  // part of it (node/state_transfer.h); empty error on success.
  using StateProvider = std::function<std::string(const StateRequest& request, StateReply* reply)>;
  // Why the node cannot run txns now (a silent peer it waits for, a failed
  // log); empty when it can. Asked once per request message that holds txns.
  using Unavailable = std::function<std::string()>;

  ClientService(ClientServiceOptions options, const Application* app, StatusProvider status,
                DigestProvider digest, zmq::context_t* context);
  ~ClientService() override;

  // Before Start. Without them checkpoint requests are refused and txns
  // are always taken.
  void SetRecoveryHooks(Unavailable unavailable, CheckpointProvider checkpoint,
                        RemoveProvider remove = nullptr) {
    unavailable_ = std::move(unavailable);
    checkpoint_ = std::move(checkpoint);
    remove_ = std::move(remove);
  }

  // Without it state requests are refused. Any thread, any time (the
  // node's consensus member may start after the client port).
  void SetStateProvider(StateProvider state) {
    std::lock_guard<std::mutex> lock(hint_mu_);
    state_ = std::move(state);
  }

  std::string Start();  // binds; empty on success
  // New txns are refused with SHUTTING_DOWN from now on.
  void BeginShutdown() { shutting_down_.store(true); }
  // From now on this node sequences (it came to lead its partition's
  // replicated input): it takes txns instead of redirecting them. Any thread.
  void SetSequences(bool sequences) { sequences_.store(sequences); }
  // Replicated input: who leads now, for NOT_LEADER replies (asked once
  // per request message that a follower refuses). Any thread.
  void SetLeaderHint(std::function<LeaderHint()> hint) {
    std::lock_guard<std::mutex> lock(hint_mu_);
    leader_hint_ = std::move(hint);
  }
  // This node no longer leads: txns go to the leader from now on, and
  // every txn still waiting here is answered NOT_LEADER (never sequenced:
  // it never ran; sequenced: its outcome is unknown, a retry with the same
  // request id is safe). Any thread.
  void Depose();
  // Replicated input: why the committed log dropped a client txn
  // (node/request_dedup.h), and so what its client is told.
  enum class DroppedAs {
    kAlreadyApplied,  // its request id ran as txn `original`: OK, already_applied
    kTooOld,          // its seq is below its client's window: BAD_REQUEST
  };
  // Answers this node's client txn that the committed log dropped. The
  // consumer thread.
  void AnswerDropped(const Txn& txn, DroppedAs as, uint64_t original);
  // Answers this node's LTX that the committed log dropped (its request id
  // began LTX `original`) with that LTX's outcome (scheduler/ltx_outcomes.h):
  // committed (OK, already_applied), or aborted with its reason and
  // retryability (OK, aborted; a new attempt needs a new request id). Not
  // `known` (the partition no longer remembers it): BAD_REQUEST saying so.
  // Any thread.
  void AnswerLtxRetry(const Txn& txn, TxnId original, bool known, const TxnOutcome& outcome);
  // Answers what is still waiting with SHUTTING_DOWN, then stops. Later
  // results and digests (late callers) are dropped.
  void Stop();

  // Answers every admitted txn still unanswered with UNAVAILABLE and `why`
  // (the node can no longer run them: its log failed). Any thread.
  void FailWaiting(const std::string& why);

  // Before Start: how client LTXs are held (ClientLtxHold).
  void SetLtxHold(ClientLtxHold hold) { ltx_hold_ = std::move(hold); }

  // TxnSource, on sequencer threads: waiting client txns, first come first
  // (an LTX held for room goes after the txns that came behind it).
  size_t Fill(size_t max, int64_t now_us, Batch* batch) override;
  // OLLP: `txn` (a client txn of this node whose reconnaissance went
  // stale, replanned) goes back in line instead of being answered; false if
  // its client is gone, the service stopped or it restarted kMaxRestarts
  // times (then answer it). Result
  // threads.
  bool Resubmit(Txn txn);
  // A dependent txn that cannot be planned here (its reads live on another
  // partition) would restart for ever: past this many restarts its client
  // gets the retryable decline instead.
  static constexpr uint32_t kMaxRestarts = 100;
  // ResultSink, on result threads.
  void OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                const ReadValues& reads) override;

  uint64_t waiting_txns() const { return admission_.admitted(); }
  ClientPortCounters Counters() const;
  // CURVE: connections refused before the ZAP handler was asked.
  const HandshakeMonitor& handshakes() const { return handshakes_; }

 private:
  class BufferPool;
  // A reply message built for a connection, and how many admitted txns it
  // answers (they count against the connection until it is sent).
  struct Outgoing {
    std::unique_ptr<ByteBuffer> bytes;
    uint32_t answers = 0;
    bool results = false;  // only ClientReply.results entries: more may be appended
  };
  struct Blocked {
    zmq::message_t message;
    uint32_t answers = 0;
  };
  struct Connection {
    std::string identity;
    bool is_operator = true;         // its key is an operator's (or no CURVE)
    // Service thread only.
    uint64_t admitted = 0;           // admitted, reply not yet handed to the socket
    std::deque<Blocked> blocked;     // replies the socket would not take yet
    size_t blocked_bytes = 0;
    int64_t last_active_us = 0;
    bool listed_blocked = false;     // in blocked_connections_
    // Under reply_mu_.
    std::vector<Outgoing> outbox;
    size_t outbox_bytes = 0;
    bool listed_ready = false;       // in ready_connections_
  };
  // One admitted txn, by slot (its Txn's client_request_id names the slot
  // and a generation, so a stale id never matches a reused slot).
  struct Waiter {
    Connection* connection = nullptr;  // null: the slot is free
    uint64_t id = 0;                   // batch: the client's txn id; single: request_id
    int64_t arrival_us = 0;
    int64_t sequenced_us = 0;          // when its batch was cut; 0: not yet
    uint32_t generation = 0;
    bool batched = false;
    bool reads_with_keys = false;
    uint32_t restarts = 0;             // OLLP restarts so far (Resubmit)
    bool holds_ltx_room = false;       // an LTX sequenced under the hold, not yet answered
  };

  void Loop();
  size_t ReceiveSome();  // returns how many txns the requests held
  // Returns how many txns the request held.
  size_t Handle(Connection* connection, const zmq::message_t& message);
  void HandleBatch(Connection* connection, TxnBatch* batch);
  // True (and answered BUSY) if the node can take none of the message's txns.
  bool RefusedWhole(Connection* connection, std::string_view bytes);
  // Validates one txn and asks admission control; an admitted txn joins
  // `admitting_`, else `error` says why it was refused.
  ReplyStatus AdmitTxn(Connection* connection, uint64_t id, bool batched, bool reads_with_keys,
                       TxnRequest* txn_request, LtxRequest* ltx_request, size_t unsent_bytes,
                       std::string* error);
  // Under admit_mu_: gives `admitting_` slots and queues them for the sequencer.
  void EnqueueAdmittedLocked(Connection* connection, int64_t now);
  size_t UnsentBytes(const Connection* connection) const;
  // `frame`: a frame the client sent (the router's identity frame carries
  // no metadata), whose metadata names its key (CURVE).
  Connection* ConnectionOf(const zmq::message_t& identity, const zmq::message_t& frame,
                           int64_t now);
  // Refuses an administrative request of a connection without an operator
  // key (FORBIDDEN); true if it did.
  bool RefusedAdmin(Connection* connection, uint64_t request_id, const char* what);
  // Under reply_mu_: queue a whole reply message / one results entry for a connection.
  void QueueMessageLocked(Connection* connection, std::string_view bytes, uint32_t answers);
  ByteBuffer* ResultsBufferLocked(Connection* connection);
  void MarkReadyLocked(Connection* connection);
  // A reply from the service thread (errors, status): queued like results.
  void QueueReply(Connection* connection, const ClientReply& reply);
  bool IgnoresRepliesLocked(const Connection& connection) const;
  // Under reply_mu_: whether the service thread needs a wake (it has none
  // pending); the caller then calls WakeServiceThread outside the lock.
  bool WakeNeededLocked();
  void WakeServiceThread();
  void Flush();
  bool SendBlocked(Connection* connection);
  void DropConnectionReplies(Connection* connection);
  void ForgetIdleConnections(int64_t now);
  uint32_t AllocateSlotLocked();
  // Under admit_mu_ and reply_mu_: answers every admitted txn with `status`;
  // `prefix` + whether it was sequenced (outcome unknown) or not (never ran).
  void AnswerWaitingLocked(ReplyStatus status, const std::string& prefix);
  // Answers a dropped retry `txn` (if it still waits here) with `status`
  // and `error`.
  void AnswerDroppedError(const Txn& txn, ReplyStatus status, const std::string& error);
  // The checkpoint request of one message.
  void HandleCheckpoint(Connection* connection, uint64_t request_id, Epoch wait_epoch);
  void HandleRemoveNode(Connection* connection, uint64_t request_id,
                        const RemoveNodeRequest& request);
  // A reply that comes later, on another thread (a digest, a checkpoint):
  // queued for its connection (dropped once the service stopped) and the
  // service thread woken to send it.
  void PostLateReply(Connection* connection, const ClientReply& reply);

  const ClientServiceOptions options_;
  std::atomic<bool> sequences_{options_.sequences};
  const Application* const app_;
  const ProcedureTable procedures_;
  ClientLtxHold ltx_hold_;
  StatusProvider status_;
  DigestProvider digest_;
  Unavailable unavailable_;
  CheckpointProvider checkpoint_;
  RemoveProvider remove_;
  zmq::context_t* const context_;
  std::unique_ptr<zmq::socket_t> socket_;
  HandshakeMonitor handshakes_;  // CURVE only; drained by the service thread
  int wake_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> shutting_down_{false};
  Admission admission_;
  // Reply buffers, reused once zmq has sent them (zmq frees them on its
  // I/O thread, possibly after this service is gone: hence shared).
  std::shared_ptr<BufferPool> buffers_;

  // Service thread only.
  std::unordered_map<std::string, std::unique_ptr<Connection>> connections_;
  std::vector<Connection*> blocked_connections_;
  ClientRequest request_;             // parse scratch, reused
  struct Admitting {
    std::unique_ptr<Txn> txn;
    uint64_t id = 0;
    bool batched = false;
    bool reads_with_keys = false;
  };
  std::vector<Admitting> admitting_;  // one request's admitted txns
  struct Refusal {
    uint64_t id;
    ReplyStatus status;
    std::string error;
  };
  // Under admit_mu_: whether one more counted LTX may be sequenced now.
  bool LtxRoomLocked() const;
  bool TakesLtxRoom(const Txn& txn) const;  // an LTX the hold counts
  // Under admit_mu_: puts `txn` in `batch`, noting when its batch was cut
  // and, if `takes_room`, that its waiter holds room.
  void SequenceLocked(std::unique_ptr<Txn> txn, bool takes_room, int64_t now_us, Batch* batch);
  // Under admit_mu_: the waiter no longer holds LTX room.
  void FreeLtxRoomLocked(Waiter* waiter);
  // Under admit_mu_ and reply_mu_: answers the txn waiting in `slot` with
  // an error, frees the slot.
  void AnswerErrorLocked(uint32_t slot, ReplyStatus status, const std::string& error);
  // A result (or an already-applied answer) for a txn of this node.
  void Answer(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
              const ReadValues& reads, bool already_applied);
  std::vector<Refusal> refused_;      // one batch's refused txns
  Admission::Verdict last_refusal_ = Admission::kAdmitted;
  std::string last_refusal_text_;     // its explanation, for this request's BUSY replies
  bool unavailable_asked_ = false;    // unavailable_ asked for this request message
  std::string unavailable_text_;      // its answer
  std::mutex hint_mu_;                // guards leader_hint_ (set once replication starts)
  std::function<LeaderHint()> leader_hint_;
  StateProvider state_;  // hint_mu_
  bool leader_asked_ = false;         // leader_hint_ asked for this request message
  LeaderHint leader_;                 // its answer
  ReplyWriter service_writer_;
  RequestScratch request_scratch_;
  int64_t last_sweep_us_ = 0;

  // Two locks, never held in the other order: admit_mu_, then reply_mu_.
  // Admitted txns: the service thread adds, sequencers take, results free.
  mutable std::mutex admit_mu_;
  std::deque<std::unique_ptr<Txn>> incoming_;  // admitted, not yet sequenced
  // Admitted LTXs waiting for room (ClientLtxHold), in arrival order; and
  // how many sequenced ones hold room.
  std::deque<std::unique_ptr<Txn>> held_ltxs_;
  uint64_t ltx_room_taken_ = 0;
  uint64_t ltx_holds_ = 0;
  std::vector<Waiter> waiters_;       // by slot
  std::vector<uint32_t> free_slots_;
  // Replies: result threads append, the service thread sends.
  mutable std::mutex reply_mu_;
  std::vector<Connection*> ready_connections_;
  std::vector<std::unique_ptr<ReplyWriter>> writers_;  // result threads' scratch, pooled
  bool wake_pending_ = false;
  bool stopped_ = false;              // results are dropped from now on

  std::atomic<uint32_t> digests_pending_{0};
  std::atomic<uint64_t> busy_{0};
  std::atomic<uint64_t> unsent_bytes_{0};
  std::atomic<uint64_t> dropped_replies_{0};
  std::atomic<uint64_t> connection_count_{0};
  std::atomic<uint64_t> request_messages_{0}, reply_messages_{0};
  std::atomic<uint64_t> txns_received_{0}, txns_answered_{0};
};

}  // namespace paxflow
