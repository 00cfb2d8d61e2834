#include "client/client_service.h"

#include <glog/logging.h>
#include <sys/eventfd.h>
#include <time.h>

#include <cstdio>
#include <unistd.h>

#include "common/clock.h"

namespace paxflow {
namespace {

constexpr uint64_t kMaxDigestLead = 100000;  // epochs: over 15 minutes at 10 ms
// Txns decoded per round before replies are flushed again, so that a flood
// of requests cannot starve the replies.
constexpr size_t kTxnsPerRound = 4096;
// While a connection's replies are blocked, how often to try again.
constexpr int kBlockedRetryMs = 5;
constexpr int64_t kIdleConnectionUs = 10 * 1000 * 1000;
// A connection holding this many times its unsent-reply bound ignores its replies.
constexpr size_t kIgnoredRepliesFactor = 4;

uint32_t SlotOf(uint64_t client_request_id) { return static_cast<uint32_t>(client_request_id); }
uint32_t GenerationOf(uint64_t client_request_id) {
  return static_cast<uint32_t>(client_request_id >> 32);
}

// Buffers above this size are freed after use rather than pooled.
constexpr size_t kPooledBufferBytes = size_t{4} << 20;
constexpr size_t kPooledBuffers = 64;

// This process's resident memory, from /proc (0 where there is none).
uint64_t ResidentBytes() {
  FILE* statm = fopen("/proc/self/statm", "r");
  if (!statm) return 0;
  unsigned long long size = 0, resident = 0;
  const int read = fscanf(statm, "%llu %llu", &size, &resident);
  fclose(statm);
  return read == 2 ? resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace

class ClientService::BufferPool {
 public:
  std::unique_ptr<ByteBuffer> Take() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!free_.empty()) {
        std::unique_ptr<ByteBuffer> buffer = std::move(free_.back());
        free_.pop_back();
        return buffer;
      }
    }
    return std::make_unique<ByteBuffer>();
  }
  void Give(std::unique_ptr<ByteBuffer> buffer) {
    if (buffer->capacity() > kPooledBufferBytes) return;
    buffer->Clear();
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.size() < kPooledBuffers) free_.push_back(std::move(buffer));
  }

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<ByteBuffer>> free_;
};

namespace {

// Hands a reply buffer to zmq without copying it; once zmq has sent it
// (on its I/O thread) the buffer goes back to the pool.
struct SentBuffer {
  std::unique_ptr<ByteBuffer> buffer;
  std::shared_ptr<void> pool;  // keeps the pool alive
};

}  // namespace

ClientService::ClientService(ClientServiceOptions options, const Application* app,
                             StatusProvider status, DigestProvider digest,
                             zmq::context_t* context)
    : options_(std::move(options)),
      app_(app),
      procedures_(*app),
      status_(std::move(status)),
      digest_(std::move(digest)),
      context_(context),
      handshakes_("node " + std::to_string(options_.node), "client"),
      admission_(options_.admission),
      buffers_(std::make_shared<BufferPool>()),
      request_scratch_(options_.limits) {}

ClientService::~ClientService() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

std::string ClientService::Start() {
  try {
    socket_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::router);
    socket_->set(zmq::sockopt::linger, 0);
    socket_->set(zmq::sockopt::rcvhwm, 1000);
    // Few reply messages queue inside zmq per connection; past that a send
    // fails (router_mandatory) and the replies wait in `blocked`, where
    // admission sees them, instead of being dropped or piling up unseen.
    socket_->set(zmq::sockopt::sndhwm, options_.send_hwm);
    socket_->set(zmq::sockopt::router_mandatory, 1);
    // Requests over the limit get a TOO_LARGE reply; only absurd ones (a
    // memory attack) are cut off by zmq, which disconnects that client.
    socket_->set(zmq::sockopt::maxmsgsize,
                 static_cast<int64_t>(16 * options_.limits.max_request_bytes));
    if (!options_.curve.empty()) {
      MakeCurveServer(socket_.get(), options_.curve, "client");
      handshakes_.Watch(context_, socket_.get());
    }
    socket_->bind(options_.endpoint);
  } catch (const zmq::error_t& e) {
    handshakes_.Close();
    socket_.reset();
    return "cannot bind the client port " + options_.endpoint + ": " + e.what();
  }
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return "eventfd failed";
  thread_ = std::thread([this] { Loop(); });
  return "";
}

void ClientService::Stop() {
  if (stop_.exchange(true)) return;
  if (thread_.joinable()) thread_.join();
  if (!socket_) return;
  // Whatever was never sequenced will not be, and what was sequenced will
  // not be reported: tell those clients which.
  {
    std::lock_guard<std::mutex> admit_lock(admit_mu_);
    std::lock_guard<std::mutex> reply_lock(reply_mu_);
    AnswerWaitingLocked(SHUTTING_DOWN, "node " + std::to_string(options_.node) + " stopped ");
    stopped_ = true;
  }
  Flush();
  handshakes_.Close();
  socket_.reset();
}

void ClientService::AnswerWaitingLocked(ReplyStatus status, const std::string& prefix) {
  if (stopped_) return;
  for (size_t slot = 0; slot < waiters_.size(); ++slot) {
    const Waiter& waiter = waiters_[slot];
    if (!waiter.connection) continue;
    const std::string error =
        prefix + (waiter.sequenced_us
                      ? "before the txn finished here; its outcome is unknown (read the keys "
                        "again, or retry it with the same request id)"
                      : "before the txn was sequenced; it never ran");
    AnswerErrorLocked(static_cast<uint32_t>(slot), status, error);
  }
  incoming_.clear();
  held_ltxs_.clear();
}

