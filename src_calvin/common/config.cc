#include "common/config.h"

#include <arpa/inet.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "common/curve.h"

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

// Why `node`'s netns setting cannot work, or empty. A namespace has its own
// loopback, so its node needs an address of its own that peers (in other
// namespaces) and clients (in the root namespace) can reach.
std::string NetnsProblem(const NodeConfig& node) {
  const std::string& name = node.netns();
  if (name.size() > 64 || name == "." || name == ".." ||
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") !=
          std::string::npos) {
    return "netns '" + name + "' is not a namespace name (letters, digits, '_', '.', '-'; at "
           "most 64)";
  }
  in_addr address{};
  if (inet_pton(AF_INET, node.host().c_str(), &address) != 1) {
    return "host '" + node.host() + "' is not an IPv4 address; a node in netns '" + name +
           "' needs its own address there as host, e.g. 10.77.0.1 (tools/netns.sh)";
  }
  if ((ntohl(address.s_addr) >> 24) == 127) {
    return "host " + node.host() + " is a loopback address, which inside netns '" + name +
           "' no other node can reach; use the namespace's own address, e.g. 10.77.0.1";
  }
  return "";
}


// The auth section's shape (key files are read by the node, auth/).
std::string AuthProblem(const ClusterConfig& config) {
  const AuthConfig& auth = config.auth();
  if (!auth.curve()) return "";
  if (config.transport() == "inproc") {
    return "auth.curve needs transport tcp or ipc (inproc sockets carry no CURVE handshake)";
  }
  for (const NodeConfig& node : config.node()) {
    const std::string who = "node " + std::to_string(node.id());
    if (node.public_key().empty() == node.public_key_file().empty()) {
      return who + " needs exactly one of public_key and public_key_file (auth.curve is on; "
             "paxflow-cli keygen --out=PREFIX writes PREFIX.pub and PREFIX.key)";
    }
    if (!node.public_key().empty() && !IsZ85Key(node.public_key())) {
      return who + ": public_key '" + node.public_key() + "' is not a Z85 key (40 characters)";
    }
  }
  for (int i = 0; i < auth.client_size(); ++i) {
    const ClientKey& client = auth.client(i);
    if (client.public_key().empty() == client.public_key_file().empty()) {
      return ClientKeyName(client, i) + " needs exactly one of public_key and public_key_file";
    }
    if (!client.public_key().empty() && !IsZ85Key(client.public_key())) {
      return ClientKeyName(client, i) + ": public_key '" + client.public_key() +
             "' is not a Z85 key (40 characters)";
    }
  }
  if (auth.client_size() == 0 && !auth.any_client()) {
    return "auth.curve is on but no client could connect: list client keys (auth { client { "
           "public_key_file: ... } }) or say any_client: true";
  }
  return "";
}

}  // namespace

std::string ClientKeyName(const ClientKey& client, int index) {
  return "auth client " + (client.name().empty() ? "#" + std::to_string(index + 1)
                                                 : "'" + client.name() + "'");
}


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
  google::protobuf::TextFormat::ParseInfoTree locations;
  parser.WriteLocationsTo(&locations);
  if (!parser.ParseFromString(text, config)) {
    return errors.first().empty() ? source + ": not a valid cluster config" : errors.first();
  }
  // Inline keys are checked here, where their lines are known.
  auto bad_key = [&](const google::protobuf::TextFormat::ParseInfoTree* tree,
                     const google::protobuf::Message& message, const std::string& key,
                     const std::string& who) -> std::string {
    if (key.empty() || IsZ85Key(key)) return "";
    const auto* field = message.GetDescriptor()->FindFieldByName("public_key");
    const auto location = tree ? tree->GetLocation(field, -1)
                               : google::protobuf::TextFormat::ParseLocation();
    return source + ":" + std::to_string(location.line + 1) + ": " + who + ": public_key '" +
           key + "' is not a Z85 key (40 characters, as paxflow-cli keygen writes)";
  };
  const auto* node_field = config->GetDescriptor()->FindFieldByName("node");
  for (int i = 0; i < config->node_size(); ++i) {
    const std::string error =
        bad_key(locations.GetTreeForNested(node_field, i), config->node(i),
                config->node(i).public_key(), "node " + std::to_string(config->node(i).id()));
    if (!error.empty()) return error;
  }
  const auto* auth = locations.GetTreeForNested(config->GetDescriptor()->FindFieldByName("auth"), -1);
  const auto* client_field = AuthConfig::descriptor()->FindFieldByName("client");
  for (int i = 0; i < config->auth().client_size(); ++i) {
    const std::string error =
        bad_key(auth ? auth->GetTreeForNested(client_field, i) : nullptr, config->auth().client(i),
                config->auth().client(i).public_key(), ClientKeyName(config->auth().client(i), i));
    if (!error.empty()) return error;
  }
  return "";
}

