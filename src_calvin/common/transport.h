// Node-to-node messaging over ZeroMQ: one PULL socket per node for
// everything it receives, one PUSH socket per peer, and channels so that
// several components share them (Calvin's connection multiplexer).
//
// Owns: the sockets, the receiver thread, and per peer a bounded queue of
// messages the peer has not taken yet.
// In: Send() from any thread. Out: each message's payload handed to the
// handler of its channel, on the receiver thread (handlers must be quick:
// queue and return).
// Sends never block: a dead or slow peer costs at most zmq's queue
// (`zmq_queue` messages) plus `max_queued_bytes` here; beyond that its
// messages are dropped and counted (the peer asks for what they carried
// again: batches from the sender's logs, remote reads from what the sender
// keeps, node/read_exchange.h). When a message last came from each
// peer is kept, for failure detection, with the time the receiver thread
// has spent in handlers: while a handler runs (a large message is parsed)
// no peer can be heard, so that time must not count as a peer's silence.
// Garbled messages (bad header, unknown channel) are counted, logged and
// dropped; the node carries on.
// CURVE (options.curve): the receiving socket admits only keys the node's
// ZAP handler (auth/) names as nodes, and a message whose header claims a
// node other than the one its key names is dropped and counted
// (impersonations), so a node of the config cannot speak for another.
// Testing only (fault injection): a fraction of the messages to peers on
// chosen channels can be dropped on purpose, silently, as a broken
// connection loses what it held: Send says they went. Which ones is decided
// by a generator seeded from the options, message by message.
#pragma once
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/curve.h"
#include "common/handshake_monitor.h"
#include "common/types.h"
#include "message.pb.h"

namespace paxflow {

constexpr uint32_t kHeaderMagic = 0x50584631;  // "PXF1"

struct PeerEndpoint {
  NodeId id = 0;
  std::string endpoint;  // zmq endpoint, e.g. tcp://127.0.0.1:17000
  std::string public_key;  // its CURVE key (Z85), with options.curve
};

struct TransportOptions {
  NodeId self = 0;
  std::string bind_endpoint;
  std::vector<PeerEndpoint> peers;  // may include self
  // A shared context is required for inproc endpoints; null: own context.
  zmq::context_t* context = nullptr;
  int linger_ms = 5000;  // how long Stop() tries to flush unsent messages
  // Per peer: messages zmq holds, then bytes held here, before new ones are
  // dropped; and messages the receiving socket holds per sender.
  int zmq_queue = 256;
  uint64_t max_queued_bytes = 64ull << 20;
  int receive_queue = 10000;
  // Testing only: drop this fraction (0..1) of the messages sent to peers
  // on these channels; the n-th such message is dropped or not as the
  // n-th draw of a generator seeded with `fault_seed` says.
  double fault_drop_fraction = 0;
  std::vector<Channel> fault_drop_channels;
  uint64_t fault_seed = 0;
  // Largest message taken (ZMQ_MAXMSGSIZE on the receiving socket; -1: no
  // limit): a peer that sends a bigger frame is disconnected instead of the
  // node allocating it. Sends above it are refused here (the peer would
  // drop the connection).
  int64_t max_message_bytes = -1;
  // This node's CURVE key pair; empty: plain sockets.
  CurveKeyPair curve;
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

  // Thread-safe, never blocks. A message to self goes straight to the
  // handler. False if the message was dropped (the peer's queue is full).
  bool Send(NodeId to, Channel channel, const std::string& payload);
  // The same, but waits up to `timeout_ms` for room rather than dropping:
  // for senders that may wait (re-sending a log to a peer catching up).
  bool SendPaced(NodeId to, Channel channel, const std::string& payload, int timeout_ms);

  // When a message last came from `peer` (at_us, NowMicros; 0: never),
  // and DeafUs at that moment.
  struct Heard {
    int64_t at_us = 0;
    int64_t deaf_us = 0;
  };
  Heard LastHeard(NodeId peer) const;
  // Time the receiver thread has spent handing messages to their handlers
  // since Start, up to `now_us` (a hand-off under way counts up to then):
  // time in which no message could be heard. Grows, never shrinks.
  int64_t DeafUs(int64_t now_us) const;
  struct PeerQueue {
    uint64_t queued_bytes = 0;  // held here, waiting for the peer
    uint64_t dropped = 0;       // messages dropped since start: the queue was full
  };
  PeerQueue Queue(NodeId peer) const;

  uint64_t garbled() const { return garbled_.load(std::memory_order_relaxed); }
  // CURVE: messages dropped because their header named another node than
  // their sender's key.
  uint64_t impersonations() const { return impersonations_.load(std::memory_order_relaxed); }
  // CURVE: connections to the receiving socket refused before the ZAP
  // handler was asked (a peer without CURVE, a failed handshake).
  const HandshakeMonitor& handshakes() const { return handshakes_; }
  // Messages dropped on purpose (fault injection) since start.
  uint64_t injected_drops() const { return injected_drops_.load(std::memory_order_relaxed); }

 private:
  struct Peer {
    mutable std::mutex mu;
    std::unique_ptr<zmq::socket_t> socket;
    std::deque<std::pair<std::string, std::string>> waiting;  // header, payload
    uint64_t waiting_bytes = 0;
    uint64_t dropped = 0;
    Heard heard;  // deaf_mu_
  };
  void ReceiveLoop();
  // CURVE: whether the node `header` names is the one whose key sent
  // `frame`; logs a mismatch once per (key, claim). Receiver thread.
  bool SenderMatches(const zmq::message_t& frame, NodeId claimed);
  void Dispatch(Channel channel, NodeId from, std::string&& payload);
  // Hands the peer's waiting messages to zmq while it takes them. mu held.
  void Drain(Peer* peer);
  // One message to zmq without blocking; false if zmq's queue is full. mu held.
  bool TrySend(Peer* peer, const std::string& header, const std::string& payload);
  std::string HeaderFor(Channel channel) const;
  // Fault injection: whether this message to a peer is to be lost.
  bool InjectDrop(Channel channel);

  TransportOptions options_;
  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_;
  std::unique_ptr<zmq::socket_t> inbound_;
  HandshakeMonitor handshakes_;  // CURVE only; drained by the receiver thread
  std::map<NodeId, std::unique_ptr<Peer>> peers_;
  std::map<int, Handler> handlers_;
  std::thread receiver_;
  std::atomic<bool> stop_{false};
  // The receiver thread's hand-offs (DeafUs) and each peer's `heard`.
  mutable std::mutex deaf_mu_;
  int64_t deaf_us_ = 0;             // finished hand-offs
  int64_t handing_off_since_ = 0;   // the one under way; 0: none
  std::atomic<uint64_t> garbled_{0};
  std::atomic<uint64_t> impersonations_{0};
  std::set<std::pair<std::string, NodeId>> impersonations_logged_;  // receiver thread
  std::atomic<int> peers_waiting_{0};  // peers with messages held here
  uint64_t drop_threshold_ = 0;  // fault injection: a draw below it drops (0: never)
  std::atomic<uint64_t> fault_draws_{0}, injected_drops_{0};
};

}  // namespace paxflow
