#include "common/curve.h"

namespace paxflow {

bool IsZ85Key(const std::string& text) {
  if (text.size() != 40) return false;
  uint8_t bytes[32];
  return zmq_z85_decode(bytes, text.c_str()) != nullptr;
}

void MakeCurveServer(zmq::socket_t* socket, const CurveKeyPair& own, const std::string& domain) {
  socket->set(zmq::sockopt::curve_server, 1);
  socket->set(zmq::sockopt::curve_secretkey, own.secret_key);
  socket->set(zmq::sockopt::zap_domain, domain);
  // A draft option of libzmq 4.3 (Debian builds it in): without it a
  // missing ZAP handler would admit every client.
  constexpr int kZapEnforceDomain = 93;  // ZMQ_ZAP_ENFORCE_DOMAIN
  const int enforce = 1;
  if (zmq_setsockopt(socket->handle(), kZapEnforceDomain, &enforce, sizeof enforce) != 0) {
    throw zmq::error_t();
  }
}

void MakeCurveClient(zmq::socket_t* socket, const CurveKeyPair& own,
                     const std::string& server_public_key) {
  socket->set(zmq::sockopt::curve_serverkey, server_public_key);
  socket->set(zmq::sockopt::curve_publickey, own.public_key);
  socket->set(zmq::sockopt::curve_secretkey, own.secret_key);
}

}  // namespace paxflow
