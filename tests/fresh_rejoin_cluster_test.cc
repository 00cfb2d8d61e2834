// Rejoin on an empty disk with replicated input (issue 17 item 5): real
// paxflow-node processes on one partition replicated three times under
// transfer clients; a member killed with SIGKILL, every file of it removed
// from its log directory (its input, sequencer and reads logs, its
// checkpoints, its consensus data node-<id>.raft), and restarted
// (paxflow-cluster restart --node=ID). It copies a live peer's newest
// checkpoint and committed epochs (node/state_transfer.h), comes back into
// its group under its old id as a follower, catches up and serves again:
// its digest equals the others', and every acknowledged transfer is
// applied exactly once. Checkpoints every second, so the group has trimmed
// its consensus log past anything the member could be sent from it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
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

// Every file of node `i` in `dir` is gone, as on a new disk.
void WipeNode(const std::string& dir, int i) {
  const std::string name = "node-" + std::to_string(i);
  int removed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (file.size() > name.size() && file.compare(0, name.size(), name) == 0 &&
        (file[name.size()] == '.' || file[name.size()] == '@')) {
      std::filesystem::remove_all(entry.path());
      ++removed;
    }
  }
  ASSERT_GT(removed, 0) << "no file of node " << i << " in " << dir;
}

// Kills `victim` (the leader or a follower) under transfer clients, wipes
// its files (or keeps them: `wipe` false), restarts it with
// `restart_flags`, and checks that it catches up as a follower and agrees
// with the others.
void KillWipeRestart(const char* name, bool kill_leader, bool wipe,
                     const std::vector<std::string>& restart_flags) {
  TestCluster cluster(name, 1, 3,
                      TransferFlags(2 * kClients, kInitial, {"--checkpoint_every=1"}),
                      ReplicatedInput);
  int leader = -1;
  std::vector<std::unique_ptr<TransferClient>> clients;
  ASSERT_NO_FATAL_FAILURE(StartTransferGroup(&cluster, 3, kClients, kTimeoutMs, &leader, &clients));
  auto wait_acked = [&](int more) { return WaitEachAcked(clients, more, 3 * kTimeoutMs); };
  // The group has trimmed its consensus log (a checkpoint every node holds).
  ASSERT_TRUE(WaitUntil(
      [&] {
        StatusReply s;
        return AskStatus(cluster.node(leader), &s, 500) && s.group_trimmed_epoch() > 0;
      },
      kTimeoutMs))
      << cluster.Tail(leader);

  const int victim = kill_leader ? leader : (leader + 1) % 3;
  cluster.Kill(victim);
  if (wipe) WipeNode(cluster.input(), victim);
  std::vector<int> survivors;
  for (int i : kAll) {
    if (i != victim) survivors.push_back(i);
  }
  StatusReply status;
  const int next = WaitGroupLeader(cluster, survivors, &status, kTimeoutMs);
  ASSERT_GE(next, 0) << cluster.Tail(survivors[0]) << cluster.Tail(survivors[1]);
  ASSERT_TRUE(wait_acked(30));  // the group goes on without it

  cluster.Restart(victim, restart_flags);
  ASSERT_TRUE(wait_acked(30));  // and with it
  // Caught up with the leader as a follower, and running.
  StatusReply leader_status;
  ASSERT_TRUE(AskStatus(cluster.node(next), &leader_status));
  StatusReply back;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return AskStatus(cluster.node(victim), &back, 500) &&
               back.group_committed_epoch() >= leader_status.group_committed_epoch() &&
               back.state() == "running";
      },
      kTimeoutMs))
      << "node " << victim << " at " << back.group_committed_epoch() << " (" << back.state()
      << "), leader at " << leader_status.group_committed_epoch() << "\n" << cluster.Tail(victim);
  EXPECT_EQ(back.group_role(), "follower");
  EXPECT_EQ(back.group_leader(), next);
  if (!wipe) {
    // What it held was moved aside, not deleted.
    bool aside = false;
    for (const auto& entry : std::filesystem::directory_iterator(cluster.input())) {
      const std::string file = entry.path().filename().string();
      if (file.rfind("replaced-node-" + std::to_string(victim) + "-", 0) == 0) {
        aside = std::filesystem::exists(entry.path() / ("node-" + std::to_string(victim) + ".raft"));
      }
    }
    EXPECT_TRUE(aside) << "no replaced-node-" << victim << "-*/ holding its old files";
  }
  // It copied a peer's checkpoint, not the initial data.
  const std::string log = cluster.NodeLog(victim);
  EXPECT_NE(log.find("'s checkpoint at epoch"), std::string::npos) << cluster.Tail(victim);
  EXPECT_NE(log.find("loaded the checkpoint at epoch"), std::string::npos) << cluster.Tail(victim);
  for (const char* what : {"copied node", "takes it back", "loaded the checkpoint", "recovering:",
                           "rejoins its partition", "fetched them from a peer"}) {
    for (size_t at = log.find(what); at != std::string::npos; at = log.find(what, at + 1)) {
      const size_t begin = log.rfind('\n', at) + 1;
      std::printf("%s\n", log.substr(begin, log.find('\n', at) - begin).c_str());
    }
  }
  std::fflush(stdout);

  for (auto& client : clients) client->Stop();
  for (const auto& client : clients) EXPECT_EQ(client->failed(), 0) << client->first_failure();
  // Acknowledged ids sent again are dropped by all three, the copied
  // member through the window its copied checkpoint held.
  ExpectResendsAlreadyApplied(clients);
  ExpectEachTransferOnce(cluster, kAll, clients, kInitial, kTimeoutMs);
  EXPECT_GT(ExpectDigestsAgree(cluster, kAll, kTimeoutMs), 0u);
  std::string output;
  EXPECT_EQ(cluster.Verb("stop", {"--stop_timeout=30"}, &output), 0) << output;
}

TEST(FreshRejoinClusterTest, FollowerOnAnEmptyDiskCopiesAPeerAndCatchesUp) {
  KillWipeRestart("fresh-follower", /*kill_leader=*/false, /*wipe=*/true, {});
}

// --from_peer over files it still has (as for a member behind its group's
// trimmed log): they are moved aside, and it copies a peer all the same.
TEST(FreshRejoinClusterTest, FromPeerMovesItsOwnFilesAsideAndCopiesAPeer) {
  KillWipeRestart("fresh-aside", /*kill_leader=*/false, /*wipe=*/false, {"--from_peer"});
}

TEST(FreshRejoinClusterTest, OldLeaderOnAnEmptyDiskCopiesAPeerAndFollows) {
  KillWipeRestart("fresh-leader", /*kill_leader=*/true, /*wipe=*/true, {});
}

}  // namespace
}  // namespace paxflow::testing
