#include "common/transport.h"

#include <glog/logging.h>

namespace paxflow {

Transport::Transport(TransportOptions options) : options_(std::move(options)) {
  if (!options_.context) {
    own_context_ = std::make_unique<zmq::context_t>(1);
    context_ = own_context_.get();
  } else {
    context_ = options_.context;
  }
}

Transport::~Transport() { Stop(false); }

void Transport::Subscribe(Channel channel, Handler handler) {
  handlers_[static_cast<int>(channel)] = std::move(handler);
}

std::string Transport::Start() {
  try {
    inbound_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::pull);
    inbound_->set(zmq::sockopt::rcvhwm, 0);
    inbound_->set(zmq::sockopt::linger, 0);
    inbound_->bind(options_.bind_endpoint);
  } catch (const zmq::error_t& e) {
    inbound_.reset();
    return "cannot bind " + options_.bind_endpoint + ": " + e.what();
  }
  for (const PeerEndpoint& peer : options_.peers) {
    if (peer.id == options_.self) continue;
    auto entry = std::make_unique<Peer>();
    try {
      entry->socket = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::push);
      entry->socket->set(zmq::sockopt::sndhwm, 1000000);
      entry->socket->set(zmq::sockopt::linger, options_.linger_ms);
      entry->socket->connect(peer.endpoint);
    } catch (const zmq::error_t& e) {
      return "cannot connect to node " + std::to_string(peer.id) + " at " + peer.endpoint + ": " +
             e.what();
    }
    peers_[peer.id] = std::move(entry);
  }
  receiver_ = std::thread([this] { ReceiveLoop(); });
  return "";
}

void Transport::Stop(bool flush) {
  stop_.store(true);
  if (receiver_.joinable()) receiver_.join();
  for (auto& [id, peer] : peers_) {
    std::lock_guard<std::mutex> lock(peer->mu);
    if (peer->socket && !flush) peer->socket->set(zmq::sockopt::linger, 0);
    peer->socket.reset();  // with flush, lingers up to linger_ms
  }
  peers_.clear();
  inbound_.reset();
}

void Transport::Send(NodeId to, Channel channel, const std::string& payload) {
  if (to == options_.self) {
    std::string copy = payload;
    Dispatch(channel, to, std::move(copy));
    return;
  }
  auto it = peers_.find(to);
  if (it == peers_.end()) {
    LOG_EVERY_N(ERROR, 1000) << "node " << options_.self << ": no route to node " << to;
    return;
  }
  Header header;
  header.set_magic(kHeaderMagic);
  header.set_channel(channel);
  header.set_from_node(options_.self);
  const std::string header_bytes = header.SerializeAsString();
  Peer& peer = *it->second;
  std::lock_guard<std::mutex> lock(peer.mu);
  if (!peer.socket) return;
  try {
    peer.socket->send(zmq::buffer(header_bytes), zmq::send_flags::sndmore);
    peer.socket->send(zmq::buffer(payload), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    LOG_EVERY_N(ERROR, 1000) << "node " << options_.self << ": send to node " << to
                             << " failed: " << e.what();
  }
}

void Transport::Dispatch(Channel channel, NodeId from, std::string&& payload) {
  auto it = handlers_.find(static_cast<int>(channel));
  if (it == handlers_.end()) {
    garbled_.fetch_add(1, std::memory_order_relaxed);
    LOG_EVERY_N(WARNING, 100) << "node " << options_.self << ": message on unknown channel "
                              << static_cast<int>(channel) << " from node " << from
                              << " dropped";
    return;
  }
  it->second(from, std::move(payload));
}

void Transport::ReceiveLoop() {
  zmq::pollitem_t item{inbound_->handle(), 0, ZMQ_POLLIN, 0};
  std::vector<zmq::message_t> frames;
  while (!stop_.load(std::memory_order_relaxed)) {
    try {
      if (zmq::poll(&item, 1, std::chrono::milliseconds(100)) <= 0) continue;
      frames.clear();
      while (true) {
        zmq::message_t frame;
        if (!inbound_->recv(frame, zmq::recv_flags::dontwait)) break;
        const bool more = frame.more();
        frames.push_back(std::move(frame));
        if (!more) break;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) break;
      LOG_EVERY_N(ERROR, 100) << "node " << options_.self << ": receive failed: " << e.what();
      continue;
    }
    if (frames.empty()) continue;
    Header header;
    if (frames.size() != 2 || !header.ParseFromArray(frames[0].data(), frames[0].size()) ||
        header.magic() != kHeaderMagic) {
      garbled_.fetch_add(1, std::memory_order_relaxed);
      LOG_EVERY_N(WARNING, 100) << "node " << options_.self << ": garbled message ("
                                << frames.size() << " frames) dropped";
      continue;
    }
    Dispatch(header.channel(), header.from_node(),
             std::string(static_cast<const char*>(frames[1].data()), frames[1].size()));
  }
}

}  // namespace paxflow
