#include "client/client_service.h"

#include <glog/logging.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/clock.h"

namespace paxflow {
namespace {
constexpr uint64_t kMaxDigestLead = 100000;  // epochs: over 15 minutes at 10 ms
}  // namespace

ClientService::ClientService(ClientServiceOptions options, const Application* app,
                             StatusProvider status, DigestProvider digest,
                             zmq::context_t* context)
    : options_(std::move(options)),
      app_(app),
      status_(std::move(status)),
      digest_(std::move(digest)),
      context_(context) {}

ClientService::~ClientService() {
  Stop();
  if (wake_fd_ >= 0) close(wake_fd_);
}

std::string ClientService::Start() {
  try {
    socket_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::router);
    socket_->set(zmq::sockopt::linger, 0);
    socket_->set(zmq::sockopt::rcvhwm, 100000);
    socket_->set(zmq::sockopt::sndhwm, 100000);
    // Requests over the limit get a TOO_LARGE reply; only absurd ones (a
    // memory attack) are cut off by zmq, which disconnects that client.
    socket_->set(zmq::sockopt::maxmsgsize,
                 static_cast<int64_t>(16 * options_.limits.max_request_bytes));
    socket_->bind(options_.endpoint);
  } catch (const zmq::error_t& e) {
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
  // Whatever was never sequenced will not be: tell those clients.
  std::vector<Waiter> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    for (auto& [id, waiter] : waiting_) left.push_back(waiter);
    waiting_.clear();
    incoming_.clear();
  }
  FlushOutgoing();
  for (const Waiter& waiter : left) {
    ClientReply reply;
    reply.set_request_id(waiter.request_id);
    reply.set_status(SHUTTING_DOWN);
    reply.set_error(waiter.sequenced
                        ? "node " + std::to_string(options_.node) +
                              " stopped before the txn finished here; its outcome is unknown "
                              "(read the keys again)"
                        : "node " + std::to_string(options_.node) +
                              " stopped before the txn was sequenced; it never ran");
    Reply(waiter.identity, reply);
  }
  socket_.reset();
}

void ClientService::Loop() {
  zmq::pollitem_t items[2] = {{socket_->handle(), 0, ZMQ_POLLIN, 0},
                              {nullptr, wake_fd_, ZMQ_POLLIN, 0}};
  std::vector<zmq::message_t> frames;
  while (!stop_.load(std::memory_order_relaxed)) {
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(200));
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      continue;
    }
    if (items[1].revents & ZMQ_POLLIN) {
      uint64_t count;
      if (read(wake_fd_, &count, sizeof(count)) < 0) {}  // drained; nothing to do on EAGAIN
    }
    FlushOutgoing();
    // Bounded batch per round so replies are not starved by a flood.
    for (int n = 0; n < 256; ++n) {
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
      const std::string identity(static_cast<const char*>(frames[0].data()), frames[0].size());
      if (frames.size() != 2) {
        ClientReply reply;
        reply.set_status(BAD_REQUEST);
        reply.set_error("expected one frame per request, got " + std::to_string(frames.size() - 1));
        Reply(identity, reply);
        continue;
      }
      Handle(identity, frames[1]);
    }
  }
}

void ClientService::Handle(const std::string& identity, const zmq::message_t& message) {
  ClientRequest request;
  ClientReply reply;
  std::string error;
  ReplyStatus status = ParseRequest(
      std::string_view(static_cast<const char*>(message.data()), message.size()), options_.limits,
      &request, &error);
  reply.set_request_id(request.request_id());
  if (status != OK) {
    reply.set_status(status);
    reply.set_error(error);
    Reply(identity, reply);
    return;
  }
  switch (request.body_case()) {
    case ClientRequest::kStatus:
      *reply.mutable_node_status() = status_();
      Reply(identity, reply);
      return;
    case ClientRequest::kDigest: {
      // A digest far in the future would sit in the scheduler for good.
      const uint64_t now = status_().admitted_epoch();
      if (request.digest().epoch() > now + kMaxDigestLead) {
        reply.set_status(BAD_REQUEST);
        reply.set_error("epoch " + std::to_string(request.digest().epoch()) +
                        " is too far ahead (the node is at epoch " + std::to_string(now) + ")");
        Reply(identity, reply);
        return;
      }
      if (digests_pending_.load() >= options_.max_pending_digests) {
        reply.set_status(OVERLOADED);
        reply.set_error(std::to_string(digests_pending_.load()) +
                        " digests are pending on this node; ask again later");
        Reply(identity, reply);
        return;
      }
      digests_pending_.fetch_add(1);
      const uint64_t request_id = request.request_id();
      digest_(request.digest().epoch(), [this, identity, request_id](DigestReply digest) {
        digests_pending_.fetch_sub(1);
        ClientReply answer;
        answer.set_request_id(request_id);
        *answer.mutable_digest() = digest;
        Post(identity, answer);
      });
      return;
    }
    case ClientRequest::kCheckpoint: {
      if (!checkpoint_) {
        reply.set_status(BAD_REQUEST);
        reply.set_error("node " + std::to_string(options_.node) +
                        " keeps no checkpoints (it runs without --log_dir)");
        Reply(identity, reply);
        return;
      }
      const uint64_t request_id = request.request_id();
      checkpoint_([this, identity, request_id](const CheckpointReply& done,
                                               const std::string& problem) {
        ClientReply answer;
        answer.set_request_id(request_id);
        if (problem.empty()) {
          *answer.mutable_checkpoint() = done;
        } else {
          answer.set_status(UNAVAILABLE);
          answer.set_error(problem);
        }
        Post(identity, answer);
      });
      return;
    }
    default:
      break;
  }
  std::string unavailable;
  const bool runs_txn = request.body_case() == ClientRequest::kTxn ||
                        request.body_case() == ClientRequest::kLtx;
  if (runs_txn && unavailable_) unavailable = unavailable_();
  if (shutting_down_.load()) {
    status = SHUTTING_DOWN;
    error = "node " + std::to_string(options_.node) + " is shutting down";
  } else if (!unavailable.empty()) {
    status = UNAVAILABLE;
    error = "node " + std::to_string(options_.node) + " cannot run txns now: " + unavailable;
  } else if (!options_.sequences) {
    status = NOT_LEADER;
    error = "node " + std::to_string(options_.node) +
            " is a replica that does not sequence; send txns to " + options_.leader;
  }
  Txn txn;
  if (status == OK) status = BuildTxn(request.txn(), *app_, options_.limits, &txn, &error);
  if (status == OK) {
    std::lock_guard<std::mutex> lock(mu_);
    if (incoming_.size() >= options_.max_waiting_txns) {
      status = OVERLOADED;
      error = std::to_string(incoming_.size()) + " client txns are waiting to be sequenced";
    } else {
      const uint64_t id = next_client_txn_++;
      const int64_t now = NowMicros();
      txn.set_client_request_id(id);
      txn.set_submit_time_us(now);
      waiting_[id] = Waiter{identity, request.request_id(), now};
      incoming_.push_back(std::move(txn));
      return;
    }
  }
  reply.set_status(status);
  reply.set_error(error);
  Reply(identity, reply);
}