void ClientService::AnswerErrorLocked(uint32_t slot, ReplyStatus status,
                                      const std::string& error) {
  Waiter& waiter = waiters_[slot];
  FreeLtxRoomLocked(&waiter);
  if (waiter.batched) {
    service_writer_.AppendError(waiter.id, status, error, 0,
                                ResultsBufferLocked(waiter.connection));
    waiter.connection->outbox.back().answers++;
    MarkReadyLocked(waiter.connection);
  } else {
    ClientReply reply;
    reply.set_request_id(waiter.id);
    reply.set_status(status);
    reply.set_error(error);
    QueueMessageLocked(waiter.connection, reply.SerializeAsString(), 1);
  }
  waiter.connection = nullptr;
  free_slots_.push_back(slot);
  admission_.Produced();
}

void ClientService::Depose() {
  sequences_.store(false);
  bool wake;
  {
    std::lock_guard<std::mutex> admit_lock(admit_mu_);
    std::lock_guard<std::mutex> reply_lock(reply_mu_);
    AnswerWaitingLocked(NOT_LEADER, "node " + std::to_string(options_.node) +
                                        " lost the leadership of its partition's replicas ");
    wake = WakeNeededLocked();
  }
  if (wake) WakeServiceThread();
}

namespace {

std::string RequestIdName(const Txn& txn) {
  return "request id (client " + std::to_string(txn.client_id()) + ", seq " +
         std::to_string(txn.client_seq()) + ")";
}

}  // namespace

void ClientService::AnswerDroppedError(const Txn& txn, ReplyStatus status,
                                       const std::string& error) {
  const uint32_t slot = SlotOf(txn.client_request_id());
  bool wake = false;
  {
    std::lock_guard<std::mutex> admit_lock(admit_mu_);
    std::lock_guard<std::mutex> reply_lock(reply_mu_);
    if (stopped_ || slot >= waiters_.size() || !waiters_[slot].connection ||
        waiters_[slot].generation != GenerationOf(txn.client_request_id())) {
      return;
    }
    AnswerErrorLocked(slot, status, error);
    wake = WakeNeededLocked();
  }
  if (wake) WakeServiceThread();
}

void ClientService::AnswerDropped(const Txn& txn, DroppedAs as, uint64_t original) {
  if (txn.client_request_id() == 0 || txn.origin_node() != options_.node) return;
  const std::string id = RequestIdName(txn);
  if (as == DroppedAs::kTooOld) {
    AnswerDroppedError(txn, BAD_REQUEST,
                       id + " is older than the partition remembers (its client's window of "
                            "request ids); it did not run now, and may have run before: read "
                            "the keys to know");
    return;
  }
  // The answer names the txn that ran; its own result is not kept.
  Txn shown;
  shown.set_id(original);
  shown.set_txn_class(txn.txn_class());
  shown.set_client_request_id(txn.client_request_id());
  shown.set_origin_node(txn.origin_node());
  TxnOutcome outcome;
  outcome.committed = false;
  outcome.detail = "already applied: " + id + " ran as txn " + std::to_string(original) +
                   " in epoch " + std::to_string(TxnEpoch(original)) +
                   "; this retry did not run again";
  static const ReadValues kNoReads;
  Answer(shown, outcome, 0, kNoReads, true);
}

void ClientService::AnswerLtxRetry(const Txn& txn, TxnId original, bool known,
                                   const TxnOutcome& outcome) {
  if (txn.client_request_id() == 0 || txn.origin_node() != options_.node) return;
  const std::string began = RequestIdName(txn) + " began LTX " + std::to_string(original) +
                            " in epoch " + std::to_string(TxnEpoch(original)) +
                            "; this retry did not begin another";
  if (!known) {
    AnswerDroppedError(txn, BAD_REQUEST,
                       began + ". The partition does not know how that LTX resolved (older "
                               "than the LTX outcomes it keeps, or before the checkpoint "
                               "it restarted from): read the keys to know");
    return;
  }
  // The first attempt's outcome, as its own reply would have said it.
  Txn shown;
  shown.set_id(original);
  shown.set_txn_class(LTX);
  shown.set_client_request_id(txn.client_request_id());
  shown.set_origin_node(txn.origin_node());
  TxnOutcome told = outcome;
  told.detail = began + (outcome.aborted ? "; that LTX aborted (a new attempt needs a new "
                                           "request id)"
                                         : "; that LTX committed");
  static const ReadValues kNoReads;
  Answer(shown, told, TxnEpoch(original), kNoReads, outcome.committed && !outcome.aborted);
}

void ClientService::FailWaiting(const std::string& why) {
  bool wake;
  {
    std::lock_guard<std::mutex> admit_lock(admit_mu_);
    std::lock_guard<std::mutex> reply_lock(reply_mu_);
    AnswerWaitingLocked(UNAVAILABLE, why + ": node " + std::to_string(options_.node) +
                                         " stopped taking txns ");
    wake = WakeNeededLocked();
  }
  if (wake) WakeServiceThread();
}

