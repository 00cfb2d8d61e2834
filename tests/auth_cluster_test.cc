// Authentication on every socket (config auth.curve; src_calvin/auth/):
// clients without a key or with an unknown one are refused and the node
// serves good ones; administrative requests need an operator key; a peer
// outside the config gets no batch, final batch or heartbeat accepted; a
// configured node cannot speak for another; the bank audits hold with
// CURVE on. Real node processes on 127.0.0.1 (paxflow-cluster start).
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "applications/application.h"
#include "auth/auth_config.h"
#include "auth/client_keys.h"
#include "auth/keys.h"
#include "base/params.h"
#include "client/request.h"
#include "common/clock.h"
#include "applications/workload.h"
#include "common/transport.h"
#include "recovery.pb.h"
#include "tests/http_get.h"
#include "tests/test_cluster.h"

namespace paxflow {
namespace {

using testing::BankClients;
using testing::BinaryDir;
using testing::ReadFile;
using testing::ReplayDigest;
using testing::RunProcess;
using testing::TestCluster;
using testing::WaitUntil;

// Writes key pair `name` under `dir` (paxflow-cli keygen, as an operator
// would); returns its prefix.
std::string Keygen(const std::string& dir, const std::string& name) {
  std::string output;
  const std::string prefix = dir + "/" + name;
  EXPECT_EQ(RunProcess({BinaryDir() + "/paxflow-cli", "keygen", "--out=" + prefix}, &output), 0)
      << output;
  return prefix;
}

CurveKeyPair KeysOf(const std::string& prefix) {
  CurveKeyPair keys;
  EXPECT_EQ(ReadSecretKeyFile(prefix + ".key", &keys), "");
  return keys;
}

// How many times `text` occurs in `log`.
size_t Occurrences(const std::string& log, const std::string& text) {
  size_t count = 0;
  for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++count;
  return count;
}

// Turns auth.curve on: a key pair per node, an operator (the key the tools
// and this test's status checks use) and an application client.
void WithCurve(ClusterConfig* config, const std::string& dir) {
  for (NodeConfig& node : *config->mutable_node()) {
    const std::string prefix = Keygen(dir, "node-" + std::to_string(node.id()));
    node.set_public_key_file(prefix + ".pub");
    node.set_secret_key_file(prefix + ".key");
  }
  AuthConfig* auth = config->mutable_auth();
  auth->set_curve(true);
  ClientKey* op = auth->add_client();
  op->set_name("operator");
  op->set_public_key_file(Keygen(dir, "operator") + ".pub");
  op->set_operator_(true);
  ClientKey* app = auth->add_client();
  app->set_name("app");
  app->set_public_key_file(Keygen(dir, "app") + ".pub");
  auth->set_client_secret_key_file(dir + "/operator.key");
}

// A cluster with CURVE on whose tools and status checks (this process's
// clients) use the operator key.
class CurveCluster {
 public:
  // `edit`, if given, changes the config further.
  CurveCluster(const std::string& name, uint32_t partitions, std::vector<std::string> flags,
               std::function<void(ClusterConfig*)> edit = nullptr)
      : cluster_(name, partitions, 1, std::move(flags),
                 [&edit](ClusterConfig* config, const std::string& dir) {
                   WithCurve(config, dir);
                   if (edit) edit(config);
                 }) {
    EXPECT_EQ(UseClientKeys(&cluster_.config(), "", ""), "");
  }
  ~CurveCluster() { ClearClientKeys(); }
  TestCluster& operator*() { return cluster_; }
  TestCluster* operator->() { return &cluster_; }
  std::string dir() const {
    const std::string& path = cluster_.config_path();
    return path.substr(0, path.rfind('/'));
  }
  // A client with key pair `prefix` (empty: no key at all) to node `i`.
  std::unique_ptr<Client> ClientWith(const std::string& prefix, int i) {
    auto client = std::make_unique<Client>();
    ClientCurve curve;
    if (!prefix.empty()) {
      curve.own = KeysOf(prefix);
      EXPECT_EQ(NodePublicKey(cluster_.node(i), &curve.server_key), "");
    }
    client->SetCurve(curve);
    EXPECT_EQ(client->Connect(ClientEndpoint(cluster_.node(i))), "");
    return client;
  }
  StatusReply Status(int i) {
    StatusReply status;
    EXPECT_TRUE(testing::AskStatus(cluster_.node(i), &status, 2000));
    return status;
  }

