// Clients fail over with replicated input (issue 17 item 4): real
// paxflow-node processes on one partition replicated three times; client
// threads (FailoverClient, given every replica) run bank transfers under
// request ids while the group's leader is killed with SIGKILL mid-stream.
// The clients find the new leader by themselves; afterwards every
// acknowledged transfer is in the balances exactly once (each client moves
// 1 from its own account to its own other account, so its two balances
// count its transfers), deliberate resends of acknowledged request ids
// (transfers', and an LTX's sent before the kill) are answered "already
// applied" and change nothing, and the survivors' digests agree. Also the other fault tests of item 7 and the nemesis
// (NemesisClusterTest: members killed and restarted, or stopped and
// resumed, under transfers).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <random>
#include <regex>
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

// kClients TransferClients, client c starting at replica (c + first) % 3.
std::vector<std::unique_ptr<TransferClient>> StartTransferClients(const TestCluster& cluster,
                                                                  int first = 0) {
  std::vector<std::unique_ptr<TransferClient>> clients;
  for (int c = 0; c < kClients; ++c) {
    std::vector<std::string> endpoints;
    for (int i = 0; i < 3; ++i) {
      endpoints.push_back(ClientEndpoint(cluster.node((c + first + i) % 3)));
    }
    clients.push_back(std::make_unique<TransferClient>(c, endpoints, kTimeoutMs));
  }
  return clients;
}

std::vector<int> AckedNow(const std::vector<std::unique_ptr<TransferClient>>& clients) {
  std::vector<int> acked;
  for (const auto& client : clients) acked.push_back(client->acked());
  return acked;
}

