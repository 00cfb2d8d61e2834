#include "common/config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace paxflow {
namespace {

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectErrors(std::string source) : source_(std::move(source)) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (first_.empty()) {
      first_ = source_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) +
               ": " + message;
    }
  }
  const std::string& first() const { return first_; }

 private:
  std::string source_;
  std::string first_;
};

}  // namespace

const NodeConfig* ClusterLayout::Node(NodeId id) const {
  for (const NodeConfig& node : nodes_) {
    if (node.id() == id) return &node;
  }
  return nullptr;
}

std::string ParseClusterConfig(const std::string& text, const std::string& source,
                               ClusterConfig* config) {
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors(source);
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, config)) {
    return errors.first().empty() ? source + ": not a valid cluster config" : errors.first();
  }
  return "";
}

std::string LoadClusterConfig(const std::string& path, ClusterConfig* config) {
  std::ifstream in(path);
  if (!in) return "cannot read config " + path;
  std::stringstream text;
  text << in.rdbuf();
  return ParseClusterConfig(text.str(), path, config);
}

bool IsLocalHost(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

std::string NodeEndpoint(const ClusterConfig& config, const NodeConfig& node) {
  const std::string& transport = config.transport();
  if (transport == "ipc") {
    std::string dir = config.ipc_dir().empty() ? "/tmp" : config.ipc_dir();
    return "ipc://" + dir + "/paxflow-" + config.name() + "-" + std::to_string(node.port()) +
           ".sock";
  }
  if (transport == "inproc") {
    return "inproc://paxflow-" + config.name() + "-" + std::to_string(node.id());
  }
  return "tcp://" + node.host() + ":" + std::to_string(node.port());
}

std::string ValidateClusterConfig(const ClusterConfig& config, ClusterLayout* layout) {
  const std::string& transport = config.transport();
  if (!transport.empty() && transport != "tcp" && transport != "ipc" && transport != "inproc") {
    return "transport '" + transport + "' is not one of tcp, ipc, inproc";
  }
  if (config.node_size() == 0) return "the config lists no node";
  std::set<NodeId> ids;
  std::map<std::string, NodeId> endpoints;  // host:port -> node
  uint32_t partitions = 0, replicas = 0;
  for (const NodeConfig& node : config.node()) {
    const std::string who = "node " + std::to_string(node.id());
    if (!ids.insert(node.id()).second) return "duplicate node id " + std::to_string(node.id());
    if (node.host().empty()) return who + " has no host";
    if (node.port() == 0 || node.port() > 65535) {
      return who + " has port " + std::to_string(node.port()) + " (expected 1..65535)";
    }
    if (node.client_port() > 65535) {
      return who + " has client_port " + std::to_string(node.client_port()) +
             " (expected 1..65535, or 0 for none)";
    }
    std::vector<uint32_t> ports = {node.port()};
    if (node.client_port() != 0) ports.push_back(node.client_port());
    // Loopback spellings name the same interface.
    const std::string host = IsLocalHost(node.host()) ? "127.0.0.1" : node.host();
    for (uint32_t port : ports) {
      const std::string address = host + ":" + std::to_string(port);
      auto [it, inserted] = endpoints.emplace(address, node.id());
      if (!inserted) {
        return "port clash: node " + std::to_string(it->second) + " and node " +
               std::to_string(node.id()) + " both use " + address;
      }
    }
    if (node.partition() >= kMaxSequencers) {
      return who + " has partition " + std::to_string(node.partition()) + " (at most " +
             std::to_string(kMaxSequencers - 1) + ")";
    }
    if (node.replica() >= kMaxReplicas) {
      return who + " has replica " + std::to_string(node.replica()) + " (at most " +
             std::to_string(kMaxReplicas - 1) + ")";
    }
    partitions = std::max(partitions, node.partition() + 1);
    replicas = std::max(replicas, node.replica() + 1);
  }
  std::vector<int64_t> node_of(static_cast<size_t>(partitions) * replicas, -1);
  for (const NodeConfig& node : config.node()) {
    int64_t& slot = node_of[node.replica() * partitions + node.partition()];
    if (slot >= 0) {
      return "node " + std::to_string(slot) + " and node " + std::to_string(node.id()) +
             " both serve partition " + std::to_string(node.partition()) + " of replica " +
             std::to_string(node.replica());
    }
    slot = node.id();
  }
  for (uint32_t r = 0; r < replicas; ++r) {
    for (uint32_t p = 0; p < partitions; ++p) {
      if (node_of[r * partitions + p] < 0) {
        return "missing partition " + std::to_string(p) + " in replica " + std::to_string(r) +
               " (partitions are numbered 0.." + std::to_string(partitions - 1) +
               "; every replica needs a node for each)";
      }
    }
  }
  if (layout) {
    layout->partitions_ = partitions;
    layout->replicas_ = replicas;
    layout->node_of_.assign(node_of.begin(), node_of.end());
    layout->nodes_.assign(config.node().begin(), config.node().end());
  }
  return "";
}

}  // namespace paxflow
