// Real clients against a running 3-node cluster (nodes in this process,
// client ports on 127.0.0.1): round trips of every request kind, an error
// reply for every kind of bad request, vanishing clients, and the bank
// invariant under paxflow-load.
#include <gtest/gtest.h>

#include <fstream>

#include "applications/bank.h"
#include "client/client.h"
#include "common/json.h"
#include "tests/serial_reference.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::InProcessCluster;
using testing::TempDir;

std::string Endpoint(const NodeConfig& node) {
  return "tcp://127.0.0.1:" + std::to_string(node.client_port());
}

// Nodes that run until stopped, with no embedded load: clients only.
class ClientClusterTest : public ::testing::Test {
 protected:
  void StartCluster(const std::string& preset, uint32_t partitions, uint32_t replicas = 1) {
    config_ = testing::MakeConfig("clients", partitions, replicas, "inproc");
    params_ = testing::TestParams(preset, Mode::kPaxflow, 0);
    params_.engine.generate = false;
    params_.engine.log_dir = logs_.path();
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

}  // namespace
}  // namespace paxflow
