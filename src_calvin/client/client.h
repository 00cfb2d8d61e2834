// Clients of one PaxFlow node (a zmq DEALER socket to its client port).
//
// Client: simple calls, one request per message (a txn, an LTX, status, a
// digest), many in flight at once if the caller likes.
// PipelinedClient: the asynchronous, pipelined API for many txns: Submit
// queues txns (and LTXs) and returns their ids at once; they travel many
// per message; Poll hands over the results as they come, each with its own
// status. Busy replies, errors and txns never answered are counted apart.
//
// Owns: its socket. Threads: one owner thread per client object.
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>
#include <google/protobuf/arena.h>
#include <zmq.hpp>

#include "auth/client_keys.h"
#include "client.pb.h"
#include "client/replica_ring.h"
#include "client/reply.h"

namespace paxflow {

class Client {
 public:
  // `context`: shared by several clients of one process; null: own one.
  explicit Client(zmq::context_t* context = nullptr);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Endpoint like tcp://127.0.0.1:17210. Connecting never blocks: a node
  // that is not up yet simply does not answer.
  std::string Connect(const std::string& endpoint);
  const std::string& endpoint() const { return endpoint_; }
  // Before Connect: CURVE with these keys (an empty key pair: a plain
  // connection) instead of this process's keys for the endpoint
  // (auth/client_keys.h).
  void SetCurve(ClientCurve keys) { curve_ = std::move(keys); }

  // Sends `request` under a fresh request id (returned).
  uint64_t Send(ClientRequest request);
  // Sends raw bytes as one request (tests of malformed input).
  void SendRaw(const std::string& bytes);
  // The next reply, waiting up to `timeout_ms`; false on timeout or a
  // reply that does not parse.
  bool Receive(ClientReply* reply, int timeout_ms);
  // Send, then wait for that request's reply (others arriving meanwhile are
  // dropped). Empty on success, else why there is no reply.
  std::string Call(ClientRequest request, ClientReply* reply, int timeout_ms);

  // Request builders.
  static ClientRequest Get(const std::vector<uint64_t>& keys);
  static ClientRequest Put(const std::vector<std::pair<uint64_t, std::string>>& writes);
  static ClientRequest Status();
  static ClientRequest Digest(uint64_t epoch);
  static ClientRequest Ltx(LtxRequest ltx);
  static ClientRequest Checkpoint();
  // Asks for nothing new: the reply comes once the node holds a checkpoint
  // at `epoch` or later.
  static ClientRequest WaitCheckpoint(uint64_t epoch);
  static ClientRequest RemoveNode(uint32_t node, bool force);

 private:
  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string endpoint_;
  std::optional<ClientCurve> curve_;
  uint64_t next_request_ = 1;
};

// A client of one partition's replicas (replicated input) that follows
// the leader and retries a txn until it has a final answer, exactly once.
//
// Each txn (and LTX) gets a request id (client_id, client_seq: client.proto): the
// partition's committed log runs a request id once (node/request_dedup.h),
// so a retry after a failover, a lost reply or a timeout is safe; the
// answer is the txn's result, or "already applied" naming the txn that ran.
// A try goes to the replica believed to lead; NOT_LEADER with a leader
// named goes there next (unless ReplicaRing distrusts it: it just went
// silent); NOT_LEADER without one, UNAVAILABLE, SHUTTING_DOWN or no reply
// within attempt_timeout_ms goes to the ring's next replica, after a back-off that doubles from backoff_min_ms to
// backoff_max_ms; BUSY waits the node's hint and tries the same one.
//
// Owns: a Client (its socket, reconnected to the replica it tries).
// Threads: one owner thread.
struct FailoverOptions {
  std::vector<std::string> endpoints;  // client endpoints of every replica
  int attempt_timeout_ms = 2000;       // one try at one replica
  int total_timeout_ms = 30000;        // Call gives up after this long
  int backoff_min_ms = 20;
  int backoff_max_ms = 500;
  uint64_t client_id = 0;              // 0: a random one
};

// What a FailoverClient did, since it was made.
struct FailoverCounters {
  uint64_t calls = 0;
  uint64_t tries = 0;       // requests sent (a call takes one or more)
  uint64_t redirects = 0;   // NOT_LEADER replies followed
  uint64_t timeouts = 0;    // tries without a reply in time
  uint64_t unavailable = 0; // UNAVAILABLE, SHUTTING_DOWN or BUSY replies
  uint64_t already_applied = 0;  // answers saying a retry had run already
};

class FailoverClient {
 public:
  explicit FailoverClient(FailoverOptions options, zmq::context_t* context = nullptr);
  // Before the first call: CURVE keys for every replica (as Client's).
  void SetCurve(ClientCurve keys) { curve_ = std::move(keys); }

  // Runs the txn of `request` (txn or single LTX) and waits for its final
  // answer in `reply`. The txn (or LTX) gets the next sequence number of
  // this client unless it carries a request id already. A retried LTX that
  // the log began before is answered "already applied" on one partition
  // (in place) and BAD_REQUEST across partitions, where its first try may
  // still abort (client.proto LtxRequest). Empty on a
  // final answer (any status but the retryable ones above), else why none
  // came within total_timeout_ms (the txn may or may not have run: a later
  // Call with the same request id settles it).
  std::string Call(ClientRequest request, ClientReply* reply);
  // Sends any other request (status, digest) to the replica it believes
  // leads, or the next that answers.
  std::string Ask(ClientRequest request, ClientReply* reply, int timeout_ms);

