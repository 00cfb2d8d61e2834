// A multi-host cluster on one machine: three network namespaces made by
// tools/netns.sh, one node in each on an address of its own, peers talking
// across the bridge. The bank workload run there must leave exactly the
// state of a serial execution of its logged input; a detached cluster in
// the namespaces must answer status from the root namespace, where the
// launcher and clients run. Needs root and a kernel that lets it make
// namespaces; skipped, saying why, where it cannot.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <memory>

#include "base/summary.h"
#include "tests/serial_reference.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::BinaryDir;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;

std::string Cluster() { return BinaryDir() + "/paxflow-cluster"; }

std::string NetnsScript() {
  for (const std::string& root : {testing::SourceDir(), BinaryDir() + "/../.."}) {
    const std::string path = root + "/tools/netns.sh";
    if (access(path.c_str(), R_OK) == 0) return path;
  }
  return "";
}

// Why namespaces cannot be made here, or empty. A failure of this probe is
// the machine's limit; a failure of tools/netns.sh after it is a bug.
std::string WhyNoNamespaces() {
  if (geteuid() != 0) {
    return "making network namespaces (ip netns, veth, bridge) needs root; run cluster_tests "
           "as root to cover the multi-host cluster";
  }
  std::string output;
  if (RunProcess({"/bin/sh", "-c", "command -v ip"}, &output) != 0) {
    return "'ip' (iproute2) is not installed";
  }
  const std::string probe = "pfprobe" + std::to_string(getpid() % 100000);
  output.clear();
  const int rc = RunProcess({"/bin/sh", "-c",
                             "ip netns add " + probe + " && ip netns del " + probe +
                                 " && ip link add " + probe + "b type bridge && ip link del " +
                                 probe + "b"},
                            &output);
  if (rc != 0) {
    std::string ignored;
    RunProcess({"/bin/sh", "-c",
                "ip netns del " + probe + " 2>/dev/null; ip link del " + probe + "b 2>/dev/null"},
               &ignored);
    return "this machine does not let root make network namespaces and bridges: " + output;
  }
  return "";
}

// Namespaces <prefix>0..<prefix>(count-1) for one test, removed on
// destruction whatever happened in between.
class Namespaces {
 public:
  Namespaces(std::string script, int count, std::string prefix, const std::string& subnet)
      : script_(std::move(script)), count_(std::to_string(count)), prefix_(std::move(prefix)) {
    rc_ = RunProcess({"/bin/bash", script_, "up", count_, prefix_, subnet}, &output_);
  }
  ~Namespaces() {
    std::string output;
    if (RunProcess({"/bin/bash", script_, "down", count_, prefix_}, &output) != 0) {
      ADD_FAILURE() << "tools/netns.sh down failed: " << output;
    }
  }
  int rc() const { return rc_; }
  const std::string& output() const { return output_; }

 private:
  std::string script_, count_, prefix_;
  int rc_ = -1;
  std::string output_;
};

class NetnsClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = WhyNoNamespaces();
    if (!why.empty()) GTEST_SKIP() << why;
    const std::string script = NetnsScript();
    ASSERT_FALSE(script.empty()) << "tools/netns.sh not found from " << testing::SourceDir();
    // Names and subnet of this process alone, so that parallel runs of the
    // suite do not collide.
    const pid_t pid = getpid();
    prefix_ = "pft" + std::to_string(pid % 100000) + "n";
    subnet_ = "10." + std::to_string(78 + (pid / 250) % 100) + "." + std::to_string(pid % 250);
    namespaces_ = std::make_unique<Namespaces>(script, 3, prefix_, subnet_);
    ASSERT_EQ(namespaces_->rc(), 0) << "tools/netns.sh up failed:\n" << namespaces_->output();
  }

  // Like deployment/netns-3.conf, in this test's namespaces. Each namespace
  // has ports of its own, so fixed ones do not collide with anything.
  std::string WriteConfig() const {
    ClusterConfig config;
    config.set_name("netns-test-" + std::to_string(getpid()));
    config.set_transport("tcp");
    for (uint32_t i = 0; i < 3; ++i) {
      NodeConfig* node = config.add_node();
      node->set_id(i);
      node->set_partition(i);
      node->set_replica(0);
      node->set_host(subnet_ + "." + std::to_string(i + 1));
      node->set_port(17130 + i);
      node->set_client_port(17230 + i);
      node->set_netns(prefix_ + std::to_string(i));
    }
    const std::string path = dir_.path() + "/netns.conf";
    std::ofstream(path) << testing::ToText(config);
    return path;
  }

  TempDir dir_;
  std::string prefix_, subnet_;
  std::unique_ptr<Namespaces> namespaces_;
};

