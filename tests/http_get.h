// A test's HTTP client (Boost.Beast): GET a path of 127.0.0.1:port, or
// send raw bytes and read what comes back (a garbled request).
#pragma once
#include <cstdint>
#include <string>

namespace paxflow::testing {

// The status code (0: no answer within `timeout_ms`), the body in `body`.
int HttpGet(uint16_t port, const std::string& target, std::string* body, int timeout_ms = 5000);
// Writes `bytes` to 127.0.0.1:port and returns all that comes back until the
// server closes the connection (empty: no connection, or nothing).
std::string SendRaw(uint16_t port, const std::string& bytes, int timeout_ms = 5000);

}  // namespace paxflow::testing