 private:
  TestCluster cluster_;
};

TEST(AuthClusterTest, ClientsWithoutAKeyOrWithAnUnknownOneAreRefusedAndTheNodeCarriesOn) {
  CurveCluster cluster("auth-clients", 1, {"--workload=mixed", "--generate=false"});
  cluster->Start();
  ClientReply reply;
  // No key: the CURVE handshake fails; the request is never read.
  EXPECT_NE(cluster.ClientWith("", 0)->Call(Client::Status(), &reply, 500), "");
  // A key the config does not list: the ZAP handler refuses it, again and
  // again as the client reconnects, and logs it once.
  const std::string stranger = Keygen(cluster.dir(), "stranger");
  for (int attempt = 0; attempt < 3; ++attempt) {
    EXPECT_NE(cluster.ClientWith(stranger, 0)->Call(Client::Put({{5, "x"}}), &reply, 300), "");
  }
  EXPECT_GE(cluster.Status(0).auth_refused_clients(), 3u);
  // The application's key: txns go through; administrative requests do not.
  std::unique_ptr<Client> app = cluster.ClientWith(cluster.dir() + "/app", 0);
  ASSERT_EQ(app->Call(Client::Put({{5, "good"}}), &reply, 5000), "");
  EXPECT_EQ(reply.status(), OK) << reply.error();
  ASSERT_EQ(app->Call(Client::Get({5}), &reply, 5000), "");
  ASSERT_EQ(reply.txn().reads_size(), 1);
  EXPECT_EQ(reply.txn().reads(0).value(), "good");
  for (const ClientRequest& admin : {Client::Digest(0), Client::Checkpoint()}) {
    ASSERT_EQ(app->Call(admin, &reply, 5000), "");
    EXPECT_EQ(reply.status(), FORBIDDEN) << admin.ShortDebugString();
  }
  ASSERT_EQ(app->Call(Client::Status(), &reply, 5000), "");
  EXPECT_FALSE(reply.node_status().details());
  EXPECT_EQ(reply.node_status().auth_refused_clients(), 0u) << "a counter, for an operator only";
  // The operator's key: details.
  std::unique_ptr<Client> op = cluster.ClientWith(cluster.dir() + "/operator", 0);
  ASSERT_EQ(op->Call(Client::Status(), &reply, 5000), "");
  EXPECT_TRUE(reply.node_status().details());
  EXPECT_GE(reply.node_status().auth_refused_clients(), 3u);
  ASSERT_EQ(op->Call(Client::Digest(0), &reply, 5000), "");
  EXPECT_EQ(reply.status(), OK) << reply.error();
  cluster->Stop();
  const std::string log = cluster->NodeLog(0);
  const std::string key = KeysOf(stranger).public_key;
  EXPECT_EQ(Occurrences(log, key), 1u) << "a refused key is logged once, not per attempt:\n" << log;
}

// The value of sample `sample` (name and labels) in a metrics text; -1 if absent.
double SampleValue(const std::string& text, const std::string& sample) {
  const size_t at = text.find("\n" + sample + " ");
  return at == std::string::npos ? -1 : std::stod(text.substr(at + sample.size() + 2));
}

// A client without a key is refused by libzmq's mechanism check before the
// ZAP handler is asked (or, when its reset outruns its greeting, seen as a
// handshake cut short); the node's handshake monitor counts it (status and
// /metrics) and logs it once per reason, and serves a keyed client meanwhile.
TEST(AuthClusterTest, AKeylessClientIsRefusedCountedAndLoggedOnce) {
  constexpr uint64_t kKeylessKey = 3000021;  // beyond the loaded records
  const uint32_t metrics_port = testing::FreePorts(1)[0];
  CurveCluster cluster("auth-keyless", 1, {"--workload=mixed", "--generate=false"},
                       [&](ClusterConfig* config) {
                         config->mutable_node(0)->set_metrics_port(metrics_port);
                       });
  cluster->Start();
  const uint64_t before = cluster.Status(0).auth_refused_clients();
  ClientReply reply;
  for (int attempt = 0; attempt < 3; ++attempt) {
    std::unique_ptr<Client> keyless = cluster.ClientWith("", 0);
    EXPECT_NE(keyless->Call(Client::Put({{kKeylessKey, "keyless"}}), &reply, 300), "")
        << "a keyless client got an answer";
  }
  EXPECT_TRUE(WaitUntil([&] { return cluster.Status(0).auth_refused_clients() >= before + 3; },
                        5000))
      << cluster.Status(0).ShortDebugString();
  std::string text;
  ASSERT_EQ(testing::HttpGet(static_cast<uint16_t>(metrics_port), "/metrics", &text), 200);
  const std::string family = "paxflow_auth_refused_connections_total{domain=\"client\",reason=";
  const double no_curve = SampleValue(text, family + "\"no_curve\"}");
  const double incomplete = SampleValue(text, family + "\"handshake_incomplete\"}");
  EXPECT_GE(no_curve, 0) << text;
  EXPECT_GE(incomplete, 0) << text;
  EXPECT_GE(no_curve + incomplete, 3) << text;
  EXPECT_EQ(SampleValue(text, family + "\"key_not_listed\"}"), 0) << text;
  // The node carries on: a keyed client is served, and the keyless put never ran.
  std::unique_ptr<Client> app = cluster.ClientWith(cluster.dir() + "/app", 0);
  ASSERT_EQ(app->Call(Client::Put({{kKeylessKey + 1, "keyed"}}), &reply, 5000), "");
  EXPECT_EQ(reply.status(), OK) << reply.error();
  ASSERT_EQ(app->Call(Client::Get({kKeylessKey, kKeylessKey + 1}), &reply, 5000), "");
  ASSERT_EQ(reply.txn().reads_size(), 2);
  EXPECT_FALSE(reply.txn().reads(0).found()) << "the keyless client's put ran";
  EXPECT_EQ(reply.txn().reads(1).value(), "keyed");
  cluster->Stop();
  // Logged once per reason, not per attempt (later lines only at 10, 100...).
  const std::string log = cluster->NodeLog(0);
  const size_t without = Occurrences(log, "refused a client connection without CURVE");
  const size_t cut_short = Occurrences(log, "refused a client connection that ended before");
  EXPECT_LE(without, 1u) << log;
  EXPECT_LE(cut_short, 1u) << log;
  EXPECT_GE(without + cut_short, 1u) << log;
}

// Sends, as node `claimed`, a batch (putting `value` under `key`), that
// batch again as a final one, and a heartbeat claiming a stable checkpoint
// far ahead, to node `to`, from a transport with keys `keys` (empty:
// plain, no CURVE).
void SendForged(const TestCluster& cluster, const CurveKeyPair& keys, NodeId claimed, int to,
                uint64_t key, const std::string& value, Epoch epoch) {
  TransportOptions options;
  options.self = claimed;
  options.bind_endpoint = "tcp://127.0.0.1:" + std::to_string(testing::FreePorts(1)[0]);
  options.curve = keys;
  options.linger_ms = 2000;
  PeerEndpoint peer{static_cast<NodeId>(cluster.node(to).id()),
                    NodeEndpoint(cluster.config(), cluster.node(to)), ""};
  EXPECT_EQ(NodePublicKey(cluster.node(to), &peer.public_key), "");
  options.peers.push_back(peer);
  Transport transport(options);
  ASSERT_EQ(transport.Start(), "");
  NodeParams params;
  params.workload.workload = "mixed";
  std::unique_ptr<Application> app = MakeApplication(params.workload);
  ProcedureTable procedures(*app);
  TxnRequest request = Client::Put({{key, value}}).txn();
  RequestScratch scratch{RequestLimits()};
  Batch batch;
  batch.set_epoch(epoch);
  batch.set_sequencer(claimed);
  batch.set_partition(cluster.node(to).partition());
  batch.set_has_rw(true);
  Txn* txn = batch.add_txns();
  std::string error;
  ASSERT_EQ(BuildTxn(&request, *app, procedures, RequestLimits(), &scratch, txn, &error), OK)
      << error;
  txn->set_id(MakeTxnId(epoch, claimed, 0));
  txn->set_txn_class(RW);
  txn->set_origin_node(claimed);
  transport.Send(peer.id, BATCH, batch.SerializeAsString());
  batch.set_final(true);
  batch.set_epoch(epoch + 1);
  batch.clear_txns();
  transport.Send(peer.id, BATCH, batch.SerializeAsString());
  Heartbeat heartbeat;
  heartbeat.set_node_id(claimed);
  heartbeat.set_incarnation(1);
  heartbeat.set_admitted_epoch(epoch + 1000);
  heartbeat.set_stable_checkpoint(epoch + 1000);
  heartbeat.set_freed_epoch(epoch + 1000);
  transport.Send(peer.id, HEARTBEAT, heartbeat.SerializeAsString());
  transport.Stop(/*flush=*/true);
}

// Past the test clusters' 3000 records, in partition 1 of 2 and of 3.
constexpr uint64_t kForgedKey = 3000001;

// The forged writes of SendForged never show, and node 1 still takes node
// 0's real txns.
void ExpectNothingForgedApplied(CurveCluster* cluster, uint64_t key) {
  (**cluster).ExpectProgress({0, 1}, 30);
  std::unique_ptr<Client> op = cluster->ClientWith(cluster->dir() + "/operator", 0);
  ClientReply reply;
  ASSERT_EQ(op->Call(Client::Get({key}), &reply, 5000), "");
  ASSERT_EQ(reply.txn().reads_size(), 1);
  EXPECT_FALSE(reply.txn().reads(0).found()) << "a forged write was applied";
  ASSERT_EQ(op->Call(Client::Put({{key + 6, "real"}}), &reply, 5000), "");
  EXPECT_EQ(reply.status(), OK) << reply.error();
  EXPECT_TRUE(reply.txn().committed());
}

TEST(AuthClusterTest, AForgedPeerGetsNoBatchFinalBatchOrHeartbeatAccepted) {
  CurveCluster cluster("auth-forged", 2, {"--workload=mixed", "--generate=false"});
  cluster->Start();
  const Epoch now = cluster.Status(1).admitted_epoch();
  const uint64_t before = cluster.Status(1).auth_refused_peers();
  // Its own key pair, not in the config, claiming to be node 0; the keys
  // are odd (node 1's partition) and beyond the loaded records.
  SendForged(*cluster, KeysOf(Keygen(cluster.dir(), "forger")), 0, 1, kForgedKey, "forged",
             now + 50);
  EXPECT_TRUE(WaitUntil([&] { return cluster.Status(1).auth_refused_peers() > before; }, 5000));
  // No key at all (plain zmq): refused at the handshake.
  SendForged(*cluster, {}, 0, 1, kForgedKey + 2, "forged", now + 60);
  ExpectNothingForgedApplied(&cluster, kForgedKey);
  ExpectNothingForgedApplied(&cluster, kForgedKey + 2);
  const StatusReply status = cluster.Status(1);
  EXPECT_EQ(status.auth_impersonations(), 0u);
  EXPECT_EQ(status.checkpoint_epoch(), 0u);
  cluster->Stop();
}

TEST(AuthClusterTest, AConfiguredPeerClaimingAnotherNodesIdIsRejected) {
  CurveCluster cluster("auth-impersonate", 3, {"--workload=mixed", "--generate=false"});
  cluster->Start();
  const Epoch now = cluster.Status(1).admitted_epoch();
  // Node 2's own keys (a node of the config) claiming to be node 0.
  SendForged(*cluster, KeysOf(cluster.dir() + "/node-2"), 0, 1, kForgedKey, "forged", now + 50);
  EXPECT_TRUE(WaitUntil([&] { return cluster.Status(1).auth_impersonations() >= 3; }, 5000))
      << cluster.Status(1).ShortDebugString();
  EXPECT_EQ(cluster.Status(1).auth_refused_peers(), 0u);
  ExpectNothingForgedApplied(&cluster, kForgedKey);
  cluster->Stop();
  EXPECT_NE(cluster->NodeLog(1).find("claiming to be node 0"), std::string::npos);
}

TEST(AuthClusterTest, BankAuditsHoldWithCurveOn) {
  constexpr uint64_t kAccounts = 30;
  CurveCluster cluster("auth-bank", 3,
                       {"--workload=bank", "--mode=calvin", "--generate=false",
                        "--bank_accounts=" + std::to_string(kAccounts), "--checkpoint_every=0"});
  cluster->Start();
  BankClients clients(cluster->config(), kAccounts, kAccounts * 1000);
  ASSERT_TRUE(WaitUntil([&] { return clients.acked().size() > 100 && clients.audits() > 10; },
                        30000));
  clients.Stop();
  const RunSummary summary = cluster->Stop();
  EXPECT_EQ(clients.wrong_audits(), 0);
  EXPECT_EQ(summary.invariant_failures, 0u);
  EXPECT_EQ(ReplayDigest(cluster->input()), DigestHex(summary.digest));
}

TEST(AuthClusterTest, ANodeWithABadOrMissingKeyFileRefusesToStartSayingWhy) {
  CurveCluster cluster("auth-badkey", 1, {"--workload=mixed"});
  const std::string key_file = cluster->node(0).secret_key_file();
  std::string output;
  ASSERT_EQ(rename(key_file.c_str(), (key_file + ".gone").c_str()), 0);
  EXPECT_NE(RunProcess(cluster->NodeCommand(0), &output), 0);
  EXPECT_NE(output.find("cannot read secret key file " + key_file), std::string::npos) << output;
  ASSERT_EQ(rename((key_file + ".gone").c_str(), key_file.c_str()), 0);
  ASSERT_EQ(chmod(key_file.c_str(), 0644), 0);
  EXPECT_NE(RunProcess(cluster->NodeCommand(0), &output), 0);
  EXPECT_NE(output.find("readable by others"), std::string::npos) << output;
  ASSERT_EQ(chmod(key_file.c_str(), 0600), 0);
  std::ofstream(key_file) << "not a key\n";
  EXPECT_NE(RunProcess(cluster->NodeCommand(0), &output), 0);
  EXPECT_NE(output.find("does not hold a secret key"), std::string::npos) << output;
}

}  // namespace
}  // namespace paxflow
