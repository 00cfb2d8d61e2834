// paxflow-cluster's detached verbs: `start` returns with every node up and
// no launcher left behind, `status` and `logs` report on them, `stop`
// drains them and prints the cluster summary. On 127.0.0.1 with ports
// picked free by the test; "remote" nodes (127.0.0.2) go through a stand-in
// for ssh that runs the command here, so the ssh paths are exercised too.
// Stale state files and bad input get errors that name the problem.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include "base/summary.h"
#include "cluster/launcher.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::BinaryDir;
using testing::MakeConfig;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;
using testing::WaitUntil;

std::string Cluster() { return BinaryDir() + "/paxflow-cluster"; }

std::string WriteConfig(const TempDir& dir, const ClusterConfig& config,
                        const std::string& name = "cluster.conf") {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << testing::ToText(config);
  return path;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// A pid names no live process: gone, or a zombie not yet reaped by init
// (the nodes outlive the launcher that started them, so init reaps them).
bool ProcessGone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] == 'Z';
}

using Verbs = testing::ClusterVerbs;

// Small and light: few records, short epochs, progress lines for `logs`.
const std::vector<std::string> kNodeFlags = {"--duration=0", "--workload=mixed",
                                             "--records=30000", "--epoch_ms=5",
                                             "--progress_ms=100"};

// Runs `logs` until every node has progress lines in it (they come every
// --progress_ms), or 20 s pass.
std::string LogsOnceEveryNodeReported(const Verbs& verbs, int nodes, int* rc) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::string output;
  while (true) {
    *rc = verbs.Run("logs", {"--lines=3"}, &output);
    bool all = *rc == 0;
    for (int node = 0; node < nodes; ++node) {
      all = all && output.find("[node " + std::to_string(node) + "] ") != std::string::npos;
    }
    if (all || std::chrono::steady_clock::now() > deadline) return output;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the next progress period
  }
}

// The whole life of a detached cluster on loopback.
TEST(LauncherVerbsTest, StartStatusLogsStopOnLoopback) {
  TempDir dir;
  const ClusterConfig config = MakeConfig("verbs", 3, 1, "tcp");
  Verbs verbs(WriteConfig(dir, config), dir.path() + "/logs");
  std::string output;
  // RunProcess reads to the end of the launcher's output: it returning at
  // all shows the nodes hold none of the launcher's descriptors.
  ASSERT_EQ(verbs.Run("start", kNodeFlags, &output), 0) << output;
  EXPECT_NE(output.find("3 node(s) up"), std::string::npos) << output;
  ASSERT_TRUE(Exists(verbs.state())) << output;
  const std::vector<pid_t> pids = verbs.Pids();
  ASSERT_EQ(pids.size(), 3u) << ReadFile(verbs.state());
  for (pid_t pid : pids) EXPECT_FALSE(ProcessGone(pid)) << "node pid " << pid << " not running";

  EXPECT_EQ(verbs.Run("start", kNodeFlags, &output), 2) << output;
  EXPECT_NE(output.find("names nodes still running"), std::string::npos) << output;

  ASSERT_EQ(verbs.Run("status", {}, &output), 0) << output;
  for (const NodeConfig& node : config.node()) {
    const std::string line = "node " + std::to_string(node.id()) + "  local  127.0.0.1  pid ";
    EXPECT_NE(output.find(line), std::string::npos) << output;
  }
  EXPECT_NE(output.find("3 of 3 node(s) up"), std::string::npos) << output;
  EXPECT_EQ(output.find("DOWN"), std::string::npos) << output;

  int rc = 0;
  output = LogsOnceEveryNodeReported(verbs, 3, &rc);
  EXPECT_EQ(rc, 0) << output;
  for (int node = 0; node < 3; ++node) {
    EXPECT_NE(output.find("[node " + std::to_string(node) + "] "), std::string::npos) << output;
  }

  ASSERT_EQ(verbs.Run("stop", {}, &output), 0) << output;
  EXPECT_NE(output.find("=== cluster summary: 3 node(s)"), std::string::npos) << output;
  EXPECT_FALSE(Exists(verbs.state())) << "stop left the state file";
  for (pid_t pid : pids) EXPECT_TRUE(ProcessGone(pid)) << "node pid " << pid << " still runs";
  for (const NodeConfig& node : config.node()) {
    EXPECT_TRUE(testing::PortIsFree(node.port())) << "port " << node.port() << " still bound";
    EXPECT_TRUE(testing::PortIsFree(node.client_port()))
        << "client port " << node.client_port() << " still bound";
  }
  RunSummary cluster;
  ASSERT_EQ(RunSummary::FromJson(ReadFile(dir.path() + "/logs/cluster.json"), &cluster), "");
  EXPECT_GT(cluster.Committed(), 0u);
  EXPECT_EQ(cluster.invariant_failures, 0u);

  EXPECT_EQ(verbs.Run("status", {}, &output), 2) << output;
  EXPECT_NE(output.find("no cluster state"), std::string::npos) << output;
  EXPECT_EQ(verbs.Run("stop", {}, &output), 2) << output;
  EXPECT_NE(output.find("no cluster state"), std::string::npos) << output;
  // The logs stay readable after the stop, with each node's summary.
  ASSERT_EQ(verbs.Run("logs", {"--lines=40"}, &output), 0) << output;
  EXPECT_NE(output.find("[node 2] === node 2 summary"), std::string::npos) << output;
}