void ClientService::HandleRemoveNode(Connection* connection, uint64_t request_id,
                                     const RemoveNodeRequest& request) {
  ClientReply reply;
  reply.set_request_id(request_id);
  std::string detail;
  const std::string error =
      remove_ ? remove_(request, &detail)
              : "node " + std::to_string(options_.node) + " cannot remove nodes";
  if (error.empty()) {
    reply.mutable_removed()->set_detail(detail);
  } else {
    reply.set_status(BAD_REQUEST);
    reply.set_error(error);
  }
  QueueReply(connection, reply);
}

void ClientService::HandleCheckpoint(Connection* connection, uint64_t request_id,
                                     Epoch wait_epoch) {
  if (!checkpoint_) {
    ClientReply reply;
    reply.set_request_id(request_id);
    reply.set_status(BAD_REQUEST);
    reply.set_error("node " + std::to_string(options_.node) +
                    " keeps no checkpoints (it runs without --log_dir)");
    QueueReply(connection, reply);
    return;
  }
  // Pending, it counts as an unanswered request of this connection, which
  // keeps the connection alive until the reply is sent.
  ++connection->admitted;
  checkpoint_(wait_epoch, [this, connection, request_id](const CheckpointReply& done,
                                             const std::string& problem) {
    ClientReply answer;
    answer.set_request_id(request_id);
    if (problem.empty()) {
      *answer.mutable_checkpoint() = done;
    } else {
      answer.set_status(UNAVAILABLE);
      answer.set_error(problem);
    }
    PostLateReply(connection, answer);
  });
}

void ClientService::PostLateReply(Connection* connection, const ClientReply& reply) {
  bool wake;
  {
    std::lock_guard<std::mutex> lock(reply_mu_);
    if (stopped_) return;
    QueueMessageLocked(connection, reply.SerializeAsString(), 1);
    wake = WakeNeededLocked();
  }
  if (wake) WakeServiceThread();
}

ClientPortCounters ClientService::Counters() const {
  ClientPortCounters counters;
  counters.admitted = admission_.admitted();
  counters.admit_limit = admission_.limits().max_admitted;
  counters.busy = busy_.load(std::memory_order_relaxed);
  counters.unsent_bytes = unsent_bytes_.load(std::memory_order_relaxed);
  counters.dropped_replies = dropped_replies_.load(std::memory_order_relaxed);
  counters.connections = connection_count_.load(std::memory_order_relaxed);
  counters.request_messages = request_messages_.load(std::memory_order_relaxed);
  counters.reply_messages = reply_messages_.load(std::memory_order_relaxed);
  counters.txns_received = txns_received_.load(std::memory_order_relaxed);
  counters.txns_answered = txns_answered_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(admit_mu_);
  counters.ltxs_held = held_ltxs_.size();
  counters.ltx_holds = ltx_holds_;
  return counters;
}

void ClientService::Loop() {
  // The handshake monitor's events, when it watches (CURVE), are polled
  // here too: no thread of their own.
  zmq::pollitem_t items[3] = {{socket_->handle(), 0, ZMQ_POLLIN, 0},
                              {nullptr, wake_fd_, ZMQ_POLLIN, 0},
                              handshakes_.Item()};
  const size_t polled = handshakes_.watching() ? 3 : 2;
  int64_t last_flush = 0;
  bool due = false;  // replies wait for the next flush
  while (!stop_.load(std::memory_order_relaxed)) {
    int timeout_ms = blocked_connections_.empty() ? 200 : kBlockedRetryMs;
    if (due) timeout_ms = 1;  // the coalescing window ends within a millisecond
    try {
      zmq::poll(items, polled, std::chrono::milliseconds(timeout_ms));
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      continue;
    }
    if (polled == 3 && (items[2].revents & ZMQ_POLLIN)) handshakes_.Drain();
    if (items[1].revents & ZMQ_POLLIN) {
      uint64_t count;
      if (read(wake_fd_, &count, sizeof(count)) < 0) {}  // drained; nothing to do on EAGAIN
      due = true;
    }
    if (ReceiveSome() > 0) due = true;
    // Replies leave at most every reply_delay_us, so that under load each
    // message carries many results (fewer wake-ups and system calls on both
    // sides); an idle node answers at once.
    const int64_t now = NowMicros();
    if ((due || !blocked_connections_.empty()) &&
        now - last_flush >= static_cast<int64_t>(options_.reply_delay_us)) {
      Flush();
      last_flush = now;
      due = false;
    }
    if (now - last_sweep_us_ > 1000000) {
      ForgetIdleConnections(now);
      last_sweep_us_ = now;
    }
  }
}

size_t ClientService::ReceiveSome() {
  size_t txns = 0;
  std::vector<zmq::message_t> frames;
  while (txns < kTxnsPerRound) {
    frames.clear();
    try {
      zmq::message_t frame;
      if (!socket_->recv(frame, zmq::recv_flags::dontwait)) break;
      bool more = frame.more();
      frames.push_back(std::move(frame));
      while (more) {
        zmq::message_t next;
        if (!socket_->recv(next, zmq::recv_flags::dontwait)) break;
        more = next.more();
        frames.push_back(std::move(next));
      }
    } catch (const zmq::error_t& e) {
      LOG_EVERY_N(WARNING, 100) << "client port: receive failed: " << e.what();
      break;
    }
    const int64_t now = NowMicros();
    Connection* connection = ConnectionOf(frames[0], frames.back(), now);
    if (frames.size() != 2) {
      ClientReply reply;
      reply.set_status(BAD_REQUEST);
      reply.set_error("expected one frame per request, got " + std::to_string(frames.size() - 1));
      QueueReply(connection, reply);
      ++txns;
      continue;
    }
    const size_t held = Handle(connection, frames[1]);
    txns += held;
    request_messages_.fetch_add(1, std::memory_order_relaxed);
    txns_received_.fetch_add(held, std::memory_order_relaxed);
  }
  return txns;
}

