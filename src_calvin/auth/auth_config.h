// What a deployment config's `auth` section means for one node (its key
// pair, whom its ZAP handler admits) and for a client tool (its key pair,
// each node's public key). Key files are read here; a missing or bad one
// is an error naming the node or client and the file.
// Owns: no state but what it returns. Threads: any.
#pragma once
#include <map>
#include <string>

#include "auth/keys.h"
#include "auth/zap_handler.h"
#include "config.pb.h"

namespace paxflow {

struct NodeAuth {
  CurveKeyPair own;
  ZapPolicy policy;
  std::map<NodeId, std::string> node_keys;  // node -> Z85 public key
};
// For node `self` of a config with auth.curve on. Empty on success.
std::string LoadNodeAuth(const ClusterConfig& config, NodeId self, NodeAuth* auth);

// The Z85 public key of `node` (inline or from its file). Empty on success.
std::string NodePublicKey(const NodeConfig& node, std::string* key);

}  // namespace paxflow
