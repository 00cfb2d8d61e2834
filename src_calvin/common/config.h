// Deployment configs: loading (protobuf text format) and validation.
// Every error names the file, the node or the field at fault.
// Owns: no state (a ClusterLayout is a plain value). Threads: any; every
// function here is stateless.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "common/types.h"
#include "config.pb.h"

namespace paxflow {

constexpr uint32_t kMaxReplicas = 16;

// What a valid config implies about the cluster's shape.
class ClusterLayout {
 public:
  uint32_t partitions() const { return partitions_; }
  uint32_t replicas() const { return replicas_; }
  // The node serving `partition` in `replica`.
  NodeId NodeOf(uint32_t replica, PartitionId partition) const {
    return node_of_[replica * partitions_ + partition];
  }
  const NodeConfig* Node(NodeId id) const;
  const std::vector<NodeConfig>& nodes() const { return nodes_; }

 private:
  friend std::string ValidateClusterConfig(const ClusterConfig&, ClusterLayout*);
  uint32_t partitions_ = 0;
  uint32_t replicas_ = 0;
  std::vector<NodeId> node_of_;
  std::vector<NodeConfig> nodes_;
};

// Parses `path`. Empty result on success, else "path:line:col: problem"
// (a malformed inline key: "path:line: problem"). Relative key file paths
// are made relative to the config's directory.
std::string LoadClusterConfig(const std::string& path, ClusterConfig* config);
std::string ParseClusterConfig(const std::string& text, const std::string& source,
                               ClusterConfig* config);
// Checks the node list: ids, partitions and replicas, hosts and ports, and
// that nodes in network namespaces have addresses of their own.
std::string ValidateClusterConfig(const ClusterConfig& config, ClusterLayout* layout);
// What every binary does with its --config: LoadClusterConfig, then
// ValidateClusterConfig. Empty on success; else the error, which names
// `path` (ValidateClusterConfig's is prefixed "path: ").
std::string LoadValidClusterConfig(const std::string& path, ClusterConfig* config,
                                   ClusterLayout* layout);
// The config's params as name/value pairs, in their order (for ResolveFlags).
std::vector<std::pair<std::string, std::string>> ConfigParams(const ClusterConfig& config);

// With the replicated_input parameter: why `config` cannot carry
// replicated input (a node without a consensus port, or whose host is not
// an IPv4 address), or empty.
std::string ReplicationConfigProblem(const ClusterConfig& config);

// The zmq endpoint node `node` binds (and peers connect to).
std::string NodeEndpoint(const ClusterConfig& config, const NodeConfig& node);
// The zmq endpoint of node `node`'s client port: tcp://host:client_port.
std::string ClientEndpoint(const NodeConfig& node);
bool IsLocalHost(const std::string& host);
// "auth client 'name'" (or "#n", 1-based) for messages.
std::string ClientKeyName(const ClientKey& client, int index);

}  // namespace paxflow
