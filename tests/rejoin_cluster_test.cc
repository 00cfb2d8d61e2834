// Rejoin with replicated input (issue 17 item 5): real paxflow-node
// processes on one partition replicated three times, a member killed with
// SIGKILL and restarted on its own log directory (paxflow-cluster restart
// --node=ID, i.e. --recover). It loads its checkpoint (with the request-id
// window saved in it), replays its logs, reopens its consensus data and
// takes the group's entries after the last epoch it ran, as a follower;
// then all three replicas agree at a common epoch. Checkpoints every
// second, so the group trims its log and the restart goes through a
// checkpoint's window. Afterwards each replica's log replays offline to
// its final digest.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/test_cluster.h"

namespace paxflow::testing {
namespace {

constexpr int kTimeoutMs = 30000;
constexpr int kClients = 3;
constexpr int64_t kInitial = 1000000;
const std::vector<int> kAll = {0, 1, 2};

// Node `i` holds a checkpoint (so that its restart starts from one).
void WaitForCheckpoint(const TestCluster& cluster, int i) {
  ASSERT_TRUE(WaitUntil(
      [&] {
        StatusReply status;
        return AskStatus(cluster.node(i), &status, 500) && status.checkpoint_epoch() > 0 &&
               status.group_trimmed_epoch() > 0;
      },
      kTimeoutMs))
      << cluster.Tail(i);
}

// Node `i` is back as a follower of `leader`, has caught up with it (its
// committed epoch reached what the leader had committed when asked) and
// runs.
void ExpectFollowerCaughtUp(const TestCluster& cluster, int i, int leader) {
  StatusReply leader_status;
  ASSERT_TRUE(AskStatus(cluster.node(leader), &leader_status));
  StatusReply status;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return AskStatus(cluster.node(i), &status, 500) &&
               status.group_committed_epoch() >= leader_status.group_committed_epoch() &&
               status.state() == "running";
      },
      kTimeoutMs))
      << "node " << i << " at epoch " << status.group_committed_epoch() << " ("
      << status.state() << "), the leader was at " << leader_status.group_committed_epoch()
      << "\n" << cluster.Tail(i);
  EXPECT_EQ(status.group_role(), "follower");
  EXPECT_EQ(status.group_leader(), leader);
  // Both status verbs name the leader and how far each follower is.
  std::string output;
  cluster.Verb("status", &output);
  EXPECT_NE(output.find("partition 0: leader node " + std::to_string(leader)), std::string::npos)
      << output;
  EXPECT_NE(output.find("node " + std::to_string(i) + " at epoch"), std::string::npos) << output;
  const size_t line = output.find("partition 0: ");
  if (line != std::string::npos) {
    std::printf("status: %s\n", output.substr(line, output.find('\n', line) - line).c_str());
  }
  RunProcess({BinaryDir() + "/paxflow-cli", "--config=" + cluster.config_path(), "status"},
             &output);
  EXPECT_NE(output.find("partition 0: leader node " + std::to_string(leader)), std::string::npos)
      << output;
  EXPECT_NE(output.find("node " + std::to_string(i) + " at epoch"), std::string::npos) << output;
  // It rebuilt the request-id window from a checkpoint, not from nothing.
  const std::string log = cluster.NodeLog(i);
  const size_t rejoined = log.find("rejoins its partition's consensus group as a follower");
  EXPECT_NE(rejoined, std::string::npos) << cluster.Tail(i);
  EXPECT_EQ(log.find("request-id window of epoch 0 ", rejoined), std::string::npos)
      << cluster.Tail(i);
  // What it did, for the test's output.
  for (const char* what : {"loaded the checkpoint", "rejoins its partition", "recovering:"}) {
    const size_t at = log.rfind(what);
    if (at == std::string::npos) continue;
    const size_t begin = log.rfind('\n', at) + 1;
    std::printf("%s\n", log.substr(begin, log.find('\n', at) - begin).c_str());
  }
  std::fflush(stdout);
}

