#include "common/handshake_monitor.h"

#include <glog/logging.h>

#include <cerrno>
#include <cstring>

namespace paxflow {
namespace {

constexpr int kEvents = ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL;

// What each refusal means to an operator, after "refused a <domain>
// connection ".
const char* Explanation(HandshakeRefusal reason) {
  switch (reason) {
    case HandshakeRefusal::kNoCurve:
      return "without CURVE (no key, or plain zmq; this port admits only CURVE keys the config "
             "lists: give the client a key pair, paxflow-cli keygen, and list its public key)";
    case HandshakeRefusal::kBadHandshake:
      return "whose CURVE handshake failed (most often a client that has a wrong server key: "
             "give it this node's public key)";
    case HandshakeRefusal::kNoZapHandler:
      return "because no ZAP handler answered (the node's authentication is not running)";
    case HandshakeRefusal::kIncomplete:
      return "that ended before its CURVE handshake did (a client without a key drops it so; "
             "also a port probe)";
    default:
      return "";
  }
}

}  // namespace

const char* HandshakeRefusalName(HandshakeRefusal reason) {
  switch (reason) {
    case HandshakeRefusal::kNoCurve: return "no_curve";
    case HandshakeRefusal::kBadHandshake: return "bad_handshake";
    case HandshakeRefusal::kNoZapHandler: return "no_zap_handler";
    case HandshakeRefusal::kIncomplete: return "handshake_incomplete";
    default: return "unknown";
  }
}

HandshakeMonitor::HandshakeMonitor(std::string who, std::string domain)
    : who_(std::move(who)), domain_(std::move(domain)) {}

HandshakeMonitor::~HandshakeMonitor() { Close(); }

void HandshakeMonitor::Watch(zmq::context_t* context, zmq::socket_t* socket) {
  const std::string endpoint = "inproc://paxflow-handshakes-" + domain_ + "-" +
                               std::to_string(reinterpret_cast<uintptr_t>(this));
  if (zmq_socket_monitor(socket->handle(), endpoint.c_str(), kEvents) != 0) throw zmq::error_t();
  monitored_ = socket->handle();
  events_ = std::make_unique<zmq::socket_t>(*context, zmq::socket_type::pair);
  events_->set(zmq::sockopt::linger, 0);
  events_->connect(endpoint);
}

zmq::pollitem_t HandshakeMonitor::Item() const {
  return {events_ ? events_->handle() : nullptr, 0, ZMQ_POLLIN, 0};
}

void HandshakeMonitor::Close() {
  // Monitoring stops first: libzmq would wait to hand an event to a closed reader.
  if (monitored_) zmq_socket_monitor(monitored_, nullptr, 0);
  monitored_ = nullptr;
  events_.reset();
}

uint64_t HandshakeMonitor::refused() const {
  uint64_t total = 0;
  for (const std::atomic<uint64_t>& n : counts_) total += n.load(std::memory_order_relaxed);
  return total;
}

void HandshakeMonitor::Drain() {
  if (!events_) return;
  while (true) {
    // Version 1: the event (16 bits) and its value (32 bits), then the
    // endpoint (our own, for an accepted connection).
    zmq::message_t event, endpoint;
    try {
      if (!events_->recv(event, zmq::recv_flags::dontwait)) return;
      if (event.more() && !events_->recv(endpoint, zmq::recv_flags::dontwait)) return;
    } catch (const zmq::error_t& e) {
      if (e.num() != ETERM) {
        LOG_EVERY_N(ERROR, 100) << who_ << ": handshake events: " << e.what();
      }
      return;
    }
    if (event.size() < 6) continue;
    uint16_t id;
    uint32_t value;
    std::memcpy(&id, event.data(), sizeof id);
    std::memcpy(&value, static_cast<const char*>(event.data()) + 2, sizeof value);
    HandshakeRefusal reason;
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL) {
      reason = value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH ? HandshakeRefusal::kNoCurve
                                                                   : HandshakeRefusal::kBadHandshake;
    } else if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) {
      // libzmq's CURVE server says EFAULT when ZAP is enforced and no
      // handler is bound; anything else is the connection ending early.
      reason = value == EFAULT ? HandshakeRefusal::kNoZapHandler : HandshakeRefusal::kIncomplete;
    } else {
      continue;
    }
    Note(reason, endpoint.to_string());
  }
}

void HandshakeMonitor::Note(HandshakeRefusal reason, const std::string& endpoint) {
  const uint64_t n = counts_[static_cast<int>(reason)].fetch_add(1, std::memory_order_relaxed) + 1;
  bool power_of_ten = true;
  for (uint64_t rest = n; rest > 1 && power_of_ten; rest /= 10) power_of_ten = rest % 10 == 0;
  if (!power_of_ten) return;
  if (n == 1) {
    LOG(WARNING) << who_ << ": refused a " << domain_ << " connection " << Explanation(reason)
                 << " on " << endpoint << ". libzmq does not name the peer's address at this "
                 << "stage: logged once, then at 10, 100, 1000... such refusals; counted in "
                 << "status auth_refused_" << domain_ << "s and paxflow_auth_refused_connections"
                 << "_total{domain=\"" << domain_ << "\",reason=\"" << HandshakeRefusalName(reason)
                 << "\"}";
  } else {
    LOG(WARNING) << who_ << ": " << n << " " << domain_ << " connections refused on " << endpoint
                 << " so far, reason " << HandshakeRefusalName(reason);
  }
}

}  // namespace paxflow
