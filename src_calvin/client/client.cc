#include "client/client.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "common/clock.h"

namespace paxflow {
namespace {

// `given`, or a context of our own (kept in `own`) when none is given.
zmq::context_t* ContextOrOwn(zmq::context_t* given, std::unique_ptr<zmq::context_t>* own) {
  if (given) return given;
  *own = std::make_unique<zmq::context_t>(1);
  return own->get();
}

// A DEALER socket connected to `endpoint`; empty on success.
// CURVE with `own` keys if given, else with this process's keys for the
// endpoint (auth/client_keys.h), if any.
std::string ConnectDealer(zmq::context_t* context, const std::string& endpoint, int hwm,
                          const std::optional<ClientCurve>& own,
                          std::unique_ptr<zmq::socket_t>* socket) {
  try {
    *socket = std::make_unique<zmq::socket_t>(*context, zmq::socket_type::dealer);
    (*socket)->set(zmq::sockopt::linger, 0);
    (*socket)->set(zmq::sockopt::sndhwm, hwm);
    (*socket)->set(zmq::sockopt::rcvhwm, hwm);
    ClientCurve keys;
    if (own) {
      keys = *own;
    } else if (!ClientKeysFor(endpoint, &keys)) {
      keys = {};
    }
    if (!keys.own.empty()) MakeCurveClient(socket->get(), keys.own, keys.server_key);
    (*socket)->connect(endpoint);
  } catch (const zmq::error_t& e) {
    socket->reset();
    return "cannot connect to " + endpoint + ": " + e.what();
  }
  return "";
}

}  // namespace

Client::Client(zmq::context_t* context) : context_(ContextOrOwn(context, &own_context_)) {}

Client::~Client() { socket_.reset(); }

std::string Client::Connect(const std::string& endpoint) {
  endpoint_ = endpoint;
  return ConnectDealer(context_, endpoint, 100000, curve_, &socket_);
}

uint64_t Client::Send(ClientRequest request) {
  const uint64_t id = next_request_++;
  request.set_request_id(id);
  SendRaw(request.SerializeAsString());
  return id;
}

void Client::SendRaw(const std::string& bytes) {
  if (socket_) socket_->send(zmq::buffer(bytes), zmq::send_flags::none);
}

bool Client::Receive(ClientReply* reply, int timeout_ms) {
  if (!socket_) return false;
  zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) <= 0) return false;
  zmq::message_t message;
  if (!socket_->recv(message, zmq::recv_flags::dontwait)) return false;
  return reply->ParseFromArray(message.data(), static_cast<int>(message.size()));
}

std::string Client::Call(ClientRequest request, ClientReply* reply, int timeout_ms) {
  if (!socket_) return "not connected";
  const uint64_t id = Send(std::move(request));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0 || !Receive(reply, static_cast<int>(left))) {
      if (std::chrono::steady_clock::now() >= deadline) {
        return "no reply from " + endpoint_ + " within " + std::to_string(timeout_ms) +
               " ms (is the node running?)";
      }
      continue;
    }
    if (reply->request_id() == id) return "";
  }
}

ClientRequest Client::Get(const std::vector<uint64_t>& keys) {
  ClientRequest request;
  TxnRequest* txn = request.mutable_txn();
  txn->set_procedure("get");
  for (uint64_t key : keys) txn->add_read_set(key);
  return request;
}

ClientRequest Client::Put(const std::vector<std::pair<uint64_t, std::string>>& writes) {
  ClientRequest request;
  TxnRequest* txn = request.mutable_txn();
  txn->set_procedure("put");
  for (const auto& [key, value] : writes) {
    txn->add_write_set(key);
    txn->add_values(value);
  }
  return request;
}

ClientRequest Client::Status() {
  ClientRequest request;
  request.mutable_status();
  return request;
}

ClientRequest Client::Digest(uint64_t epoch) {
  ClientRequest request;
  request.mutable_digest()->set_epoch(epoch);
  return request;
}

ClientRequest Client::Checkpoint() {
  ClientRequest request;
  request.mutable_checkpoint();
  return request;
}

ClientRequest Client::WaitCheckpoint(uint64_t epoch) {
  ClientRequest request;
  request.mutable_checkpoint()->set_wait_epoch(epoch);
  return request;
}

