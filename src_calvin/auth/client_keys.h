// The CURVE keys this process's clients use: its own key pair and each
// node's public key by client endpoint. Set once by a tool's main (from
// --client_key/--server_key or the config's auth section) before any
// client connects; Client and PipelinedClient then secure every connection
// to a known endpoint. A client may also be given keys of its own
// (tests of refused keys).
// Threads: set before clients run, then read from any thread.
#pragma once
#include <string>

#include "auth/keys.h"
#include "config.pb.h"

namespace paxflow {

struct ClientCurve {
  CurveKeyPair own;
  std::string server_key;  // Z85
};

// From `config` (auth.curve on): each node's client endpoint gets its key;
// the key pair comes from `client_key_file` or, when empty, the config's
// auth.client_secret_key_file. `server_key` (Z85 or a .pub file) covers
// endpoints outside the config. Without auth.curve and flags: nothing.
// Empty on success, else what is wrong (naming the flag or file).
std::string UseClientKeys(const ClusterConfig* config, const std::string& client_key_file,
                          const std::string& server_key);
// The keys for `endpoint`, if this process uses CURVE there.
bool ClientKeysFor(const std::string& endpoint, ClientCurve* keys);
// Forgets what UseClientKeys set (tests).
void ClearClientKeys();

// The --client_key and --server_key flags (auth/client_flags.cc) applied
// with UseClientKeys.
std::string ApplyClientKeyFlags(const ClusterConfig* config);

}  // namespace paxflow
