// Clients fail over with replicated input (issue 17 item 4): real
// paxflow-node processes on one partition replicated three times; client
// threads (FailoverClient, given every replica) run bank transfers under
// request ids while the group's leader is killed with SIGKILL mid-stream.
// The clients find the new leader by themselves; afterwards every
// acknowledged transfer is in the balances exactly once (each client moves
// 1 from its own account to its own other account, so its two balances
// count its transfers), deliberate resends of acknowledged request ids are
// answered "already applied" and change nothing, and the survivors'
// digests agree.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "applications/bank.h"
#include "client/client.h"
#include "tests/test_cluster.h"

namespace paxflow::testing {
namespace {

constexpr int kTimeoutMs = 30000;
constexpr int kClients = 3;
constexpr int64_t kInitial = 1000000;

TEST(ClientFailoverClusterTest, ClientsFollowTheLeaderAndEveryAckedTransferAppliesOnce) {
  TestCluster cluster("client-failover", 1, 3, TransferFlags(kClients, kInitial, 0),
                      ReplicatedInput);
  cluster.Start();
  StatusReply before;
  const int leader = WaitGroupLeader(cluster, {0, 1, 2}, &before, kTimeoutMs);
  ASSERT_GE(leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);

  // A follower refuses a txn, retryably, and names the leader (once its
  // periodic problem check no longer says UNAVAILABLE: no leader yet).
  {
    Client client;
    client.Connect(ClientEndpoint(cluster.node((leader + 1) % 3)));
    ClientReply reply;
    ASSERT_TRUE(WaitUntil(
        [&] {
          return client.Call(Transfer(0, 1), &reply, kTimeoutMs).empty() &&
                 reply.status() != UNAVAILABLE;
        },
        kTimeoutMs))
        << reply.error();
    EXPECT_EQ(reply.status(), NOT_LEADER) << reply.error();
    EXPECT_EQ(reply.leader_node(), leader) << reply.error();
    EXPECT_EQ(reply.leader_address(), ClientEndpoint(cluster.node(leader)));
    EXPECT_NE(reply.error().find("the leader is node " + std::to_string(leader)),
              std::string::npos)
        << reply.error();
  }

  // Each client starts at another replica (two at a follower: redirected).
  std::vector<std::unique_ptr<TransferClient>> clients;
  for (int c = 0; c < kClients; ++c) {
    std::vector<std::string> endpoints;
    for (int i = 0; i < 3; ++i) endpoints.push_back(ClientEndpoint(cluster.node((c + i) % 3)));
    clients.push_back(std::make_unique<TransferClient>(c, endpoints, kTimeoutMs));
  }
  auto all_acked = [&](int count) {
    for (const auto& client : clients) {
      if (client->acked() < count || client->failed() > 0) return client->failed() > 0;
    }
    return true;
  };
  ASSERT_TRUE(WaitUntil([&] { return all_acked(30); }, kTimeoutMs));
  for (const auto& client : clients) ASSERT_EQ(client->failed(), 0) << client->first_failure();

  // Kill the leader mid-stream.
  std::vector<int> survivors;
  for (int i = 0; i < 3; ++i) {
    if (i != leader) survivors.push_back(i);
  }
  const std::vector<pid_t> pids = cluster.verbs().Pids();
  ASSERT_EQ(pids.size(), 3u);
  std::vector<int> at_kill;
  for (const auto& client : clients) at_kill.push_back(client->acked());
  ASSERT_EQ(kill(pids[leader], SIGKILL), 0);

  // The clients carry on by themselves, at the new leader.
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (int c = 0; c < kClients; ++c) {
          if (clients[c]->failed() > 0) return true;
          if (clients[c]->acked() < at_kill[c] + 30) return false;
        }
        return true;
      },
      3 * kTimeoutMs))
      << cluster.Tail(survivors[0]) << cluster.Tail(survivors[1]);
  for (auto& client : clients) client->Stop();
  StatusReply after;
  const int next = WaitGroupLeader(cluster, survivors, &after, kTimeoutMs);
  ASSERT_GE(next, 0);
  uint64_t redirects = 0, timeouts = 0;
  for (int c = 0; c < kClients; ++c) {
    EXPECT_EQ(clients[c]->failed(), 0) << clients[c]->first_failure();
    EXPECT_GT(clients[c]->resent_already_applied(), 0);
    EXPECT_EQ(clients[c]->client().endpoint(), ClientEndpoint(cluster.node(next)));
    redirects += clients[c]->client().counters().redirects;
    timeouts += clients[c]->client().counters().timeouts;
  }
  std::printf("clients: node %d killed, node %d leads; %llu redirects, %llu timeouts\n", leader,
              next, static_cast<unsigned long long>(redirects),
              static_cast<unsigned long long>(timeouts));
  for (int c = 0; c < kClients; ++c) {
    const FailoverCounters& n = clients[c]->client().counters();
    std::printf("  client %d: %d acked (%d at the kill), %llu tries, %llu redirects, %llu timeouts, "
                "%llu refusals\n",
                c, clients[c]->acked(), at_kill[c], static_cast<unsigned long long>(n.tries),
                static_cast<unsigned long long>(n.redirects),
                static_cast<unsigned long long>(n.timeouts),
                static_cast<unsigned long long>(n.unavailable));
  }
  std::fflush(stdout);

  // Acknowledged request ids sent again after the failover, to the new
  // leader (whose window was built from the committed log as a follower):
  // already applied, nothing runs. Exactly once: each client's two
  // balances moved by its acked count.
  ExpectResendsAlreadyApplied(clients);
  ExpectEachTransferOnce(cluster, survivors, clients, kInitial, kTimeoutMs);

  // The survivors agree at a common epoch ahead of both.
  ExpectDigestsAgree(cluster, survivors, kTimeoutMs);
  std::string output;
  cluster.Verb("stop", {"--stop_timeout=30"}, &output);
}

