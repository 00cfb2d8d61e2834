// Node-to-node messaging over ZeroMQ: one PULL socket per node for
// everything it receives, one PUSH socket per peer, and channels so that
// several components share them (Calvin's connection multiplexer).
//
// Owns: the sockets and the receiver thread.
// In: Send() from any thread. Out: each message's payload handed to the
// handler of its channel, on the receiver thread (handlers must be quick:
// queue and return).
// Garbled messages (bad header, unknown channel) are counted, logged and
// dropped; the node carries on.
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/types.h"
#include "message.pb.h"

namespace paxflow {

constexpr uint32_t kHeaderMagic = 0x50584631;  // "PXF1"

struct PeerEndpoint {
  NodeId id = 0;
  std::string endpoint;  // zmq endpoint, e.g. tcp://127.0.0.1:51000
};

struct TransportOptions {
  NodeId self = 0;
  std::string bind_endpoint;
  std::vector<PeerEndpoint> peers;  // may include self
  // A shared context is required for inproc endpoints; null: own context.
  zmq::context_t* context = nullptr;
  int linger_ms = 5000;  // how long Stop() tries to flush unsent messages
};

class Transport {
 public:
  using Handler = std::function<void(NodeId from, std::string&& payload)>;

  explicit Transport(TransportOptions options);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  void Subscribe(Channel channel, Handler handler);  // before Start
  // Binds and connects. Empty on success, else what failed (e.g. port in use).
  std::string Start();
  // `flush`: wait up to linger_ms for queued messages to leave (the end of a
  // run); otherwise drop them (peers that never came, a failed start).
  void Stop(bool flush = true);

  // Thread-safe. A message to self goes straight to the handler.
  void Send(NodeId to, Channel channel, const std::string& payload);

  uint64_t garbled() const { return garbled_.load(std::memory_order_relaxed); }

 private:
  struct Peer {
    std::mutex mu;
    std::unique_ptr<zmq::socket_t> socket;
  };
  void ReceiveLoop();
  void Dispatch(Channel channel, NodeId from, std::string&& payload);

  TransportOptions options_;
  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_;
  std::unique_ptr<zmq::socket_t> inbound_;
  std::map<NodeId, std::unique_ptr<Peer>> peers_;
  std::map<int, Handler> handlers_;
  std::thread receiver_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> garbled_{0};
};

}  // namespace paxflow
