// A detached test cluster (paxflow-cluster start/restart/stop over real
// processes on 127.0.0.1, ports picked free), with its logs and input logs
// under a temporary directory, and the oracles the crash tests check it
// against: an offline replay of its logs, the logs being whole, and bank
// clients that keep what was acknowledged to them.
// Threads: TestCluster from the test's thread; BankClients runs one thread
// per node of the config, TransferClient one of its own.
#pragma once
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <functional>
#include <random>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "applications/bank.h"
#include "base/summary.h"
#include "client/client.h"
#include "common/config.h"
#include "common/types.h"
#include "tests/test_util.h"

namespace paxflow::testing {

// One detached cluster of the test, with its logs and input logs under a
// temporary directory.
class TestCluster {
 public:
  // `edit`, if given, changes the config before it is written (it may put
  // files such as keys in the cluster's directory, its second argument).
  TestCluster(const std::string& name, uint32_t partitions, uint32_t replicas,
              std::vector<std::string> flags,
              const std::function<void(ClusterConfig*, const std::string&)>& edit = nullptr)
      : config_(testing::MakeConfig(name, partitions, replicas, "tcp")),
        flags_(std::move(flags)) {
    if (edit) edit(&config_, dir_.path());
    config_path_ = dir_.path() + "/cluster.conf";
    std::ofstream(config_path_) << testing::ToText(config_);
    verbs_ = std::make_unique<testing::ClusterVerbs>(config_path_, logs());
  }
  std::string logs() const { return dir_.path() + "/logs"; }
  std::string input() const { return dir_.path() + "/input"; }
  const ClusterConfig& config() const { return config_; }
  const NodeConfig& node(int i) const { return config_.node(i); }
  const std::string& config_path() const { return config_path_; }
  std::string NodeLog(int i) const { return ReadFile(logs() + "/node-" + std::to_string(i) + ".out"); }
  // Whether node i's output shows `text` within `timeout_ms`: a line a node
  // prints after something the test can see (its status, a reply) may come
  // a moment later.
  bool WaitForNodeLog(int i, const std::string& text, int timeout_ms) const {
    return WaitUntil([&] { return NodeLog(i).find(text) != std::string::npos; }, timeout_ms);
  }