// Nodes on a host that is not loopback are started, probed, read and
// stopped over ssh; a stand-in runs the remote commands here.
TEST(LauncherVerbsTest, RemoteNodesGoThroughSsh) {
  TempDir dir;
  ClusterConfig config = MakeConfig("remote", 2, 1, "tcp");
  for (NodeConfig& node : *config.mutable_node()) node.set_host("127.0.0.2");
  const std::string ssh = dir.path() + "/ssh";
  std::ofstream(ssh) << "#!/bin/sh\n"
                        "# Stands in for ssh: drops the options and the host, runs the rest.\n"
                        "while [ $# -gt 0 ]; do\n"
                        "  case \"$1\" in -o) shift 2 ;; -*) shift ;; *) break ;; esac\n"
                        "done\n"
                        "shift\n"
                        "exec sh -c \"$*\"\n";
  chmod(ssh.c_str(), 0755);
  Verbs verbs(WriteConfig(dir, config), dir.path() + "/logs", {"--ssh=" + ssh});
  std::string output;
  ASSERT_EQ(verbs.Run("start", kNodeFlags, &output), 0) << output;
  EXPECT_NE(output.find("(ssh 127.0.0.2)"), std::string::npos) << output;
  const std::vector<pid_t> pids = verbs.Pids();
  ASSERT_EQ(pids.size(), 2u) << ReadFile(verbs.state());
  // The pid the remote shell reported is the node's own.
  for (pid_t pid : pids) {
    EXPECT_NE(ReadFile("/proc/" + std::to_string(pid) + "/cmdline").find("paxflow-node"),
              std::string::npos)
        << "pid " << pid << " is not a node";
  }
  ASSERT_EQ(verbs.Run("status", {}, &output), 0) << output;
  EXPECT_NE(output.find("node 1  ssh  127.0.0.2  pid "), std::string::npos) << output;
  EXPECT_NE(output.find("2 of 2 node(s) up"), std::string::npos) << output;
  int rc = 0;
  output = LogsOnceEveryNodeReported(verbs, 2, &rc);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("[node 1] "), std::string::npos) << output;
  ASSERT_EQ(verbs.Run("stop", {}, &output), 0) << output;
  EXPECT_NE(output.find("=== cluster summary: 2 node(s)"), std::string::npos) << output;
  for (pid_t pid : pids) EXPECT_TRUE(ProcessGone(pid)) << "node pid " << pid << " still runs";
  EXPECT_FALSE(Exists(verbs.state()));
}

