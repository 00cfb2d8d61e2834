// Unit tests for deployment configs (common/config.h): parsing and validation.
#include "common/config.h"
#include "base/params.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace paxflow {
namespace {

// Parses and validates; returns the first error, or "" if the config is good.
std::string Check(const std::string& text, ClusterLayout* layout = nullptr) {
  ClusterConfig config;
  std::string error = ParseClusterConfig(text, "test.conf", &config);
  if (!error.empty()) return error;
  return ValidateClusterConfig(config, layout);
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The shipped configs live in deployment/ at the repository root. Tests usually run from the
// root, but look next to this source file too so they also work from elsewhere.
std::string ShippedConfig(const std::string& name) {
  std::string here = __FILE__;
  const size_t slash = here.rfind('/');
  const std::string test_dir = slash == std::string::npos ? "." : here.substr(0, slash);
  const std::vector<std::string> candidates = {
      test_dir + "/../deployment/" + name, "deployment/" + name, "../deployment/" + name};
  for (const std::string& path : candidates) {
    if (access(path.c_str(), R_OK) == 0) return path;
  }
  return candidates.front();  // let the load report the failure with a path
}

TEST(ConfigTest, MinimalConfigIsValid) {
  ClusterLayout layout;
  EXPECT_EQ(Check(R"(node { id: 0 host: "127.0.0.1" port: 5000 })", &layout), "");
  EXPECT_EQ(layout.partitions(), 1u);
  EXPECT_EQ(layout.replicas(), 1u);
  EXPECT_EQ(layout.NodeOf(0, 0), 0u);
}

TEST(ConfigTest, UnknownFieldNamesTheFieldAndLine) {
  const std::string error = Check(
      "name: \"x\"\n"
      "node { id: 0 host: \"127.0.0.1\" port: 5000 }\n"
      "node { id: 1 partition: 1 host: \"127.0.0.1\" port: 5001 bogus_field: 3 }\n");
  EXPECT_TRUE(Contains(error, "bogus_field")) << error;
  EXPECT_TRUE(Contains(error, "test.conf:3:")) << error;

  const std::string top = Check("transport: \"tcp\"\nnodes { id: 0 }\n");
  EXPECT_TRUE(Contains(top, "nodes")) << top;
  EXPECT_TRUE(Contains(top, "test.conf:2:")) << top;
}

TEST(ConfigTest, SyntaxErrorIsReportedWithPosition) {
  const std::string error = Check("node { id: 0 host: \"127.0.0.1\" port: 5000\n");
  EXPECT_TRUE(Contains(error, "test.conf:")) << error;
  EXPECT_NE(error, "");
}

TEST(ConfigTest, DuplicateNodeId) {
  const std::string error = Check(R"(
      node { id: 4 partition: 0 host: "127.0.0.1" port: 5000 }
      node { id: 4 partition: 1 host: "127.0.0.1" port: 5001 })");
  EXPECT_TRUE(Contains(error, "duplicate node id 4")) << error;
}

TEST(ConfigTest, MissingPartition) {
  const std::string error = Check(R"(
      node { id: 0 partition: 0 host: "127.0.0.1" port: 5000 }
      node { id: 1 partition: 2 host: "127.0.0.1" port: 5001 })");
  EXPECT_TRUE(Contains(error, "missing partition 1")) << error;
  EXPECT_TRUE(Contains(error, "replica 0")) << error;
}

TEST(ConfigTest, ReplicaMissingAPartition) {
  // Replica 1 serves partition 0 only.
  const std::string error = Check(R"(
      node { id: 0 partition: 0 replica: 0 host: "127.0.0.1" port: 5000 }
      node { id: 1 partition: 1 replica: 0 host: "127.0.0.1" port: 5001 }
      node { id: 2 partition: 0 replica: 1 host: "127.0.0.1" port: 5002 })");
  EXPECT_TRUE(Contains(error, "missing partition 1 in replica 1")) << error;
}

TEST(ConfigTest, TwoNodesServingTheSamePartitionOfAReplica) {
  const std::string error = Check(R"(
      node { id: 0 partition: 0 replica: 0 host: "127.0.0.1" port: 5000 }
      node { id: 1 partition: 1 replica: 0 host: "127.0.0.1" port: 5001 }
      node { id: 2 partition: 1 replica: 0 host: "127.0.0.1" port: 5002 })");
  EXPECT_TRUE(Contains(error, "node 1 and node 2")) << error;
  EXPECT_TRUE(Contains(error, "partition 1 of replica 0")) << error;
}

TEST(ConfigTest, PortClashBetweenNodePorts) {
  const std::string error = Check(R"(
      node { id: 0 partition: 0 host: "127.0.0.1" port: 5000 }
      node { id: 1 partition: 1 host: "127.0.0.1" port: 5000 })");
  EXPECT_TRUE(Contains(error, "port clash")) << error;
  EXPECT_TRUE(Contains(error, "127.0.0.1:5000")) << error;
}

TEST(ConfigTest, PortClashBetweenClientPortAndAnotherNodesPort) {
  const std::string error = Check(R"(
      node { id: 0 partition: 0 host: "127.0.0.1" port: 5000 client_port: 6001 }
      node { id: 1 partition: 1 host: "127.0.0.1" port: 6001 })");
  EXPECT_TRUE(Contains(error, "port clash")) << error;
  EXPECT_TRUE(Contains(error, "127.0.0.1:6001")) << error;
  EXPECT_TRUE(Contains(error, "node 0 and node 1")) << error;
}

TEST(ConfigTest, PortClashWithOwnClientPort) {
  const std::string error =
      Check(R"(node { id: 0 host: "127.0.0.1" port: 5000 client_port: 5000 })");
  EXPECT_TRUE(Contains(error, "port clash")) << error;
}

TEST(ConfigTest, SamePortOnDifferentHostsIsFine) {
  EXPECT_EQ(Check(R"(transport: "tcp"
      node { id: 0 partition: 0 host: "10.0.0.1" port: 5000 client_port: 6000 }
      node { id: 1 partition: 1 host: "10.0.0.2" port: 5000 client_port: 6000 })"),
            "");
}

TEST(ConfigTest, EmptyNodeList) {
  const std::string error = Check(R"(name: "empty" transport: "tcp")");
  EXPECT_TRUE(Contains(error, "no node")) << error;
}

TEST(ConfigTest, BadTransport) {
  const std::string error =
      Check(R"(transport: "udp" node { id: 0 host: "127.0.0.1" port: 5000 })");
  EXPECT_TRUE(Contains(error, "transport 'udp'")) << error;
  for (const char* good : {"tcp", "ipc", "inproc"}) {
    EXPECT_EQ(Check(std::string("transport: \"") + good +
                    "\" node { id: 0 host: \"127.0.0.1\" port: 5000 }"),
              "")
        << good;
  }
}

TEST(ConfigTest, PortOutOfRange) {
  const std::string zero = Check(R"(node { id: 3 host: "127.0.0.1" port: 0 })");
  EXPECT_TRUE(Contains(zero, "node 3 has port 0")) << zero;
  const std::string missing = Check(R"(node { id: 3 host: "127.0.0.1" })");
  EXPECT_TRUE(Contains(missing, "port 0")) << missing;
  const std::string big = Check(R"(node { id: 3 host: "127.0.0.1" port: 65536 })");
  EXPECT_TRUE(Contains(big, "port 65536")) << big;
  EXPECT_EQ(Check(R"(node { id: 3 host: "127.0.0.1" port: 65535 })"), "");
  const std::string client =
      Check(R"(node { id: 3 host: "127.0.0.1" port: 5000 client_port: 70000 })");
  EXPECT_TRUE(Contains(client, "client_port 70000")) << client;
}

TEST(ConfigTest, MissingHost) {
  const std::string error = Check(R"(node { id: 2 port: 5000 })");
  EXPECT_TRUE(Contains(error, "node 2 has no host")) << error;
}

TEST(ConfigTest, TooManyPartitions) {
  const std::string error =
      Check(R"(node { id: 0 partition: 5000 host: "127.0.0.1" port: 5000 })");
  EXPECT_TRUE(Contains(error, "node 0 has partition 5000 (at most 4095)")) << error;
}

// Ids near 2^32 once wrapped the partition count to zero and wrote past
// the layout table; they must be refused with a message instead.
TEST(ConfigTest, HugePartitionOrReplicaIsRefused) {
  const std::string partition =
      Check(R"(node { id: 0 partition: 4294967295 host: "127.0.0.1" port: 5000 })");
  EXPECT_TRUE(Contains(partition, "node 0 has partition 4294967295")) << partition;
  const std::string replica =
      Check(R"(node { id: 0 replica: 4294967295 host: "127.0.0.1" port: 5000 })");
  EXPECT_TRUE(Contains(replica, "node 0 has replica 4294967295 (at most 15)")) << replica;
  const std::string many = Check(R"(node { id: 0 replica: 100000000 host: "h" port: 5000 })");
  EXPECT_TRUE(Contains(many, "has replica 100000000")) << many;
}

TEST(ConfigTest, LoopbackSpellingsClash) {
  const std::string error = Check(R"(node { id: 0 host: "localhost" port: 5000 }
                                     node { id: 1 partition: 1 host: "127.0.0.1" port: 5000 })");
  EXPECT_TRUE(Contains(error, "port clash")) << error;
}

TEST(ConfigTest, MissingFileIsReported) {
  ClusterConfig config;
  const std::string error = LoadClusterConfig("/nonexistent/dir/none.conf", &config);
  EXPECT_TRUE(Contains(error, "/nonexistent/dir/none.conf")) << error;
}

TEST(ConfigTest, ShippedConfigsLoadAndValidate) {
  struct Shipped {
    const char* file;
    uint32_t partitions;
    uint32_t replicas;
  };
  for (const Shipped& s : {Shipped{"local-1.conf", 1, 1}, Shipped{"local-3.conf", 3, 1},
                           Shipped{"local-2x2.conf", 2, 2}, Shipped{"local-1x3.conf", 1, 3},
                           Shipped{"local-2x3.conf", 2, 3}}) {
    const std::string path = ShippedConfig(s.file);
    ClusterConfig config;
    ASSERT_EQ(LoadClusterConfig(path, &config), "") << path;
    ClusterLayout layout;
    ASSERT_EQ(ValidateClusterConfig(config, &layout), "") << path;
    EXPECT_EQ(layout.partitions(), s.partitions) << path;
    EXPECT_EQ(layout.replicas(), s.replicas) << path;
    EXPECT_EQ(layout.nodes().size(), size_t{s.partitions} * s.replicas) << path;
    EXPECT_FALSE(config.name().empty()) << path;
  }
}

// auth.curve: key fields are checked where they are written; relative key
// files are read next to the config; the loopback demos run without it and
// the multi-host examples with it.
TEST(ConfigTest, AuthSectionIsCheckedNamingLineAndNode) {
  const std::string node0 = "node { id: 0 host: \"10.0.0.1\" port: 5000 public_key_file: \"n0.pub\" }\n";
  std::string error = Check(
      "node { id: 0 host: \"10.0.0.1\" port: 5000\n"
      "       public_key: \"tooshort\" }\nauth { curve: true any_client: true }\n");
  EXPECT_TRUE(Contains(error, "test.conf:2: node 0: public_key 'tooshort' is not a Z85 key"))
      << error;
  error = Check(node0 + "auth { curve: true\n  client { name: \"ops\" public_key: \"x\" } }\n");
  EXPECT_TRUE(Contains(error, "test.conf:3: auth client 'ops'")) << error;
  error = Check("node { id: 0 host: \"10.0.0.1\" port: 5000 }\nauth { curve: true any_client: true }\n");
  EXPECT_TRUE(Contains(error, "node 0 needs exactly one of public_key and public_key_file")) << error;
  error = Check(node0 + "auth { curve: true }\n");
  EXPECT_TRUE(Contains(error, "no client could connect")) << error;
  error = Check("transport: \"inproc\"\n" + node0 + "auth { curve: true any_client: true }\n");
  EXPECT_TRUE(Contains(error, "auth.curve needs transport tcp or ipc")) << error;
  error = Check(node0 + "auth { curve: true client { public_key_file: \"a.pub\" } }\n");
  EXPECT_EQ(error, "");
  // Without auth.curve, key fields are not required.
  EXPECT_EQ(Check("node { id: 0 host: \"10.0.0.1\" port: 5000 }\n"), "");
}

TEST(ConfigTest, KeyFilesAreRelativeToTheConfig) {
  ClusterConfig config;
  ASSERT_EQ(LoadClusterConfig(ShippedConfig("hosts-3.conf"), &config), "");
  const std::string& file = config.node(1).secret_key_file();
  EXPECT_TRUE(Contains(file, "deployment/keys/node-1.key")) << file;
  EXPECT_NE(file, "keys/node-1.key");
  EXPECT_TRUE(Contains(config.auth().client_secret_key_file(), "deployment/keys/operator.key"));
}

TEST(ConfigTest, CurveIsOffInTheLoopbackDemosAndOnInTheMultiHostExamples) {
  for (const char* name :
       {"local-1.conf", "local-3.conf", "local-2x2.conf", "local-1x3.conf", "local-2x3.conf"}) {
    ClusterConfig config;
    ASSERT_EQ(LoadClusterConfig(ShippedConfig(name), &config), "") << name;
    EXPECT_FALSE(config.auth().curve()) << name;
  }
  for (const char* name : {"hosts-3.conf", "netns-3.conf"}) {
    ClusterConfig config;
    ClusterLayout layout;
    ASSERT_EQ(LoadClusterConfig(ShippedConfig(name), &config), "") << name;
    ASSERT_EQ(ValidateClusterConfig(config, &layout), "") << name;
    EXPECT_TRUE(config.auth().curve()) << name;
    EXPECT_FALSE(config.auth().any_client()) << name;
  }
}

TEST(ConfigTest, LayoutOfLocal2x2) {
  const std::string path = ShippedConfig("local-2x2.conf");
  ClusterConfig config;
  ASSERT_EQ(LoadClusterConfig(path, &config), "") << path;
  ClusterLayout layout;
  ASSERT_EQ(ValidateClusterConfig(config, &layout), "");
  ASSERT_EQ(layout.partitions(), 2u);
  ASSERT_EQ(layout.replicas(), 2u);
  for (uint32_t r = 0; r < 2; ++r) {
    for (uint32_t p = 0; p < 2; ++p) {
      const NodeId id = layout.NodeOf(r, p);
      const NodeConfig* node = layout.Node(id);
      ASSERT_NE(node, nullptr) << id;
      EXPECT_EQ(node->replica(), r);
      EXPECT_EQ(node->partition(), p);
    }
  }
  EXPECT_EQ(layout.NodeOf(0, 0), 0u);
  EXPECT_EQ(layout.NodeOf(0, 1), 1u);
  EXPECT_EQ(layout.NodeOf(1, 0), 2u);
  EXPECT_EQ(layout.NodeOf(1, 1), 3u);
  EXPECT_EQ(layout.Node(99), nullptr);
}

TEST(ConfigTest, NodeEndpointFollowsTransport) {
  ClusterConfig config;
  ASSERT_EQ(ParseClusterConfig(R"(name: "c" node { id: 1 host: "127.0.0.1" port: 5001 })",
                               "inline", &config),
            "");
  const NodeConfig& node = config.node(0);
  EXPECT_EQ(NodeEndpoint(config, node), "tcp://127.0.0.1:5001");
  config.set_transport("ipc");
  config.set_ipc_dir("/tmp/x");
  EXPECT_EQ(NodeEndpoint(config, node), "ipc:///tmp/x/paxflow-c-5001.sock");
  config.set_transport("inproc");
  EXPECT_EQ(NodeEndpoint(config, node), "inproc://paxflow-c-1");
  EXPECT_TRUE(IsLocalHost("localhost"));
  EXPECT_FALSE(IsLocalHost("10.0.0.1"));
}

}  // namespace

// Replicated input: consensus ports are checked like the others, every
// node needs one when it is on, and the parameters it cannot run with are
// refused by name. local-1x3 turns it on; the other demos leave it off.
// A begin that finds max_active_ltx LTXs unresolved anywhere aborts busy,
// so in paxflow mode each origin's generator keeps at most its share of
// them unfinished: three nodes' 64 each met a limit of 64 (two thirds of
// report's LTXs aborted busy on local-3).
TEST(ConfigTest, EachNodesLtxWindowIsItsShareOfTheClustersLimit) {
  EngineParams engine;
  engine.max_active_ltx = 64;
  EXPECT_EQ(engine.LtxShare(1), 64u);
  EXPECT_EQ(engine.LtxShare(2), 32u);
  EXPECT_EQ(engine.LtxShare(3), 21u);
  EXPECT_EQ(engine.LtxShare(100), 1u) << "every node may run some LTX";
  engine.max_active_ltx = 192;
  EXPECT_EQ(engine.LtxShare(3), 64u);
  engine.mode = Mode::kCalvin;
  EXPECT_EQ(engine.LtxShare(3), 0u) << "calvin mode runs LTXs locked: no busy rule, no share";
}

TEST(ConfigTest, ReplicatedInputConfigAndParameters) {
  EXPECT_TRUE(Contains(Check("node { id: 0 host: \"127.0.0.1\" port: 5000 consensus_port: 70000 }\n"),
                       "node 0 has consensus_port 70000"));
  EXPECT_TRUE(Contains(Check("node { id: 0 host: \"127.0.0.1\" port: 5000 consensus_port: 5000 }\n"),
                       "port clash"));
  ClusterConfig config;
  ASSERT_EQ(LoadClusterConfig(ShippedConfig("local-2x3.conf"), &config), "");
  EXPECT_EQ(ReplicationConfigProblem(config), "");
  ASSERT_EQ(LoadClusterConfig(ShippedConfig("local-1x3.conf"), &config), "");
  EXPECT_EQ(ReplicationConfigProblem(config), "");
  bool on = false;
  for (const Param& param : config.param()) on |= param.name() == "replicated_input" && param.value() == "true";
  EXPECT_TRUE(on);
  config.mutable_node(1)->set_consensus_port(0);
  EXPECT_TRUE(Contains(ReplicationConfigProblem(config), "node 1 has no consensus_port")) << ReplicationConfigProblem(config);
  ASSERT_EQ(LoadClusterConfig(ShippedConfig("local-2x2.conf"), &config), "");
  for (const Param& param : config.param()) EXPECT_NE(param.name(), "replicated_input");

  NodeParams params;
  params.engine.replicated_input = true;
  EXPECT_TRUE(Contains(params.Validate(1), "give --log_dir")) << params.Validate(1);
  params.engine.log_dir = "/tmp/x";
  EXPECT_EQ(params.Validate(1), "");
  params.engine.sequencers_per_node = 2;
  EXPECT_TRUE(Contains(params.Validate(1), "sequencers_per_node=1")) << params.Validate(1);
  params.engine.sequencers_per_node = 1;
  // LTXs run with it: their origin is the group's leader (docs/ltx.md, Failover).
  params.workload.ltx_fraction = 0.01;
  EXPECT_EQ(params.Validate(1), "");
  params.workload.ltx_fraction = 0;
  params.engine.election_timeout_ms = 10;
  EXPECT_TRUE(Contains(params.Validate(1), "election_timeout_ms=10 is out of range")) << params.Validate(1);
  // Off, the cluster parameters (and so old logs' headers) are as before.
  NodeParams off;
  EXPECT_EQ(off.ClusterParamsText().find("replicated_input"), std::string::npos);
  params.engine.election_timeout_ms = 1000;
  EXPECT_NE(params.ClusterParamsText().find("replicated_input=true"), std::string::npos);
}

TEST(ConfigTest, AdmissionBoundIsANodeSettingInRange) {
  NodeParams params;
  EXPECT_EQ(params.engine.max_unpublished_epochs, 4u);
  params.engine.max_unpublished_epochs = 0;
  EXPECT_TRUE(Contains(params.Validate(1), "max_unpublished_epochs=0 is out of range"))
      << params.Validate(1);
  params.engine.max_unpublished_epochs = 1;
  EXPECT_EQ(params.Validate(1), "");
  // It decides when epochs are admitted, never what runs: not a cluster
  // parameter, so nodes and restarts may differ in it.
  EXPECT_EQ(params.ClusterParamsText().find("max_unpublished_epochs"), std::string::npos);
}

}  // namespace paxflow