  // The flags start gives every node: small and light (few records, short
  // epochs, a bounded load), then the test's.
  std::vector<std::string> NodeFlags() const {
    std::vector<std::string> flags = {"--log_dir=" + input(), "--epoch_ms=5", "--progress_ms=100",
                                      "--records=3000", "--value_size=24", "--max_inflight=400",
                                      "--ops_per_ro_txn=20"};
    flags.insert(flags.end(), flags_.begin(), flags_.end());
    return flags;
  }
  void Start() {
    std::string output;
    ASSERT_EQ(StartVerb({}, &output), 0) << output;
  }
  // paxflow-cluster start with `extra` flags too; its exit status.
  int StartVerb(const std::vector<std::string>& extra, std::string* output) {
    std::vector<std::string> flags = NodeFlags();
    flags.insert(flags.end(), extra.begin(), extra.end());
    return verbs_->Run("start", flags, output);
  }
  // Node `i`'s own command line as start gave it, plus `extra`.
  std::vector<std::string> NodeCommand(int i, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args = {BinaryDir() + "/paxflow-node", "--config=" + config_path_,
                                     "--node_id=" + std::to_string(i), "--duration=0"};
    const std::vector<std::string> flags = NodeFlags();
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  const testing::ClusterVerbs& verbs() const { return *verbs_; }
  void Kill(int i) {
    const std::vector<pid_t> pids = verbs_->Pids();
    ASSERT_LT(static_cast<size_t>(i), pids.size());
    ASSERT_EQ(kill(pids[i], SIGKILL), 0);
    // Dead once its client port no longer answers.
    ASSERT_TRUE(WaitUntil([&] { StatusReply s; return !AskStatus(node(i), &s, 100); }, 5000));
  }
  // Restarts node `i` (-1: every node, together).
  void Restart(int i, std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), "--node=" + (i < 0 ? std::string("all") : std::to_string(i)));
    std::string output;
    ASSERT_EQ(verbs_->Run("restart", flags, &output), 0) << output << Tail(i < 0 ? 0 : i);
    EXPECT_NE(output.find("rejoined"), std::string::npos) << output;
  }
  // Kills each of `dead` in turn (SIGKILL) and restarts it; every node of
  // `nodes` admits `epochs` epochs before each kill and after each restart.
  void KillAndRestartInTurn(const std::vector<int>& dead, const std::vector<int>& nodes,
                            Epoch epochs) {
    for (int i : dead) {
      ExpectProgress(nodes, epochs);
      Kill(i);
      Restart(i);
      ExpectProgress(nodes, epochs);
    }
  }
  // Every node in `nodes` admits `epochs` more epochs (within 20 s).
  void ExpectProgress(const std::vector<int>& nodes, Epoch epochs) {
    std::vector<Epoch> from;
    for (int i : nodes) {
      // A node that has just restarted may be busy for a moment (loading
      // its checkpoint, replaying its log): one status probe of 1 s is not
      // enough on a loaded machine.
      StatusReply status;
      ASSERT_TRUE(WaitUntil([&] { return AskStatus(node(i), &status); }, 20000))
          << "node " << i << " does not answer: " << Tail(i);
      from.push_back(status.admitted_epoch());
    }
    for (size_t n = 0; n < nodes.size(); ++n) {
      EXPECT_TRUE(WaitUntil(
          [&] {
            StatusReply status;
            return AskStatus(node(nodes[n]), &status) &&
                   status.admitted_epoch() >= from[n] + epochs;
          },
          20000))
          << "node " << nodes[n] << " does not go on: " << Tail(nodes[n]);
    }
  }
  // Stops the cluster; its summary.
  RunSummary Stop() {
    std::string output;
    EXPECT_EQ(verbs_->Run("stop", {"--stop_timeout=30"}, &output), 0) << output;
    RunSummary summary;
    EXPECT_EQ(RunSummary::FromJson(ReadFile(logs() + "/cluster.json"), &summary), "") << output;
    return summary;
  }
  std::string Tail(int i) const {
    const std::string log = NodeLog(i);
    return log.size() > 3000 ? log.substr(log.size() - 3000) : log;
  }
  int Verb(const std::string& verb, std::string* output) const { return verbs_->Run(verb, {}, output); }
  // Any thread (it only runs paxflow-cluster).
  int Verb(const std::string& verb, const std::vector<std::string>& flags,
           std::string* output) const {
    return verbs_->Run(verb, flags, output);
  }

 private:
  TempDir dir_;
  ClusterConfig config_;
  std::vector<std::string> flags_;
  std::string config_path_;
  std::unique_ptr<testing::ClusterVerbs> verbs_;
};

// A TestCluster config edit that turns replicated input on (issue 17),
// consensus ports picked free.
void ReplicatedInput(ClusterConfig* config, const std::string& dir);

// Replicated input: the node of `nodes` that says it leads its group, if
// exactly one does and every other names it (its status in *leader_status);
// else -1.
int GroupLeader(const TestCluster& cluster, const std::vector<int>& nodes,
                StatusReply* leader_status);

// The digest node `node` computes at `epoch` (it waits to get there).
ClientReply DigestAt(const NodeConfig& node, Epoch epoch, int timeout_ms);

// Waits up to `timeout_ms` for GroupLeader to name one; -1 if none did.
int WaitGroupLeader(const TestCluster& cluster, const std::vector<int>& nodes,
                    StatusReply* leader_status, int timeout_ms);

// Asks `nodes` together for their digest at one epoch ahead of all of them
// (before any gets there: a digest is taken as the epoch passes) and
// expects them all at that epoch with one digest; returns the epoch (0 if
// a node could not be asked).
Epoch ExpectDigestsAgree(const TestCluster& cluster, const std::vector<int>& nodes,
                         int timeout_ms);