// A state file whose pids died, or now belong to other programs: status
// says so and fails; stop signals none of them and removes the file.
TEST(LauncherVerbsTest, StaleStateFilesAreReportedAndNothingElseIsSignalled) {
  TempDir dir;
  const ClusterConfig config = MakeConfig("stale", 2, 1, "tcp");
  const std::string config_path = WriteConfig(dir, config);
  const std::string logs = dir.path() + "/logs";
  mkdir(logs.c_str(), 0755);
  // Another program holding a recorded pid.
  const pid_t other = fork();
  if (other == 0) {
    execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(other, 0);
  // Until its exec is done its cmdline is the test's, or empty, which
  // status takes for a node on its way out (CI caught it there once).
  const std::string other_cmdline = "/proc/" + std::to_string(other) + "/cmdline";
  const std::string sleeping("sleep\0" "60\0", 9);  // its argv, NUL-separated
  ASSERT_TRUE(WaitUntil([&] { return ReadFile(other_cmdline) == sleeping; }, 10000));
  // A recorded pid that is gone.
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  std::ofstream(logs + "/cluster.state")
      << "{\"config\": \"" << config_path << "\", \"log_dir\": \"" << logs
      << "\", \"ssh\": \"ssh\", \"node_binary\": \"" << BinaryDir() << "/paxflow-node\", "
      << "\"nodes\": [{\"id\": 0, \"pid\": " << other << ", \"launch\": \"local\", \"host\": "
      << "\"127.0.0.1\", \"log\": \"" << logs << "/node-0.out\"}, {\"id\": 1, \"pid\": " << gone
      << ", \"launch\": \"local\", \"host\": \"127.0.0.1\", \"log\": \"" << logs
      << "/node-1.out\"}]}\n";
  Verbs verbs(config_path, logs);
  std::string output;
  EXPECT_EQ(verbs.Run("status", {}, &output), 1) << output;
  EXPECT_NE(output.find("node 0  local  127.0.0.1  pid " + std::to_string(other) +
                        ": DOWN (pid " + std::to_string(other) + " now runs another program"),
            std::string::npos)
      << output;
  EXPECT_NE(output.find("stale record"), std::string::npos) << output;
  EXPECT_NE(output.find("pid " + std::to_string(gone) + " is not running"), std::string::npos)
      << output;
  EXPECT_NE(output.find("node(s) 0, 1 down"), std::string::npos) << output;

  EXPECT_EQ(verbs.Run("stop", {"--stop_timeout=5"}, &output), 1) << output;
  EXPECT_NE(output.find("left alone"), std::string::npos) << output;
  EXPECT_NE(output.find("node 1 had exited already"), std::string::npos) << output;
  EXPECT_NE(output.find("no summary from node"), std::string::npos) << output;
  EXPECT_FALSE(Exists(verbs.state()));
  EXPECT_EQ(waitpid(other, nullptr, WNOHANG), 0) << "stop signalled a program that is no node";
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);

  // A state file that is not one, and one of another config.
  std::ofstream(logs + "/cluster.state") << "pid 1234\n";
  EXPECT_EQ(verbs.Run("status", {}, &output), 2) << output;
  EXPECT_NE(output.find("is not a paxflow-cluster state file"), std::string::npos) << output;
  std::ofstream(logs + "/cluster.state") << "{\"config\": \"/elsewhere.conf\", \"nodes\": []}";
  EXPECT_EQ(verbs.Run("stop", {}, &output), 2) << output;
  EXPECT_NE(output.find("belongs to a cluster started with --config=/elsewhere.conf"),
            std::string::npos)
      << output;
  unlink((logs + "/cluster.state").c_str());
}

