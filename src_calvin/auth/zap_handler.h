// Our ZAP handler (ZeroMQ RFC 27): says which CURVE keys may connect to the
// node's sockets, by ZAP domain, and names them for the receiver.
//   domain "peer"   (the node's peer port): the public keys of the config's
//                   nodes; User-Id "node:<id>" (CurveNodeUserId).
//   domain "client" (the client port): the config's client keys, User-Id
//                   "operator:<key>" or "client:<key>"; or any key when the
//                   config says any_client ("client:<key>").
// Refusals are counted by domain and logged once per (key, address): a
// refused client reconnects again and again.
// Owns: a REP socket bound to inproc://zeromq.zap.01 in the node's context
// and the thread that serves it (parked on a blocking poll; Stop wakes it
// through an inproc pair). It must run before the sockets it guards bind,
// which refuse everyone while it is absent (ZMQ_ZAP_ENFORCE_DOMAIN).
// Threads: its own; counters are atomics, read from any thread.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <zmq.hpp>

#include "common/curve.h"
#include "common/types.h"

namespace paxflow {

inline constexpr const char* kPeerDomain = "peer";
inline constexpr const char* kClientDomain = "client";

struct ZapPolicy {
  std::map<std::string, NodeId> nodes;            // Z85 public key -> node
  std::map<std::string, bool> clients;            // Z85 public key -> operator
  bool any_client = false;
};

class ZapHandler {
 public:
  ZapHandler(zmq::context_t* context, ZapPolicy policy);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  std::string Start();  // binds; empty on success
  void Stop();

  uint64_t refused_peers() const { return refused_peers_.load(); }
  uint64_t refused_clients() const { return refused_clients_.load(); }


 private:
  void Loop();
  // One request's verdict: status code ("200"/"400") and User-Id.
  std::pair<std::string, std::string> Decide(const std::string& domain, const std::string& address,
                                             const std::string& mechanism,
                                             const std::string& key);

  zmq::context_t* const context_;
  const ZapPolicy policy_;
  std::unique_ptr<zmq::socket_t> socket_, wake_send_, wake_receive_;
  std::string wake_endpoint_;
  std::thread thread_;
  std::atomic<uint64_t> refused_peers_{0}, refused_clients_{0};
  std::set<std::string> logged_;  // handler thread: "domain key address" already logged
};

}  // namespace paxflow