// The digest an offline replay of `dir` prints (replica `replica`), or
// "replay failed: <output>".
std::string ReplayDigest(const std::string& dir, uint32_t replica = 0,
                         std::string* output = nullptr);

// Nothing was logged twice, nothing skipped: every input log of replica 0
// holds each epoch once, in order, and each txn once. Returns the txn ids.
std::set<TxnId> CheckLogsWhole(const std::string& dir);

// Clients that transfer money and audit it, one thread per node of the
// config: audits that see a wrong total are counted, and the ids of the
// transfers each client saw commit are kept.
class BankClients {
 public:
  BankClients(const ClusterConfig& config, uint64_t accounts, int64_t total)
      : accounts_(accounts), total_(total) {
    for (const NodeConfig& node : config.node()) {
      threads_.emplace_back([this, node, seed = node.id()] { Loop(node, seed); });
    }
  }
  ~BankClients() { Stop(); }
  void Stop() {
    stop_ = true;
    for (auto& thread : threads_) {
      if (thread.joinable()) thread.join();
    }
  }
  std::set<TxnId> acked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acked_;
  }
  int audits() const { return audits_.load(); }
  int wrong_audits() const { return wrong_.load(); }
  int unavailable() const { return unavailable_.load(); }

 private:
  void Loop(const NodeConfig& node, uint64_t seed) {
    std::mt19937_64 random(seed);
    Client client;
    client.Connect(ClientEndpoint(node));
    while (!stop_) {
      ClientRequest request;
      TxnRequest* txn = request.mutable_txn();
      const bool audit = random() % 10 == 0;
      if (audit) {
        txn->set_procedure("bank-audit");
        for (uint64_t a = 0; a < accounts_; ++a) txn->add_read_set(a);
      } else {
        const uint64_t from = random() % accounts_, to = (from + 1 + random() % (accounts_ - 1)) % accounts_;
        txn->set_procedure("bank-transfer");
        txn->add_read_write_set(from);
        txn->add_read_write_set(to);
        txn->set_args(BankApplication::EncodeBalance(1 + static_cast<int64_t>(random() % 20)));
      }
      ClientReply reply;
      if (!client.Call(request, &reply, 1000).empty()) continue;  // a dead node: no answer
      if (reply.status() == UNAVAILABLE) ++unavailable_;
      if (reply.status() != OK) continue;
      if (audit) {
        int64_t sum = 0;
        for (const KeyValue& read : reply.txn().reads()) {
          sum += BankApplication::DecodeBalance(read.value());
        }
        ++audits_;
        if (sum != total_ || !reply.txn().invariant_ok()) ++wrong_;
      } else if (reply.txn().committed()) {
        std::lock_guard<std::mutex> lock(mu_);
        acked_.insert(reply.txn().txn_id());
      }
    }
  }

  const uint64_t accounts_;
  const int64_t total_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::set<TxnId> acked_;
  std::atomic<int> audits_{0}, wrong_{0}, unavailable_{0};
};

// Replicated input's clients (issue 17): bank transfers under request ids
// through a FailoverClient given every replica.
inline ClientRequest Transfer(uint64_t from, uint64_t to) {
  ClientRequest request;
  TxnRequest* txn = request.mutable_txn();
  txn->set_procedure("bank-transfer");
  txn->add_read_write_set(from);
  txn->add_read_write_set(to);
  txn->set_args(BankApplication::EncodeBalance(1));
  return request;
}

// The same transfer as an LTX (its write area the two accounts).
inline ClientRequest LtxTransfer(uint64_t from, uint64_t to) {
  const TxnRequest txn = Transfer(from, to).txn();
  ClientRequest request;
  LtxRequest* ltx = request.mutable_ltx();
  ltx->set_procedure(txn.procedure());
  *ltx->mutable_read_write_set() = txn.read_write_set();
  ltx->set_args(txn.args());
  KeyRange* area = ltx->add_write_area();
  area->set_lo(std::min(from, to));
  area->set_hi(std::max(from, to));
  return request;
}

