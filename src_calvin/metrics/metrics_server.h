// The node's metrics endpoint: an HTTP server (Boost.Beast over Asio) that
// answers GET /metrics with the text a callback renders (Prometheus's text
// format, metrics/exposition.h), 404 on other paths, 405 on other methods,
// and 400 on a request that does not parse (the connection is then
// closed; the server goes on). Each connection has 10 s to send its
// request, so a client that stalls costs a socket, not the endpoint.
//
// Owns: the listening socket, the connections, one thread. Threads: Listen,
// Start and Stop from the owner's thread; the server's thread parks in its
// io_context (epoll) between requests and runs `render` for each scrape, so
// `render` must be safe from another thread (read atomics and locked state).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace paxflow {

class MetricsServer {
 public:
  using Render = std::function<std::string()>;
  explicit MetricsServer(Render render);
  ~MetricsServer();  // Stop()

  // Binds host:port (0: a port the kernel picks) and listens; connections
  // wait in the backlog until Start. Empty on success, else why (the port
  // in use, the address not ours), for the caller to name its flag.
  std::string Listen(const std::string& host, uint16_t port);
  uint16_t port() const;  // the port bound (after Listen)
  // Serves on the server's thread until Stop.
  void Start();
  // Closes the socket and the connections, joins the thread. Idempotent.
  void Stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace paxflow
