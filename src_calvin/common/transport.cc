#include "common/transport.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/clock.h"

namespace paxflow {

Transport::Transport(TransportOptions options)
    : options_(std::move(options)), handshakes_("node " + std::to_string(options_.self), "peer") {
  if (!options_.context) {
    own_context_ = std::make_unique<zmq::context_t>(1);
    context_ = own_context_.get();
  } else {
    context_ = options_.context;
  }
  for (const PeerEndpoint& peer : options_.peers) {
    if (peer.id != options_.self) peers_[peer.id] = std::make_unique<Peer>();
  }
  const double fraction = std::min(std::max(options_.fault_drop_fraction, 0.0), 1.0);
  if (fraction > 0 && !options_.fault_drop_channels.empty()) {
    drop_threshold_ = fraction >= 1 ? UINT64_MAX
                                    : static_cast<uint64_t>(fraction * 18446744073709551616.0);
  }
}

bool Transport::InjectDrop(Channel channel) {
  if (drop_threshold_ == 0 ||
      std::find(options_.fault_drop_channels.begin(), options_.fault_drop_channels.end(),
                channel) == options_.fault_drop_channels.end()) {
    return false;
  }
  // splitmix64 of the draw's number: the same sequence of decisions in
  // every run with the same seed.
  uint64_t z = options_.fault_seed + (fault_draws_.fetch_add(1, std::memory_order_relaxed) + 1) *
                                         0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  if (z >= drop_threshold_) return false;
  injected_drops_.fetch_add(1, std::memory_order_relaxed);
  return true;
}

Transport::~Transport() { Stop(false); }

void Transport::Subscribe(Channel channel, Handler handler) {
  handlers_[static_cast<int>(channel)] = std::move(handler);
}

std::string Transport::Start() {
  try {
    inbound_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::pull);
    inbound_->set(zmq::sockopt::rcvhwm, options_.receive_queue);
    inbound_->set(zmq::sockopt::linger, 0);
    inbound_->set(zmq::sockopt::maxmsgsize, options_.max_message_bytes);
    if (!options_.curve.empty()) {
      MakeCurveServer(inbound_.get(), options_.curve, "peer");
      handshakes_.Watch(context_, inbound_.get());
    }
    inbound_->bind(options_.bind_endpoint);
  } catch (const zmq::error_t& e) {
    handshakes_.Close();
    inbound_.reset();
    return "cannot bind " + options_.bind_endpoint + ": " + e.what();
  }
  for (const PeerEndpoint& endpoint : options_.peers) {
    if (endpoint.id == options_.self) continue;
    Peer& peer = *peers_[endpoint.id];
    try {
      peer.socket = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::push);
      peer.socket->set(zmq::sockopt::sndhwm, options_.zmq_queue);
      peer.socket->set(zmq::sockopt::linger, options_.linger_ms);
      if (!options_.curve.empty()) {
        MakeCurveClient(peer.socket.get(), options_.curve, endpoint.public_key);
      }
      peer.socket->connect(endpoint.endpoint);
    } catch (const zmq::error_t& e) {
      return "cannot connect to node " + std::to_string(endpoint.id) + " at " +
             endpoint.endpoint + ": " + e.what();
    }
  }
  receiver_ = std::thread([this] { ReceiveLoop(); });
  return "";
}

void Transport::Stop(bool flush) {
  stop_.store(true);
  if (receiver_.joinable()) receiver_.join();
  for (auto& [id, peer] : peers_) {
    std::lock_guard<std::mutex> lock(peer->mu);
    if (peer->socket && flush) {
      // What is still held here gets zmq's linger too, as far as it goes.
      while (!peer->waiting.empty() &&
             TrySend(peer.get(), peer->waiting.front().first, peer->waiting.front().second)) {
        peer->waiting.pop_front();
      }
    }
    if (peer->socket && !flush) peer->socket->set(zmq::sockopt::linger, 0);
    peer->socket.reset();  // with flush, lingers up to linger_ms
    peer->waiting.clear();
    peer->waiting_bytes = 0;
  }
  handshakes_.Close();
  inbound_.reset();
}

