// Real clients against running clusters (nodes in this process, or node
// processes, client ports on 127.0.0.1 picked free): round trips of every
// request kind, an error reply for every kind of bad request, vanishing
// clients, the bank invariant under paxflow-load; batches against single
// requests (same replies, same digest), a batch with bad txns in it, LTXs
// through every client path, overload (BUSY, bounded admission and
// memory) and a client that never reads its replies.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include "applications/bank.h"
#include "applications/tpcc.h"
#include "client/client_service.h"
#include "client/client.h"
#include "client/reply.h"
#include "common/json.h"
#include "node/node.h"
#include "tests/serial_reference.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::ChildProcess;
using testing::InProcessCluster;
using testing::TempDir;

std::string Endpoint(const NodeConfig& node) {
  return "tcp://127.0.0.1:" + std::to_string(node.client_port());
}

// Nodes that run until stopped, with no embedded load: clients only.
class ClientClusterTest : public ::testing::Test {
 protected:
  void StartCluster(const std::string& preset, uint32_t partitions, uint32_t replicas = 1,
                    const std::string& log_dir = "", Mode mode = Mode::kPaxflow) {
    config_ = testing::MakeConfig("clients", partitions, replicas, "inproc");
    params_ = testing::TestParams(preset, mode, 0);
    if (preset == "tpcc") params_.workload.warehouses = partitions;
    if (tune_) tune_(&params_);
    params_.engine.generate = false;
    params_.engine.log_dir = log_dir.empty() ? logs_.path() : log_dir;
    cluster_ = std::make_unique<InProcessCluster>(config_, params_);
    ASSERT_EQ(cluster_->Start(), "");
  }
  void StopCluster() {
    for (size_t i = 0; i < cluster_->size(); ++i) cluster_->node(i).RequestStop();
    ASSERT_TRUE(cluster_->WaitFinished(60000));
  }
  ClientReply Call(Client& client, ClientRequest request) {
    ClientReply reply;
    EXPECT_EQ(client.Call(std::move(request), &reply, 20000), "");
    return reply;
  }
  TempDir logs_;
  ClusterConfig config_;
  NodeParams params_;
  std::function<void(NodeParams*)> tune_;  // applied to the preset's parameters
  std::unique_ptr<InProcessCluster> cluster_;
};

TEST_F(ClientClusterTest, RoundTripsOfEveryRequestKind) {
  StartCluster("mixed", 3);
  Client client;
  ASSERT_EQ(client.Connect(Endpoint(config_.node(1))), "");
  // put then get, across partitions and beyond the loaded key range.
  ClientReply put = Call(client, Client::Put({{7, "hello"}, {8, "world"}, {1000001, "sparse"}}));
  ASSERT_EQ(put.status(), OK) << put.error();
  EXPECT_EQ(put.txn().txn_class(), "RW");
  EXPECT_TRUE(put.txn().committed());
  ClientReply get = Call(client, Client::Get({7, 8, 1000001, 999999999}));
  ASSERT_EQ(get.status(), OK) << get.error();
  ASSERT_EQ(get.txn().reads_size(), 4);
  EXPECT_EQ(get.txn().reads(0).value(), "hello");
  EXPECT_EQ(get.txn().reads(1).value(), "world");
  EXPECT_EQ(get.txn().reads(2).value(), "sparse");
  EXPECT_FALSE(get.txn().reads(3).found());
  EXPECT_EQ(get.txn().txn_class(), "RO");
  // The snapshot of a later read-only txn includes the put's epoch.
  EXPECT_GE(get.txn().read_version(), put.txn().epoch());
  EXPECT_GT(get.txn().epoch(), put.txn().epoch());

  // kv: read some keys, write others, in one txn.
  ClientRequest kv;
  kv.mutable_txn()->set_procedure("kv");
  kv.mutable_txn()->add_read_set(7);
  kv.mutable_txn()->add_write_set(9);
  kv.mutable_txn()->add_values("nine");
  ClientReply kv_reply = Call(client, kv);
  ASSERT_EQ(kv_reply.status(), OK) << kv_reply.error();
  EXPECT_EQ(kv_reply.txn().reads(0).value(), "hello");
  EXPECT_EQ(Call(client, Client::Get({9})).txn().reads(0).value(), "nine");

  // An application procedure by name.
  ClientRequest rmw;
  rmw.mutable_txn()->set_procedure("ycsb-rmw");
  rmw.mutable_txn()->add_read_write_set(7);
  ClientReply rmw_reply = Call(client, rmw);
  ASSERT_EQ(rmw_reply.status(), OK) << rmw_reply.error();
  EXPECT_NE(Call(client, Client::Get({7})).txn().reads(0).value(), "hello");

  // Status of every node; digests at one common epoch add up to the
  // serial execution's digest of the whole database at that epoch.
  Epoch ahead = 0;
  std::vector<std::unique_ptr<Client>> clients;
  for (const NodeConfig& node : config_.node()) {
    clients.push_back(std::make_unique<Client>());
    ASSERT_EQ(clients.back()->Connect(Endpoint(node)), "");
    ClientReply status = Call(*clients.back(), Client::Status());
    ASSERT_EQ(status.status(), OK);
    EXPECT_EQ(status.node_status().node_id(), node.id());
    EXPECT_GT(status.node_status().published_epoch(), 0u);
    ahead = std::max<Epoch>(ahead, status.node_status().admitted_epoch() + 10);
  }
  uint64_t database = 0;
  for (auto& node_client : clients) {
    ClientReply digest = Call(*node_client, Client::Digest(ahead));
    ASSERT_EQ(digest.status(), OK);
    EXPECT_EQ(digest.digest().epoch(), ahead);
    database += digest.digest().digest();
  }
  StopCluster();
  testing::SerialResult serial = testing::SerialExecute(logs_.path(), params_.workload);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(serial.digest_after_epoch.at(ahead), database);
}

