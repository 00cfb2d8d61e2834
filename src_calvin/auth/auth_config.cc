#include "auth/auth_config.h"

#include "common/config.h"

namespace paxflow {
namespace {

std::string PublicKeyOf(const std::string& inline_key, const std::string& file,
                        const std::string& who, std::string* key) {
  if (!inline_key.empty()) {
    *key = inline_key;
    return "";
  }
  std::string error = ReadPublicKeyFile(file, key);
  return error.empty() ? "" : who + ": " + error;
}


}  // namespace

std::string NodePublicKey(const NodeConfig& node, std::string* key) {
  return PublicKeyOf(node.public_key(), node.public_key_file(), "node " + std::to_string(node.id()),
                     key);
}

std::string LoadNodeAuth(const ClusterConfig& config, NodeId self, NodeAuth* auth) {
  for (const NodeConfig& node : config.node()) {
    std::string key;
    std::string error = NodePublicKey(node, &key);
    if (!error.empty()) return error;
    auto [it, added] = auth->policy.nodes.emplace(key, node.id());
    if (!added) {
      return "node " + std::to_string(it->second) + " and node " + std::to_string(node.id()) +
             " have the same public key; each node needs its own (paxflow-cli keygen)";
    }
    auth->node_keys[node.id()] = key;
    if (node.id() != self) continue;
    if (node.secret_key_file().empty()) {
      return "node " + std::to_string(self) + " has no secret_key_file (auth.curve is on)";
    }
    error = ReadSecretKeyFile(node.secret_key_file(), &auth->own);
    if (!error.empty()) return "node " + std::to_string(self) + ": " + error;
    if (auth->own.public_key != key) {
      return "node " + std::to_string(self) + ": secret key file " + node.secret_key_file() +
             " does not belong to its public key " + key + " in the config";
    }
  }
  const AuthConfig& section = config.auth();
  for (int i = 0; i < section.client_size(); ++i) {
    const ClientKey& client = section.client(i);
    std::string key;
    std::string error =
        PublicKeyOf(client.public_key(), client.public_key_file(), ClientKeyName(client, i), &key);
    if (!error.empty()) return error;
    bool& is_operator = auth->policy.clients[key];
    is_operator = is_operator || client.operator_();
  }
  auth->policy.any_client = section.any_client();
  return "";
}

}  // namespace paxflow