TEST(ClientFailoverClusterTest, ClientsFollowTheLeaderAndEveryAckedTransferAppliesOnce) {
  // Two accounts after the clients' for an LTX under a request id.
  constexpr uint64_t kLtxFrom = 2 * kClients, kLtxTo = 2 * kClients + 1;
  TestCluster cluster("client-failover", 1, 3,
                      TransferFlags(2 * kClients + 2, kInitial, {"--checkpoint_every=0"}),
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
  std::vector<std::unique_ptr<TransferClient>> clients = StartTransferClients(cluster);
  ASSERT_TRUE(EachAckedMore(clients, std::vector<int>(kClients, 0), 30, kTimeoutMs));
  for (const auto& client : clients) ASSERT_EQ(client->failed(), 0) << client->first_failure();

  // An LTX under a request id, through a client of its own; it commits.
  FailoverOptions ltx_options;
  for (int i = 0; i < 3; ++i) ltx_options.endpoints.push_back(ClientEndpoint(cluster.node(i)));
  ltx_options.total_timeout_ms = 3 * kTimeoutMs;
  FailoverClient ltx_client(ltx_options);
  ClientRequest ltx = LtxTransfer(kLtxFrom, kLtxTo);
  ltx.mutable_ltx()->set_client_id(ltx_client.client_id());
  ltx.mutable_ltx()->set_client_seq(ltx_client.next_seq());
  ClientReply ltx_reply;
  ASSERT_EQ(ltx_client.Call(ltx, &ltx_reply), "");
  ASSERT_EQ(ltx_reply.status(), OK) << ltx_reply.error();
  ASSERT_TRUE(ltx_reply.txn().committed()) << ltx_reply.txn().ShortDebugString();

  // Kill the leader mid-stream.
  std::vector<int> survivors;
  for (int i = 0; i < 3; ++i) {
    if (i != leader) survivors.push_back(i);
  }
  const std::vector<pid_t> pids = cluster.verbs().Pids();
  ASSERT_EQ(pids.size(), 3u);
  const std::vector<int> at_kill = AckedNow(clients);
  ASSERT_EQ(kill(pids[leader], SIGKILL), 0);

  // The clients carry on by themselves, at the new leader.
  ASSERT_TRUE(EachAckedMore(clients, at_kill, 30, 3 * kTimeoutMs))
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
  // already applied, nothing runs.
  ExpectResendsAlreadyApplied(clients);
  // So is the LTX's: it does not begin again, and moved 1, once.
  ASSERT_EQ(ltx_client.Call(ltx, &ltx_reply), "");
  EXPECT_EQ(ltx_reply.status(), OK) << ltx_reply.error();
  EXPECT_TRUE(ltx_reply.txn().already_applied()) << ltx_reply.txn().ShortDebugString();
  {
    Client reader;
    reader.Connect(ClientEndpoint(cluster.node(next)));
    ClientReply read;
    ASSERT_EQ(reader.Call(Client::Get({kLtxFrom, kLtxTo}), &read, kTimeoutMs), "");
    ASSERT_EQ(read.txn().reads_size(), 2) << read.error();
    EXPECT_EQ(BankApplication::DecodeBalance(read.txn().reads(0).value()), kInitial - 1);
    EXPECT_EQ(BankApplication::DecodeBalance(read.txn().reads(1).value()), kInitial + 1);
  }

  ExpectEachTransferOnce(cluster, survivors, clients, kInitial, kTimeoutMs, 2 * kClients);

  // The survivors agree at a common epoch ahead of both.
  ExpectDigestsAgree(cluster, survivors, kTimeoutMs);
  std::string output;
  cluster.Verb("stop", {"--stop_timeout=30"}, &output);
}

// paxflow-load on the same kind of cluster, started at replica 0: it finds
// the leader, and when the leader is killed mid-run its clients move what
// they have in flight to the new leader by themselves; the run ends with
// no error, no lost reply and every audit right. `node_flags` are added
// to the nodes'; `load_flags`, when given, add LTXs to paxflow-load's load
// (and some must have run).
void LoadFollowsTheLeaderThroughAKill(const char* name, const std::vector<std::string>& node_flags,
                                      const std::vector<std::string>& load_flags) {
  std::vector<std::string> flags = {"--duration=0", "--workload=bank", "--generate=false",
                                    "--bank_accounts=100", "--checkpoint_every=0"};
  flags.insert(flags.end(), node_flags.begin(), node_flags.end());
  TestCluster cluster(name, 1, 3, flags, ReplicatedInput);
  cluster.Start();
  StatusReply before;
  const int leader = WaitGroupLeader(cluster, {0, 1, 2}, &before, kTimeoutMs);
  ASSERT_GE(leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  auto load = std::async(std::launch::async, [&] {
    std::string output;
    std::vector<std::string> command = {
        BinaryDir() + "/paxflow-load", "--config=" + cluster.config_path(), "--workload=bank",
        "--bank_accounts=100", "--audit_fraction=0.1", "--duration=10", "--clients=2",
        "--outstanding=20", "--drain_ms=20000"};
    command.insert(command.end(), load_flags.begin(), load_flags.end());
    const int rc = RunProcess(command, &output);
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
  if (!load_flags.empty()) {
    EXPECT_NE(output.find("[LTX], Operations, "), std::string::npos) << "no LTX ran:\n" << output;
  }
  std::string stop_output;
  cluster.Verb("stop", {"--stop_timeout=30"}, &stop_output);
}

TEST(ClientFailoverClusterTest, PaxflowLoadFollowsTheLeaderThroughAKill) {
  LoadFollowsTheLeaderThroughAKill("load-failover", {}, {});
}

// With LTXs under the record protocol among the transfers: they carry
// request ids too, so those in flight at the kill are sent again to the
// new leader and answered (committed, or aborted with the failover's
// reason), none lost.
TEST(ClientFailoverClusterTest, PaxflowLoadResendsItsLtxsThroughAKill) {
  LoadFollowsTheLeaderThroughAKill("load-ltx-failover", {"--ltx_in_place=false"},
                                   {"--ltx_fraction=0.02"});
}

// The minority side (issue 17 item 7): the leader of a 1x3 group is
// stopped with SIGSTOP under client transfers. The other two elect a new
// leader and the clients go on there; a txn sent to the stopped one while
// it is stopped gets no answer. After SIGCONT it steps down, answers that
// txn NOT_LEADER or UNAVAILABLE (it never ran: the accounts it would have
// moved hold their start), follows the new leader, catches up, and its
// digest equals the others' at a common epoch; every acknowledged transfer
// is in the balances exactly once.
TEST(ClientFailoverClusterTest, StoppedLeaderAcknowledgesNothingThenStepsDownAndCatchesUp) {
  constexpr uint64_t kAccounts = 2 * kClients + 2;  // the last two: the stopped leader's txn
  TestCluster cluster("minority", 1, 3,
                      TransferFlags(kAccounts, kInitial, {"--checkpoint_every=0"}),
                      ReplicatedInput);
  cluster.Start();
  const std::vector<int> all = {0, 1, 2};
  StatusReply before;
  const int leader = WaitGroupLeader(cluster, all, &before, kTimeoutMs);
  ASSERT_GE(leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  std::vector<std::unique_ptr<TransferClient>> clients = StartTransferClients(cluster, leader);
  ASSERT_TRUE(EachAckedMore(clients, std::vector<int>(kClients, 0), 30, kTimeoutMs));
  for (const auto& client : clients) ASSERT_EQ(client->failed(), 0) << client->first_failure();

  std::vector<int> majority;
  for (int i : all) {
    if (i != leader) majority.push_back(i);
  }
  const std::vector<pid_t> pids = cluster.verbs().Pids();
  ASSERT_EQ(pids.size(), 3u);
  ASSERT_EQ(kill(pids[leader], SIGSTOP), 0);
  bool stopped = true;
  struct Resume {  // never leave a stopped node behind (the cluster's stop would hang)
    pid_t pid;
    bool* stopped;
    ~Resume() {
      if (*stopped) kill(pid, SIGCONT);
    }
  } resume{pids[leader], &stopped};
  const std::vector<int> at_stop = AckedNow(clients);

  // A txn for the stopped leader: queued at its port, unanswered while it
  // is stopped.
  auto waiting = std::async(std::launch::async, [&] {
    Client client;
    client.Connect(ClientEndpoint(cluster.node(leader)));
    ClientReply reply;
    const std::string error = client.Call(Transfer(kAccounts - 2, kAccounts - 1), &reply, 3 * kTimeoutMs);
    return std::make_pair(error, reply);
  });

  // The majority elects a leader and the clients go on there.
  StatusReply after;
  const int next = WaitGroupLeader(cluster, majority, &after, kTimeoutMs);
  ASSERT_GE(next, 0) << cluster.Tail(majority[0]) << cluster.Tail(majority[1]);
  EXPECT_GT(after.group_term(), before.group_term());
  ASSERT_TRUE(EachAckedMore(clients, at_stop, 30, 3 * kTimeoutMs))
      << cluster.Tail(majority[0]) << cluster.Tail(majority[1]);
  for (const auto& client : clients) ASSERT_EQ(client->failed(), 0) << client->first_failure();
  EXPECT_EQ(waiting.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the stopped leader answered";

  // Resumed, it steps down and names the new leader.
  ASSERT_EQ(kill(pids[leader], SIGCONT), 0);
  stopped = false;
  const auto [error, reply] = waiting.get();
  ASSERT_EQ(error, "");
  EXPECT_TRUE(reply.status() == NOT_LEADER || reply.status() == UNAVAILABLE)
      << "status " << reply.status() << ": " << reply.error();
  std::printf("minority: node %d stopped, node %d leads; its waiting txn, resumed: %s (%s)\n",
              leader, next, ReplyStatus_Name(reply.status()).c_str(), reply.error().c_str());
  std::fflush(stdout);
  StatusReply old_leader;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return AskStatus(cluster.node(leader), &old_leader, 500) &&
               old_leader.group_role() != "leader" && old_leader.group_leader() == next;
      },
      kTimeoutMs))
      << "role " << old_leader.group_role() << ", leader " << old_leader.group_leader() << "\n"
      << cluster.Tail(leader);
  // It catches up: all three agree at a common epoch.
  ExpectDigestsAgree(cluster, all, kTimeoutMs);
  const std::vector<int> at_resume = AckedNow(clients);
  ASSERT_TRUE(EachAckedMore(clients, at_resume, 10, kTimeoutMs));
  for (auto& client : clients) client->Stop();
  for (const auto& client : clients) EXPECT_EQ(client->failed(), 0) << client->first_failure();
  ExpectEachTransferOnce(cluster, all, clients, kInitial, kTimeoutMs, kAccounts);
  ExpectDigestsAgree(cluster, all, kTimeoutMs);
  std::string output;
  cluster.Verb("stop", {"--stop_timeout=30"}, &output);
}

// A log disk fails under client transfers: a follower's (node 2; replica
// 0 leads first) or, with `under_leader`, the leader's (node 0) is `disk`
// (its --log_dir), and `fail` makes it fail. That node stops and its status
// names the failed write (one of `errors`, the errno's text or what the
// node adds, and a file under `disk`: its own logs or its consensus log,
// whichever write fails first); the other two go on (under a new leader
// if it led), no acknowledged transfer is lost or applied twice, and they
// agree.
void LogDiskFails(const char* name, const std::string& disk, const std::function<void()>& fail,
                  const std::vector<std::string>& errors, bool under_leader = false) {
  TestCluster cluster(name, 1, 3,
                      TransferFlags(2 * kClients, kInitial, {"--log_fsync", "--checkpoint_every=0"}),
                      ReplicatedInput);
  // Started by hand, so that the failing node's log directory is `disk`.
  const int failing = under_leader ? 0 : 2;  // the node whose disk fails
  std::vector<std::unique_ptr<ChildProcess>> nodes;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> extra;
    if (i == failing) extra.push_back("--log_dir=" + disk);
    std::string command = "exec";
    for (const std::string& arg : cluster.NodeCommand(i, extra)) command += " '" + arg + "'";
    std::filesystem::create_directories(cluster.logs());
    command += " >" + cluster.logs() + "/node-" + std::to_string(i) + ".out 2>&1";
    nodes.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{"/bin/sh", "-c", command}));
  }
  const std::vector<int> all = {0, 1, 2};
  StatusReply status;
  const int leader = WaitGroupLeader(cluster, all, &status, kTimeoutMs);
  ASSERT_GE(leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  if (!under_leader && leader == failing) {
    GTEST_SKIP() << "node 2 won the first election (replica 0 should)";
  }
  if (under_leader && leader != failing) {
    GTEST_SKIP() << "node " << leader << " won the first election (replica 0 should)";
  }
  std::vector<std::unique_ptr<TransferClient>> clients = StartTransferClients(cluster, leader);
  ASSERT_TRUE(EachAckedMore(clients, std::vector<int>(kClients, 0), 30, kTimeoutMs))
      << "before the disk failed; leader " << leader << "\n"
      << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);

  ASSERT_NO_FATAL_FAILURE(fail());
  const std::vector<int> at_failure = AckedNow(clients);
  StatusReply failed;
  ASSERT_TRUE(WaitUntil(
      [&] {
        if (!AskStatus(cluster.node(failing), &failed, 500)) return false;
        for (const std::string& error : errors) {
          if (failed.problem().find(error) != std::string::npos) return true;
        }
        return false;
      },
      kTimeoutMs))
      << "its problem: \"" << failed.problem() << "\"\n"
      << cluster.Tail(failing);
  EXPECT_NE(failed.problem().find(disk + "/"), std::string::npos) << failed.problem();
  // The status says so as soon as the failure is noted; the log line follows.
  EXPECT_TRUE(cluster.WaitForNodeLog(failing, "STOPPED: ", 5000)) << cluster.Tail(failing);
  std::printf("failed node %d's status: %s\n", failing, failed.problem().c_str());
  std::fflush(stdout);

  // The other two go on.
  std::vector<int> others;
  for (int i : all) {
    if (i != failing) others.push_back(i);
  }
  ASSERT_TRUE(EachAckedMore(clients, at_failure, 30, 3 * kTimeoutMs))
      << cluster.Tail(others[0]) << cluster.Tail(others[1]);
  if (under_leader) {
    // One of the two leads now, and the failed node knows it no longer does.
    StatusReply now;
    const int next = WaitGroupLeader(cluster, others, &now, kTimeoutMs);
    EXPECT_GE(next, 0);
    EXPECT_NE(next, failing);
    std::printf("node %d's log disk failed while it led; node %d leads now\n", failing, next);
    std::fflush(stdout);
  }
  for (auto& client : clients) client->Stop();
  for (const auto& client : clients) EXPECT_EQ(client->failed(), 0) << client->first_failure();
  ExpectEachTransferOnce(cluster, others, clients, kInitial, kTimeoutMs, 2 * kClients);
  ExpectDigestsAgree(cluster, others, kTimeoutMs);
  for (auto& node : nodes) node->Signal(SIGKILL);
}