TEST_F(ClientClusterTest, EveryBadRequestGetsAnErrorAndTheNodeCarriesOn) {
  StartCluster("bank", 2);
  Client client;
  ASSERT_EQ(client.Connect(Endpoint(config_.node(0))), "");
  auto expect_error = [&](const std::string& what, ReplyStatus status, const std::string& text) {
    ClientReply reply;
    ASSERT_TRUE(client.Receive(&reply, 20000)) << what << ": no reply";
    EXPECT_EQ(reply.status(), status) << what << ": " << reply.error();
    EXPECT_NE(reply.error().find(text), std::string::npos) << what << ": " << reply.error();
  };
  client.SendRaw("\xff\xfe garbage that is no protobuf");
  expect_error("garbled", BAD_REQUEST, "garbled");
  client.SendRaw(std::string(5 << 20, 'x'));
  expect_error("oversized", TOO_LARGE, "exceeds the limit");
  {
    // Too large to parse, but its id is read from its first field: the
    // refusal names it (a pipelining client matches replies by id).
    ClientRequest big;
    big.set_request_id(77);
    big.mutable_txn()->set_procedure("put");
    big.mutable_txn()->add_write_set(1);
    big.mutable_txn()->add_values(std::string(5 << 20, 'v'));
    client.SendRaw(big.SerializeAsString());
    ClientReply reply;
    ASSERT_TRUE(client.Receive(&reply, 20000)) << "oversized with an id: no reply";
    EXPECT_EQ(reply.status(), TOO_LARGE) << reply.error();
    EXPECT_EQ(reply.request_id(), 77u);
  }
  ClientRequest empty;
  client.Send(empty);
  expect_error("empty", BAD_REQUEST, "asks for nothing");
  ClientRequest unknown;
  unknown.mutable_txn()->set_procedure("drop-table");
  unknown.mutable_txn()->add_read_set(1);
  client.Send(unknown);
  expect_error("unknown procedure", UNKNOWN_PROCEDURE, "bank-transfer");
  ClientRequest twice = Client::Get({3, 3});
  client.Send(twice);
  expect_error("repeated key", BAD_REQUEST, "key 3 appears twice");
  std::vector<uint64_t> many;
  for (uint64_t k = 0; k < 10001; ++k) many.push_back(k);
  client.Send(Client::Get(many));
  expect_error("too many keys", TOO_LARGE, "10001 keys");
  client.Send(Client::Put({{1, std::string(2 << 20, 'v')}}));
  expect_error("huge value", TOO_LARGE, "value");
  ClientRequest transfer;
  transfer.mutable_txn()->set_procedure("bank-transfer");
  transfer.mutable_txn()->add_read_write_set(1);
  client.Send(transfer);
  expect_error("malformed transfer", BAD_REQUEST, "exactly two accounts");
  ClientRequest missing_values;
  missing_values.mutable_txn()->set_procedure("put");
  missing_values.mutable_txn()->add_write_set(1);
  client.Send(missing_values);
  expect_error("put without values", BAD_REQUEST, "one value per write_set key");

  client.Send(Client::Digest(uint64_t{1} << 40));
  expect_error("digest far ahead", BAD_REQUEST, "too far ahead");

  // Still serving: a valid audit reads every account and sees the total.
  ClientRequest audit;
  audit.mutable_txn()->set_procedure("bank-audit");
  for (uint64_t account = 0; account < params_.workload.bank_accounts; ++account) {
    audit.mutable_txn()->add_read_set(account);
  }
  ClientReply ok = Call(client, audit);
  ASSERT_EQ(ok.status(), OK) << ok.error();
  EXPECT_TRUE(ok.txn().invariant_ok());

  // Shutting down: txns are refused, status is still answered.
  cluster_->node(0).RequestStop();
  client.Send(audit);
  expect_error("shutting down", SHUTTING_DOWN, "shutting down");
  EXPECT_EQ(Call(client, Client::Status()).status(), OK);
  StopCluster();
}

TEST_F(ClientClusterTest, ReplicasRedirectTxnsToTheirLeader) {
  StartCluster("mixed", 1, 2);
  Client follower;
  ASSERT_EQ(follower.Connect(Endpoint(config_.node(1))), "");
  ClientReply reply = Call(follower, Client::Get({1}));
  EXPECT_EQ(reply.status(), NOT_LEADER);
  EXPECT_NE(reply.error().find("node 0"), std::string::npos) << reply.error();
  EXPECT_EQ(Call(follower, Client::Status()).node_status().replica(), 1u);
  StopCluster();
}

TEST_F(ClientClusterTest, AClientThatVanishesCostsOnlyItsOwnReplies) {
  StartCluster("mixed", 2);
  {
    Client gone;
    ASSERT_EQ(gone.Connect(Endpoint(config_.node(0))), "");
    for (uint64_t i = 0; i < 200; ++i) gone.Send(Client::Put({{i, "v" + std::to_string(i)}}));
  }  // closed with 200 replies due
  Client client;
  ASSERT_EQ(client.Connect(Endpoint(config_.node(0))), "");
  ClientReply put = Call(client, Client::Put({{5000, "after"}}));
  ASSERT_EQ(put.status(), OK) << put.error();
  EXPECT_EQ(Call(client, Client::Get({5000})).txn().reads(0).value(), "after");
  StopCluster();
  // Whatever the vanished client's txns did, they did as logged.
  testing::SerialResult serial = testing::SerialExecute(logs_.path(), params_.workload);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(serial.digest, cluster_->DatabaseDigest());
}