size_t ClientService::Fill(size_t max, int64_t, Batch* batch) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t count = 0;
  while (count < max && !incoming_.empty()) {
    auto waiter = waiting_.find(incoming_.front().client_request_id());
    if (waiter != waiting_.end()) waiter->second.sequenced = true;
    batch->add_txns()->Swap(&incoming_.front());
    incoming_.pop_front();
    ++count;
  }
  return count;
}

void ClientService::OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                             const ReadValues& reads) {
  if (txn.client_request_id() == 0 || txn.origin_node() != options_.node) return;
  Waiter waiter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiting_.find(txn.client_request_id());
    if (it == waiting_.end()) return;
    waiter = std::move(it->second);
    waiting_.erase(it);
  }
  ClientReply reply;
  reply.set_request_id(waiter.request_id);
  TxnReply* result = reply.mutable_txn();
  result->set_txn_id(txn.id());
  result->set_epoch(TxnEpoch(txn.id()));
  result->set_read_version(read_version);
  result->set_txn_class(txn.txn_class() == RO ? "RO" : txn.txn_class() == LTX ? "LTX" : "RW");
  result->set_committed(outcome.committed);
  result->set_invariant_ok(outcome.invariant_ok);
  result->set_detail(outcome.detail);
  result->set_checksum(outcome.checksum);
  size_t position = 0;
  for (const auto* set : {&txn.read_set(), &txn.read_write_set()}) {
    for (Key key : *set) {
      KeyValue* read = result->add_reads();
      read->set_key(key);
      if (position < reads.size() && reads.Found(position)) {
        read->set_found(true);
        std::string_view value = reads.Get(position);
        read->set_value(value.data(), value.size());
      }
      ++position;
    }
  }
  result->set_server_latency_us(NowMicros() - waiter.arrival_us);
  Post(std::move(waiter.identity), reply);
}

void ClientService::Post(std::string identity, const ClientReply& reply) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) return;  // nobody sends it any more
    outgoing_.push_back(Outgoing{std::move(identity), reply.SerializeAsString()});
  }
  // wake_fd_ is fixed from Start to the destructor.
  const uint64_t one = 1;
  if (write(wake_fd_, &one, sizeof(one)) < 0) {}  // counter full: a wake is pending anyway
}

void ClientService::FlushOutgoing() {
  std::vector<Outgoing> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(outgoing_);
  }
  for (const Outgoing& out : batch) {
    try {
      socket_->send(zmq::buffer(out.identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
      socket_->send(zmq::buffer(out.payload), zmq::send_flags::dontwait);
    } catch (const zmq::error_t& e) {
      LOG_EVERY_N(WARNING, 100) << "client port: reply dropped: " << e.what();
    }
  }
}

void ClientService::Reply(const std::string& identity, const ClientReply& reply) {
  const std::string payload = reply.SerializeAsString();
  try {
    socket_->send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
    socket_->send(zmq::buffer(payload), zmq::send_flags::dontwait);
  } catch (const zmq::error_t& e) {
    LOG_EVERY_N(WARNING, 100) << "client port: reply dropped: " << e.what();
  }
}

void ClientService::FailWaiting(const std::string& why) {
  std::vector<Waiter> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, waiter] : waiting_) failed.push_back(waiter);
    waiting_.clear();
    incoming_.clear();
  }
  for (const Waiter& waiter : failed) {
    ClientReply reply;
    reply.set_request_id(waiter.request_id);
    reply.set_status(UNAVAILABLE);
    reply.set_error(why + (waiter.sequenced ? "; this txn's outcome is unknown (read the keys again)"
                                            : "; this txn never ran"));
    Post(waiter.identity, reply);
  }
}

uint64_t ClientService::waiting_txns() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

}  // namespace paxflow
