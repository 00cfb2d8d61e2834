// Replicated input on one partition replicated three times (issue 17):
// real paxflow-node processes with the embedded generator, the group's
// leader killed with SIGKILL. Another replica leads and the cluster goes on
// sequencing with the default timeouts; the two survivors reach the same
// digest at a common epoch and at the end. The failover time (kill to a
// survivor leading with a newer committed epoch) is printed.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "client/client.h"
#include "tests/test_cluster.h"

namespace paxflow::testing {
namespace {

constexpr int kTimeoutMs = 20000;

TEST(FailoverClusterTest, LeaderKilledAnotherLeadsAndTheSurvivorsAgree) {
  TestCluster cluster("failover", 1, 3, {"--duration=0"}, ReplicatedInput);
  cluster.Start();
  const std::vector<int> all = {0, 1, 2};
  StatusReply before;
  const int leader = WaitGroupLeader(cluster, all, &before, kTimeoutMs);
  ASSERT_GE(leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  cluster.ExpectProgress(all, 50);
  // Clients: the leader takes txns, a follower sends them there.
  {
    Client client;
    client.Connect(ClientEndpoint(cluster.node((leader + 1) % 3)));
    ClientReply reply;
    ASSERT_EQ(client.Call(Client::Put({{7, "x"}}), &reply, kTimeoutMs), "");
    EXPECT_EQ(reply.status(), NOT_LEADER) << reply.error();
  }
  {
    Client client;
    client.Connect(ClientEndpoint(cluster.node(leader)));
    ClientReply reply;
    ASSERT_EQ(client.Call(Client::Put({{7, "x"}}), &reply, kTimeoutMs), "");
    EXPECT_EQ(reply.status(), OK) << reply.error();
  }

  std::vector<int> survivors;
  for (int i : all) {
    if (i != leader) survivors.push_back(i);
  }
  StatusReply at_kill;
  ASSERT_TRUE(AskStatus(cluster.node(leader), &at_kill));
  const std::vector<pid_t> pids = cluster.verbs().Pids();
  ASSERT_EQ(pids.size(), 3u);
  const auto killed = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(pids[leader], SIGKILL), 0);

  // Another leads, and commits epochs past what the dead one had.
  StatusReply after;
  int next = -1;
  ASSERT_TRUE(WaitUntil(
      [&] {
        next = GroupLeader(cluster, survivors, &after);
        return next >= 0 && after.group_committed_epoch() > at_kill.group_committed_epoch();
      },
      kTimeoutMs))
      << cluster.Tail(survivors[0]) << cluster.Tail(survivors[1]);
  const double failover_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::printf("failover: node %d killed, node %d leads after %.2f s (term %llu -> %llu)\n", leader,
              next, failover_s, static_cast<unsigned long long>(before.group_term()),
              static_cast<unsigned long long>(after.group_term()));
  std::fflush(stdout);
  // The target is 3 s with the default timeouts: 20 kills took
  // 1.65 to 2.08 s but one 3.03 s (docs/design.md). The bound here leaves
  // room for a slow election on a loaded machine; a broken failover never
  // gets there at all.
  EXPECT_LT(failover_s, 4.0);
  EXPECT_GT(after.group_term(), before.group_term());

  // Both survivors go on, and agree at an epoch ahead of both.
  cluster.ExpectProgress(survivors, 100);
  const Epoch ahead = ExpectDigestsAgree(cluster, survivors, kTimeoutMs);
  // The new leader takes txns now, and they commit.
  {
    Client client;
    client.Connect(ClientEndpoint(cluster.node(next)));
    ClientReply reply;
    ASSERT_EQ(client.Call(Client::Put({{8, "y"}}), &reply, kTimeoutMs), "");
    EXPECT_EQ(reply.status(), OK) << reply.error();
  }

  // Stopped, the survivors drain to the same final epoch and digest (the
  // verb itself fails: the killed node left no summary).
  std::string output;
  cluster.Verb("stop", {"--stop_timeout=30"}, &output);
  RunSummary summaries[2];
  for (int s = 0; s < 2; ++s) {
    const std::string path = cluster.logs() + "/node-" + std::to_string(survivors[s]) + ".json";
    ASSERT_EQ(RunSummary::FromJson(ReadFile(path), &summaries[s]), "") << path << "\n" << output;
  }
  EXPECT_GT(summaries[0].digest_epoch, ahead);
  EXPECT_EQ(summaries[0].digest_epoch, summaries[1].digest_epoch);
  EXPECT_EQ(DigestHex(summaries[0].digest), DigestHex(summaries[1].digest));
}

// Replica 0 stands first (a short first election timeout), so a fresh
// group leads within moments; checkpoints every second trim every member's
// consensus log (libraft takes a snapshot there), and the three replicas go
// on and agree.
TEST(FailoverClusterTest, ReplicaZeroLeadsFirstAndCheckpointsTrimTheConsensusLog) {
  TestCluster cluster("trim", 1, 3, {"--duration=0", "--checkpoint_every=1"}, ReplicatedInput);
  cluster.Start();
  const std::vector<int> all = {0, 1, 2};
  StatusReply leader_status;
  int leader = -1;
  ASSERT_TRUE(WaitUntil([&] { return (leader = GroupLeader(cluster, all, &leader_status)) >= 0; },
                        kTimeoutMs))
      << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  // Without the short first timeout any of the three wins, after 1-2
  // election timeouts (1-2 s).
  EXPECT_EQ(leader, 0) << "replica 0 should win the first election";

  std::vector<StatusReply> trimmed(3);
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (int i : all) {
          if (!AskStatus(cluster.node(i), &trimmed[i], 500) || trimmed[i].group_trimmed_epoch() == 0) {
            return false;
          }
        }
        return true;
      },
      kTimeoutMs))
      << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  for (int i : all) {
    EXPECT_LE(trimmed[i].group_trimmed_epoch(), trimmed[i].checkpoint_epoch()) << "node " << i;
    // libraft wrote the snapshot the trim asked for (at the next commit).
    const std::string raft_dir = cluster.input() + "/node-" + std::to_string(i) + ".raft";
    EXPECT_TRUE(WaitUntil(
        [&] {
          for (const auto& entry : std::filesystem::directory_iterator(raft_dir)) {
            if (entry.path().filename().string().rfind("snapshot-", 0) == 0) return true;
          }
          return false;
        },
        kTimeoutMs))
        << raft_dir << " holds no snapshot";
  }

  // All three go on past the trim and agree.
  EXPECT_GT(ExpectDigestsAgree(cluster, all, kTimeoutMs), 0u);
  std::string output;
  EXPECT_EQ(cluster.Verb("stop", {"--stop_timeout=30"}, &output), 0) << output;
}