// Transfers and audits through paxflow-load: every audit's balances (which
// the load driver sums itself) add up, and the final state is the serial
// execution of everything the clients submitted.
TEST_F(ClientClusterTest, BankInvariantHoldsThroughRealClients) {
  StartCluster("bank", 3);
  const std::string config_path = logs_.path() + "/cluster.conf";
  std::ofstream(config_path) << testing::ToText(config_);
  const std::string report = logs_.path() + "/load.json";
  std::string output;
  const int rc = testing::RunProcess(
      {testing::BinaryDir() + "/paxflow-load", "--config=" + config_path, "--workload=bank",
       "--bank_accounts=" + std::to_string(params_.workload.bank_accounts),
       "--audit_fraction=0.2", "--duration=2", "--clients=3", "--outstanding=8",
       "--report_json=" + report},
      &output);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("[OVERALL], Throughput(ops/sec)"), std::string::npos) << output;
  JsonValue json;
  ASSERT_EQ(ParseJson(testing::ReadFile(report), &json), "") << output;
  EXPECT_EQ(json.NumberOr("audit_violations", -1), 0);
  EXPECT_EQ(json.NumberOr("errors", -1), 0);
  EXPECT_EQ(json.NumberOr("lost", -1), 0);
  const JsonValue* kinds = json.Find("kinds");
  ASSERT_NE(kinds, nullptr);
  EXPECT_GT(kinds->Find("RO")->NumberOr("operations", 0), 10);
  EXPECT_GT(kinds->Find("RW")->NumberOr("operations", 0), 100);
  StopCluster();
  testing::SerialResult serial = testing::SerialExecute(logs_.path(), params_.workload);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(serial.digest, cluster_->DatabaseDigest());
}


// TPC-C through paxflow-load on three partitions, one warehouse each
// (remote Payments and New-Order lines), in both modes. Clients send the
// generator's args; each node plans the dependent txns it is sent (OLLP)
// and sends one whose reconnaissance went stale back in line, unanswered.
// Every txn gets one reply, every type commits, clause 3.3.2 holds on
// every partition, and the state is the serial execution of the log.
class TpccClientClusterTest : public ClientClusterTest,
                              public ::testing::WithParamInterface<Mode> {};

TEST_P(TpccClientClusterTest, EveryTypeRunsThroughClientsAndTheStateStaysConsistent) {
  StartCluster("tpcc", 3, 1, "", GetParam());
  const std::string config_path = logs_.path() + "/cluster.conf";
  std::ofstream(config_path) << testing::ToText(config_);
  const std::string report = logs_.path() + "/load.json";
  std::string output;
  const int rc = testing::RunProcess(
      {testing::BinaryDir() + "/paxflow-load", "--config=" + config_path, "--workload=tpcc",
       "--warehouses=3", "--duration=2", "--clients=3", "--outstanding=16",
       "--report_json=" + report},
      &output);
  EXPECT_EQ(rc, 0) << output;
  JsonValue json;
  ASSERT_EQ(ParseJson(testing::ReadFile(report), &json), "") << output;
  EXPECT_EQ(json.NumberOr("errors", -1), 0) << output;
  EXPECT_EQ(json.NumberOr("lost", -1), 0) << output;
  EXPECT_GT(json.NumberOr("tpmC", 0), 0) << output;
  const JsonValue* procedures = json.Find("procedures");
  ASSERT_NE(procedures, nullptr) << output;
  for (const char* name : {"tpcc-new-order", "tpcc-payment", "tpcc-order-status",
                           "tpcc-delivery", "tpcc-stock-level"}) {
    const JsonValue* procedure = procedures->Find(name);
    ASSERT_NE(procedure, nullptr) << name << "\n" << output;
    EXPECT_GT(procedure->NumberOr("committed", 0), 0) << name << "\n" << output;
  }
  // These calls go through FailoverClient, as a client's would: on a loaded
  // machine a node may answer UNAVAILABLE for a moment (a peer starved of
  // CPU stays silent past peer_timeout_ms; the time a node spends parsing
  // a scan's rows no longer counts, Transport::DeafUs); nothing ran then,
  // and the client tries again after a back-off.
  auto client_of = [&](uint32_t node) {
    FailoverOptions options;
    options.endpoints = {Endpoint(config_.node(node))};
    options.attempt_timeout_ms = 60000;
    options.total_timeout_ms = 120000;
    return std::make_unique<FailoverClient>(options);
  };
  // A dependent txn sent to a node that cannot read its warehouse is
  // planned blind, restarts at every position, and is answered once, with
  // a retryable decline, after ClientService::kMaxRestarts restarts.
  ClientRequest remote;
  remote.mutable_txn()->set_procedure("tpcc-order-status");
  remote.mutable_txn()->set_args(TpccApplication::Words({1, 4, 0, 42}));  // warehouse 1: partition 1
  ClientReply reply;
  ASSERT_EQ(client_of(0)->Call(remote, &reply), "");
  ASSERT_EQ(reply.status(), OK) << reply.error();
  EXPECT_FALSE(reply.txn().committed());
  EXPECT_NE(reply.txn().detail().find(TpccApplication::kRestart), std::string::npos)
      << reply.txn().detail();
  // The same call sent to warehouse 1's node commits.
  auto home = client_of(1);
  ASSERT_EQ(home->Call(remote, &reply), "");
  ASSERT_EQ(reply.status(), OK) << reply.error();
  EXPECT_TRUE(reply.txn().committed()) << reply.txn().detail();
  // CH's queries through a client: a long scan with no ranges, which the
  // node plans (whole tables, over the three partitions) and answers.
  for (const char* name : {"ch-q6", "ch-q5"}) {
    ClientRequest query;
    query.mutable_ltx()->set_procedure(name);
    // Again while the answer is retryable (on a loaded machine a scan may
    // time out or be refused busy); each Call is a new request id.
    for (int attempt = 0; attempt < 5; ++attempt) {
      ASSERT_EQ(home->Call(query, &reply), "");
      ASSERT_EQ(reply.status(), OK) << reply.error();
      if (reply.txn().committed() || !reply.txn().retryable()) break;
      std::printf("%s: attempt %d aborted, retryable: %s\n", name, attempt,
                  reply.txn().abort_reason().c_str());
    }
    EXPECT_TRUE(reply.txn().committed())
        << name << ": " << reply.txn().detail() << " " << reply.txn().abort_reason();
    EXPECT_EQ(reply.txn().detail().rfind(std::string("q") + name[4] + " ", 0), 0u)
        << name << ": " << reply.txn().detail();
  }
  StopCluster();
  uint64_t restarts = 0;
  for (size_t i = 0; i < cluster_->size(); ++i) {
    const RunSummary summary = cluster_->node(i).Summary();
    EXPECT_EQ(summary.consistency, "") << "node " << i;
    for (const ProcedureSummary& p : summary.procedures) restarts += p.restarts;
  }
  EXPECT_GE(restarts, ClientService::kMaxRestarts);
  testing::SerialResult serial = testing::SerialExecute(logs_.path(), params_.workload);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(serial.digest, cluster_->DatabaseDigest());
}