// The disk fills up (a small tmpfs the test mounts, filled to the last
// byte under the node: ENOSPC).
void FullLogDisk(const char* name, bool under_leader) {
  TmpfsDir disk;
  if (const std::string why = disk.Mount("64m"); !why.empty()) GTEST_SKIP() << why;
  LogDiskFails(name, disk.path(), [&] {
    std::ofstream filler(disk.path() + "/filler", std::ios::binary);
    const std::string chunk(1 << 16, 'x');
    while (filler.write(chunk.data(), chunk.size()) && filler.flush()) {
    }
  }, {"No space left on device"}, under_leader);
}

// The disk turns read-only while the node runs (an ext4 image the test
// mounts errors=remount-ro, then has the kernel remount read-only as on an
// I/O error: every write, to files open before too, fails EROFS; a sync
// in flight as the journal aborts fails EIO, and the node adds that its
// log directory is read-only now).
void ReadOnlyLogDisk(const char* name, bool under_leader) {
  Ext4Dir disk;
  if (const std::string why = disk.Mount(64, Ext4Dir::OnError::kRemountReadOnly); !why.empty()) {
    GTEST_SKIP() << why;
  }
  LogDiskFails(name, disk.path(), [&] { ASSERT_EQ(disk.FailReadOnly(), ""); },
               {"Read-only file system", "is read-only now"}, under_leader);
}