ClientService::Connection* ClientService::ConnectionOf(const zmq::message_t& identity,
                                                      const zmq::message_t& frame, int64_t now) {
  auto [it, added] = connections_.try_emplace(
      std::string(static_cast<const char*>(identity.data()), identity.size()));
  if (added) {
    it->second = std::make_unique<Connection>();
    it->second->identity = it->first;
    // A key's rights hold for its connection: the ZAP handler named it.
    it->second->is_operator =
        options_.curve.empty() || IsOperatorUserId(zmq_msg_gets(frame.handle(), "User-Id"));
    connection_count_.store(connections_.size(), std::memory_order_relaxed);
  }
  it->second->last_active_us = now;
  return it->second.get();
}

bool ClientService::RefusedAdmin(Connection* connection, uint64_t request_id, const char* what) {
  if (connection->is_operator) return false;
  ClientReply reply;
  reply.set_request_id(request_id);
  reply.set_status(FORBIDDEN);
  reply.set_error(std::string(what) + " needs an operator key (auth { client { operator: true } } "
                  "in the config)");
  QueueReply(connection, reply);
  return true;
}

size_t ClientService::Handle(Connection* connection, const zmq::message_t& message) {
  last_refusal_text_.clear();
  unavailable_asked_ = false;
  leader_asked_ = false;
  const std::string_view bytes(static_cast<const char*>(message.data()), message.size());
  if (RefusedWhole(connection, bytes)) return 1;
  std::string error;
  const ReplyStatus status = ParseRequest(bytes, options_.limits, &request_, &error);
  ClientReply reply;
  reply.set_request_id(request_.request_id());
  if (status != OK) {
    // A message too large to parse still names its request (from its
    // first fields), so that the client can tell which one was refused.
    uint64_t request_id = 0;
    bool carries_txns = false;
    if (status == TOO_LARGE && PeekRequest(bytes, &request_id, &carries_txns)) {
      reply.set_request_id(request_id);
    }
    reply.set_status(status);
    reply.set_error(error);
    QueueReply(connection, reply);
    return 1;
  }
  switch (request_.body_case()) {
    case ClientRequest::kStatus: {
      StatusReply* node = reply.mutable_node_status();
      *node = status_();
      if (!connection->is_operator) {
        // Who the node is, its state and epochs; the rest is an operator's.
        StatusReply details;
        details.Swap(node);
        node->set_node_id(details.node_id());
        node->set_partition(details.partition());
        node->set_replica(details.replica());
        node->set_mode(details.mode());
        node->set_workload(details.workload());
        node->set_state(details.state());
        node->set_admitted_epoch(details.admitted_epoch());
        node->set_published_epoch(details.published_epoch());
        node->set_group_role(details.group_role());
        node->set_group_term(details.group_term());
        node->set_group_leader(details.group_leader());
        node->set_group_committed_epoch(details.group_committed_epoch());
        node->set_group_trimmed_epoch(details.group_trimmed_epoch());
        QueueReply(connection, reply);
        return 1;
      }
      node->set_details(true);
      const ClientPortCounters counters = Counters();
      node->set_client_admit_limit(counters.admit_limit);
      node->set_client_busy(counters.busy);
      node->set_client_unsent_bytes(counters.unsent_bytes);
      node->set_client_dropped_replies(counters.dropped_replies);
      node->set_client_connections(counters.connections);
      node->set_client_request_messages(counters.request_messages);
      node->set_client_reply_messages(counters.reply_messages);
      node->set_client_txns_received(counters.txns_received);
      node->set_client_txns_answered(counters.txns_answered);
      timespec cpu{};
      if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu) == 0) {
        node->set_process_cpu_s(cpu.tv_sec + cpu.tv_nsec / 1e9);
      }
      node->set_resident_bytes(ResidentBytes());
      QueueReply(connection, reply);
      return 1;
    }
    case ClientRequest::kDigest: {
      if (RefusedAdmin(connection, request_.request_id(), "a digest")) return 1;
      // A digest far in the future would sit in the scheduler for good.
      const uint64_t now = status_().admitted_epoch();
      if (request_.digest().epoch() > now + kMaxDigestLead) {
        reply.set_status(BAD_REQUEST);
        reply.set_error("epoch " + std::to_string(request_.digest().epoch()) +
                        " is too far ahead (the node is at epoch " + std::to_string(now) + ")");
        QueueReply(connection, reply);
        return 1;
      }
      if (digests_pending_.load() >= options_.max_pending_digests) {
        reply.set_status(BUSY);
        reply.set_error(std::to_string(digests_pending_.load()) +
                        " digests are pending on this node; ask again later");
        QueueReply(connection, reply);
        return 1;
      }
      digests_pending_.fetch_add(1);
      // The pending digest counts as an unanswered request of this
      // connection, which keeps the connection alive until it is sent.
      ++connection->admitted;
      const uint64_t request_id = request_.request_id();
      digest_(request_.digest().epoch(), [this, connection, request_id](DigestReply digest) {
        digests_pending_.fetch_sub(1);
        ClientReply answer;
        answer.set_request_id(request_id);
        *answer.mutable_digest() = digest;
        PostLateReply(connection, answer);
      });
      return 1;
    }
    case ClientRequest::kCheckpoint:
      if (RefusedAdmin(connection, request_.request_id(), "a checkpoint")) return 1;
      HandleCheckpoint(connection, request_.request_id(), request_.checkpoint().wait_epoch());
      return 1;
    case ClientRequest::kRemoveNode:
      if (RefusedAdmin(connection, request_.request_id(), "removing a node")) return 1;
      HandleRemoveNode(connection, request_.request_id(), request_.remove_node());
      return 1;
    case ClientRequest::kState: {
      if (RefusedAdmin(connection, request_.request_id(), "copying a node's state")) return 1;
      StateProvider state;
      {
        std::lock_guard<std::mutex> lock(hint_mu_);
        state = state_;
      }
      const std::string error =
          state ? state(request_.state(), reply.mutable_state())
                 : "node " + std::to_string(options_.node) + " serves no state (no --log_dir, "
                   "or replicated_input is off)";
      if (!error.empty()) {
        reply.clear_state();
        reply.set_status(BAD_REQUEST);
        reply.set_error(error);
      }
      QueueReply(connection, reply);
      return 1;
    }
    case ClientRequest::kBatch:
      HandleBatch(connection, request_.mutable_batch());
      return std::max<size_t>(1, request_.batch().txns_size());
    default:
      break;
  }
  // A single txn (or LTX): one reply message of its own.
  admitting_.clear();
  const ReplyStatus admitted = AdmitTxn(
      connection, request_.request_id(), false, true,
      request_.has_txn() ? request_.mutable_txn() : nullptr,
      request_.has_ltx() ? request_.mutable_ltx() : nullptr, UnsentBytes(connection), &error);
  if (admitted != OK) {
    reply.set_status(admitted);
    reply.set_error(error);
    if (admitted == BUSY) reply.set_retry_after_ms(options_.admission.retry_after_ms);
    if (admitted == NOT_LEADER && leader_asked_ && !leader_.address.empty() &&
        leader_.node != int64_t{options_.node}) {
      reply.set_leader_node(leader_.node);
      reply.set_leader_address(leader_.address);
    }
    QueueReply(connection, reply);
    return 1;
  }
  std::lock_guard<std::mutex> lock(admit_mu_);
  EnqueueAdmittedLocked(connection, NowMicros());
  return 1;
}