TEST(LauncherVerbsTest, BadVerbsFlagsAndNetnsConfigsAreRefused) {
  TempDir dir;
  const ClusterConfig good = MakeConfig("badverbs", 2, 1, "tcp");
  const std::string path = WriteConfig(dir, good);
  std::string output;
  EXPECT_EQ(RunProcess({Cluster(), "frobnicate", "--config=" + path}, &output), 2);
  EXPECT_NE(output.find("unknown verb 'frobnicate'"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(RunProcess({Cluster(), "status", "--config=" + path, "--workload=bank"}, &output),
            2);
  EXPECT_NE(output.find("--workload is a node flag"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(RunProcess({Cluster(), "status", "extra", "--config=" + path}, &output), 2);
  EXPECT_NE(output.find("unexpected argument 'extra'"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(RunProcess({Cluster(), "--help"}, &output), 1);
  for (const char* verb : {"run ", "start ", "stop ", "status ", "logs "}) {
    EXPECT_NE(output.find(std::string("\n  ") + verb), std::string::npos) << verb << output;
  }

  struct Case {
    std::string name, expected;
    std::function<void(ClusterConfig*)> edit;
  };
  auto in_netns = [](ClusterConfig* config) {
    for (int i = 0; i < config->node_size(); ++i) {
      config->mutable_node(i)->set_host("10.99.0." + std::to_string(i + 1));
      config->mutable_node(i)->set_netns("pf-none-" + std::to_string(getpid()) + "-" +
                                         std::to_string(i));
    }
  };
  const std::vector<Case> cases = {
      {"loopback in a namespace", "is a loopback address",
       [&](ClusterConfig* c) {
         in_netns(c);
         c->mutable_node(0)->set_host("127.0.0.1");
       }},
      {"hostname in a namespace", "is not an IPv4 address",
       [&](ClusterConfig* c) {
         in_netns(c);
         c->mutable_node(1)->set_host("example.com");
       }},
      {"bad namespace name", "is not a namespace name",
       [&](ClusterConfig* c) {
         in_netns(c);
         c->mutable_node(0)->set_netns("../etc");
       }},
      {"loopback node with namespaced ones", "give node 0 a namespace too",
       [&](ClusterConfig* c) {
         in_netns(c);
         c->mutable_node(0)->clear_netns();
         c->mutable_node(0)->set_host("127.0.0.1");
       }},
      {"one address, two namespaces", "share host 10.99.0.1",
       [&](ClusterConfig* c) {
         in_netns(c);
         c->mutable_node(1)->set_host("10.99.0.1");
       }},
      {"missing namespace", geteuid() == 0 ? "does not exist; run tools/netns.sh up" : "needs root",
       in_netns},
  };
  for (const Case& c : cases) {
    ClusterConfig config = good;
    c.edit(&config);
    output.clear();
    const std::string path = WriteConfig(dir, config, "netns.conf");
    EXPECT_EQ(RunProcess({Cluster(), "start", "--check_only", "--config=" + path}, &output), 2)
        << c.name << ": " << output;
    EXPECT_NE(output.find(c.expected), std::string::npos) << c.name << ": " << output;
  }
}

// A TCP listener on 127.0.0.1:`port` (0: the kernel picks one from its
// ephemeral range), closed with the object.
class Listener {
 public:
  explicit Listener(uint32_t port) : fd_(socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    socklen_t length = sizeof(address);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), length) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~Listener() { close(fd_); }
  uint32_t port() const { return port_; }  // 0: it could not listen

 private:
  int fd_;
  uint32_t port_ = 0;
};

// A port in use is refused before anything starts, naming the node and the
// port; one in the kernel's ephemeral range is said to be there, since an
// outgoing connection may hold it for a minute although no cluster runs.
TEST(LauncherVerbsTest, PortsInUseAreRefusedNamingThemAndTheEphemeralRange) {
  ClusterConfig config = MakeConfig("inuse", 2, 1, "tcp");
  ASSERT_EQ(CheckMachine(config), "");
  {
    Listener taken(config.node(1).port());  // the tests' range, below the ephemeral one
    ASSERT_NE(taken.port(), 0u);
    const std::string error = CheckMachine(config);
    EXPECT_NE(error.find("node 1: port " + std::to_string(taken.port()) +
                         " on 127.0.0.1 is not available"),
              std::string::npos)
        << error;
    // Unless this host's ephemeral range reaches down to the tests' ports.
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    uint32_t lo = 0;
    if (range >> lo && taken.port() < lo) {
      EXPECT_EQ(error.find("ephemeral"), std::string::npos) << error;
    }
  }
  {
    // The consensus member's port (replicated input) is checked too.
    Listener taken(0);
    ASSERT_NE(taken.port(), 0u);
    ClusterConfig consensus = config;
    consensus.mutable_node(1)->set_consensus_port(taken.port());
    const std::string error = CheckMachine(consensus);
    EXPECT_NE(error.find("node 1: consensus_port " + std::to_string(taken.port()) +
                         " on 127.0.0.1 is not available"),
              std::string::npos)
        << error;
  }
  Listener ephemeral(0);
  ASSERT_NE(ephemeral.port(), 0u);
  config.mutable_node(0)->set_client_port(ephemeral.port());
  const std::string error = CheckMachine(config);
  EXPECT_NE(error.find("node 0: client_port " + std::to_string(ephemeral.port())),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("lies in the kernel's ephemeral range"), std::string::npos) << error;
}

}  // namespace
}  // namespace paxflow