// Two partitions, three replicas each (local-2x3's shape), 10% of txns
// multi-partition: partition 1's leader is killed. Another replica of
// partition 1 leads and sends partition 0 its batches from there on, so
// both partitions go on; each partition's survivors agree. Partition 0's
// node of the killed one's replica gets partition 1's reads from a live
// replica of partition 1 that stands in for the dead node (ReadExchange's
// stand-ins): before that, it got them only as each txn was found overdue,
// and the survivors took 70-80 s to agree.
TEST(FailoverClusterTest, TwoGroupsOneLeaderKilledBothPartitionsGoOn) {
  TestCluster cluster("failover2", 2, 3, {"--duration=0", "--multi_partition_pct=10"},
                      ReplicatedInput);
  cluster.Start();
  std::vector<int> groups[2];
  for (int i = 0; i < cluster.config().node_size(); ++i) {
    groups[cluster.config().node(i).partition()].push_back(i);
  }
  StatusReply before;
  int leaders[2] = {-1, -1};
  for (int p = 0; p < 2; ++p) {
    ASSERT_TRUE(WaitUntil([&] { return (leaders[p] = GroupLeader(cluster, groups[p], &before)) >= 0; },
                          kTimeoutMs))
        << "partition " << p << cluster.Tail(groups[p][0]);
  }
  std::vector<int> all;
  for (int i = 0; i < cluster.config().node_size(); ++i) all.push_back(i);
  cluster.ExpectProgress(all, 50);

  StatusReply at_kill;
  ASSERT_TRUE(AskStatus(cluster.node(leaders[1]), &at_kill));
  const std::vector<pid_t> pids = cluster.verbs().Pids();
  ASSERT_EQ(pids.size(), all.size());
  ASSERT_EQ(kill(pids[leaders[1]], SIGKILL), 0);
  std::vector<int> survivors1;
  for (int i : groups[1]) {
    if (i != leaders[1]) survivors1.push_back(i);
  }
  StatusReply after;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return GroupLeader(cluster, survivors1, &after) >= 0 &&
               after.group_committed_epoch() > at_kill.group_committed_epoch();
      },
      kTimeoutMs))
      << cluster.Tail(survivors1[0]) << cluster.Tail(survivors1[1]);

  // Partition 0 runs on: it gets partition 1's batches from the new leader.
  std::vector<int> alive;
  for (int i : all) {
    if (i != leaders[1]) alive.push_back(i);
  }
  cluster.ExpectProgress(alive, 100);
  // The dead node's peer of partition 0 lost its source of partition 1's
  // reads: a live replica of partition 1 stands in, and it keeps up.
  for (const std::vector<int>& group : groups) {
    std::vector<int> live;
    for (int i : group) {
      if (i != leaders[1]) live.push_back(i);
    }
    EXPECT_GT(ExpectDigestsAgree(cluster, live, kTimeoutMs), 0u);
  }
  std::string output;
  cluster.Verb("stop", {"--stop_timeout=30"}, &output);
  const uint32_t replica = cluster.config().node(leaders[1]).replica();
  int orphan = -1;  // partition 0's node in the killed one's replica
  for (int i : groups[0]) {
    if (cluster.config().node(i).replica() == replica) orphan = i;
  }
  ASSERT_GE(orphan, 0);
  EXPECT_NE(cluster.NodeLog(orphan).find("to stand in for it"), std::string::npos)
      << cluster.Tail(orphan);
}

}  // namespace
}  // namespace paxflow::testing
