// CURVE key pairs (ZeroMQ's Curve25519 keys as Z85 text, 40 characters):
// making them (paxflow-cli keygen), writing and reading their files
// (common/curve.h puts them on sockets).
// Files: PREFIX.key holds the secret key (created mode 0600; the public key
// is derived from it), PREFIX.pub the public key. One key a file, a
// trailing newline allowed, '#' comment lines ignored.
// Owns: no state. Threads: any.
#pragma once
#include <string>

#include "common/curve.h"

namespace paxflow {

// A fresh key pair (zmq_curve_keypair); empty on failure (`error` says why).
CurveKeyPair GenerateKeyPair(std::string* error);
// Writes PREFIX.key (0600, refusing to replace one) and PREFIX.pub. Empty
// on success, else why not.
std::string WriteKeyPair(const std::string& prefix, const CurveKeyPair& keys);
// Reads a secret key file into `keys` (public key derived). Empty on success.
std::string ReadSecretKeyFile(const std::string& path, CurveKeyPair* keys);
// Reads a public key file. Empty on success.
std::string ReadPublicKeyFile(const std::string& path, std::string* key);

}  // namespace paxflow
