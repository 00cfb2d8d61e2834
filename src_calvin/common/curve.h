// ZeroMQ CURVE on a socket: a key pair (Z85 text) and the options that make
// a socket a CURVE server or client. Key files, keygen and the ZAP handler
// that decides whom a server admits are in auth/.
// Owns: no state. Threads: any.
#pragma once
#include <string>
#include <zmq.hpp>

namespace paxflow {

struct CurveKeyPair {
  std::string public_key;  // Z85
  std::string secret_key;  // Z85
  bool empty() const { return secret_key.empty(); }
};

// Whether `text` is a Z85-encoded 32-byte (CURVE) key: 40 characters.
bool IsZ85Key(const std::string& text);

// Socket options (before bind/connect). A server takes any client key the
// ZAP handler admits in `domain`; ZMQ_ZAP_ENFORCE_DOMAIN makes a missing
// handler refuse instead of admit. A client must know its server's key.
void MakeCurveServer(zmq::socket_t* socket, const CurveKeyPair& own, const std::string& domain);
void MakeCurveClient(zmq::socket_t* socket, const CurveKeyPair& own,
                     const std::string& server_public_key);

// The User-Id the ZAP handler gives a node's key (ZMQ metadata "User-Id"
// of each message it sends): what the receiver checks a header against.
inline std::string CurveNodeUserId(uint32_t node) { return "node:" + std::to_string(node); }
// Client keys: "operator:<key>" or "client:<key>".
inline bool IsOperatorUserId(const char* user_id) {
  return user_id && std::string(user_id).rfind("operator:", 0) == 0;
}

}  // namespace paxflow