INSTANTIATE_TEST_SUITE_P(Modes, TpccClientClusterTest,
                         ::testing::Values(Mode::kCalvin, Mode::kPaxflow),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(ModeName(info.param));
                         });

// One txn of the comparison below, as a client would send it.
struct ScriptedTxn {
  bool ltx = false;
  TxnRequest txn;
  LtxRequest long_txn;
};

// Rounds of txns whose replies do not depend on their order within a
// round, nor on their ids (so no ycsb-rmw, whose values fold in the txn
// id): writers of a round touch keys nobody else touches in it, and
// readers read only keys of earlier rounds, loaded keys and keys never
// written.
std::vector<std::vector<ScriptedTxn>> ComparisonRounds() {
  std::vector<std::vector<ScriptedTxn>> rounds(4);
  for (uint64_t r = 0; r < rounds.size(); ++r) {
    const uint64_t base = 1000 + 100 * r;  // this round's keys
    for (uint64_t i = 0; i < 6; ++i) {
      ScriptedTxn put;
      put.txn.set_procedure("put");
      put.txn.add_write_set(base + i);
      put.txn.add_write_set(base + 10 + i);
      put.txn.add_values("r" + std::to_string(r) + "-" + std::to_string(i));
      put.txn.add_values("s" + std::to_string(r) + "-" + std::to_string(i));
      rounds[r].push_back(put);
      ScriptedTxn get;
      get.txn.set_procedure("get");
      if (r > 0) {
        get.txn.add_read_set(base - 100 + i);
        get.txn.add_read_set(base - 100 + 10 + i);
      }
      get.txn.add_read_set(7 * r + i);        // loaded
      get.txn.add_read_set(5000000 + i);      // never written
      rounds[r].push_back(get);
      ScriptedTxn kv;
      kv.txn.set_procedure("kv");
      kv.txn.add_read_set(r > 0 ? base - 100 + i : 40 + i);
      kv.txn.add_write_set(base + 20 + i);
      kv.txn.add_values("kv" + std::to_string(r));
      rounds[r].push_back(kv);
    }
    ScriptedTxn ltx;  // reads only, with a write area nobody writes in
    ltx.ltx = true;
    ltx.long_txn.set_procedure("kv");
    ltx.long_txn.add_read_set(r > 0 ? base - 100 + 20 : 60);
    ltx.long_txn.set_args(KvArgs().SerializeAsString());
    KeyRange* area = ltx.long_txn.add_write_area();
    area->set_lo(base + 50);
    area->set_hi(base + 59);
    rounds[r].push_back(ltx);
    ScriptedTxn bad;
    bad.txn.set_procedure("no-such-procedure");
    bad.txn.add_read_set(1);
    rounds[r].push_back(bad);
  }
  return rounds;
}

// What must agree between submissions: everything but timing and ids.
std::string Describe(ReplyStatus status, const TxnReply& reply) {
  std::string text = ReplyStatusName(status);
  if (status != OK) return text;
  text += " " + reply.txn_class() + (reply.committed() ? " committed" : " declined") +
          " checksum " + std::to_string(reply.checksum()) + " reads";
  const ReadsView reads(reply);
  if (reads.malformed()) return text + " MALFORMED";
  for (size_t i = 0; i < reads.size(); ++i) {
    text += reads.found(i) ? " '" + std::string(reads.value(i)) + "'" : " -";
  }
  return text;
}

