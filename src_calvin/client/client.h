// A client of one PaxFlow node: sends requests to its client port and
// receives the replies, many in flight at once (a zmq DEALER socket).
//
// Owns: its socket. Threads: one owner thread per Client.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "client.pb.h"

namespace paxflow {

class Client {
 public:
  // `context`: shared by several clients of one process; null: own one.
  explicit Client(zmq::context_t* context = nullptr);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Endpoint like tcp://127.0.0.1:51210. Connecting never blocks: a node
  // that is not up yet simply does not answer.
  std::string Connect(const std::string& endpoint);
  const std::string& endpoint() const { return endpoint_; }

  // Sends `request` under a fresh request id (returned).
  uint64_t Send(ClientRequest request);
  // Sends raw bytes as one request (tests of malformed input).
  void SendRaw(const std::string& bytes);
  // The next reply, waiting up to `timeout_ms`; false on timeout or a
  // reply that does not parse.
  bool Receive(ClientReply* reply, int timeout_ms);
  // Send, then wait for that request's reply (others arriving meanwhile are
  // dropped). Empty on success, else why there is no reply.
  std::string Call(ClientRequest request, ClientReply* reply, int timeout_ms);

  // Request builders.
  static ClientRequest Get(const std::vector<uint64_t>& keys);
  static ClientRequest Put(const std::vector<std::pair<uint64_t, std::string>>& writes);
  static ClientRequest Status();
  static ClientRequest Digest(uint64_t epoch);
  static ClientRequest Checkpoint();

 private:
  std::unique_ptr<zmq::context_t> own_context_;
  zmq::context_t* context_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string endpoint_;
  uint64_t next_request_ = 1;
};

}  // namespace paxflow