// One client: transfers 1 from account 2c to 2c + 1, one at a time, each
// under the next request id; every 7th acknowledged one is sent again
// under its id at once (a retry whose first answer arrived: the log
// already holds it).
class TransferClient {
 public:
  TransferClient(int c, std::vector<std::string> endpoints, int total_timeout_ms) : c_(c) {
    FailoverOptions options;
    options.endpoints = std::move(endpoints);
    options.attempt_timeout_ms = 1000;
    options.total_timeout_ms = total_timeout_ms;
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

// The node flags of a bank cluster that TransferClients drive (no
// generator): `accounts` accounts of `initial`, then `extra`.
inline std::vector<std::string> TransferFlags(uint64_t accounts, int64_t initial,
                                              std::vector<std::string> extra) {
  std::vector<std::string> flags = {"--duration=0", "--workload=bank", "--generate=false",
                                    "--bank_accounts=" + std::to_string(accounts),
                                    "--bank_initial_balance=" + std::to_string(initial)};
  flags.insert(flags.end(), extra.begin(), extra.end());
  return flags;
}

// `count` TransferClients over the first `replicas` nodes of `cluster` (a
// 1xN group), client c starting at node c mod N and going round from there.
inline std::vector<std::unique_ptr<TransferClient>> StartTransferClients(
    const TestCluster& cluster, int count, int replicas, int timeout_ms) {
  std::vector<std::unique_ptr<TransferClient>> clients;
  for (int c = 0; c < count; ++c) {
    std::vector<std::string> endpoints;
    for (int i = 0; i < replicas; ++i) {
      endpoints.push_back(ClientEndpoint(cluster.node((c + i) % replicas)));
    }
    clients.push_back(std::make_unique<TransferClient>(c, endpoints, timeout_ms));
  }
  return clients;
}

// Every client acknowledged `more` transfers past `from` (or one failed:
// the caller's checks say which); false on timeout.
inline bool EachAckedMore(const std::vector<std::unique_ptr<TransferClient>>& clients,
                          const std::vector<int>& from, int more, int timeout_ms) {
  return WaitUntil(
      [&] {
        for (size_t c = 0; c < clients.size(); ++c) {
          if (clients[c]->failed() > 0) return true;
          if (clients[c]->acked() < from[c] + more) return false;
        }
        return true;
      },
      timeout_ms);
}

// The same, past what each had when called.
inline bool WaitEachAcked(const std::vector<std::unique_ptr<TransferClient>>& clients, int more,
                          int timeout_ms) {
  std::vector<int> from;
  for (const auto& client : clients) from.push_back(client->acked());
  return EachAckedMore(clients, from, more, timeout_ms);
}

// A 1xN replicated-input group under transfers, as the rejoin tests start
// one: `cluster` started, the leader all `replicas` nodes follow found
// (*leader), `count` TransferClients started over them (*clients), and
// each has acknowledged 30 transfers. Its failures are fatal to the
// caller: call it under ASSERT_NO_FATAL_FAILURE.
void StartTransferGroup(TestCluster* cluster, int replicas, int count, int timeout_ms,
                        int* leader, std::vector<std::unique_ptr<TransferClient>>* clients);

// Acknowledged request ids of every client (its first, middle and last)
// sent again: each is answered "already applied" (nothing runs).
void ExpectResendsAlreadyApplied(const std::vector<std::unique_ptr<TransferClient>>& clients);

// Exactly once: read through `nodes`, each client's two balances moved by
// its acknowledged count from `initial`; the accounts after the clients'
// own, up to `accounts` (0: none), were touched by no acknowledged
// transfer and hold `initial`.
void ExpectEachTransferOnce(const TestCluster& cluster, const std::vector<int>& nodes,
                            const std::vector<std::unique_ptr<TransferClient>>& clients,
                            int64_t initial, int timeout_ms, uint64_t accounts = 0);

}  // namespace paxflow::testing