TEST(ClientFailoverClusterTest, FollowerLogDiskFailsNothingAckedIsLost) {
  FullLogDisk("disk-follower", /*under_leader=*/false);
}

TEST(ClientFailoverClusterTest, FollowerLogDiskTurnsReadOnlyNothingAckedIsLost) {
  ReadOnlyLogDisk("ro-follower", /*under_leader=*/false);
}

// The same under the leader: it stops sequencing, another replica leads,
// and nothing acknowledged is lost (clients follow the new leader).
TEST(ClientFailoverClusterTest, LeaderLogDiskFailsAnotherLeadsAndNothingAckedIsLost) {
  FullLogDisk("disk-leader", /*under_leader=*/true);
}

TEST(ClientFailoverClusterTest, LeaderLogDiskTurnsReadOnlyAnotherLeadsAndNothingAckedIsLost) {
  ReadOnlyLogDisk("ro-leader", /*under_leader=*/true);
}

// A leader deposed while alive (stopped with SIGSTOP until the others
// elect) may be elected again later in the same process: it must sequence
// again, or the group would keep a leader that does not. The leader is
// stopped round after round until the first one leads again; the clients
// go on after every round.
TEST(ClientFailoverClusterTest, ADeposedLeaderElectedAgainSequencesAgain) {
  TestCluster cluster("relead", 1, 3,
                      TransferFlags(2 * kClients, kInitial, {"--checkpoint_every=0"}),
                      ReplicatedInput);
  cluster.Start();
  const std::vector<int> all = {0, 1, 2};
  StatusReply status;
  const int first = WaitGroupLeader(cluster, all, &status, kTimeoutMs);
  ASSERT_GE(first, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  std::vector<std::unique_ptr<TransferClient>> clients = StartTransferClients(cluster, first);
  ASSERT_TRUE(EachAckedMore(clients, std::vector<int>(kClients, 0), 20, kTimeoutMs));
  const std::vector<pid_t> pids = cluster.verbs().Pids();
  ASSERT_EQ(pids.size(), 3u);
  int leader = first;
  int rounds = 0;
  do {
    ASSERT_LT(rounds, 16) << "node " << first << " was not elected again in 16 rounds";
    const std::vector<int> before = AckedNow(clients);
    std::vector<int> others;
    for (int i : all) {
      if (i != leader) others.push_back(i);
    }
    ASSERT_EQ(kill(pids[leader], SIGSTOP), 0);
    const int next = WaitGroupLeader(cluster, others, &status, kTimeoutMs);
    ASSERT_EQ(kill(pids[leader], SIGCONT), 0);  // before any assertion: never left stopped
    ASSERT_GE(next, 0) << "round " << rounds << cluster.Tail(others[0]) << cluster.Tail(others[1]);
    ASSERT_TRUE(EachAckedMore(clients, before, 10, 3 * kTimeoutMs))
        << "round " << rounds << ": node " << next << " leads" << cluster.Tail(0)
        << cluster.Tail(1) << cluster.Tail(2);
    for (const auto& client : clients) ASSERT_EQ(client->failed(), 0) << client->first_failure();
    leader = next;
    ++rounds;
  } while (leader != first);
  std::printf("relead: node %d leads again after %d rounds\n", first, rounds);
  std::fflush(stdout);
  for (auto& client : clients) client->Stop();
  ExpectEachTransferOnce(cluster, all, clients, kInitial, kTimeoutMs, 2 * kClients);
  ExpectDigestsAgree(cluster, all, kTimeoutMs);
  std::string output;
  cluster.Verb("stop", {"--stop_timeout=30"}, &output);
}

// The nemesis (issue 17 item 7), in the spirit of Jepsen's bank test:
// transfer clients and an auditor run while the nemesis, round after
// round, takes one member down (never more: a minority of three) and
// brings it back: SIGKILL then `paxflow-cluster restart --node=ID` (it
// rejoins on its own disk, through its checkpoint and its log), or
// SIGSTOP then SIGCONT; the leader or a follower at random (the first
// round kills the leader). `seconds` bounds the rounds. The group must go
// on after every round; afterwards every acknowledged transfer is in the
// balances exactly once, no audit saw a wrong total, the three replicas
// agree at a common epoch and at the end, and each one's final digest
// equals an offline replay of its own log.
class NemesisClusterTest : public ::testing::TestWithParam<Mode> {};

// A bank-audit (every account) through its own FailoverClient every
// ~50 ms: counts the audits, the wrong totals, the calls with no final
// answer and the answers "already applied" (there must be none: a request
// that writes nothing runs again on a retry, node/request_dedup.h).
class Auditor {
 public:
  Auditor(const TestCluster& cluster, uint64_t accounts, int64_t total) {
    FailoverOptions options;
    for (int i = 0; i < 3; ++i) options.endpoints.push_back(ClientEndpoint(cluster.node(i)));
    options.attempt_timeout_ms = 1000;
    options.total_timeout_ms = kTimeoutMs;
    thread_ = std::thread([this, options, accounts, total] {
      FailoverClient client(options);
      while (!stop_) {
        ClientRequest request;
        request.mutable_txn()->set_procedure("bank-audit");
        for (uint64_t a = 0; a < accounts; ++a) request.mutable_txn()->add_read_set(a);
        ClientReply reply;
        if (!client.Call(request, &reply).empty() || reply.status() != OK) {
          ++unanswered_;
          continue;
        }
        if (reply.txn().already_applied()) {
          // A retry (its first try timed out at a member that went down)
          // of an audit that ran, answered with no reads.
          ++already_applied_;
          continue;
        }
        int64_t sum = 0;
        for (const KeyValue& read : reply.txn().reads()) {
          sum += BankApplication::DecodeBalance(read.value());
        }
        ++audits_;
        if (sum != total || !reply.txn().invariant_ok() ||
            reply.txn().reads_size() != static_cast<int>(accounts)) {
          ++wrong_;
          std::string what = "audit " + std::to_string(audits_.load()) + " at " +
                             client.endpoint() + ": total " + std::to_string(sum) + " in " +
                             std::to_string(reply.txn().reads_size()) + " reads (";
          for (const KeyValue& read : reply.txn().reads()) {
            what += std::to_string(BankApplication::DecodeBalance(read.value())) + " ";
          }
          what += "), invariant_ok " + std::to_string(reply.txn().invariant_ok()) + ", " +
                  reply.txn().detail() + "; " + reply.txn().ShortDebugString().substr(0, 600);
          std::lock_guard<std::mutex> lock(mu_);
          if (first_wrong_.empty()) first_wrong_ = what;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the auditor's pace
      }
    });
  }
  ~Auditor() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int audits() const { return audits_.load(); }
  int wrong() const { return wrong_.load(); }
  int unanswered() const { return unanswered_.load(); }
  int already_applied() const { return already_applied_.load(); }
  std::string first_wrong() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_wrong_;
  }

 private:
  mutable std::mutex mu_;
  std::string first_wrong_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> audits_{0}, wrong_{0}, unanswered_{0}, already_applied_{0};
};

void RunNemesis(Mode mode, int seconds) {
  constexpr uint64_t kAccounts = 2 * kClients;
  TestCluster cluster("nemesis", 1, 3,
                      TransferFlags(kAccounts, kInitial,
                                    {std::string("--mode=") + ModeName(mode),
                                     "--checkpoint_every=1"}),
                      ReplicatedInput);
  cluster.Start();
  const std::vector<int> all = {0, 1, 2};
  StatusReply status;
  int leader = WaitGroupLeader(cluster, all, &status, kTimeoutMs);
  ASSERT_GE(leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  std::vector<std::unique_ptr<TransferClient>> clients = StartTransferClients(cluster, leader);
  Auditor auditor(cluster, kAccounts, kAccounts * kInitial);
  const unsigned seed = std::random_device{}();
  std::mt19937 random(seed);
  std::printf("nemesis (%s): seed %u, %d s\n", ModeName(mode), seed, seconds);
  std::fflush(stdout);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int rounds = 0, kills = 0, leader_rounds = 0;
  while (std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500 + random() % 1500));  // the nemesis' pace
    // All three are up and follow one leader before a member goes down:
    // never more than a minority down at once.
    leader = WaitGroupLeader(cluster, all, &status, kTimeoutMs);
    ASSERT_GE(leader, 0) << "no leader all three follow after round " << rounds
                         << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
    const bool kill_it = rounds == 0 || random() % 2 == 0;
    const bool the_leader = rounds == 0 || random() % 2 == 0;
    const int victim = the_leader ? leader : (leader + 1 + random() % 2) % 3;
    const int down_ms = 500 + random() % 2000;
    const std::string what = std::string(kill_it ? "SIGKILL+restart" : "SIGSTOP+SIGCONT") +
                             " of node " + std::to_string(victim) +
                             (the_leader ? " (leader)" : " (follower)") + " for " +
                             std::to_string(down_ms) + " ms";
    std::printf("  round %d: %s\n", rounds, what.c_str());
    std::fflush(stdout);
    const std::vector<int> before = AckedNow(clients);
    if (kill_it) {
      cluster.Kill(victim);
      if (::testing::Test::HasFatalFailure()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(down_ms));  // the nemesis' pace
      cluster.Restart(victim);
      if (::testing::Test::HasFatalFailure()) return;
      ++kills;
    } else {
      const pid_t pid = cluster.verbs().Pids().at(victim);
      ASSERT_EQ(kill(pid, SIGSTOP), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(down_ms));  // the nemesis' pace
      ASSERT_EQ(kill(pid, SIGCONT), 0);
    }
    leader_rounds += the_leader;
    ++rounds;
    // The group goes on after each round.
    ASSERT_TRUE(EachAckedMore(clients, before, 5, 3 * kTimeoutMs))
        << "round " << rounds - 1 << ": " << what << cluster.Tail(0) << cluster.Tail(1)
        << cluster.Tail(2);
    for (const auto& client : clients) {
      ASSERT_EQ(client->failed(), 0) << "round " << rounds - 1 << ": " << what << ": "
                                     << client->first_failure() << cluster.Tail(0)
                                     << cluster.Tail(1) << cluster.Tail(2);
    }
  }
  for (auto& client : clients) client->Stop();
  auditor.Stop();
  int acked = 0;
  for (const auto& client : clients) {
    EXPECT_EQ(client->failed(), 0) << client->first_failure();
    acked += client->acked();
  }
  std::printf("nemesis (%s): %d rounds (%d kills, %d of the leader) in %d s, %d transfers "
              "acknowledged, %d audits (%d wrong, %d unanswered, %d already applied)\n",
              ModeName(mode), rounds, kills, leader_rounds, seconds, acked, auditor.audits(),
              auditor.wrong(), auditor.unanswered(), auditor.already_applied());
  std::fflush(stdout);
  EXPECT_GT(auditor.audits(), 0);
  EXPECT_EQ(auditor.wrong(), 0) << "the first: " << auditor.first_wrong();
  EXPECT_EQ(auditor.already_applied(), 0) << "a retried audit was answered with no reads";
  ExpectEachTransferOnce(cluster, all, clients, kInitial, kTimeoutMs, kAccounts);
  ExpectDigestsAgree(cluster, all, kTimeoutMs);

  // Stopped, the three drain to one final epoch and digest, and each
  // one's equals an offline replay of its own log (from its newest
  // checkpoint: older logs are removed).
  std::string output;
  EXPECT_EQ(cluster.Verb("stop", {"--stop_timeout=30"}, &output), 0) << output;
  static const std::regex kReplayed("state digest at epoch (\\d+): ");
  RunSummary summaries[3];
  for (int i : all) {
    const std::string path = cluster.logs() + "/node-" + std::to_string(i) + ".json";
    ASSERT_EQ(RunSummary::FromJson(ReadFile(path), &summaries[i]), "") << path << "\n" << output;
    EXPECT_EQ(summaries[i].digest_epoch, summaries[0].digest_epoch) << "node " << i;
    EXPECT_EQ(DigestHex(summaries[i].digest), DigestHex(summaries[0].digest)) << "node " << i;
    std::string replay;
    EXPECT_EQ(ReplayDigest(cluster.input(), cluster.node(i).replica(), &replay),
              DigestHex(summaries[i].digest))
        << "node " << i << "'s replay:\n" << replay;
    std::smatch match;
    EXPECT_TRUE(std::regex_search(replay, match, kReplayed) &&
                std::stoull(match[1]) == summaries[i].digest_epoch)
        << "node " << i << " ended at epoch " << summaries[i].digest_epoch << "; its replay:\n"
        << replay;
  }
}

// In make test: a short nemesis (a few rounds).
TEST_P(NemesisClusterTest, KillsRestartsAndStopsMembersUnderTransfers) { RunNemesis(GetParam(), 15); }

// Soak (make soak; out of make test): the same, PAXFLOW_SOAK_SECONDS long
// (60 by default).
TEST_P(NemesisClusterTest, DISABLED_SoakKillsRestartsAndStopsMembersUnderTransfers) {
  const char* env = std::getenv("PAXFLOW_SOAK_SECONDS");
  RunNemesis(GetParam(), env ? std::max(5, std::atoi(env)) : 60);
}

INSTANTIATE_TEST_SUITE_P(Modes, NemesisClusterTest, ::testing::Values(Mode::kPaxflow, Mode::kCalvin),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(ModeName(info.param));
                         });

}  // namespace
}  // namespace paxflow::testing