// Batches (of several sizes, packed reads or keyed ones) and single
// requests give the same reply to every txn and the same final state as
// the same txns submitted one at a time, which is also the serial
// execution of what the nodes logged.
TEST_F(ClientClusterTest, BatchedAndSingleRequestsGiveTheSameRepliesAndDigest) {
  const std::vector<std::vector<ScriptedTxn>> rounds = ComparisonRounds();
  enum Way { kOneByOne, kBatchPerRound, kSmallKeyedBatches };
  std::map<Way, std::vector<std::string>> replies;
  std::map<Way, uint64_t> digests;
  for (Way way : {kOneByOne, kBatchPerRound, kSmallKeyedBatches}) {
    const std::string log_dir = logs_.path() + "/way-" + std::to_string(way);
    StartCluster("mixed", 3, 1, log_dir);
    const std::string endpoint = Endpoint(config_.node(way == kSmallKeyedBatches ? 2 : 0));
    std::vector<std::string>& seen = replies[way];
    if (way == kOneByOne) {
      Client client;
      ASSERT_EQ(client.Connect(endpoint), "");
      for (const auto& round : rounds) {
        for (const ScriptedTxn& t : round) {
          ClientRequest request;
          if (t.ltx) *request.mutable_ltx() = t.long_txn;
          else *request.mutable_txn() = t.txn;
          const ClientReply reply = Call(client, request);
          seen.push_back(Describe(reply.status(), reply.txn()));
        }
      }
    } else {
      PipelineOptions options;
      options.max_batch_txns = way == kBatchPerRound ? 1000 : 5;
      options.reads_with_keys = way == kSmallKeyedBatches;
      PipelinedClient client(nullptr, options);
      ASSERT_EQ(client.Connect(endpoint), "");
      for (const auto& round : rounds) {
        std::map<uint64_t, size_t> index;  // id -> place in the round
        for (ScriptedTxn t : round) {
          const uint64_t id = t.ltx ? client.Submit(&t.long_txn) : client.Submit(&t.txn);
          const size_t place = seen.size() + index.size();
          index[id] = place;
        }
        seen.resize(seen.size() + round.size());
        while (client.in_flight() > 0) {
          ASSERT_GT(client.Poll(20000,
                                [&](const TxnResult& result) {
                                  seen[index.at(result.id())] =
                                      Describe(result.status(), result.txn());
                                }),
                    0u)
              << "no reply within 20 s";
        }
      }
      EXPECT_EQ(client.counters().busy, 0u);
      EXPECT_EQ(client.counters().errors, rounds.size());  // the unknown procedures
    }
    StopCluster();
    digests[way] = cluster_->DatabaseDigest();
    testing::SerialResult serial = testing::SerialExecute(log_dir, params_.workload);
    ASSERT_EQ(serial.error, "");
    EXPECT_EQ(serial.digest, digests[way]) << "way " << way;
    cluster_.reset();
  }
  ASSERT_EQ(replies[kOneByOne].size(), replies[kBatchPerRound].size());
  for (size_t i = 0; i < replies[kOneByOne].size(); ++i) {
    EXPECT_EQ(replies[kOneByOne][i], replies[kBatchPerRound][i]) << "txn " << i;
    EXPECT_EQ(replies[kOneByOne][i], replies[kSmallKeyedBatches][i]) << "txn " << i;
  }
  // The comparison means something: values written were read back.
  const std::string& second_get = replies[kOneByOne][rounds[0].size() + 1];
  EXPECT_NE(second_get.find("'r0-0' 's0-0'"), std::string::npos) << second_get;
  EXPECT_EQ(digests[kOneByOne], digests[kBatchPerRound]);
  EXPECT_EQ(digests[kOneByOne], digests[kSmallKeyedBatches]);
}

// Each txn of a batch stands alone: the bad ones get an error naming their
// problem, the others run.
TEST_F(ClientClusterTest, ABatchWithBadTxnsAnswersEachTxnOnItsOwn) {
  StartCluster("mixed", 2);
  PipelinedClient client;
  ASSERT_EQ(client.Connect(Endpoint(config_.node(0))), "");
  std::map<std::string, uint64_t> ids;
  auto submit = [&](const std::string& name, TxnRequest txn) { ids[name] = client.Submit(&txn); };
  TxnRequest put;
  put.set_procedure("put");
  put.add_write_set(42);
  put.add_values("forty-two");
  submit("put", put);
  TxnRequest unknown;
  unknown.set_procedure("drop-table");
  unknown.add_read_set(1);
  submit("unknown", unknown);
  TxnRequest twice;
  twice.set_procedure("get");
  twice.add_read_set(3);
  twice.add_read_set(3);
  submit("twice", twice);
  TxnRequest no_values;
  no_values.set_procedure("put");
  no_values.add_write_set(5);
  submit("no values", no_values);
  TxnRequest get;
  get.set_procedure("get");
  get.add_read_set(43);
  get.add_read_set(44);
  submit("get", get);
  LtxRequest inverted;
  inverted.set_procedure("ycsb-rmw");
  inverted.add_read_write_set(12);
  inverted.add_write_area()->set_lo(19);
  inverted.mutable_write_area(0)->set_hi(10);
  ids["inverted ltx"] = client.Submit(&inverted);
  LtxRequest ltx;
  ltx.set_procedure("ycsb-rmw");
  ltx.add_read_write_set(12);
  ltx.add_write_area()->set_lo(10);
  ltx.mutable_write_area(0)->set_hi(19);
  ids["ltx"] = client.Submit(&ltx);
  std::map<uint64_t, TxnResult> results;
  while (client.in_flight() > 0) {
    ASSERT_GT(client.Poll(20000, [&](const TxnResult& r) { results[r.id()] = r; }), 0u);
  }
  auto expect = [&](const std::string& name, ReplyStatus status, const std::string& text) {
    const TxnResult& r = results.at(ids.at(name));
    EXPECT_EQ(r.status(), status) << name << ": " << r.error();
    EXPECT_NE(r.error().find(text), std::string::npos) << name << ": " << r.error();
  };
  expect("put", OK, "");
  expect("get", OK, "");
  expect("ltx", OK, "");
  expect("unknown", UNKNOWN_PROCEDURE, "unknown procedure 'drop-table'");
  expect("twice", BAD_REQUEST, "key 3 appears twice");
  expect("no values", BAD_REQUEST, "one value per write_set key");
  expect("inverted ltx", BAD_REQUEST, "write_area range [19, 10] is inverted");
  EXPECT_TRUE(results.at(ids.at("put")).txn().committed());
  EXPECT_EQ(ReadsView(results.at(ids.at("get")).txn()).size(), 2u);
  EXPECT_EQ(results.at(ids.at("ltx")).txn().txn_class(), "LTX");
  EXPECT_EQ(client.counters().ok, 3u);
  EXPECT_EQ(client.counters().errors, 4u);
  // The put is there for later txns.
  Client single;
  ASSERT_EQ(single.Connect(Endpoint(config_.node(1))), "");
  EXPECT_EQ(Call(single, Client::Get({42})).txn().reads(0).value(), "forty-two");
  StopCluster();
}