TEST(RejoinClusterTest, FollowerKilledUnderLoadRejoinsAndEveryAckedTransferAppliesOnce) {
  TestCluster cluster("rejoin-follower", 1, 3, TransferFlags(2 * kClients, kInitial, {"--checkpoint_every=1"}),
                      ReplicatedInput);
  int leader = -1;
  std::vector<std::unique_ptr<TransferClient>> clients;
  ASSERT_NO_FATAL_FAILURE(StartTransferGroup(&cluster, 3, kClients, kTimeoutMs, &leader, &clients));
  auto wait_acked = [&](int more) { return WaitEachAcked(clients, more, 3 * kTimeoutMs); };
  const int follower = (leader + 1) % 3;
  WaitForCheckpoint(cluster, follower);

  // Killed under load; the group goes on without it.
  cluster.Kill(follower);
  ASSERT_TRUE(wait_acked(30));
  // Back: it catches up while the clients go on.
  cluster.Restart(follower);
  ASSERT_TRUE(wait_acked(30));
  ExpectFollowerCaughtUp(cluster, follower, leader);
  for (auto& client : clients) client->Stop();
  for (const auto& client : clients) EXPECT_EQ(client->failed(), 0) << client->first_failure();

  // Acknowledged ids from before the kill sent again: every member drops
  // them, the restarted one through the window its checkpoint saved (had
  // it run one, its digest would differ below).
  ExpectResendsAlreadyApplied(clients);
  ExpectEachTransferOnce(cluster, kAll, clients, kInitial, kTimeoutMs);
  EXPECT_GT(ExpectDigestsAgree(cluster, kAll, kTimeoutMs), 0u);
  StatusReply status;
  EXPECT_EQ(GroupLeader(cluster, kAll, &status), leader);
  std::string output;
  EXPECT_EQ(cluster.Verb("stop", {"--stop_timeout=30"}, &output), 0) << output;
}

TEST(RejoinClusterTest, LeaderKilledTheOldLeaderRejoinsAsAFollowerAndCatchesUp) {
  TestCluster cluster("rejoin-leader", 1, 3, {"--duration=0", "--checkpoint_every=1"},
                      ReplicatedInput);
  cluster.Start();
  StatusReply status;
  const int leader = WaitGroupLeader(cluster, kAll, &status, kTimeoutMs);
  ASSERT_GE(leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  WaitForCheckpoint(cluster, leader);

  cluster.Kill(leader);
  std::vector<int> survivors;
  for (int i : kAll) {
    if (i != leader) survivors.push_back(i);
  }
  const int next = WaitGroupLeader(cluster, survivors, &status, kTimeoutMs);
  ASSERT_GE(next, 0) << cluster.Tail(survivors[0]) << cluster.Tail(survivors[1]);
  cluster.ExpectProgress(survivors, 200);  // a while away

  cluster.Restart(leader);
  ExpectFollowerCaughtUp(cluster, leader, next);
  // It does not take leadership back (pre-vote): the new leader stays.
  EXPECT_EQ(GroupLeader(cluster, kAll, &status), next);
  cluster.ExpectProgress(kAll, 50);
  EXPECT_GT(ExpectDigestsAgree(cluster, kAll, kTimeoutMs), 0u);

  // Stopped, all three drain to the same final epoch and digest.
  std::string output;
  EXPECT_EQ(cluster.Verb("stop", {"--stop_timeout=30"}, &output), 0) << output;
  RunSummary summaries[3];
  for (int i : kAll) {
    const std::string path = cluster.logs() + "/node-" + std::to_string(i) + ".json";
    ASSERT_EQ(RunSummary::FromJson(ReadFile(path), &summaries[i]), "") << path << "\n" << output;
  }
  for (int i : {1, 2}) {
    EXPECT_EQ(summaries[i].digest_epoch, summaries[0].digest_epoch);
    EXPECT_EQ(DigestHex(summaries[i].digest), DigestHex(summaries[0].digest));
  }
  // Each replica's log, the restarted one's too, replays offline (no
  // consensus group: the recorded replicated_input is not the replay's)
  // to its final digest.
  for (int i : kAll) {
    std::string replay;
    EXPECT_EQ(ReplayDigest(cluster.input(), cluster.node(i).replica(), &replay),
              DigestHex(summaries[i].digest))
        << "node " << i << ":\n" << replay;
  }
}

}  // namespace
}  // namespace paxflow::testing