bool ClientService::RefusedWhole(Connection* connection, std::string_view bytes) {
  const size_t unsent = UnsentBytes(connection);
  const Admission::Verdict verdict = admission_.Check(connection->admitted, unsent);
  if (verdict == Admission::kAdmitted) return false;
  uint64_t request_id;
  bool carries_txns;
  if (!PeekRequest(bytes, &request_id, &carries_txns) || !carries_txns) return false;
  // The node cannot take any txn of this message: refuse it whole, before
  // decoding it, with one small reply (a client maps it to each of its
  // txns), so that refusing costs next to nothing under overload.
  busy_.fetch_add(1, std::memory_order_relaxed);
  ClientReply reply;
  reply.set_request_id(request_id);
  reply.set_status(BUSY);
  reply.set_error(admission_.Explain(verdict, connection->admitted, unsent));
  reply.set_retry_after_ms(options_.admission.retry_after_ms);
  QueueReply(connection, reply);
  return true;
}

size_t ClientService::UnsentBytes(const Connection* connection) const {
  std::lock_guard<std::mutex> lock(reply_mu_);
  return connection->blocked_bytes + connection->outbox_bytes;
}

void ClientService::HandleBatch(Connection* connection, TxnBatch* batch) {
  const bool with_keys = batch->reads_with_keys();
  const size_t unsent = UnsentBytes(connection);
  admitting_.clear();
  refused_.clear();
  std::string error;
  for (BatchedTxn& item : *batch->mutable_txns()) {
    const ReplyStatus status =
        AdmitTxn(connection, item.id(), true, with_keys,
                 item.has_txn() ? item.mutable_txn() : nullptr,
                 item.has_ltx() ? item.mutable_ltx() : nullptr, unsent, &error);
    if (status != OK) refused_.push_back(Refusal{item.id(), status, std::move(error)});
    error.clear();
  }
  {
    std::lock_guard<std::mutex> lock(admit_mu_);
    EnqueueAdmittedLocked(connection, NowMicros());
  }
  if (refused_.empty()) return;
  std::lock_guard<std::mutex> lock(reply_mu_);
  if (IgnoresRepliesLocked(*connection)) {
    dropped_replies_.fetch_add(refused_.size(), std::memory_order_relaxed);
    return;
  }
  ByteBuffer* out = ResultsBufferLocked(connection);
  const size_t before = out->size();
  for (const Refusal& r : refused_) {
    const bool hint = r.status == NOT_LEADER && leader_asked_ &&
                      leader_.node != int64_t{options_.node};
    service_writer_.AppendError(r.id, r.status, r.error,
                                r.status == BUSY ? options_.admission.retry_after_ms : 0, out,
                                hint ? &leader_ : nullptr);
  }
  connection->outbox_bytes += out->size() - before;
  unsent_bytes_.fetch_add(out->size() - before, std::memory_order_relaxed);
  MarkReadyLocked(connection);
}