  uint64_t client_id() const { return client_id_; }
  uint64_t next_seq() const { return next_seq_; }
  // The endpoint it sends to now (the leader, as far as it knows).
  const std::string& endpoint() const { return current_; }
  const FailoverCounters& counters() const { return counters_; }

 private:
  std::string Use(const std::string& endpoint);  // (re)connects the client
  void NextReplica();
  void Sleep(int ms) const;

  const FailoverOptions options_;
  zmq::context_t* const context_;
  std::optional<ClientCurve> curve_;
  std::unique_ptr<Client> client_;
  std::string current_;
  ReplicaRing ring_;  // which replica next, which redirect to believe
  uint64_t client_id_ = 0;
  uint64_t next_seq_ = 1;
  FailoverCounters counters_;
};

struct PipelineOptions {
  size_t max_batch_txns = 512;                // txns per request message
  size_t max_batch_bytes = size_t{1} << 20;   // a message is sent once about this large
  bool reads_with_keys = false;               // KeyValue reads instead of the packed form
  // After a BUSY reply, for the retry time the node suggests, new txns are
  // refused here (status BUSY, nothing sent) instead of adding to the
  // node's overload.
  bool back_off = true;
};

// What a PipelinedClient saw, by kind of answer.
struct PipelineCounters {
  uint64_t submitted = 0;
  uint64_t ok = 0;        // ran (committed, declined by its procedure, or an aborted LTX)
  uint64_t busy = 0;      // refused by admission control: nothing ran; may be retried
  uint64_t busy_local = 0;  // of those, refused here while backing off (never sent)
  uint64_t errors = 0;    // any other status (bad request, not leader, shutting down...)
  uint64_t lost = 0;      // no answer by the end of a Drain
  uint64_t request_errors = 0;  // whole messages refused (garbled, too large)
};

class PipelinedClient {
 public:
  using ResultHandler = std::function<void(const TxnResult&)>;

  // `context`: shared by several clients of one process; null: own one.
  explicit PipelinedClient(zmq::context_t* context = nullptr, PipelineOptions options = {});
  ~PipelinedClient();
  PipelinedClient(const PipelinedClient&) = delete;
  PipelinedClient& operator=(const PipelinedClient&) = delete;

  std::string Connect(const std::string& endpoint);
  // A fresh socket to `endpoint` (another replica): what is in flight or
  // queued is forgotten (no longer in flight, never answered); the caller
  // submits again what it wants.
  std::string Reconnect(const std::string& endpoint);
  const std::string& endpoint() const { return endpoint_; }
  void SetCurve(ClientCurve keys) { curve_ = std::move(keys); }  // as Client's

  // Queues a txn (its fields are moved out) and returns its id, which its
  // result echoes. Queued txns leave at the next Flush or Poll, or at once
  // when a message is full.
  uint64_t Submit(TxnRequest* txn);
  uint64_t Submit(LtxRequest* ltx);
  void Flush();
  // Flushes, waits up to `timeout_ms` for replies and hands each result
  // that has arrived to `on_result` (on this thread). Returns how many.
  size_t Poll(int timeout_ms, const ResultHandler& on_result);
  // Polls until nothing is in flight or `timeout_ms` passed; what is still
  // unanswered then counts as lost (and is no longer in flight). Returns
  // how many were lost.
  size_t Drain(int timeout_ms, const ResultHandler& on_result);

  size_t in_flight() const { return in_flight_; }
  // The node asked to back off and the time it suggested has not passed:
  // Submit refuses new txns locally meanwhile.
  bool backing_off() const;
  const PipelineCounters& counters() const { return counters_; }

 private:
  void Count(const TxnResult& result);
  // Refuses a txn locally (backing off): its BUSY result comes at the next Poll.
  void RefuseLocally(uint64_t id);
  void HandleReply(const ClientReply& reply, const ResultHandler& on_result, size_t* delivered);
  uint64_t Queue(BatchedTxn** item, size_t bytes);
  // Queues one txn (`fill` writes it into its slot), or refuses it locally
  // while backing off; flushes a full batch. Returns its id.
  uint64_t SubmitItem(size_t bytes, const std::function<void(BatchedTxn*)>& fill);

  PipelineOptions options_;
  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string endpoint_;
  std::optional<ClientCurve> curve_;
  uint64_t next_id_ = 1;
  uint64_t next_request_ = 1;
  ClientRequest pending_;        // the batch being filled
  size_t pending_bytes_ = 0;
  // Recent batches' ids, so that a refusal of a whole message can be
  // turned into one result per txn.
  struct SentBatch {
    uint64_t request_id, first_id, count;
  };
  std::deque<SentBatch> sent_;
  std::unique_ptr<char[]> arena_block_;  // the arena's first block, kept across resets
  google::protobuf::Arena arena_;        // replies are parsed on it
  TxnResult synthetic_;
  size_t in_flight_ = 0;
  PipelineCounters counters_;
  int64_t back_off_until_us_ = 0;
  std::vector<uint64_t> refused_locally_;  // ids, answered at the next Poll
};

}  // namespace paxflow