std::string Transport::HeaderFor(Channel channel) const {
  Header header;
  header.set_magic(kHeaderMagic);
  header.set_channel(channel);
  header.set_from_node(options_.self);
  return header.SerializeAsString();
}

bool Transport::TrySend(Peer* peer, const std::string& header, const std::string& payload) {
  try {
    // zmq counts whole messages against its queue: once the first frame is
    // taken, so is the second.
    if (!peer->socket->send(zmq::buffer(header), zmq::send_flags::sndmore |
                                                     zmq::send_flags::dontwait)) {
      return false;
    }
    peer->socket->send(zmq::buffer(payload), zmq::send_flags::none);
  } catch (const zmq::error_t& e) {
    LOG_EVERY_N(ERROR, 1000) << "node " << options_.self << ": send failed: " << e.what();
  }
  return true;
}

void Transport::Drain(Peer* peer) {
  while (!peer->waiting.empty()) {
    auto& [header, payload] = peer->waiting.front();
    if (!TrySend(peer, header, payload)) return;
    peer->waiting_bytes -= header.size() + payload.size();
    peer->waiting.pop_front();
  }
  peers_waiting_.fetch_sub(1, std::memory_order_relaxed);
}

bool Transport::Send(NodeId to, Channel channel, const std::string& payload) {
  if (to == options_.self) {
    std::string copy = payload;
    Dispatch(channel, to, std::move(copy));
    return true;
  }
  auto it = peers_.find(to);
  if (it == peers_.end()) {
    LOG_EVERY_N(ERROR, 1000) << "node " << options_.self << ": no route to node " << to;
    return false;
  }
  Peer& peer = *it->second;
  if (options_.max_message_bytes >= 0 &&
      payload.size() > static_cast<uint64_t>(options_.max_message_bytes)) {
    LOG_EVERY_N(ERROR, 100) << "node " << options_.self << ": a message of " << payload.size()
                            << " bytes to node " << to << " exceeds --peer_max_message_mb ("
                            << options_.max_message_bytes << " bytes): not sent";
    std::lock_guard<std::mutex> lock(peer.mu);
    ++peer.dropped;
    return false;
  }
  // Lost on the way, as far as the sender can tell: it went.
  if (InjectDrop(channel)) return true;
  const std::string header = HeaderFor(channel);
  std::lock_guard<std::mutex> lock(peer.mu);
  if (!peer.socket) return false;
  if (!peer.waiting.empty()) Drain(&peer);
  // In order: behind what waits already, or straight to zmq.
  if (peer.waiting.empty() && TrySend(&peer, header, payload)) return true;
  const uint64_t size = header.size() + payload.size();
  if (peer.waiting_bytes + size > options_.max_queued_bytes) {
    ++peer.dropped;
    LOG_EVERY_N(WARNING, 1000) << "node " << options_.self << ": node " << to
                               << " takes no messages; dropped one (queue full at "
                               << (peer.waiting_bytes >> 20) << " MiB)";
    return false;
  }
  if (peer.waiting.empty()) peers_waiting_.fetch_add(1, std::memory_order_relaxed);
  peer.waiting.emplace_back(header, payload);
  peer.waiting_bytes += size;
  return true;
}

