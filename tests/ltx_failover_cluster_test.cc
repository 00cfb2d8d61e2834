// The LTX lane's origin role moves with leadership (issue 17 items 3 and
// 7; docs/ltx.md, "Failover"): real paxflow-node processes on one
// partition replicated three times, the record protocol
// (--ltx_in_place=false), and an LTX held at its origin
// (--fault_hold_ltx_file) while the group's leader is killed with SIGKILL
// and never restarted. The new leader aborts the LTX through the log
// (reason failover, retryable) long before --ltx_timeout (here 500 s);
// what waited for it (deferred short txns) runs after the abort, and
// read-only txns parked behind it at the leader (the only node that runs
// them) go with it and read the state without it when retried; a retried
// LTX commits on the new leader; the audits hold and the survivors'
// digests agree. On a build where the role stays
// with replica 0 the held LTX waits for its timeout, and so does all that
// waits for it: each test fails at its first wait below.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "applications/bank.h"
#include "client/client.h"
#include "tests/http_get.h"
#include "tests/test_cluster.h"

namespace paxflow::testing {
namespace {

constexpr int kTimeoutMs = 30000;
constexpr uint64_t kAccounts = 12;
constexpr int64_t kInitial = 1000000;
// 100,000 epochs of 5 ms: 500 s, far beyond every wait of these tests, so
// an LTX resolved within them was not resolved by its timeout.
constexpr int kLtxTimeoutEpochs = 100000;
// The failover's abort must come this soon after the kill (an election
// takes 1-2 s with the default timeouts).
constexpr int kAbortWithinMs = 15000;
// How long clients of the leader that will be killed wait for an answer.
constexpr int kUnansweredMs = 15000;

// A 1x3 bank cluster with replicated input, the record protocol, a long
// LTX timeout, LTXs held while `hold` exists, and a metrics port per node.
class LtxFailoverCluster {
 public:
  explicit LtxFailoverCluster(const std::string& name, const std::string& mode = "paxflow")
      : hold_(hold_dir_.path() + "/hold-ltx"),
        cluster_(name, 1, 3,
                 TransferFlags(kAccounts, kInitial,
                               {"--checkpoint_every=0", "--ltx_in_place=false",
                                "--ltx_timeout=" + std::to_string(kLtxTimeoutEpochs),
                                "--fault_hold_ltx_file=" + hold_, "--mode=" + mode}),
                 [](ClusterConfig* config, const std::string& dir) {
                   ReplicatedInput(config, dir);
                   const std::vector<uint32_t> ports =
                       FreePortsBesides(config->node_size(), *config);
                   for (int i = 0; i < config->node_size(); ++i) {
                     config->mutable_node(i)->set_metrics_port(ports[i]);
                   }
                 }) {}
  ~LtxFailoverCluster() { Release(); }

  TestCluster& cluster() { return cluster_; }
  void Hold() { std::ofstream(hold_) << "held\n"; }
  void Release() { unlink(hold_.c_str()); }

  // A metric of node `i` (the sum of the lines named `name` whose labels
  // contain `labels`), or -1 if the node does not answer.
  double Metric(int i, const std::string& name, const std::string& labels = "") const {
    std::string text;
    if (HttpGet(static_cast<uint16_t>(cluster_.node(i).metrics_port()), "/metrics", &text, 1000) !=
        200) {
      return -1;
    }
    double sum = 0;
    size_t at = 0;
    while (at < text.size()) {
      size_t end = text.find('\n', at);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(at, end - at);
      at = end + 1;
      if (line.empty() || line[0] == '#' || line.compare(0, name.size(), name) != 0) continue;
      const char next = line.size() > name.size() ? line[name.size()] : '\0';
      if (next != ' ' && next != '{') continue;
      if (!labels.empty() && line.find(labels) == std::string::npos) continue;
      sum += std::strtod(line.c_str() + line.rfind(' ') + 1, nullptr);
    }
    return sum;
  }
  // Waits until `pred(node)` holds on every node of `nodes`.
  bool WaitAll(const std::vector<int>& nodes, const std::function<bool(int)>& pred,
               int timeout_ms) const {
    return WaitUntil(
        [&] {
          for (int i : nodes) {
            if (!pred(i)) return false;
          }
          return true;
        },
        timeout_ms);
  }
  std::string Aborts(int i) const {
    std::string out = "node " + std::to_string(i) + " LTX aborts:";
    for (int r = 0; r < kLtxAbortReasons; ++r) {
      out += std::string(" ") + LtxAbortReasonName(r) + "=" +
             std::to_string(Metric(i, "paxflow_ltx_aborts_total",
                                   std::string("reason=\"") + LtxAbortReasonName(r) + "\""));
    }
    return out + "\n";
  }

