// Counts and logs the connections a CURVE server socket (a node's client or
// peer port) refuses before its ZAP handler is asked: libzmq's own checks
// refuse a peer without CURVE (no key, plain zmq: mechanism mismatch), a
// handshake that does not decrypt (a wrong server key), and everyone while
// no ZAP handler runs; and a connection that ends mid-handshake never gets
// in either. Read from the socket's monitor events (zmq_socket_monitor).
// Keys the ZAP handler refuses are counted and logged there, with key and
// address (auth/zap_handler.h), not here.
// A client without CURVE is not always seen as one: it drops the connection
// as soon as it reads the node's CURVE greeting, and when its reset arrives
// before the node has read its greeting, libzmq reports only a connection
// error (ECONNRESET) mid-handshake. So those count as refusals too
// (handshake_incomplete), as do port probes that connect and close.
// libzmq 4.3's events (version 1: the only version Debian's libzmq5
// exports) carry, for an accepted connection, the socket's own bound
// endpoint, not the peer's address; so a refusal is logged once per
// reason, then again at 10, 100, 1000... refusals with the count: bounded
// memory and log, however often a refused client reconnects.
// Owns: a PAIR socket receiving the monitored socket's events; libzmq's
// I/O thread would wait on it when full, so the owner drains it whenever
// its poll says so.
// Threads: Watch before the owner's loop starts; Drain on the thread that
// owns the monitored socket (its loop polls Item()); counts from any thread.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <zmq.hpp>

namespace paxflow {

enum class HandshakeRefusal {
  kNoCurve,       // the peer does not use CURVE (no key, plain zmq)
  kBadHandshake,  // a CURVE handshake that fails (e.g. the client has a wrong server key)
  kNoZapHandler,  // no ZAP handler answered (ZMQ_ZAP_ENFORCE_DOMAIN refuses)
  kIncomplete,    // the connection ended mid-handshake (see above)
  kCount
};
// The metric label of each: no_curve, bad_handshake, no_zap_handler,
// handshake_incomplete.
const char* HandshakeRefusalName(HandshakeRefusal reason);

class HandshakeMonitor {
 public:
  // `who` names the node in logs ("node 3"); `domain` the port ("client",
  // "peer").
  HandshakeMonitor(std::string who, std::string domain);
  ~HandshakeMonitor();
  HandshakeMonitor(const HandshakeMonitor&) = delete;
  HandshakeMonitor& operator=(const HandshakeMonitor&) = delete;

  // Starts monitoring `socket` (before it binds); throws zmq::error_t.
  void Watch(zmq::context_t* context, zmq::socket_t* socket);
  bool watching() const { return events_ != nullptr; }
  // For the owner's poll (events_ readable).
  zmq::pollitem_t Item() const;
  // Owner thread: reads every pending event, counts and logs it.
  void Drain();
  // Stops the monitoring and closes the event socket: after the owner's
  // loop has ended, before the monitored socket closes.
  void Close();

  uint64_t count(HandshakeRefusal reason) const {
    return counts_[static_cast<int>(reason)].load(std::memory_order_relaxed);
  }
  // Every refusal, whatever the reason.
  uint64_t refused() const;

 private:
  void Note(HandshakeRefusal reason, const std::string& endpoint);

  const std::string who_, domain_;
  void* monitored_ = nullptr;
  std::unique_ptr<zmq::socket_t> events_;
  std::atomic<uint64_t> counts_[static_cast<int>(HandshakeRefusal::kCount)] = {};
};

}  // namespace paxflow
