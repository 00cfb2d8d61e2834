#include "client/client.h"

#include <chrono>

namespace paxflow {

Client::Client(zmq::context_t* context) {
  if (!context) {
    own_context_ = std::make_unique<zmq::context_t>(1);
    context = own_context_.get();
  }
  context_ = context;
}

Client::~Client() { socket_.reset(); }

std::string Client::Connect(const std::string& endpoint) {
  endpoint_ = endpoint;
  try {
    socket_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::dealer);
    socket_->set(zmq::sockopt::linger, 0);
    socket_->set(zmq::sockopt::sndhwm, 100000);
    socket_->set(zmq::sockopt::rcvhwm, 100000);
    socket_->connect(endpoint);
  } catch (const zmq::error_t& e) {
    socket_.reset();
    return "cannot connect to " + endpoint + ": " + e.what();
  }
  return "";
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

}  // namespace paxflow