ReplyStatus ClientService::AdmitTxn(Connection* connection, uint64_t id, bool batched,
                                    bool reads_with_keys, TxnRequest* txn_request,
                                    LtxRequest* ltx_request, size_t unsent_bytes,
                                    std::string* error) {
  if (!txn_request && !ltx_request) {
    *error = "txn " + std::to_string(id) + " of the batch is neither a txn nor an ltx";
    return BAD_REQUEST;
  }
  if (shutting_down_.load(std::memory_order_relaxed)) {
    *error = "node " + std::to_string(options_.node) + " is shutting down";
    return SHUTTING_DOWN;
  }
  if (unavailable_ && !unavailable_asked_) {
    unavailable_text_ = unavailable_();
    unavailable_asked_ = true;
  }
  if (!unavailable_text_.empty()) {
    *error = "node " + std::to_string(options_.node) + " cannot run txns now: " + unavailable_text_;
    return UNAVAILABLE;
  }
  if (!sequences_.load()) {
    if (!leader_asked_) {
      std::lock_guard<std::mutex> lock(hint_mu_);
      leader_ = leader_hint_ ? leader_hint_() : LeaderHint{};
      leader_asked_ = true;
    }
    if (leader_.address.empty() && leader_.node < 0) {
      *error = "node " + std::to_string(options_.node) +
               " is a replica that does not sequence; send txns to " + options_.leader;
      return NOT_LEADER;
    }
    *error = "node " + std::to_string(options_.node) +
             " does not lead its partition's replicas; nothing ran; " +
             (leader_.address.empty() || leader_.node == int64_t{options_.node}
                  ? std::string("no leader is known yet (an election is under way): retry "
                                "shortly, or ask another replica")
                  : "the leader is node " + std::to_string(leader_.node) + " at " +
                        leader_.address + ": send txns there");
    return NOT_LEADER;
  }
  const Admission::Verdict verdict = admission_.Admit(connection->admitted, unsent_bytes);
  if (verdict != Admission::kAdmitted) {
    busy_.fetch_add(1, std::memory_order_relaxed);
    // One explanation per kind of refusal and request, not one per txn.
    if (verdict != last_refusal_ || last_refusal_text_.empty()) {
      last_refusal_ = verdict;
      last_refusal_text_ = admission_.Explain(verdict, connection->admitted, unsent_bytes);
    }
    *error = last_refusal_text_;
    return BUSY;
  }
  Admitting& next = admitting_.emplace_back();
  next.txn = std::make_unique<Txn>();
  const ReplyStatus status =
      txn_request ? BuildTxn(txn_request, *app_, procedures_, options_.limits, &request_scratch_,
                             next.txn.get(), error)
                  : BuildLtxTxn(ltx_request, *app_, procedures_, options_.limits,
                                &request_scratch_, next.txn.get(), error);
  if (status != OK) {
    admitting_.pop_back();
    admission_.Produced();  // it will never run
    return status;
  }
  ++connection->admitted;
  next.id = id;
  next.batched = batched;
  next.reads_with_keys = reads_with_keys;
  return OK;
}

void ClientService::EnqueueAdmittedLocked(Connection* connection, int64_t now) {
  for (Admitting& admitted : admitting_) {
    const uint32_t slot = AllocateSlotLocked();
    Waiter& waiter = waiters_[slot];
    waiter.connection = connection;
    waiter.id = admitted.id;
    waiter.arrival_us = now;
    waiter.sequenced_us = 0;
    waiter.restarts = 0;
    waiter.batched = admitted.batched;
    waiter.reads_with_keys = admitted.reads_with_keys;
    admitted.txn->set_client_request_id(uint64_t{waiter.generation} << 32 | slot);
    admitted.txn->set_submit_time_us(now);
    incoming_.push_back(std::move(admitted.txn));
  }
  admitting_.clear();
}

uint32_t ClientService::AllocateSlotLocked() {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(waiters_.size());
    waiters_.emplace_back();
  }
  // Generations start at 1, so no client txn has client_request_id 0
  // (which marks generated load).
  if (++waiters_[slot].generation == 0) waiters_[slot].generation = 1;
  return slot;
}

size_t ClientService::Fill(size_t max, int64_t now_us, Batch* batch) {
  std::lock_guard<std::mutex> lock(admit_mu_);
  size_t count = 0;
  // Held LTXs came before what waits in incoming_: they go first.
  while (count < max && !held_ltxs_.empty() && LtxRoomLocked()) {
    std::unique_ptr<Txn> txn = std::move(held_ltxs_.front());
    held_ltxs_.pop_front();
    SequenceLocked(std::move(txn), true, now_us, batch);
    ++count;
  }
  while (count < max && !incoming_.empty()) {
    std::unique_ptr<Txn> txn = std::move(incoming_.front());
    incoming_.pop_front();
    const bool takes_room = TakesLtxRoom(*txn);
    if (takes_room && (!held_ltxs_.empty() || !LtxRoomLocked())) {
      ++ltx_holds_;
      held_ltxs_.push_back(std::move(txn));
      continue;
    }
    SequenceLocked(std::move(txn), takes_room, now_us, batch);
    ++count;
  }
  return count;
}

bool ClientService::TakesLtxRoom(const Txn& txn) const {
  return ltx_hold_.limit > 0 && txn.txn_class() == LTX && ltx_hold_.counts(txn);
}

bool ClientService::LtxRoomLocked() const {
  if (ltx_hold_.behind && ltx_hold_.behind()) return false;
  return ltx_room_taken_ < ltx_hold_.limit;
}

