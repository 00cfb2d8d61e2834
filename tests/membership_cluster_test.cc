// Membership and failure reporting with real processes on 127.0.0.1
// (ports picked free), nodes killed with SIGKILL:
// - a dead replica holds back log trimming (the oldest checkpoint stays,
//   checkpoints pile up) and progress lines say so; `paxflow-cluster
//   remove` takes it out, trimming resumes and the warning goes; the
//   removal survives restarts of the others; removing a node that runs, or
//   one the cluster cannot go on without, is refused;
// - a peer that speaks but is stuck is reported to clients (UNAVAILABLE,
//   naming it), not left to time out;
// - `paxflow-cli checkpoint` prints what each node answered.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <regex>
#include <sstream>

#include "checkpoint/checkpoint.h"
#include "client/client.h"
#include "common/membership.h"
#include "tests/test_cluster.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::AskStatus;
using testing::BinaryDir;
using testing::ReadFile;
using testing::RunProcess;
using testing::WaitUntil;

// A lighter load than the shared cluster's default (added to its flags).
using Cluster = testing::TestCluster;
const char kLightLoad[] = "--max_inflight=100";

Epoch Oldest(const std::vector<Epoch>& held) { return held.empty() ? 0 : held.front(); }

// The progress lines of node `i` printed after byte `from` of its log.
std::vector<std::string> ProgressLinesAfter(const std::string& log, size_t from, int i) {
  std::vector<std::string> lines;
  std::stringstream text(log.size() > from ? log.substr(from) : "");
  std::string line;
  const std::string prefix = "[node " + std::to_string(i) + "] ";
  while (std::getline(text, line)) {
    if (line.rfind(prefix, 0) == 0 && line.find(" | epoch ") != std::string::npos) {
      lines.push_back(line);
    }
  }
  return lines;
}

// `paxflow-cli checkpoint` with --config: one line per node, with what it
// answered.
std::string CliCheckpoint(const Cluster& cluster, int* code, int timeout_ms = 10000) {
  std::string output;
  *code = RunProcess({BinaryDir() + "/paxflow-cli", "--config=" + cluster.config_path(),
                      "--timeout_ms=" + std::to_string(timeout_ms), "checkpoint"},
                     &output);
  return output;
}

// A 2x2 cluster with checkpoints every 0.2 s loses replica node 3 for good.
TEST(MembershipClusterTest, RemovingADeadReplicaLetsTheLogsBeTrimmedAgain) {
  // No multi-partition txns: replica 1's other node does not need node 3.
  Cluster cluster("members", 2, 2,
                  {kLightLoad, "--workload=mixed", "--multi_partition_pct=0", "--checkpoint_every=0.2",
                   "--peer_timeout_ms=400"});
  cluster.Start();
  cluster.ExpectProgress({0, 1, 2, 3}, 60);

  // Every node says what it answered to a checkpoint asked of node 0.
  int code = 0;
  std::string output = CliCheckpoint(cluster, &code);
  EXPECT_EQ(code, 0) << output;
  for (int i = 0; i < 4; ++i) {
    const std::regex line("node " + std::to_string(i) + " \\(partition " +
                          std::to_string(i % 2) + ", replica " + std::to_string(i / 2) +
                          "\\): checkpoint at epoch \\d+: " + cluster.input() + "/node-" +
                          std::to_string(i) + "@");
    EXPECT_TRUE(std::regex_search(output, line)) << "no answer of node " << i << ":\n" << output;
  }

  // Removing a node that runs is refused, saying so; so is a node of
  // replica 0 (its partition's sequencer).
  EXPECT_EQ(cluster.Verb("remove", {"--node=3"}, &output), 1) << output;
  EXPECT_NE(output.find("node 3 is alive"), std::string::npos) << output;
  EXPECT_EQ(cluster.Verb("remove", {"--node=1"}, &output), 2) << output;
  EXPECT_NE(output.find("replica 0"), std::string::npos) << output;

  cluster.Kill(3);
  // Trimming stops: node 0 keeps its oldest checkpoint while new ones come,
  // and its progress lines say for whom, within --peer_timeout_ms x 10.
  static const std::regex kWarning(
      "keeping logs from epoch \\d+ for node 3, silent for \\d+ s; `paxflow-cluster remove "
      "--node=3` if it will not return");
  ASSERT_TRUE(WaitUntil([&] { return std::regex_search(cluster.NodeLog(0), kWarning); },
                        4000 * Membership::kKeptLogsWarnFactor))
      << cluster.Tail(0);
  const std::vector<Epoch> before = ListCheckpoints(cluster.input(), 0);
  cluster.ExpectProgress({0, 1, 2}, 200);  // 1 s of epochs: several checkpoints
  const std::vector<Epoch> kept = ListCheckpoints(cluster.input(), 0);
  ASSERT_FALSE(before.empty());
  EXPECT_EQ(Oldest(kept), Oldest(before)) << "trimmed although node 3 is gone";
  EXPECT_GT(kept.size(), before.size()) << "no new checkpoints";

  // Removing it: every other node takes it, and trimming resumes.
  ASSERT_EQ(cluster.Verb("remove", {"--node=3"}, &output), 0) << output;
  // (Told by the launcher, or first by a peer's heartbeat.)
  for (int i = 0; i < 3; ++i) {
    const std::string told = "node " + std::to_string(i) + ": node " + std::to_string(i);
    EXPECT_TRUE(output.find(told + " removed node 3") != std::string::npos ||
                output.find(told + " knew node 3") != std::string::npos)
        << output;
    EXPECT_TRUE(WaitUntil(
        [&] {
          return !ReadFile(Membership::Path(cluster.input(), static_cast<NodeId>(i))).empty();
        },
        2000))
        << "node " << i << " did not remember the removal";
  }
  ASSERT_TRUE(WaitUntil([&] { return Oldest(ListCheckpoints(cluster.input(), 0)) > Oldest(kept); },
                        20000))
      << "trimming did not resume: " << cluster.Tail(0);
  // ... and the warning goes.
  const size_t mark = cluster.NodeLog(0).size();
  ASSERT_TRUE(WaitUntil([&] { return ProgressLinesAfter(cluster.NodeLog(0), mark, 0).size() >= 5; },
                        10000));
  for (const std::string& line : ProgressLinesAfter(cluster.NodeLog(0), mark, 0)) {
    EXPECT_EQ(line.find("keeping logs"), std::string::npos) << line;
  }

  // Durable: a node of replica 1 restarted does not wait for node 3 (it
  // would, for its replica's reads), and node 3 is not restarted.
  EXPECT_EQ(cluster.Verb("restart", {"--node=3"}, &output), 2) << output;
  EXPECT_NE(output.find("removed"), std::string::npos) << output;
  cluster.Kill(2);
  ASSERT_EQ(cluster.Verb("restart", {"--node=2", "--peer_wait_s=20"}, &output), 0)
      << output << cluster.Tail(2);
  cluster.ExpectProgress({0, 1, 2}, 60);
  const Epoch trimmed = Oldest(ListCheckpoints(cluster.input(), 0));
  EXPECT_TRUE(WaitUntil([&] { return Oldest(ListCheckpoints(cluster.input(), 0)) > trimmed; },
                        20000))
      << "trimming stopped after node 2's restart: " << cluster.Tail(0);
  EXPECT_EQ(cluster.Verb("status", {}, &output), 0) << output;
  EXPECT_NE(output.find("REMOVED"), std::string::npos) << output;
  // The cluster's summary is the remaining nodes'.
  EXPECT_EQ(cluster.Verb("stop", {"--stop_timeout=30"}, &output), 0) << output;
}

