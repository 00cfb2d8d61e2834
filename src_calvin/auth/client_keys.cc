#include "auth/client_keys.h"

#include <map>
#include <mutex>

#include "auth/auth_config.h"
#include "common/config.h"

namespace paxflow {
namespace {

struct Registry {
  std::mutex mu;
  CurveKeyPair own;
  std::map<std::string, std::string> server_keys;  // endpoint -> Z85
  std::string default_server_key;
};

Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

}  // namespace

std::string UseClientKeys(const ClusterConfig* config, const std::string& client_key_file,
                          const std::string& server_key) {
  const bool curve = config && config->auth().curve();
  if (!curve && client_key_file.empty() && server_key.empty()) return "";
  std::string key_file = client_key_file;
  if (key_file.empty() && curve) key_file = config->auth().client_secret_key_file();
  if (key_file.empty()) {
    return "--client_key is required: " +
           std::string(curve ? "the config's auth.curve is on and it names no "
                               "client_secret_key_file"
                             : "--server_key was given") +
           " (a PREFIX.key file from paxflow-cli keygen)";
  }
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  std::string error = ReadSecretKeyFile(key_file, &registry.own);
  if (!error.empty()) return (client_key_file.empty() ? "" : "--client_key: ") + error;
  if (!server_key.empty()) {
    if (IsZ85Key(server_key)) {
      registry.default_server_key = server_key;
    } else {
      error = ReadPublicKeyFile(server_key, &registry.default_server_key);
      if (!error.empty()) return "--server_key (a Z85 key or a .pub file): " + error;
    }
  }
  if (curve) {
    for (const NodeConfig& node : config->node()) {
      if (node.client_port() == 0) continue;
      std::string key;
      error = NodePublicKey(node, &key);
      if (!error.empty()) return error;
      registry.server_keys[ClientEndpoint(node)] = key;
    }
  }
  if (registry.server_keys.empty() && registry.default_server_key.empty()) {
    return "--client_key needs the nodes' public keys: give --server_key or a config with "
           "auth.curve";
  }
  return "";
}

bool ClientKeysFor(const std::string& endpoint, ClientCurve* keys) {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  if (registry.own.empty()) return false;
  auto it = registry.server_keys.find(endpoint);
  if (it == registry.server_keys.end() && registry.default_server_key.empty()) return false;
  keys->own = registry.own;
  keys->server_key = it == registry.server_keys.end() ? registry.default_server_key : it->second;
  return true;
}

void ClearClientKeys() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mu);
  registry.own = {};
  registry.server_keys.clear();
  registry.default_server_key.clear();
}

}  // namespace paxflow