// paxflow-load on the same kind of cluster, started at replica 0: it finds
// the leader, and when the leader is killed mid-run its clients move what
// they have in flight to the new leader by themselves; the run ends with
// no error, no lost reply and every audit right.
TEST(ClientFailoverClusterTest, PaxflowLoadFollowsTheLeaderThroughAKill) {
  TestCluster cluster("load-failover", 1, 3,
                      {"--duration=0", "--workload=bank", "--generate=false",
                       "--bank_accounts=100", "--checkpoint_every=0"},
                      ReplicatedInput);
  cluster.Start();
  StatusReply before;
  const int leader = WaitGroupLeader(cluster, {0, 1, 2}, &before, kTimeoutMs);
  ASSERT_GE(leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  auto load = std::async(std::launch::async, [&] {
    std::string output;
    const int rc = RunProcess(
        {BinaryDir() + "/paxflow-load", "--config=" + cluster.config_path(), "--workload=bank",
         "--bank_accounts=100", "--audit_fraction=0.1", "--duration=10", "--clients=2",
         "--outstanding=20", "--drain_ms=20000"},
        &output);
    return std::make_pair(rc, output);
  });
  // Mid-run: once the leader has answered a good number of client txns.
  if (!WaitUntil(
          [&] {
            StatusReply status;
            return AskStatus(cluster.node(leader), &status) &&
                   status.client_txns_answered() > 2000;
          },
          kTimeoutMs)) {
    FAIL() << "the leader answered too few client txns; paxflow-load said:\n"
           << load.get().second;
  }
  const std::vector<pid_t> pids = cluster.verbs().Pids();
  ASSERT_EQ(pids.size(), 3u);
  ASSERT_EQ(kill(pids[leader], SIGKILL), 0);
  const auto [rc, output] = load.get();
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("[CLIENT], Failovers"), std::string::npos) << output;
  EXPECT_NE(output.find("[CLIENT], Lost(no reply), 0"), std::string::npos) << output;
  EXPECT_NE(output.find("[BANK], AuditViolations, 0"), std::string::npos) << output;
  std::string stop_output;
  cluster.Verb("stop", {"--stop_timeout=30"}, &stop_output);
}

}  // namespace
}  // namespace paxflow::testing
