#include "auth/zap_handler.h"

#include <glog/logging.h>

#include <vector>

namespace paxflow {
namespace {

constexpr size_t kMaxLogged = 10000;  // distinct refused (key, address) pairs logged

std::string Text(const zmq::message_t& frame) {
  return std::string(static_cast<const char*>(frame.data()), frame.size());
}

std::string Z85(const zmq::message_t& frame) {
  if (frame.size() != 32) return "";
  char text[41];
  if (!zmq_z85_encode(text, static_cast<const uint8_t*>(frame.data()), 32)) return "";
  return text;
}

}  // namespace

ZapHandler::ZapHandler(zmq::context_t* context, ZapPolicy policy)
    : context_(context), policy_(std::move(policy)) {}

ZapHandler::~ZapHandler() { Stop(); }

std::string ZapHandler::Start() {
  try {
    socket_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::rep);
    socket_->set(zmq::sockopt::linger, 0);
    socket_->bind("inproc://zeromq.zap.01");
    // Stop's wake-up: a pair of our own, so the loop can block in poll.
    wake_endpoint_ = "inproc://paxflow-zap-wake-" + std::to_string(reinterpret_cast<uintptr_t>(this));
    wake_receive_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::pair);
    wake_receive_->set(zmq::sockopt::linger, 0);
    wake_receive_->bind(wake_endpoint_);
    wake_send_ = std::make_unique<zmq::socket_t>(*context_, zmq::socket_type::pair);
    wake_send_->set(zmq::sockopt::linger, 0);
    wake_send_->connect(wake_endpoint_);
  } catch (const zmq::error_t& e) {
    socket_.reset();
    wake_receive_.reset();
    wake_send_.reset();
    return std::string("cannot start the ZAP handler (inproc://zeromq.zap.01): ") + e.what() +
           (e.num() == EADDRINUSE ? " (another one runs in this zmq context)" : "");
  }
  thread_ = std::thread([this] { Loop(); });
  return "";
}

void ZapHandler::Stop() {
  if (thread_.joinable()) {
    wake_send_->send(zmq::str_buffer("stop"), zmq::send_flags::dontwait);
    thread_.join();
  }
  socket_.reset();
  wake_send_.reset();
  wake_receive_.reset();
}

std::pair<std::string, std::string> ZapHandler::Decide(const std::string& domain,
                                                       const std::string& address,
                                                       const std::string& mechanism,
                                                       const std::string& key) {
  std::string why;
  if (mechanism != "CURVE" || key.empty()) {
    why = "mechanism " + mechanism + " (only CURVE is admitted)";
  } else if (domain == kPeerDomain) {
    auto node = policy_.nodes.find(key);
    if (node != policy_.nodes.end()) return {"200", CurveNodeUserId(node->second)};
    why = "not the key of a node of the config";
  } else if (domain == kClientDomain) {
    auto client = policy_.clients.find(key);
    if (client != policy_.clients.end()) {
      return {"200", (client->second ? "operator:" : "client:") + key};
    }
    if (policy_.any_client) return {"200", "client:" + key};
    why = "not a client key of the config (auth { client { public_key: ... } })";
  } else {
    why = "unknown ZAP domain '" + domain + "'";
  }
  (domain == kPeerDomain ? refused_peers_ : refused_clients_).fetch_add(1);
  const std::string who = domain + " " + key + " " + address;
  if (logged_.size() < kMaxLogged && logged_.insert(who).second) {
    LOG(WARNING) << "refused a " << domain << " connection from " << address << " with key "
                 << (key.empty() ? "(none)" : key) << ": " << why
                 << " (logged once per key and address)";
    if (logged_.size() == kMaxLogged) {
      LOG(WARNING) << kMaxLogged << " refused keys logged; further ones are only counted";
    }
  }
  return {"400", ""};
}

void ZapHandler::Loop() {
  zmq::pollitem_t items[2] = {{socket_->handle(), 0, ZMQ_POLLIN, 0},
                              {wake_receive_->handle(), 0, ZMQ_POLLIN, 0}};
  std::vector<zmq::message_t> frames;
  while (true) {
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(-1));
      if (items[1].revents & ZMQ_POLLIN) return;
      if (!(items[0].revents & ZMQ_POLLIN)) continue;
      frames.clear();
      while (true) {
        zmq::message_t frame;
        if (!socket_->recv(frame, zmq::recv_flags::none)) break;
        const bool more = frame.more();
        frames.push_back(std::move(frame));
        if (!more) break;
      }
      // RFC 27: version, request id, domain, address, identity, mechanism,
      // credentials...
      std::string status = "400", user_id, version = "1.0", request_id;
      if (frames.size() >= 6) {
        version = Text(frames[0]);
        request_id = Text(frames[1]);
        const std::string key = frames.size() >= 7 ? Z85(frames[6]) : "";
        std::tie(status, user_id) =
            Decide(Text(frames[2]), Text(frames[3]), Text(frames[5]), key);
      }
      const std::string text = status == "200" ? "OK" : "refused";
      socket_->send(zmq::buffer(version), zmq::send_flags::sndmore);
      socket_->send(zmq::buffer(request_id), zmq::send_flags::sndmore);
      socket_->send(zmq::buffer(status), zmq::send_flags::sndmore);
      socket_->send(zmq::buffer(text), zmq::send_flags::sndmore);
      socket_->send(zmq::buffer(user_id), zmq::send_flags::sndmore);
      socket_->send(zmq::str_buffer(""), zmq::send_flags::none);
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM) return;
      LOG_EVERY_N(ERROR, 100) << "ZAP handler: " << e.what();
    }
  }
}

}  // namespace paxflow
