#include "metrics/metrics_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/version.hpp>
#include <glog/logging.h>

#include <chrono>
#include <optional>
#include <thread>

namespace paxflow {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kRequestTimeout = std::chrono::seconds(10);
constexpr const char* kContentType = "text/plain; version=0.0.4; charset=utf-8";

// One connection: reads requests and answers them, one at a time, until
// the client closes, a request does not parse, or it idles too long.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, const MetricsServer::Render& render)
      : stream_(std::move(socket)), render_(render) {}

  void Read() {
    parser_.emplace();
    parser_->body_limit(64 * 1024);  // a scrape has no body; a big one is refused
    stream_.expires_after(kRequestTimeout);
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::OnRead, shared_from_this()));
  }

 private:
  void OnRead(beast::error_code error, size_t) {
    if (error == http::error::end_of_stream || error == beast::error::timeout ||
        error == asio::error::operation_aborted || error == asio::error::connection_reset ||
        error == asio::error::eof) {
      return Close();
    }
    if (error) {
      // Not HTTP, or not within the limits: say so and hang up.
      LOG_EVERY_N(WARNING, 100) << "metrics endpoint: bad request from "
                                << Peer() << ": " << error.message();
      return Reply(http::status::bad_request, "bad request: " + error.message() + "\n", 11,
                   /*keep_alive=*/false);
    }
    const http::request<http::string_body>& request = parser_->get();
    const std::string target(request.target());
    const std::string path = target.substr(0, target.find('?'));
    if (path != "/metrics") {
      return Reply(http::status::not_found, "not found: this endpoint serves /metrics only\n",
                   request.version(), request.keep_alive());
    }
    if (request.method() != http::verb::get && request.method() != http::verb::head) {
      return Reply(http::status::method_not_allowed, "use GET /metrics\n", request.version(),
                   request.keep_alive());
    }
    Reply(http::status::ok, render_(), request.version(), request.keep_alive(),
          request.method() == http::verb::head);
  }

  void Reply(http::status status, std::string body, unsigned version, bool keep_alive,
             bool head = false) {
    auto response = std::make_shared<http::response<http::string_body>>(status, version);
    response->set(http::field::server, "paxflow-node");
    response->set(http::field::content_type,
                  status == http::status::ok ? kContentType : "text/plain; charset=utf-8");
    if (status == http::status::method_not_allowed) response->set(http::field::allow, "GET, HEAD");
    response->keep_alive(keep_alive);
    response->body() = std::move(body);
    response->prepare_payload();
    if (head) response->body().clear();  // Content-Length stays the GET's
    stream_.expires_after(kRequestTimeout);
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code error, size_t) {
                        if (error || !response->keep_alive()) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  std::string Peer() {
    beast::error_code error;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(error);
    return error ? std::string("?") : peer.address().to_string() + ":" + std::to_string(peer.port());
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const MetricsServer::Render& render_;
};

}  // namespace

struct MetricsServer::Impl {
  explicit Impl(Render render_in) : render(std::move(render_in)), acceptor(io) {}

  void Accept() {
    acceptor.async_accept([this](beast::error_code error, tcp::socket socket) {
      if (error == asio::error::operation_aborted) return;  // Stop
      if (!error) {
        std::make_shared<Session>(std::move(socket), render)->Read();
      } else {
        LOG_EVERY_N(WARNING, 100) << "metrics endpoint: accept failed: " << error.message();
      }
      Accept();
    });
  }

  Render render;
  asio::io_context io{1};
  tcp::acceptor acceptor;
  std::thread thread;
};

MetricsServer::MetricsServer(Render render) : impl_(std::make_unique<Impl>(std::move(render))) {}

MetricsServer::~MetricsServer() { Stop(); }

std::string MetricsServer::Listen(const std::string& host, uint16_t port) {
  beast::error_code error;
  // The node's host as its config names it: an address, or a name it
  // resolves to (the first address, as the client port binds).
  tcp::resolver resolver(impl_->io);
  const auto resolved = resolver.resolve(host, std::to_string(port),
                                         tcp::resolver::numeric_service, error);
  if (error || resolved.empty()) {
    return "cannot resolve '" + host + "' (" + (error ? error.message() : "no address") + ")";
  }
  const tcp::endpoint endpoint = resolved.begin()->endpoint();
  tcp::acceptor& acceptor = impl_->acceptor;
  acceptor.open(endpoint.protocol(), error);
  if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor.bind(endpoint, error);
  if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error) {
    beast::error_code ignored;
    acceptor.close(ignored);
    return "cannot listen on " + host + ":" + std::to_string(port) + " (" + error.message() + ")";
  }
  return "";
}

uint16_t MetricsServer::port() const {
  beast::error_code error;
  const tcp::endpoint endpoint = impl_->acceptor.local_endpoint(error);
  return error ? 0 : endpoint.port();
}

void MetricsServer::Start() {
  if (impl_->thread.joinable() || !impl_->acceptor.is_open()) return;
  impl_->Accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

void MetricsServer::Stop() {
  if (!impl_) return;
  // io_context::stop makes run() return at once; the connections' sockets
  // close when their handlers are destroyed with the io_context.
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  beast::error_code ignored;
  impl_->acceptor.close(ignored);
}

}  // namespace paxflow