// Transfers and audits between three "hosts": no audit sees a wrong total
// and the state equals the serial execution of the logged input.
TEST_F(NetnsClusterTest, BankAcrossThreeNamespacesEqualsSerialExecution) {
  const std::string config = WriteConfig();
  std::string output;
  const int rc = RunProcess({Cluster(), "run", "--config=" + config, "--workload=bank",
                             "--mode=paxflow", "--run_epochs=100", "--epoch_ms=5",
                             "--bank_accounts=90", "--audit_fraction=0.2", "--progress_ms=100",
                             "--logs=" + dir_.path() + "/logs",
                             "--log_dir=" + dir_.path() + "/input"},
                            &output);
  ASSERT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("=== cluster summary: 3 node(s)"), std::string::npos) << output;
  RunSummary cluster;
  ASSERT_EQ(RunSummary::FromJson(ReadFile(dir_.path() + "/logs/cluster.json"), &cluster), "");
  EXPECT_EQ(cluster.invariant_failures, 0u) << output;
  EXPECT_GT(cluster.kinds[kKindReadWrite].committed, 100u) << "too few transfers ran";

  testing::ExpectMatchesSerialExecution(dir_.path() + "/input", testing::BankWorkload(90, 0.2),
                                        cluster);
}

// start, status, stop with nodes in namespaces: status reaches the client
// ports over the bridge, and the recorded pids are the nodes' own (ip netns
// exec does not fork), so stop drains them.
TEST_F(NetnsClusterTest, DetachedClusterAnswersFromTheRootNamespace) {
  const std::string config = WriteConfig();
  const std::vector<std::string> where = {"--config=" + config,
                                          "--logs=" + dir_.path() + "/logs"};
  auto cluster = [&](const std::string& verb, std::vector<std::string> flags,
                     std::string* output) {
    std::vector<std::string> args = {Cluster(), verb};
    args.insert(args.end(), where.begin(), where.end());
    args.insert(args.end(), flags.begin(), flags.end());
    output->clear();
    return RunProcess(args, output);
  };
  // Whatever fails below, no node may outlive the test (nor keep its
  // namespace alive).
  struct StopAtExit {
    std::function<void()> stop;
    ~StopAtExit() { stop(); }
  } stop_at_exit{[&] {
    std::string output;
    if (access((dir_.path() + "/logs/cluster.state").c_str(), F_OK) == 0) {
      cluster("stop", {"--stop_timeout=10"}, &output);
    }
  }};
  std::string output;
  ASSERT_EQ(cluster("start", {"--workload=bank", "--epoch_ms=5", "--progress_ms=100"}, &output),
            0)
      << output;
  EXPECT_NE(output.find("(netns " + prefix_ + "2)"), std::string::npos) << output;
  ASSERT_EQ(cluster("status", {}, &output), 0) << output;
  EXPECT_NE(output.find("node 2  netns " + prefix_ + "2  " + subnet_ + ".3  pid "),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("3 of 3 node(s) up"), std::string::npos) << output;
  ASSERT_EQ(cluster("stop", {}, &output), 0) << output;
  EXPECT_NE(output.find("=== cluster summary: 3 node(s)"), std::string::npos) << output;
  RunSummary summary;
  ASSERT_EQ(RunSummary::FromJson(ReadFile(dir_.path() + "/logs/cluster.json"), &summary), "");
  EXPECT_EQ(summary.invariant_failures, 0u);
  EXPECT_GT(summary.Committed(), 0u);
}

}  // namespace
}  // namespace paxflow