void ClientService::SequenceLocked(std::unique_ptr<Txn> txn, bool takes_room, int64_t now_us,
                                   Batch* batch) {
  // Its waiter is live: AnswerWaitingLocked, which frees waiters without a
  // result, empties both queues.
  const uint32_t slot = SlotOf(txn->client_request_id());
  if (slot < waiters_.size() && waiters_[slot].connection) {
    Waiter& waiter = waiters_[slot];
    waiter.sequenced_us = now_us;
    if (takes_room && !waiter.holds_ltx_room) {
      waiter.holds_ltx_room = true;
      ++ltx_room_taken_;
    }
  }
  batch->mutable_txns()->AddAllocated(txn.release());
}

void ClientService::FreeLtxRoomLocked(Waiter* waiter) {
  if (!waiter->holds_ltx_room) return;
  waiter->holds_ltx_room = false;
  --ltx_room_taken_;
}

bool ClientService::Resubmit(Txn txn) {
  std::lock_guard<std::mutex> lock(admit_mu_);
  const uint32_t slot = SlotOf(txn.client_request_id());
  if (stopped_ || slot >= waiters_.size() || !waiters_[slot].connection ||
      waiters_[slot].generation != GenerationOf(txn.client_request_id()) ||
      ++waiters_[slot].restarts > kMaxRestarts) {
    return false;
  }
  // Still admitted and unanswered; first in line, as the generators take
  // their restarts before new txns. Should the node stop before it is
  // sequenced again, its client hears that it never ran (true: the
  // attempt that gave up wrote nothing). An LTX asks for room again, at
  // the head of those held.
  waiters_[slot].sequenced_us = 0;
  FreeLtxRoomLocked(&waiters_[slot]);
  auto again = std::make_unique<Txn>(std::move(txn));
  if (TakesLtxRoom(*again)) held_ltxs_.push_front(std::move(again));
  else incoming_.push_front(std::move(again));
  return true;
}

void ClientService::OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                             const ReadValues& reads) {
  Answer(txn, outcome, read_version, reads, false);
}

void ClientService::Answer(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                           const ReadValues& reads, bool already_applied) {
  if (txn.client_request_id() == 0 || txn.origin_node() != options_.node) return;
  const uint32_t slot = SlotOf(txn.client_request_id());
  Waiter waiter;
  {
    std::lock_guard<std::mutex> lock(admit_mu_);
    if (slot >= waiters_.size() || !waiters_[slot].connection ||
        waiters_[slot].generation != GenerationOf(txn.client_request_id())) {
      return;  // not ours, or the service stopped
    }
    FreeLtxRoomLocked(&waiters_[slot]);
    waiter = waiters_[slot];
    waiters_[slot].connection = nullptr;
    free_slots_.push_back(slot);
  }
  std::unique_ptr<ReplyWriter> writer;
  {
    std::lock_guard<std::mutex> lock(reply_mu_);
    if (!writers_.empty()) {
      writer = std::move(writers_.back());
      writers_.pop_back();
    }
  }
  admission_.Produced();
  if (!writer) writer = std::make_unique<ReplyWriter>();
  const int64_t now = NowMicros();
  ResultTiming timing;
  timing.read_version = read_version;
  timing.server_latency_us = now - waiter.arrival_us;
  timing.already_applied = already_applied;
  if (txn.txn_class() == RO && waiter.sequenced_us > 0) {
    // Its snapshot is the state at the end of the epoch before its own,
    // which ended one epoch before its batch was cut.
    timing.visibility_us =
        std::max<int64_t>(0, now - (waiter.sequenced_us - int64_t{options_.epoch_ms} * 1000));
  }
  std::string single;
  if (waiter.batched) {
    writer->PrepareResult(waiter.id, txn, outcome, timing, reads, waiter.reads_with_keys);
  } else {
    writer->SingleResult(waiter.id, txn, outcome, timing, reads, &single);
  }
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(reply_mu_);
    if (!stopped_) {
      Connection* connection = waiter.connection;
      if (waiter.batched) {
        ByteBuffer* out = ResultsBufferLocked(connection);
        const size_t before = out->size();
        writer->AppendPrepared(out);
        connection->outbox.back().answers++;
        connection->outbox_bytes += out->size() - before;
        unsent_bytes_.fetch_add(out->size() - before, std::memory_order_relaxed);
        MarkReadyLocked(connection);
      } else {
        QueueMessageLocked(connection, single, 1);
      }
      wake = WakeNeededLocked();
    }
    writers_.push_back(std::move(writer));
  }
  if (wake) WakeServiceThread();
}

ByteBuffer* ClientService::ResultsBufferLocked(Connection* connection) {
  if (connection->outbox.empty() || !connection->outbox.back().results ||
      connection->outbox.back().bytes->size() >= options_.reply_message_bytes) {
    Outgoing& out = connection->outbox.emplace_back();
    out.bytes = buffers_->Take();
    out.results = true;
  }
  return connection->outbox.back().bytes.get();
}

void ClientService::QueueMessageLocked(Connection* connection, std::string_view bytes,
                                       uint32_t answers) {
  connection->outbox_bytes += bytes.size();
  unsent_bytes_.fetch_add(bytes.size(), std::memory_order_relaxed);
  Outgoing& out = connection->outbox.emplace_back();
  out.bytes = buffers_->Take();
  out.bytes->Append(bytes);
  out.answers = answers;
  MarkReadyLocked(connection);
}