ClientRequest Client::RemoveNode(uint32_t node, bool force) {
  ClientRequest request;
  request.mutable_remove_node()->set_node(node);
  request.mutable_remove_node()->set_force(force);
  return request;
}

ClientRequest Client::Ltx(LtxRequest ltx) {
  ClientRequest request;
  request.mutable_ltx()->Swap(&ltx);
  return request;
}

FailoverClient::FailoverClient(FailoverOptions options, zmq::context_t* context)
    : options_(std::move(options)),
      context_(context),
      ring_(options_.endpoints, options_.attempt_timeout_ms),
      client_id_(options_.client_id) {
  if (client_id_ == 0) {
    // Random, so that two clients (or two runs of one) never share an id.
    std::random_device device;
    std::mt19937_64 random((uint64_t{device()} << 32) ^ device() ^
                           static_cast<uint64_t>(NowMicros()));
    while (client_id_ == 0) client_id_ = random();
  }
  current_ = ring_.first();
}

std::string FailoverClient::Use(const std::string& endpoint) {
  if (client_ && client_->endpoint() == endpoint) return "";
  // A fresh socket: replies of an earlier try elsewhere are dropped with
  // the old one (the retry carries the same request id).
  client_ = std::make_unique<Client>(context_);
  if (curve_) client_->SetCurve(*curve_);
  current_ = endpoint;
  return client_->Connect(endpoint);
}

void FailoverClient::NextReplica() {
  if (!ring_.empty()) current_ = ring_.Next(NowMicros());
}