namespace {

// Key files named relative to the config are read relative to its directory.
void ResolveKeyPaths(const std::string& config_path, ClusterConfig* config) {
  const size_t slash = config_path.rfind('/');
  if (slash == std::string::npos) return;
  const std::string dir = config_path.substr(0, slash + 1);
  auto resolve = [&](std::string* path) {
    if (!path->empty() && (*path)[0] != '/') *path = dir + *path;
  };
  for (NodeConfig& node : *config->mutable_node()) {
    resolve(node.mutable_public_key_file());
    resolve(node.mutable_secret_key_file());
  }
  for (ClientKey& client : *config->mutable_auth()->mutable_client()) {
    resolve(client.mutable_public_key_file());
  }
  resolve(config->mutable_auth()->mutable_client_secret_key_file());
}

}  // namespace

std::string LoadClusterConfig(const std::string& path, ClusterConfig* config) {
  std::ifstream in(path);
  if (!in) return "cannot read config " + path;
  std::stringstream text;
  text << in.rdbuf();
  const std::string error = ParseClusterConfig(text.str(), path, config);
  if (error.empty()) ResolveKeyPaths(path, config);
  return error;
}

std::string LoadValidClusterConfig(const std::string& path, ClusterConfig* config,
                                   ClusterLayout* layout) {
  std::string error = LoadClusterConfig(path, config);
  if (!error.empty()) return error;
  error = ValidateClusterConfig(*config, layout);
  if (!error.empty()) return path + ": " + error;
  return "";
}

std::vector<std::pair<std::string, std::string>> ConfigParams(const ClusterConfig& config) {
  std::vector<std::pair<std::string, std::string>> params;
  for (const Param& param : config.param()) params.emplace_back(param.name(), param.value());
  return params;
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

std::string ClientEndpoint(const NodeConfig& node) {
  return "tcp://" + node.host() + ":" + std::to_string(node.client_port());
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
    if (node.metrics_port() > 65535) {
      return who + " has metrics_port " + std::to_string(node.metrics_port()) +
             " (expected 1..65535, or 0 for none)";
    }
    if (node.consensus_port() > 65535) {
      return who + " has consensus_port " + std::to_string(node.consensus_port()) +
             " (expected 1..65535, or 0 for none)";
    }
    std::vector<uint32_t> ports = {node.port()};
    if (node.consensus_port() != 0) ports.push_back(node.consensus_port());
    if (node.client_port() != 0) ports.push_back(node.client_port());
    if (node.metrics_port() != 0) ports.push_back(node.metrics_port());
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
    if (!node.netns().empty()) {
      const std::string problem = NetnsProblem(node);
      if (!problem.empty()) return who + ": " + problem;
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
  // Nodes in namespaces reach others only through their addresses: not
  // this machine's loopback, and not one address served by two namespaces.
  const NodeConfig* in_netns = nullptr;
  std::map<std::string, const NodeConfig*> netns_of_host;
  for (const NodeConfig& node : config.node()) {
    if (!node.netns().empty() && !in_netns) in_netns = &node;
    auto [it, inserted] = netns_of_host.emplace(node.host(), &node);
    if (!inserted && it->second->netns() != node.netns()) {
      auto where = [](const NodeConfig& n) {
        return n.netns().empty() ? std::string("outside any namespace")
                                 : "in netns '" + n.netns() + "'";
      };
      return "node " + std::to_string(it->second->id()) + " (" + where(*it->second) +
             ") and node " + std::to_string(node.id()) + " (" + where(node) +
             ") share host " + node.host() + "; each namespace needs an address of its own";
    }
  }
  if (in_netns) {
    for (const NodeConfig& node : config.node()) {
      if (node.netns().empty() && IsLocalHost(node.host())) {
        return "node " + std::to_string(node.id()) + " is on " + node.host() + " but node " +
               std::to_string(in_netns->id()) + " runs in netns '" + in_netns->netns() +
               "', where that is its own loopback; give node " + std::to_string(node.id()) +
               " a namespace too (tools/netns.sh)";
      }
    }
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
  const std::string auth_problem = AuthProblem(config);
  if (!auth_problem.empty()) return auth_problem;
  if (layout) {
    layout->partitions_ = partitions;
    layout->replicas_ = replicas;
    layout->node_of_.assign(node_of.begin(), node_of.end());
    layout->nodes_.assign(config.node().begin(), config.node().end());
  }
  return "";
}

std::string ReplicationConfigProblem(const ClusterConfig& config) {
  for (const NodeConfig& node : config.node()) {
    const std::string who = "node " + std::to_string(node.id());
    if (node.consensus_port() == 0) {
      return who + " has no consensus_port: replicated_input needs one on every node (the "
             "port its partition's consensus group reaches it on, e.g. consensus_port: " +
             std::to_string(node.port() + 300 <= 65535 ? node.port() + 300 : 1024) + ")";
    }
    in_addr address{};
    if (inet_pton(AF_INET, node.host().c_str(), &address) != 1) {
      return who + ": host '" + node.host() + "' is not an IPv4 address, which the consensus "
             "group's transport needs with replicated_input (e.g. 127.0.0.1)";
    }
  }
  if (config.transport() == "inproc") {
    return "replicated_input needs transport tcp or ipc: the consensus group talks TCP";
  }
  return "";
}

}  // namespace paxflow