// Paxflow mode: more client LTXs at once than the node's share of
// max_active_ltx (here 2) wait at the client port for room instead of
// aborting busy. Their procedure does not declare its reads, so each goes
// through the LTX lane and counts against the limit (placed in place on one
// partition, commit records on three, where the share is 1); all twelve
// come in one message, so without the hold ten would begin while two were
// unresolved. Every one commits, and the state is the serial execution of
// the log.
TEST_F(ClientClusterTest, ClientLtxsBeyondTheActiveLimitWaitForRoomInsteadOfAbortingBusy) {
  tune_ = [](NodeParams* params) { params->engine.max_active_ltx = 2; };
  for (uint32_t partitions : {1u, 3u}) {
    SCOPED_TRACE(std::to_string(partitions) + " partitions");
    const std::string log_dir = logs_.path() + "/p" + std::to_string(partitions);
    StartCluster("mixed", partitions, 1, log_dir);
    PipelinedClient client;
    ASSERT_EQ(client.Connect(Endpoint(config_.node(0))), "");
    constexpr int kLtxs = 12;
    for (int i = 0; i < kLtxs; ++i) {
      LtxRequest ltx;
      ltx.set_procedure("ycsb-rmw");
      ltx.add_read_write_set(100 + 10 * i);
      ltx.add_write_area()->set_lo(100 + 10 * i);
      ltx.mutable_write_area(0)->set_hi(109 + 10 * i);
      client.Submit(&ltx);
    }
    int committed = 0;
    std::string aborted;
    while (client.in_flight() > 0) {
      ASSERT_GT(client.Poll(20000,
                            [&](const TxnResult& r) {
                              EXPECT_EQ(r.status(), OK) << r.error();
                              if (r.txn().committed()) ++committed;
                              else aborted += " [" + r.txn().abort_reason() + "]";
                            }),
                0u)
          << "no reply within 20 s";
    }
    StopCluster();
    // (The serial execution below knows no busy rule: it runs every LTX.)
    ASSERT_EQ(committed, kLtxs) << "aborted:" << aborted;
    testing::SerialResult serial = testing::SerialExecute(log_dir, params_.workload);
    ASSERT_EQ(serial.error, "");
    EXPECT_EQ(serial.digest, cluster_->DatabaseDigest());
    cluster_.reset();
  }
}

// A long txn goes through the simple client, the pipelined one and
// paxflow-cli; a bad LTX file is refused with its place (exit 2), one the
// node refuses exits 4.
TEST_F(ClientClusterTest, LtxsThroughEveryClientPath) {
  StartCluster("mixed", 2);
  Client client;
  ASSERT_EQ(client.Connect(Endpoint(config_.node(0))), "");
  LtxRequest ltx;
  ltx.set_procedure("kv");
  ltx.add_read_set(3);
  ltx.set_args([] {
    KvArgs args;
    return args.SerializeAsString();
  }());
  ltx.add_write_area()->set_lo(100);
  ltx.mutable_write_area(0)->set_hi(199);
  ltx.add_read_area()->set_lo(0);
  ltx.mutable_read_area(0)->set_hi(50);
  ClientReply reply = Call(client, Client::Ltx(ltx));
  ASSERT_EQ(reply.status(), OK) << reply.error();
  EXPECT_EQ(reply.txn().txn_class(), "LTX");
  EXPECT_FALSE(reply.txn().aborted()) << reply.txn().abort_reason();

  PipelinedClient pipelined;
  ASSERT_EQ(pipelined.Connect(Endpoint(config_.node(1))), "");
  LtxRequest scan;
  scan.set_procedure("get");
  scan.add_read_set(4);
  scan.add_read_area()->set_lo(0);
  scan.mutable_read_area(0)->set_hi(99);
  const uint64_t id = pipelined.Submit(&scan);
  TxnResult result;
  ASSERT_GT(pipelined.Poll(20000, [&](const TxnResult& r) { result = r; }), 0u);
  EXPECT_EQ(result.id(), id);
  EXPECT_EQ(result.status(), OK) << result.error();
  EXPECT_EQ(result.txn().txn_class(), "LTX");

  const std::string file = logs_.path() + "/long.txt";
  std::ofstream(file) << "# a long read-modify-write\nprocedure: \"ycsb-rmw\"\n"
                         "read_write_set: [10, 11]\nwrite_area { lo: 10 hi: 19 }\n";
  std::string output;
  const std::string cli = testing::BinaryDir() + "/paxflow-cli";
  const std::string address = "--address=" + Endpoint(config_.node(0));
  EXPECT_EQ(testing::RunProcess({cli, address, "ltx", file}, &output), 0) << output;
  EXPECT_NE(output.find("LTX, epoch"), std::string::npos) << output;
  EXPECT_NE(output.find("committed"), std::string::npos) << output;
  std::ofstream(file) << "procedure: \"ycsb-rmw\"\nwrite_area { lo: 10 hi: }\n";
  EXPECT_EQ(testing::RunProcess({cli, address, "ltx", file}, &output), 2) << output;
  EXPECT_NE(output.find("line 2"), std::string::npos) << output;
  std::ofstream(file) << "procedure: \"ycsb-rmw\"\nread_write_set: 12\n"
                         "write_area { lo: 10 hi: 19 }\nwrite_area { lo: 15 hi: 30 }\n";
  EXPECT_EQ(testing::RunProcess({cli, address, "ltx", file}, &output), 4) << output;
  EXPECT_NE(output.find("BAD_REQUEST"), std::string::npos) << output;
  EXPECT_NE(output.find("overlap"), std::string::npos) << output;
  StopCluster();
}

