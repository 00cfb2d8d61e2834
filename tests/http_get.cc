#include "tests/http_get.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>

namespace paxflow::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

int HttpGet(uint16_t port, const std::string& target, std::string* body, int timeout_ms) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  int status = 0;
  stream.expires_after(std::chrono::milliseconds(timeout_ms));
  stream.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                       [&](beast::error_code error) {
    if (error) return;
    auto request = std::make_shared<http::request<http::empty_body>>(http::verb::get, target, 11);
    request->set(http::field::host, "127.0.0.1");
    request->keep_alive(false);
    http::async_write(stream, *request, [&, request](beast::error_code error, size_t) {
      if (error) return;
      auto buffer = std::make_shared<beast::flat_buffer>();
      auto response = std::make_shared<http::response<http::string_body>>();
      http::async_read(stream, *buffer, *response,
                       [&, buffer, response](beast::error_code error, size_t) {
        if (error) return;
        status = static_cast<int>(response->result_int());
        *body = std::move(response->body());
      });
    });
  });
  io.run();
  return status;
}

std::string SendRaw(uint16_t port, const std::string& bytes, int timeout_ms) {
  asio::io_context io;
  beast::tcp_stream stream(io);
  std::string received;
  auto buffer = std::make_shared<std::array<char, 4096>>();
  stream.expires_after(std::chrono::milliseconds(timeout_ms));
  std::function<void()> read_more = [&] {
    stream.async_read_some(asio::buffer(*buffer), [&](beast::error_code error, size_t n) {
      received.append(buffer->data(), n);
      if (!error) read_more();
    });
  };
  stream.async_connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port),
                       [&](beast::error_code error) {
    if (error) return;
    // Reading as it writes: a server that answers and hangs up before it
    // read everything must not have its answer lost behind a failed write.
    read_more();
    asio::async_write(stream, asio::buffer(bytes), [](beast::error_code, size_t) {});
  });
  io.run();
  return received;
}

}  // namespace paxflow::testing