// The only node of a partition cannot be removed: the cluster could not
// go on for it.
TEST(MembershipClusterTest, RemovingAPartitionsOnlyNodeIsRefused) {
  Cluster cluster("sole", 2, 1, {kLightLoad, "--workload=mixed", "--checkpoint_every=0.5"});
  cluster.Start();
  cluster.Kill(1);
  std::string output;
  EXPECT_EQ(cluster.Verb("remove", {"--node=1", "--force"}, &output), 2) << output;
  EXPECT_NE(output.find("only node of partition 1"), std::string::npos) << output;
}

// A peer that speaks but whose partition stands still (its checkpoint is
// stuck half written, and in calvin mode the partition waits for it):
// the node that waits for its batches says so to clients, naming it, and
// `paxflow-cli checkpoint` says which node did not answer.
TEST(MembershipClusterTest, StuckPeerIsReportedAndCheckpointSaysWhoAnswered) {
  Cluster cluster("stuck", 2, 1,
                  {kLightLoad, "--mode=calvin", "--workload=mixed", "--multi_partition_pct=0",
                   "--checkpoint_every=0"});
  cluster.Start();
  cluster.ExpectProgress({0, 1}, 40);
  // Node 1 again, with its first checkpoint stuck half written.
  cluster.Kill(1);
  std::string output;
  ASSERT_EQ(cluster.Verb("restart", {"--node=1", "--fault_stall_checkpoint=1"}, &output), 0)
      << output;
  cluster.ExpectProgress({0, 1}, 40);
  // Node 0 refuses a checkpoint while it reports a problem, and the one it
  // reported while node 1 was down goes only at its next heartbeat.
  StatusReply status;
  ASSERT_TRUE(WaitUntil(
      [&] { return AskStatus(cluster.node(0), &status, 300) && status.problem().empty(); }, 10000))
      << status.problem();
  int code = 0;
  output = CliCheckpoint(cluster, &code, 4000);
  EXPECT_EQ(code, 1) << output;
  EXPECT_TRUE(std::regex_search(
      output, std::regex("node 0 \\(partition 0, replica 0\\): checkpoint at epoch \\d+")))
      << output;
  EXPECT_NE(output.find("node 1 (partition 1, replica 0): no answer"), std::string::npos)
      << output;
  EXPECT_NE(output.find("on 1 of 2 node(s)"), std::string::npos) << output;
  ASSERT_TRUE(cluster.WaitForNodeLog(1, "stalled half written", 10000)) << cluster.Tail(1);

  // Node 1 still speaks, but node 0 waits for its batches: reported within
  // a bounded time, and clients hear why.
  const std::string expected = "waiting for node 1 at 127.0.0.1:" +
                               std::to_string(cluster.node(1).port()) + ", stuck at epoch ";
  ASSERT_TRUE(WaitUntil(
      [&] {
        return AskStatus(cluster.node(0), &status, 300) &&
               status.problem().find(expected) != std::string::npos;
      },
      15000))
      << "not reported: " << status.problem() << "\n" << cluster.Tail(0);
  Client client;
  ASSERT_EQ(client.Connect(ClientEndpoint(cluster.node(0))), "");
  ClientReply reply;
  ASSERT_EQ(client.Call(Client::Put({{1, "x"}}), &reply, 3000), "") << "a timeout, not an error";
  EXPECT_EQ(reply.status(), UNAVAILABLE);
  EXPECT_NE(reply.error().find(expected), std::string::npos) << reply.error();
  EXPECT_EQ(cluster.Verb("status", {}, &output), 1) << output;
  EXPECT_NE(output.find(expected), std::string::npos) << output;
  // Node 1 never drains its stuck checkpoint: stop kills it after a while.
  cluster.Verb("stop", {"--stop_timeout=3"}, &output);
}

}  // namespace
}  // namespace paxflow