// paxflow-cli's exit status says what became of the txn (the codes its
// --help lists), so that a script can rely on it: 0 committed, 1 ran and
// did not commit (an aborted LTX), 2 bad usage, 3 no answer, 4 refused.
TEST_F(ClientClusterTest, CliExitStatusSaysWhatBecameOfTheTxn) {
  StartCluster("mixed", 2);
  const std::string cli = testing::BinaryDir() + "/paxflow-cli";
  const std::string address = "--address=" + Endpoint(config_.node(0));
  std::string output;
  EXPECT_EQ(testing::RunProcess({cli, address, "put", "7", "seven"}, &output), 0) << output;
  EXPECT_EQ(testing::RunProcess({cli, address, "get", "7"}, &output), 0) << output;
  EXPECT_NE(output.find("seven"), std::string::npos) << output;
  EXPECT_EQ(testing::RunProcess({cli, address, "ro", "7", "8"}, &output), 0) << output;

  // It writes keys 10 and 11, outside the area it declared: aborted. (An
  // LTX that commits exits 0, one the node refuses 4: LtxsThroughEveryClientPath.)
  const std::string file = logs_.path() + "/long.txt";
  std::ofstream(file) << "procedure: \"ycsb-rmw\"\nread_write_set: [10, 11]\n"
                         "write_area { lo: 20 hi: 29 }\n";
  EXPECT_EQ(testing::RunProcess({cli, address, "ltx", file}, &output), 1) << output;
  EXPECT_NE(output.find("aborted (write-area"), std::string::npos) << output;

  // Bad usage, whether the command, a flag (gflags alone would exit 1) or
  // its value is wrong.
  EXPECT_EQ(testing::RunProcess({cli, address, "frobnicate"}, &output), 2) << output;
  EXPECT_EQ(testing::RunProcess({cli, address, "--no_such_flag", "get", "7"}, &output), 2)
      << output;
  EXPECT_NE(output.find("no_such_flag"), std::string::npos) << output;
  EXPECT_EQ(testing::RunProcess({cli, address, "--timeout_ms=soon", "get", "7"}, &output), 2)
      << output;
  EXPECT_NE(output.find("--timeout_ms"), std::string::npos) << output;
  EXPECT_EQ(testing::RunProcess({cli, address, "get", "seven"}, &output), 2) << output;

  // Nobody on the port: no answer.
  const uint32_t port = testing::FreePorts(1)[0];
  EXPECT_EQ(testing::RunProcess({cli, "--address=tcp://127.0.0.1:" + std::to_string(port),
                                 "--timeout_ms=300", "put", "7", "eight"},
                                &output),
            3)
      << output;
  EXPECT_NE(output.find("no reply"), std::string::npos) << output;
  // --help lists the codes (it exits 1 itself: gflags' rule).
  testing::RunProcess({cli, "--help"}, &output);
  EXPECT_NE(output.find("exit status"), std::string::npos) << output;
  StopCluster();
}

// A transfer its procedure declines (insufficient funds) ran and wrote
// nothing: paxflow-cli exits 1, and 0 for one that commits.
TEST_F(ClientClusterTest, CliExitsOneWhenTheProcedureDeclines) {
  StartCluster("bank", 1);
  const std::string cli = testing::BinaryDir() + "/paxflow-cli";
  const std::string address = "--address=" + Endpoint(config_.node(0));
  const std::string file = logs_.path() + "/transfer.txt";
  std::string output;
  std::ofstream(file) << "procedure bank-transfer\nread_write 1 2\namount 1000000000\n";
  EXPECT_EQ(testing::RunProcess({cli, address, "txn", file}, &output), 1) << output;
  EXPECT_NE(output.find("declined"), std::string::npos) << output;
  std::ofstream(file) << "procedure bank-transfer\nread_write 1 2\namount 1\n";
  EXPECT_EQ(testing::RunProcess({cli, address, "txn", file}, &output), 0) << output;
  EXPECT_NE(output.find("committed"), std::string::npos) << output;
  StopCluster();
}

// One node as its own process (so that its memory is its own), clients only.
class NodeProcessTest : public ::testing::Test {
 protected:
  void StartNode(const std::vector<std::string>& flags) {
    config_ = testing::MakeConfig("admission", 1, 1, "tcp");
    const std::string path = dir_.path() + "/node.conf";
    std::ofstream(path) << testing::ToText(config_);
    config_path_ = path;
    std::vector<std::string> args = {testing::BinaryDir() + "/paxflow-node", "--config=" + path,
                                     "--node_id=0", "--generate=false", "--duration=0",
                                     "--progress_ms=0", "--workload=mixed", "--records=20000"};
    args.insert(args.end(), flags.begin(), flags.end());
    node_ = std::make_unique<ChildProcess>(args);
    ASSERT_EQ(status_client_.Connect(Endpoint(config_.node(0))), "");
    // Until it answers (it loads its data first).
    for (int attempt = 0; attempt < 120; ++attempt) {
      if (status_client_.Call(Client::Status(), &status_, 500).empty()) return;
    }
    FAIL() << "the node did not answer: " << node_->output();
  }
  StatusReply Status() {
    ClientReply reply;
    EXPECT_EQ(status_client_.Call(Client::Status(), &reply, 20000), "");
    return reply.node_status();
  }
  void StopNode() {
    node_->Signal(SIGTERM);
    EXPECT_EQ(node_->Wait(60000), 0) << node_->output();
  }
  TempDir dir_;
  ClusterConfig config_;
  std::string config_path_;
  std::unique_ptr<ChildProcess> node_;
  Client status_client_;
  ClientReply status_;
};