void ClientService::MarkReadyLocked(Connection* connection) {
  if (connection->listed_ready) return;
  connection->listed_ready = true;
  ready_connections_.push_back(connection);
}

void ClientService::QueueReply(Connection* connection, const ClientReply& reply) {
  const std::string bytes = reply.SerializeAsString();
  std::lock_guard<std::mutex> lock(reply_mu_);
  if (IgnoresRepliesLocked(*connection)) {
    dropped_replies_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  QueueMessageLocked(connection, bytes, 0);
}

bool ClientService::IgnoresRepliesLocked(const Connection& connection) const {
  // Admission refuses a connection's txns once its unsent replies reach
  // the per-client bound; past a few times that it is not reading at all,
  // and further replies that answer nothing admitted (refusals, errors)
  // are dropped: nothing ran, and memory stays bounded.
  return connection.outbox_bytes + connection.blocked_bytes >=
         kIgnoredRepliesFactor * options_.admission.max_unsent_bytes_per_client;
}

bool ClientService::WakeNeededLocked() {
  if (wake_pending_) return false;
  wake_pending_ = true;
  return true;
}

void ClientService::WakeServiceThread() {
  // wake_fd_ is fixed from Start to the destructor.
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {}  // counter full: a wake is pending anyway
}

void ClientService::Flush() {
  std::vector<std::pair<Connection*, std::vector<Outgoing>>> ready;
  {
    std::lock_guard<std::mutex> lock(reply_mu_);
    wake_pending_ = false;
    ready.reserve(ready_connections_.size());
    for (Connection* connection : ready_connections_) {
      connection->listed_ready = false;
      connection->outbox_bytes = 0;
      ready.emplace_back(connection, std::move(connection->outbox));
      connection->outbox.clear();
    }
    ready_connections_.clear();
  }
  // Replies already blocked go first, in order.
  for (size_t i = 0; i < blocked_connections_.size();) {
    Connection* connection = blocked_connections_[i];
    if (SendBlocked(connection)) {
      connection->listed_blocked = false;
      blocked_connections_[i] = blocked_connections_.back();
      blocked_connections_.pop_back();
    } else {
      ++i;
    }
  }
  for (auto& [connection, messages] : ready) {
    for (Outgoing& out : messages) {
      Blocked blocked;
      blocked.answers = out.answers;
      if (out.bytes->size() == 0) {  // zmq frees no empty message: do not hand it one
        buffers_->Give(std::move(out.bytes));
        connection->blocked.push_back(std::move(blocked));
        continue;
      }
      auto* sent = new SentBuffer{std::move(out.bytes), buffers_};
      blocked.message = zmq::message_t(
          sent->buffer->data(), sent->buffer->size(),
          [](void*, void* hint) {
            auto* done = static_cast<SentBuffer*>(hint);
            static_cast<BufferPool*>(done->pool.get())->Give(std::move(done->buffer));
            delete done;
          },
          sent);
      connection->blocked_bytes += blocked.message.size();
      connection->blocked.push_back(std::move(blocked));
    }
    if (!SendBlocked(connection) && !connection->listed_blocked) {
      connection->listed_blocked = true;
      blocked_connections_.push_back(connection);
    }
  }
}

// Sends the connection's queued replies in order; false if the socket
// would not take them all (the connection's zmq pipe is full).
bool ClientService::SendBlocked(Connection* connection) {
  while (!connection->blocked.empty()) {
    Blocked& front = connection->blocked.front();
    const size_t size = front.message.size();
    try {
      if (!socket_->send(zmq::buffer(connection->identity),
                         zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        return false;  // EAGAIN: its pipe is full; try again later
      }
      socket_->send(front.message, zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      if (e.num() != EHOSTUNREACH) {
        LOG_EVERY_N(WARNING, 100) << "client port: reply dropped: " << e.what();
      }
      // The client is gone: its replies go nowhere.
      DropConnectionReplies(connection);
      return true;
    }
    connection->admitted -= front.answers;
    reply_messages_.fetch_add(1, std::memory_order_relaxed);
    txns_answered_.fetch_add(front.answers, std::memory_order_relaxed);
    connection->blocked_bytes -= size;
    unsent_bytes_.fetch_sub(size, std::memory_order_relaxed);
    connection->blocked.pop_front();
  }
  return true;
}

void ClientService::DropConnectionReplies(Connection* connection) {
  for (const Blocked& blocked : connection->blocked) {
    connection->admitted -= blocked.answers;
    unsent_bytes_.fetch_sub(blocked.message.size(), std::memory_order_relaxed);
    if (blocked.answers) dropped_replies_.fetch_add(blocked.answers, std::memory_order_relaxed);
  }
  connection->blocked.clear();
  connection->blocked_bytes = 0;
}

void ClientService::ForgetIdleConnections(int64_t now) {
  std::lock_guard<std::mutex> lock(reply_mu_);
  for (auto it = connections_.begin(); it != connections_.end();) {
    const Connection& c = *it->second;
    if (c.admitted == 0 && c.blocked.empty() && c.outbox.empty() && !c.listed_ready &&
        !c.listed_blocked && now - c.last_active_us > kIdleConnectionUs) {
      it = connections_.erase(it);
    } else {
      ++it;
    }
  }
  connection_count_.store(connections_.size(), std::memory_order_relaxed);
}

}  // namespace paxflow