void FailoverClient::Sleep(int ms) const {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

std::string FailoverClient::Call(ClientRequest request, ClientReply* reply) {
  if (options_.endpoints.empty()) return "no endpoints: give every replica of the partition";
  ++counters_.calls;
  // Txns and LTXs alike (client.proto): the request id a retry reuses.
  const auto give_id = [&](auto* body) {
    if (body->client_id() == 0) {
      body->set_client_id(client_id_);
      body->set_client_seq(next_seq_++);
    }
    return true;
  };
  // Without a request id a retry could run it twice: only what surely did
  // not run (a refusal before sequencing) is tried again.
  const bool has_id = (request.has_txn() && give_id(request.mutable_txn())) ||
                      (request.has_ltx() && give_id(request.mutable_ltx()));
  const int64_t deadline = NowMicros() + int64_t{options_.total_timeout_ms} * 1000;
  int backoff = options_.backoff_min_ms;
  std::string last = "no try";
  while (NowMicros() < deadline) {
    std::string error = Use(current_);
    if (!error.empty()) return error;
    ++counters_.tries;
    const int left_ms = static_cast<int>((deadline - NowMicros()) / 1000);
    error = client_->Call(request, reply, std::max(1, std::min(options_.attempt_timeout_ms, left_ms)));
    int wait = 0;
    if (!error.empty()) {
      ++counters_.timeouts;
      last = error;
      if (!has_id) return error + " (the txn has no request id: not retried; it may have run)";
      ring_.MarkSilent(current_, NowMicros());
      NextReplica();
      wait = backoff;
    } else if (reply->status() == NOT_LEADER && !reply->leader_address().empty() &&
               reply->leader_address() != current_ &&
               ring_.Believe(reply->leader_address(), NowMicros())) {
      ++counters_.redirects;
      last = reply->error();
      current_ = reply->leader_address();
    } else if (reply->status() == BUSY) {
      ++counters_.unavailable;
      last = reply->error();
      wait = std::max<int>(reply->retry_after_ms(), options_.backoff_min_ms);
    } else if (reply->status() == NOT_LEADER || reply->status() == UNAVAILABLE ||
               reply->status() == SHUTTING_DOWN) {
      ++counters_.unavailable;
      last = reply->error();
      // Refused before sequencing, or (deposed, stopped) maybe after:
      // only a txn with a request id goes again in the second case.
      const bool maybe_ran = reply->error().find("outcome is unknown") != std::string::npos;
      if (maybe_ran && !has_id) return "";
      NextReplica();
      wait = backoff;
    } else {
      if (reply->has_txn() && reply->txn().already_applied()) ++counters_.already_applied;
      return "";
    }
    if (wait > 0) {
      Sleep(std::min<int>(wait, std::max<int64_t>(0, (deadline - NowMicros()) / 1000)));
      backoff = std::min(options_.backoff_max_ms, backoff * 2);
    }
  }
  return "no final answer within " + std::to_string(options_.total_timeout_ms) +
         " ms from any replica (last: " + last + ")";
}

std::string FailoverClient::Ask(ClientRequest request, ClientReply* reply, int timeout_ms) {
  std::string last;
  for (size_t i = 0; i < std::max<size_t>(1, options_.endpoints.size()); ++i) {
    std::string error = Use(current_);
    if (error.empty()) error = client_->Call(request, reply, timeout_ms);
    if (error.empty()) return "";
    last = error;
    NextReplica();
  }
  return last;
}

namespace {
constexpr size_t kRememberedBatches = 4096;
constexpr size_t kArenaBlockBytes = size_t{256} << 10;

// A cheap upper bound of a txn's encoded size (keys take at most 10 bytes),
// enough to keep a message under its byte budget.
size_t RoughSize(const TxnRequest& txn) {
  size_t bytes = 10 * static_cast<size_t>(txn.read_set_size() + txn.write_set_size() +
                                          txn.read_write_set_size()) +
                 txn.procedure().size() + txn.args().size() + 16;
  for (const std::string& value : txn.values()) bytes += value.size() + 4;
  return bytes;
}

size_t RoughSize(const LtxRequest& ltx) {
  return 10 * static_cast<size_t>(ltx.read_set_size() + ltx.read_write_set_size()) +
         24 * static_cast<size_t>(ltx.write_area_size() + ltx.read_area_size()) +
         ltx.procedure().size() + ltx.args().size() + 16;
}

}  // namespace

PipelinedClient::PipelinedClient(zmq::context_t* context, PipelineOptions options)
    : options_(options),
      context_(ContextOrOwn(context, &own_context_)),
      arena_block_(new char[kArenaBlockBytes]),
      arena_([this] {
        google::protobuf::ArenaOptions arena_options;
        arena_options.initial_block = arena_block_.get();
        arena_options.initial_block_size = kArenaBlockBytes;
        return arena_options;
      }()) {
  if (options_.max_batch_txns == 0) options_.max_batch_txns = 1;
}

PipelinedClient::~PipelinedClient() { socket_.reset(); }

std::string PipelinedClient::Connect(const std::string& endpoint) {
  endpoint_ = endpoint;
  return ConnectDealer(context_, endpoint, 10000, curve_, &socket_);
}

std::string PipelinedClient::Reconnect(const std::string& endpoint) {
  pending_.Clear();
  pending_bytes_ = 0;
  sent_.clear();
  refused_locally_.clear();
  in_flight_ = 0;
  back_off_until_us_ = 0;
  return Connect(endpoint);
}

uint64_t PipelinedClient::Queue(BatchedTxn** item, size_t bytes) {
  *item = pending_.mutable_batch()->add_txns();
  const uint64_t id = next_id_++;
  (*item)->set_id(id);
  pending_bytes_ += bytes + 16;
  ++counters_.submitted;
  ++in_flight_;
  return id;
}

bool PipelinedClient::backing_off() const {
  return options_.back_off && back_off_until_us_ > 0 && NowMicros() < back_off_until_us_;
}

void PipelinedClient::RefuseLocally(uint64_t id) {
  ++counters_.submitted;
  ++in_flight_;
  refused_locally_.push_back(id);
}

uint64_t PipelinedClient::Submit(TxnRequest* txn) {
  return SubmitItem(RoughSize(*txn), [txn](BatchedTxn* item) { item->mutable_txn()->Swap(txn); });
}

uint64_t PipelinedClient::Submit(LtxRequest* ltx) {
  return SubmitItem(RoughSize(*ltx), [ltx](BatchedTxn* item) { item->mutable_ltx()->Swap(ltx); });
}

uint64_t PipelinedClient::SubmitItem(size_t bytes, const std::function<void(BatchedTxn*)>& fill) {
  if (backing_off()) {
    const uint64_t id = next_id_++;
    RefuseLocally(id);
    return id;
  }
  BatchedTxn* item;
  const uint64_t id = Queue(&item, bytes);
  fill(item);
  if (static_cast<size_t>(pending_.batch().txns_size()) >= options_.max_batch_txns ||
      pending_bytes_ >= options_.max_batch_bytes) {
    Flush();
  }
  return id;
}

void PipelinedClient::Flush() {
  if (!pending_.has_batch() || pending_.batch().txns_size() == 0) return;
  const uint64_t request_id = next_request_++;
  pending_.set_request_id(request_id);
  if (options_.reads_with_keys) pending_.mutable_batch()->set_reads_with_keys(true);
  const auto& txns = pending_.batch().txns();
  sent_.push_back(SentBatch{request_id, txns[0].id(), static_cast<uint64_t>(txns.size())});
  if (sent_.size() > kRememberedBatches) sent_.pop_front();
  if (socket_) {
    // Serialized straight into the message zmq sends.
    zmq::message_t message(pending_.ByteSizeLong());
    pending_.SerializeWithCachedSizesToArray(static_cast<uint8_t*>(message.data()));
    socket_->send(message, zmq::send_flags::none);
  }
  pending_.Clear();
  pending_bytes_ = 0;
}

void PipelinedClient::Count(const TxnResult& result) {
  if (in_flight_ > 0) --in_flight_;
  if (result.status() == OK) {
    ++counters_.ok;
  } else if (result.status() == BUSY) {
    ++counters_.busy;
    const int64_t until = NowMicros() + 1000LL * std::max<uint32_t>(1, result.retry_after_ms());
    back_off_until_us_ = std::max(back_off_until_us_, until);
  } else {
    ++counters_.errors;
  }
}

void PipelinedClient::HandleReply(const ClientReply& reply, const ResultHandler& on_result,
                                  size_t* delivered) {
  for (const TxnResult& result : reply.results()) {
    Count(result);
    ++*delivered;
    if (on_result) on_result(result);
  }
  if (reply.results_size() > 0 || reply.status() == OK) return;
  // A whole message refused: one result per txn it carried, if it was ours.
  ++counters_.request_errors;
  for (const SentBatch& batch : sent_) {
    if (batch.request_id != reply.request_id()) continue;
    for (uint64_t i = 0; i < batch.count; ++i) {
      synthetic_.Clear();
      synthetic_.set_id(batch.first_id + i);
      synthetic_.set_status(reply.status());
      synthetic_.set_error(reply.error());
      synthetic_.set_retry_after_ms(reply.retry_after_ms());
      Count(synthetic_);
      ++*delivered;
      if (on_result) on_result(synthetic_);
    }
    return;
  }
}

size_t PipelinedClient::Poll(int timeout_ms, const ResultHandler& on_result) {
  Flush();
  size_t delivered = 0;
  if (!refused_locally_.empty()) {
    // Txns refused while backing off: answered now, without waiting.
    std::vector<uint64_t> refused;
    refused.swap(refused_locally_);
    for (uint64_t id : refused) {
      synthetic_.Clear();
      synthetic_.set_id(id);
      synthetic_.set_status(BUSY);
      synthetic_.set_error("busy: backing off (the node asked to retry later); not sent");
      if (in_flight_ > 0) --in_flight_;
      ++counters_.busy;
      ++counters_.busy_local;
      ++delivered;
      if (on_result) on_result(synthetic_);
    }
    timeout_ms = 0;
  }
  if (!socket_) return delivered;
  zmq::pollitem_t item{socket_->handle(), 0, ZMQ_POLLIN, 0};
  if (zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms)) <= 0) return delivered;
  zmq::message_t message;
  while (socket_->recv(message, zmq::recv_flags::dontwait)) {
    // Parsed on an arena: the many small messages of a reply cost one
    // reset instead of a free each.
    ClientReply* reply = google::protobuf::Arena::CreateMessage<ClientReply>(&arena_);
    if (reply->ParseFromArray(message.data(), static_cast<int>(message.size()))) {
      HandleReply(*reply, on_result, &delivered);
    } else {
      ++counters_.request_errors;
    }
    arena_.Reset();
  }
  return delivered;
}

size_t PipelinedClient::Drain(int timeout_ms, const ResultHandler& on_result) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (in_flight_ > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) break;
    Poll(static_cast<int>(std::min<int64_t>(left, 50)), on_result);
  }
  const size_t lost = in_flight_;
  counters_.lost += lost;
  in_flight_ = 0;
  return lost;
}

}  // namespace paxflow
