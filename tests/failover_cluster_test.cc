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
#include <future>
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

}  // namespace
}  // namespace paxflow::testing