bool Transport::SendPaced(NodeId to, Channel channel, const std::string& payload,
                          int timeout_ms) {
  auto it = peers_.find(to);
  if (to == options_.self || it == peers_.end()) return Send(to, channel, payload);
  const int64_t deadline = NowMicros() + int64_t{timeout_ms} * 1000;
  const uint64_t size = payload.size() + 16;
  while (true) {
    {
      Peer& peer = *it->second;
      std::lock_guard<std::mutex> lock(peer.mu);
      if (!peer.waiting.empty()) Drain(&peer);
      // Leave half the queue to the live traffic.
      if (peer.waiting_bytes + size <= options_.max_queued_bytes / 2) break;
    }
    if (NowMicros() > deadline || stop_.load()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // the peer is slow: back off
  }
  return Send(to, channel, payload);
}

Transport::Heard Transport::LastHeard(NodeId peer) const {
  auto it = peers_.find(peer);
  if (it == peers_.end()) return {};
  std::lock_guard<std::mutex> lock(deaf_mu_);
  return it->second->heard;
}

int64_t Transport::DeafUs(int64_t now_us) const {
  std::lock_guard<std::mutex> lock(deaf_mu_);
  if (handing_off_since_ == 0) return deaf_us_;
  return deaf_us_ + std::max<int64_t>(0, now_us - handing_off_since_);
}

Transport::PeerQueue Transport::Queue(NodeId peer) const {
  PeerQueue queue;
  auto it = peers_.find(peer);
  if (it == peers_.end()) return queue;
  std::lock_guard<std::mutex> lock(it->second->mu);
  queue.queued_bytes = it->second->waiting_bytes;
  queue.dropped = it->second->dropped;
  return queue;
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

bool Transport::SenderMatches(const zmq::message_t& frame, NodeId claimed) {
  const char* user_id = zmq_msg_gets(frame.handle(), "User-Id");
  const std::string sender = user_id ? user_id : "";
  if (sender == CurveNodeUserId(claimed)) return true;
  impersonations_.fetch_add(1, std::memory_order_relaxed);
  if (impersonations_logged_.size() < 1000 &&
      impersonations_logged_.emplace(sender, claimed).second) {
    LOG(WARNING) << "node " << options_.self << ": dropped a message from key '"
                 << (sender.empty() ? "(none)" : sender) << "' claiming to be node " << claimed
                 << " (logged once per key and claim; counted in status auth_impersonations)";
  }
  return false;
}

void Transport::ReceiveLoop() {
  // The handshake monitor's events (CURVE) are polled here too.
  zmq::pollitem_t items[2] = {{inbound_->handle(), 0, ZMQ_POLLIN, 0}, handshakes_.Item()};
  const int polled = handshakes_.watching() ? 2 : 1;
  std::vector<zmq::message_t> frames;
  while (!stop_.load(std::memory_order_relaxed)) {
    // Messages held for slow peers are retried here when nothing else
    // sends to them: often while some wait, rarely otherwise.
    if (peers_waiting_.load(std::memory_order_relaxed) > 0) {
      for (auto& [id, peer] : peers_) {
        std::lock_guard<std::mutex> lock(peer->mu);
        if (peer->socket && !peer->waiting.empty()) Drain(peer.get());
      }
    }
    const auto timeout = std::chrono::milliseconds(
        peers_waiting_.load(std::memory_order_relaxed) > 0 ? 10 : 100);
    try {
      if (zmq::poll(items, polled, timeout) <= 0) continue;
      if (polled == 2 && (items[1].revents & ZMQ_POLLIN)) handshakes_.Drain();
      if (!(items[0].revents & ZMQ_POLLIN)) continue;
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
    if (!options_.curve.empty() && !SenderMatches(frames[0], header.from_node())) continue;
    auto peer = peers_.find(header.from_node());
    {
      std::lock_guard<std::mutex> lock(deaf_mu_);
      handing_off_since_ = NowMicros();
      if (peer != peers_.end()) peer->second->heard = {handing_off_since_, deaf_us_};
    }
    // A handler may take long (a large message is parsed there): messages
    // wait in the socket meanwhile, so the time is deaf time (DeafUs).
    Dispatch(header.channel(), header.from_node(),
             std::string(static_cast<const char*>(frames[1].data()), frames[1].size()));
    std::lock_guard<std::mutex> lock(deaf_mu_);
    deaf_us_ += std::max<int64_t>(0, NowMicros() - handing_off_since_);
    handing_off_since_ = 0;
  }
}

}  // namespace paxflow