 private:
  TempDir hold_dir_;
  const std::string hold_;
  TestCluster cluster_;
};

// bank-ltx over accounts [lo, hi): each passes 1 to the next around the ring.
// It also declares a read of account hi, which it does not read: a read
// outside its write area keeps it on the record protocol (docs/ltx.md,
// "Locked at its begin"), whose failover these tests are about.
ClientRequest RingLtx(uint64_t lo, uint64_t hi) {
  ClientRequest request;
  LtxRequest* ltx = request.mutable_ltx();
  ltx->set_procedure("bank-ltx");
  for (uint64_t a = lo; a < hi; ++a) ltx->add_read_write_set(a);
  ltx->set_args(BankApplication::EncodeBalance(1));
  KeyRange* area = ltx->add_write_area();
  area->set_lo(lo);
  area->set_hi(hi - 1);
  KeyRange* read = ltx->add_read_area();
  read->set_lo(hi);
  read->set_hi(hi);
  return request;
}

ClientRequest Audit() {
  ClientRequest request;
  TxnRequest* txn = request.mutable_txn();
  txn->set_procedure("bank-audit");
  for (uint64_t a = 0; a < kAccounts; ++a) txn->add_read_set(a);
  return request;
}

// The total an audit reply read, and whether the audit held.
bool AuditHolds(const ClientReply& reply, std::string* why) {
  if (reply.status() != OK || !reply.txn().committed()) {
    *why = "status " + std::to_string(reply.status()) + " " + reply.error();
    return false;
  }
  int64_t sum = 0;
  for (const KeyValue& read : reply.txn().reads()) sum += BankApplication::DecodeBalance(read.value());
  *why = "sum " + std::to_string(sum);
  return sum == static_cast<int64_t>(kAccounts) * kInitial && reply.txn().invariant_ok();
}

FailoverOptions ReplicasFrom(const TestCluster& cluster, const std::vector<int>& order) {
  FailoverOptions options;
  for (int i : order) options.endpoints.push_back(ClientEndpoint(cluster.node(i)));
  options.attempt_timeout_ms = 2000;
  options.total_timeout_ms = kTimeoutMs;
  return options;
}

// The group's leader, with the held LTX `ltx` sent to it by a client of
// its own (answered by nobody: the leader dies) and active on all three.
struct HeldLtx {
  int leader = -1;
  std::vector<int> survivors;
  std::future<std::string> first_call;
  std::unique_ptr<Client> first_client;
};

void StartHeldLtx(LtxFailoverCluster& c, HeldLtx* s, const ClientRequest& ltx = RingLtx(0, 6)) {
  TestCluster& cluster = c.cluster();
  cluster.Start();
  StatusReply status;
  s->leader = WaitGroupLeader(cluster, {0, 1, 2}, &status, kTimeoutMs);
  ASSERT_GE(s->leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  for (int i = 0; i < 3; ++i) {
    if (i != s->leader) s->survivors.push_back(i);
  }
  c.Hold();
  s->first_client = std::make_unique<Client>();
  s->first_client->Connect(ClientEndpoint(cluster.node(s->leader)));
  Client* client = s->first_client.get();
  s->first_call = std::async(std::launch::async, [client, ltx] {
    ClientReply reply;
    for (;;) {
      const std::string error = client->Call(ltx, &reply, kUnansweredMs);
      if (!error.empty()) return error;
      // Refused before it was sequenced (the new leader's port may say no
      // leader for a moment after the election): nothing ran, send again.
      if (reply.status() != UNAVAILABLE && reply.status() != BUSY &&
          reply.status() != NOT_LEADER) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "answered: status " + std::to_string(reply.status()) + " " + reply.error() + " " +
           reply.txn().detail();
  });
  ASSERT_TRUE(c.WaitAll({0, 1, 2},
                        [&](int i) { return c.Metric(i, "paxflow_ltx_active") == 1; },
                        kTimeoutMs))
      << "the LTX did not become active on every replica; its client: "
      << (s->first_call.wait_for(std::chrono::seconds(0)) == std::future_status::ready
              ? s->first_call.get()
              : std::string("waiting"))
      << "\n"
      << cluster.Tail(s->leader);
}

void KillLeader(LtxFailoverCluster& c, const HeldLtx& s) {
  const std::vector<pid_t> pids = c.cluster().verbs().Pids();
  ASSERT_EQ(pids.size(), 3u);
  ASSERT_EQ(kill(pids[s.leader], SIGKILL), 0);
}

// The held LTX was aborted on both survivors by the new leader (failover),
// not by its timeout, and nothing of the lane is left waiting.
void ExpectAbortedByFailover(LtxFailoverCluster& c, const HeldLtx& s) {
  const bool resolved = c.WaitAll(
      s.survivors,
      [&](int i) {
        return c.Metric(i, "paxflow_ltx_active") == 0 &&
               c.Metric(i, "paxflow_ltx_deferred_txns") == 0 &&
               c.Metric(i, "paxflow_ltx_parked_reads") == 0;
      },
      kAbortWithinMs);
  EXPECT_TRUE(resolved) << "the orphaned LTX (or what waited for it) is still unresolved "
                        << kAbortWithinMs << " ms after its leader died\n"
                        << c.Aborts(s.survivors[0]) << c.cluster().Tail(s.survivors[0])
                        << c.cluster().Tail(s.survivors[1]);
  // Counted where the abort is reported: at the new leader, the origin now.
  double failover = 0;
  for (int i : s.survivors) {
    failover += c.Metric(i, "paxflow_ltx_aborts_total", "reason=\"failover\"");
    EXPECT_EQ(c.Metric(i, "paxflow_ltx_aborts_total", "reason=\"timeout\""), 0) << c.Aborts(i);
  }
  EXPECT_EQ(failover, 1) << c.Aborts(s.survivors[0]) << c.Aborts(s.survivors[1]);
}

// The new leader, once the survivors agree on it.
int NewLeader(LtxFailoverCluster& c, const HeldLtx& s) {
  StatusReply status;
  return WaitGroupLeader(c.cluster(), s.survivors, &status, kTimeoutMs);
}

void StopCluster(LtxFailoverCluster& c, HeldLtx* s) {
  c.Release();
  std::string output;
  c.cluster().Verb("stop", {"--stop_timeout=30"}, &output);
  // Each survivor's input log, replayed offline, reaches its live digest
  // (the failover abort is a record like any other).
  for (int i : s->survivors) {
    RunSummary summary;
    ASSERT_EQ(RunSummary::FromJson(
                  ReadFile(c.cluster().logs() + "/node-" + std::to_string(i) + ".json"), &summary),
              "");
    std::string replay;
    EXPECT_EQ(ReplayDigest(c.cluster().input(), c.cluster().node(i).replica(), &replay),
              DigestHex(summary.digest))
        << "node " << i << " (live digest at epoch " << summary.digest_epoch << ")\n"
        << replay;
  }
  // The first LTX's client talked to the killed leader: no answer.
  if (s->first_call.valid()) {
    const std::string result = s->first_call.get();
    EXPECT_EQ(result.find("answered: status 0"), std::string::npos)
        << "the held LTX was answered OK: " << result;
  }
}

// The end of each test: an audit through a client that tries the
// replicas in `order` holds, the survivors' digests agree, and the
// cluster stops (StopCluster's checks).
void AuditAgreeAndStop(LtxFailoverCluster& c, HeldLtx* s, const std::vector<int>& order) {
  FailoverClient auditor(ReplicasFrom(c.cluster(), order));
  ClientReply reply;
  EXPECT_EQ(auditor.Call(Audit(), &reply), "");
  std::string why;
  EXPECT_TRUE(AuditHolds(reply, &why)) << why;
  ExpectDigestsAgree(c.cluster(), s->survivors, kTimeoutMs);
  StopCluster(c, s);
}

TEST(LtxFailoverClusterTest, LeaderKilledWhileAnLtxRunsAbortsItAndARetryCommitsOnTheNewLeader) {
  LtxFailoverCluster c("ltx-failover-run");
  HeldLtx s;
  ASSERT_NO_FATAL_FAILURE(StartHeldLtx(c, &s));
  ASSERT_NO_FATAL_FAILURE(KillLeader(c, s));
  ExpectAbortedByFailover(c, s);
  const int next = NewLeader(c, s);
  ASSERT_GE(next, 0);
  // The client tries again under a new request id (the abort said it did
  // not run; the first send had none), at the new leader, which runs it
  // and commits.
  c.Release();
  FailoverClient retry(ReplicasFrom(c.cluster(), {next, s.survivors[0] + s.survivors[1] - next}));
  ClientReply reply;
  ASSERT_EQ(retry.Call(RingLtx(0, 6), &reply), "");
  EXPECT_EQ(reply.status(), OK) << reply.error();
  EXPECT_TRUE(reply.txn().committed()) << reply.txn().detail() << reply.error();
  AuditAgreeAndStop(c, &s, {next});
}

TEST(LtxFailoverClusterTest, LeaderKilledWhileShortTxnsAreDeferredRunsThemAfterTheAbort) {
  LtxFailoverCluster c("ltx-failover-defer");
  HeldLtx s;
  ASSERT_NO_FATAL_FAILURE(StartHeldLtx(c, &s));
  // Transfer clients on accounts 0..5, inside the held LTX's area: every
  // transfer is deferred behind it (their acks come from the request-id
  // window when a retry finds the first send in the log).
  std::vector<std::unique_ptr<TransferClient>> clients;
  for (int t = 0; t < 3; ++t) {
    std::vector<std::string> endpoints;
    for (int i = 0; i < 3; ++i) endpoints.push_back(ClientEndpoint(c.cluster().node((s.leader + i) % 3)));
    clients.push_back(std::make_unique<TransferClient>(t, endpoints, 4 * kTimeoutMs));
  }
  ASSERT_TRUE(c.WaitAll(s.survivors,
                        [&](int i) { return c.Metric(i, "paxflow_ltx_deferred_txns") >= 3; },
                        kTimeoutMs))
      << "no transfer was deferred behind the held LTX";
  ASSERT_NO_FATAL_FAILURE(KillLeader(c, s));
  ExpectAbortedByFailover(c, s);
  // The clients go on at the new leader: their transfers run at once now.
  std::vector<int> at_abort;
  for (const auto& client : clients) at_abort.push_back(client->acked());
  EXPECT_TRUE(WaitUntil(
      [&] {
        for (size_t t = 0; t < clients.size(); ++t) {
          if (clients[t]->failed() > 0 || clients[t]->acked() < at_abort[t] + 10) return false;
        }
        return true;
      },
      2 * kTimeoutMs));
  for (auto& client : clients) client->Stop();
  for (const auto& client : clients) EXPECT_EQ(client->failed(), 0) << client->first_failure();
  const int next = NewLeader(c, s);
  ASSERT_GE(next, 0);
  // Every acknowledged transfer (deferred ones included) is in the
  // balances exactly once; the accounts past the clients' own are untouched.
  ExpectEachTransferOnce(c.cluster(), s.survivors, clients, kInitial, kTimeoutMs, kAccounts);
  AuditAgreeAndStop(c, &s, {next});
}

TEST(LtxFailoverClusterTest, LeaderKilledWhileReadOnlyTxnsAreParkedTheirRetriesReadWithoutIt) {
  LtxFailoverCluster c("ltx-failover-park");
  HeldLtx s;
  ASSERT_NO_FATAL_FAILURE(StartHeldLtx(c, &s));
  // A read-only txn reads at the last epoch with read-write work: a
  // transfer outside the LTX's area makes one after the LTX's begin.
  {
    Client writer;
    writer.Connect(ClientEndpoint(c.cluster().node(s.leader)));
    ClientReply reply;
    ASSERT_EQ(writer.Call(Transfer(6, 7), &reply, kTimeoutMs), "");
    ASSERT_EQ(reply.status(), OK) << reply.error();
    ASSERT_TRUE(reply.txn().committed()) << reply.txn().detail();
  }
  // Audits read the held LTX's area: they park at the leader, the only
  // node that runs them (they are not in the log the followers get).
  constexpr int kParked = 3;
  std::vector<std::unique_ptr<Client>> auditors;
  std::vector<std::future<std::string>> parked;
  for (int a = 0; a < kParked; ++a) {
    auditors.push_back(std::make_unique<Client>());
    auditors.back()->Connect(ClientEndpoint(c.cluster().node(s.leader)));
    Client* client = auditors.back().get();
    parked.push_back(std::async(std::launch::async, [client] {
      ClientReply reply;
      const std::string error = client->Call(Audit(), &reply, kUnansweredMs);
      std::string why;
      if (!error.empty()) return "no answer: " + error;
      return AuditHolds(reply, &why) ? std::string("ok") : "wrong audit: " + why;
    }));
  }
  ASSERT_TRUE(c.WaitAll({s.leader},
                        [&](int i) { return c.Metric(i, "paxflow_ltx_parked_reads") >= kParked; },
                        kTimeoutMs))
      << "the audits did not park behind the held LTX; the first said: "
      << (parked[0].wait_for(std::chrono::seconds(0)) == std::future_status::ready
              ? parked[0].get()
              : std::string("waiting"));
  // The survivors run the epochs the audits were cut in while the LTX is
  // still held, and park nothing: the audits never reach them.
  const double cut_by = c.Metric(s.leader, "paxflow_admitted_epoch");
  ASSERT_TRUE(c.WaitAll(s.survivors,
                        [&](int i) { return c.Metric(i, "paxflow_admitted_epoch") >= cut_by; },
                        kTimeoutMs));
  for (int i : s.survivors) {
    EXPECT_EQ(c.Metric(i, "paxflow_ltx_parked_reads"), 0) << "node " << i << " parked the leader's audits";
  }
  ASSERT_NO_FATAL_FAILURE(KillLeader(c, s));
  ExpectAbortedByFailover(c, s);
  for (int i : s.survivors) {
    EXPECT_EQ(c.Metric(i, "paxflow_invariant_failures_total"), 0) << "node " << i;
  }
  const int next = NewLeader(c, s);
  ASSERT_GE(next, 0);
  for (auto& f : parked) {
    const std::string result = f.get();
    // Answered before the kill would be a bug (the LTX was held): an
    // answer, if any came, holds; silence is the killed node's.
    EXPECT_TRUE(result == "ok" || result.compare(0, 10, "no answer:") == 0) << result;
  }
  // Their clients' retry: a client that tries the dead leader first, then
  // the new one, reads the state without the aborted LTX's writes: the
  // audit holds.
  AuditAgreeAndStop(c, &s, {s.leader, next});
}

// Exactly-once LTX retries (issue 17 item 4): the held LTX carries a
// request id; the leader is killed with it unresolved, and its client
// sends it again under the same id. The retry does not begin another LTX:
// its answer is the first attempt's outcome, the failover abort (not
// "applied"), given once the new leader's abort is in the log. A new
// attempt under a new id commits, and a resend of that one is told it
// committed, without running again: 1 moved from account 6 to 7, once.
constexpr uint64_t kRetryClient = 0x5eed1717;

ClientRequest TransferLtxWithId(uint64_t seq) {
  ClientRequest request = LtxTransfer(6, 7);
  request.mutable_ltx()->set_client_id(kRetryClient);
  request.mutable_ltx()->set_client_seq(seq);
  return request;
}

// The balances of accounts 6 and 7 through a client of `order`'s replicas.
std::vector<int64_t> Balances67(TestCluster& cluster, const std::vector<int>& order) {
  FailoverClient reader(ReplicasFrom(cluster, order));
  ClientReply reply;
  std::vector<int64_t> balances;
  if (!reader.Call(Client::Get({6, 7}), &reply).empty()) return balances;
  for (const KeyValue& read : reply.txn().reads()) {
    balances.push_back(BankApplication::DecodeBalance(read.value()));
  }
  return balances;
}

TEST(LtxFailoverClusterTest, ARetryUnderTheSameRequestIdAfterTheLeaderDiedGetsTheFailoverAbort) {
  LtxFailoverCluster c("ltx-failover-retry");
  HeldLtx s;
  const ClientRequest first = TransferLtxWithId(1);
  ASSERT_NO_FATAL_FAILURE(StartHeldLtx(c, &s, first));
  const std::vector<int64_t> before = {kInitial, kInitial};
  ASSERT_NO_FATAL_FAILURE(KillLeader(c, s));
  // At once, through the survivors: the client follows the new leader and
  // its retry waits there for the outcome of the LTX its id began.
  FailoverClient retry(ReplicasFrom(c.cluster(), s.survivors));
  ClientReply reply;
  ASSERT_EQ(retry.Call(first, &reply), "");
  ASSERT_EQ(reply.status(), OK) << reply.error();
  EXPECT_TRUE(reply.txn().aborted()) << reply.txn().ShortDebugString();
  EXPECT_FALSE(reply.txn().committed()) << reply.txn().ShortDebugString();
  EXPECT_FALSE(reply.txn().already_applied()) << "an aborted LTX was answered as applied";
  EXPECT_TRUE(reply.txn().retryable());
  EXPECT_EQ(reply.txn().abort_reason().rfind("failover", 0), 0u) << reply.txn().abort_reason();
  EXPECT_NE(reply.txn().detail().find("did not begin another"), std::string::npos)
      << reply.txn().detail();
  const uint64_t original = reply.txn().txn_id();
  ExpectAbortedByFailover(c, s);
  // Asked again once resolved: the same answer, from the table.
  ClientReply again;
  ASSERT_EQ(retry.Call(first, &again), "");
  ASSERT_EQ(again.status(), OK) << again.error();
  EXPECT_TRUE(again.txn().aborted());
  EXPECT_EQ(again.txn().txn_id(), original);
  EXPECT_EQ(again.txn().abort_reason(), reply.txn().abort_reason());
  const int next = NewLeader(c, s);
  ASSERT_GE(next, 0);
  EXPECT_EQ(Balances67(c.cluster(), {next}), before) << "the aborted LTX moved money";

  // A new attempt (new id) commits; its resend is told so and runs not.
  c.Release();
  const ClientRequest second = TransferLtxWithId(2);
  ClientReply committed, resent;
  ASSERT_EQ(retry.Call(second, &committed), "");
  ASSERT_EQ(committed.status(), OK) << committed.error();
  ASSERT_TRUE(committed.txn().committed()) << committed.txn().ShortDebugString();
  EXPECT_FALSE(committed.txn().already_applied());
  ASSERT_EQ(retry.Call(second, &resent), "");
  ASSERT_EQ(resent.status(), OK) << resent.error();
  EXPECT_TRUE(resent.txn().committed()) << resent.txn().ShortDebugString();
  EXPECT_TRUE(resent.txn().already_applied()) << resent.txn().ShortDebugString();
  EXPECT_FALSE(resent.txn().aborted());
  EXPECT_EQ(resent.txn().txn_id(), committed.txn().txn_id());
  EXPECT_EQ(Balances67(c.cluster(), {next}), std::vector<int64_t>({kInitial - 1, kInitial + 1}))
      << "the committed LTX did not move 1 exactly once";
  AuditAgreeAndStop(c, &s, {next});
}

// Without a kill: the retry of a held LTX under its id waits at the
// leader for the LTX's commit and is told it committed (already applied),
// while the first attempt gets its own result; nothing ran twice.
TEST(LtxFailoverClusterTest, ARetryOfAnUnresolvedLtxWaitsForItsCommitAndIsToldItCommitted) {
  LtxFailoverCluster c("ltx-retry-wait");
  HeldLtx s;
  const ClientRequest first = TransferLtxWithId(1);
  ASSERT_NO_FATAL_FAILURE(StartHeldLtx(c, &s, first));
  Client second_client;
  second_client.Connect(ClientEndpoint(c.cluster().node(s.leader)));
  ClientReply retried;
  std::future<std::string> retry = std::async(std::launch::async, [&] {
    return second_client.Call(first, &retried, kTimeoutMs);
  });
  EXPECT_EQ(retry.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout)
      << "the retry was answered while its LTX was held: " << retried.ShortDebugString();
  c.Release();
  ASSERT_EQ(retry.get(), "");
  ASSERT_EQ(retried.status(), OK) << retried.error();
  EXPECT_TRUE(retried.txn().committed()) << retried.txn().ShortDebugString();
  EXPECT_TRUE(retried.txn().already_applied()) << retried.txn().ShortDebugString();
  const std::string first_result = s.first_call.get();
  EXPECT_EQ(first_result.rfind("answered: status 0", 0), 0u) << first_result;
  EXPECT_EQ(Balances67(c.cluster(), {s.leader}),
            std::vector<int64_t>({kInitial - 1, kInitial + 1}))
      << "the LTX did not move 1 exactly once";
  s.survivors = {0, 1, 2};  // nothing was killed: all three agree
  FailoverClient auditor(ReplicasFrom(c.cluster(), {s.leader}));
  ClientReply audit;
  EXPECT_EQ(auditor.Call(Audit(), &audit), "");
  std::string why;
  EXPECT_TRUE(AuditHolds(audit, &why)) << why;
  ExpectDigestsAgree(c.cluster(), s.survivors, kTimeoutMs);
  StopCluster(c, &s);
}

// Calvin mode runs an LTX as one locked txn, outside the LTX lane, yet its
// retry after a failover is answered like paxflow's: the origin notes the
// begin and the worker that ran it notes the outcome, on every replica
// from the log, so the new leader tells the retry that the LTX committed
// (already applied) and it moves nothing again.
TEST(LtxFailoverClusterTest, InCalvinModeARetryAfterTheLeaderDiedIsToldItsLtxCommitted) {
  LtxFailoverCluster c("ltx-calvin-retry", "calvin");
  TestCluster& cluster = c.cluster();
  cluster.Start();
  HeldLtx s;
  StatusReply status;
  s.leader = WaitGroupLeader(cluster, {0, 1, 2}, &status, kTimeoutMs);
  ASSERT_GE(s.leader, 0) << cluster.Tail(0) << cluster.Tail(1) << cluster.Tail(2);
  for (int i = 0; i < 3; ++i) {
    if (i != s.leader) s.survivors.push_back(i);
  }
  const ClientRequest first = TransferLtxWithId(1);
  ClientReply committed;
  {
    FailoverClient client(ReplicasFrom(cluster, {s.leader}));
    ASSERT_EQ(client.Call(first, &committed), "");
  }
  ASSERT_EQ(committed.status(), OK) << committed.error();
  ASSERT_TRUE(committed.txn().committed()) << committed.txn().ShortDebugString();
  EXPECT_FALSE(committed.txn().already_applied());
  // Every replica has run it once it answered (the group committed its
  // epoch first); wait for the survivors to have run the epoch too.
  ExpectDigestsAgree(cluster, {0, 1, 2}, kTimeoutMs);
  ASSERT_NO_FATAL_FAILURE(KillLeader(c, s));
  FailoverClient retry(ReplicasFrom(cluster, s.survivors));
  ClientReply resent;
  ASSERT_EQ(retry.Call(first, &resent), "");
  ASSERT_EQ(resent.status(), OK) << resent.error();
  EXPECT_TRUE(resent.txn().committed()) << resent.txn().ShortDebugString();
  EXPECT_TRUE(resent.txn().already_applied()) << resent.txn().ShortDebugString();
  EXPECT_FALSE(resent.txn().aborted());
  EXPECT_EQ(resent.txn().txn_id(), committed.txn().txn_id());
  EXPECT_NE(resent.txn().detail().find("did not begin another"), std::string::npos)
      << resent.txn().detail();
  const int next = NewLeader(c, s);
  ASSERT_GE(next, 0);
  EXPECT_EQ(Balances67(cluster, {next}), std::vector<int64_t>({kInitial - 1, kInitial + 1}))
      << "the LTX did not move 1 exactly once";
  AuditAgreeAndStop(c, &s, {next});
}

}  // namespace
}  // namespace paxflow::testing
