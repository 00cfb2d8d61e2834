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

ClientRequest Transfer(uint64_t from, uint64_t to) {
  ClientRequest request;
  TxnRequest* txn = request.mutable_txn();
  txn->set_procedure("bank-transfer");
  txn->add_read_write_set(from);
  txn->add_read_write_set(to);
  txn->set_args(BankApplication::EncodeBalance(1));
  return request;
}

// One client: transfers 1 from account 2c to 2c + 1, one at a time, each
// under the next request id; every 7th acknowledged one is sent again
// under its id at once (a retry whose first answer arrived: the log
// already holds it).
class TransferClient {
 public:
  TransferClient(int c, std::vector<std::string> endpoints) : c_(c) {
    FailoverOptions options;
    options.endpoints = std::move(endpoints);
    options.attempt_timeout_ms = 1000;
    options.total_timeout_ms = kTimeoutMs;
    client_ = std::make_unique<FailoverClient>(options);
    thread_ = std::thread([this] { Loop(); });
  }
  ~TransferClient() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  int acked() const { return acked_.load(); }
  int failed() const { return failed_.load(); }
  int resent_already_applied() const { return resent_already_applied_.load(); }
  std::string first_failure() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_failure_;
  }
  FailoverClient& client() { return *client_; }
  // The request ids acknowledged, (client id, seq).
  std::vector<uint64_t> acked_seqs() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_seqs_;
  }

 private:
  void Fail(const std::string& why) {
    ++failed_;
    std::lock_guard<std::mutex> lock(mu_);
    if (first_failure_.empty()) first_failure_ = why;
  }
  void Loop() {
    while (!stop_) {
      ClientRequest request = Transfer(2 * c_, 2 * c_ + 1);
      const uint64_t seq = client_->next_seq();
      ClientReply reply;
      const std::string error = client_->Call(request, &reply);
      if (!error.empty()) return Fail("seq " + std::to_string(seq) + ": " + error);
      if (reply.status() != OK || !(reply.txn().committed() || reply.txn().already_applied())) {
        return Fail("seq " + std::to_string(seq) + ": status " + std::to_string(reply.status()) +
                    " " + reply.error() + " " + reply.txn().detail());
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        acked_seqs_.push_back(seq);
      }
      ++acked_;
      if (seq % 7 == 0) {
        request.mutable_txn()->set_client_id(client_->client_id());
        request.mutable_txn()->set_client_seq(seq);
        if (!client_->Call(request, &reply).empty() || reply.status() != OK ||
            !reply.txn().already_applied()) {
          return Fail("resent seq " + std::to_string(seq) + " was not 'already applied': " +
                      reply.error() + " " + reply.txn().detail());
        }
        ++resent_already_applied_;
      }
    }
  }

  const int c_;
  std::unique_ptr<FailoverClient> client_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> acked_{0}, failed_{0}, resent_already_applied_{0};
  mutable std::mutex mu_;
  std::string first_failure_;
  std::vector<uint64_t> acked_seqs_;
};

TEST(ClientFailoverClusterTest, ClientsFollowTheLeaderAndEveryAckedTransferAppliesOnce) {
  TestCluster cluster("client-failover", 1, 3,
                      {"--duration=0", "--workload=bank", "--generate=false",
                       "--bank_accounts=" + std::to_string(2 * kClients),
                       "--bank_initial_balance=" + std::to_string(kInitial),
                       "--checkpoint_every=0"},
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
    clients.push_back(std::make_unique<TransferClient>(c, endpoints));
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
  // already applied, nothing runs.
  for (int c = 0; c < kClients; ++c) {
    const std::vector<uint64_t> seqs = clients[c]->acked_seqs();
    ASSERT_FALSE(seqs.empty());
    for (uint64_t seq : {seqs.front(), seqs[seqs.size() / 2], seqs.back()}) {
      ClientRequest request = Transfer(2 * c, 2 * c + 1);
      request.mutable_txn()->set_client_id(clients[c]->client().client_id());
      request.mutable_txn()->set_client_seq(seq);
      ClientReply reply;
      ASSERT_EQ(clients[c]->client().Call(request, &reply), "");
      ASSERT_EQ(reply.status(), OK) << reply.error();
      EXPECT_TRUE(reply.txn().already_applied()) << "client " << c << " seq " << seq;
    }
  }

  // Exactly once: each client's two balances moved by its acked count.
  {
    FailoverOptions options;
    for (int i : survivors) options.endpoints.push_back(ClientEndpoint(cluster.node(i)));
    options.total_timeout_ms = kTimeoutMs;
    FailoverClient reader(options);
    std::vector<uint64_t> accounts;
    for (uint64_t a = 0; a < 2 * kClients; ++a) accounts.push_back(a);
    ClientReply reply;
    ASSERT_EQ(reader.Call(Client::Get(accounts), &reply), "");
    ASSERT_EQ(reply.status(), OK) << reply.error();
    ASSERT_EQ(reply.txn().reads_size(), 2 * kClients);
    for (int c = 0; c < kClients; ++c) {
      const int64_t acked = clients[c]->acked();
      EXPECT_EQ(BankApplication::DecodeBalance(reply.txn().reads(2 * c).value()), kInitial - acked)
          << "client " << c;
      EXPECT_EQ(BankApplication::DecodeBalance(reply.txn().reads(2 * c + 1).value()),
                kInitial + acked)
          << "client " << c;
    }
  }

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