// Offered four times what the node can sequence, open loop: past its
// admission bound txns get BUSY at once, the bound holds, the node's memory
// stays put, no admitted txn is lost, and it serves normally afterwards.
TEST_F(NodeProcessTest, OverloadGetsBusyRepliesAndBoundedMemory) {
  // 100 txns per 10 ms epoch: at most 10,000 txn/s.
  StartNode({"--max_batch=100", "--epoch_ms=10", "--client_admit_limit=500"});
  const uint64_t rss_before = Status().resident_bytes();
  const std::string report = dir_.path() + "/load.json";
  ChildProcess load({testing::BinaryDir() + "/paxflow-load", "--config=" + config_path_,
                     "--workload=mixed", "--records=20000", "--rate=40000", "--duration=3",
                     "--clients=2", "--retry_busy=false", "--allow_busy",
                     "--report_json=" + report});
  uint64_t most_admitted = 0, most_rss = rss_before;
  // Sample the node while the load runs (sampling, not synchronisation).
  while (!load.WaitForOutput("[OVERALL]", 100)) {
    const StatusReply status = Status();
    most_admitted = std::max(most_admitted, status.client_txns_waiting());
    most_rss = std::max(most_rss, status.resident_bytes());
  }
  ASSERT_EQ(load.Wait(60000), 0) << load.output();
  JsonValue json;
  ASSERT_EQ(ParseJson(testing::ReadFile(report), &json), "") << load.output();
  EXPECT_GT(json.NumberOr("busy", 0), 1000) << load.output();
  EXPECT_EQ(json.NumberOr("errors", -1), 0) << load.output();
  EXPECT_EQ(json.NumberOr("lost", -1), 0) << load.output();
  EXPECT_GT(json.Find("kinds")->Find("RO")->NumberOr("operations", 0), 1000) << load.output();
  const StatusReply after = Status();
  EXPECT_LE(most_admitted, 500u);
  EXPECT_EQ(after.client_admit_limit(), 500u);
  EXPECT_GT(after.client_busy(), 1000u);
  EXPECT_LT(most_rss, rss_before + (100u << 20)) << "RSS " << rss_before << " -> " << most_rss;
  // Served as usual once the load is gone.
  Client client;
  ASSERT_EQ(client.Connect(Endpoint(config_.node(0))), "");
  ClientReply put;
  ASSERT_EQ(client.Call(Client::Put({{77, "after"}}), &put, 20000), "");
  EXPECT_EQ(put.status(), OK) << put.error();
  StopNode();
}

// A client that sends and never reads: its replies wait for it up to a
// bound, then its txns are refused; the node's memory stays put and other
// clients are served meanwhile.
TEST_F(NodeProcessTest, AClientThatNeverReadsDoesNotGrowTheNodesMemory) {
  StartNode({"--client_buffer_mb=2", "--client_admit_limit=2000"});
  const uint64_t rss_before = Status().resident_bytes();
  zmq::context_t context(1);
  zmq::socket_t greedy(context, zmq::socket_type::dealer);
  greedy.set(zmq::sockopt::linger, 0);
  greedy.set(zmq::sockopt::rcvhwm, 1);  // reads nothing: let the node's side fill up
  greedy.set(zmq::sockopt::rcvbuf, 64 << 10);
  greedy.connect(Endpoint(config_.node(0)));
  ClientRequest batch;
  for (uint64_t i = 0; i < 100; ++i) {
    BatchedTxn* item = batch.mutable_batch()->add_txns();
    item->set_id(i + 1);
    item->mutable_txn()->set_procedure("get");
    for (uint64_t k = 0; k < 50; ++k) item->mutable_txn()->add_read_set(i * 50 + k);
  }
  const std::string bytes = batch.SerializeAsString();
  Client other;
  ASSERT_EQ(other.Connect(Endpoint(config_.node(0))), "");
  uint64_t most_unsent = 0, most_rss = rss_before, served = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (std::chrono::steady_clock::now() < until) {
    for (int i = 0; i < 20; ++i) {
      if (!greedy.send(zmq::buffer(bytes), zmq::send_flags::dontwait)) break;
    }
    ClientReply reply;
    ASSERT_EQ(other.Call(Client::Get({1}), &reply, 20000), "");
    if (reply.status() == OK) ++served;
    const StatusReply status = Status();
    most_unsent = std::max(most_unsent, status.client_unsent_bytes());
    most_rss = std::max(most_rss, status.resident_bytes());
  }
  const StatusReply after = Status();
  EXPECT_GT(served, 0u);
  EXPECT_GT(after.client_busy() + after.client_dropped_replies(), 0u);
  // Its own bound (2 MiB) plus what its admitted txns' replies hold.
  EXPECT_LT(most_unsent, 32u << 20) << most_unsent;
  EXPECT_LT(most_rss, rss_before + (100u << 20)) << "RSS " << rss_before << " -> " << most_rss;
  StopNode();
}

}  // namespace
}  // namespace paxflow
