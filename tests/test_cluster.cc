// The oracles of tests/test_cluster.h.
#include "tests/test_cluster.h"

#include <future>

#include <regex>

#include "sequencer/input_log.h"

namespace paxflow::testing {

// The digest an offline replay of `dir` prints (replica `replica`).
void ReplicatedInput(ClusterConfig* config, const std::string&) {
  const std::vector<uint32_t> ports = FreePortsBesides(config->node_size(), *config);
  for (int i = 0; i < config->node_size(); ++i) config->mutable_node(i)->set_consensus_port(ports[i]);
  Param* param = config->add_param();
  param->set_name("replicated_input");
  param->set_value("true");
}

int GroupLeader(const TestCluster& cluster, const std::vector<int>& nodes,
                StatusReply* leader_status) {
  int leader = -1;
  for (int i : nodes) {
    StatusReply status;
    if (!AskStatus(cluster.node(i), &status, 500)) return -1;
    if (status.group_role() == "leader") {
      if (leader >= 0) return -1;
      leader = i;
      *leader_status = status;
    }
  }
  if (leader < 0) return -1;
  for (int i : nodes) {
    StatusReply status;
    if (!AskStatus(cluster.node(i), &status, 500) || status.group_leader() != leader) return -1;
  }
  return leader;
}

ClientReply DigestAt(const NodeConfig& node, Epoch epoch, int timeout_ms) {
  Client client;
  client.Connect(ClientEndpoint(node));
  ClientReply reply;
  EXPECT_EQ(client.Call(Client::Digest(epoch), &reply, timeout_ms), "");
  return reply;
}

int WaitGroupLeader(const TestCluster& cluster, const std::vector<int>& nodes,
                    StatusReply* leader_status, int timeout_ms) {
  int leader = -1;
  WaitUntil([&] { return (leader = GroupLeader(cluster, nodes, leader_status)) >= 0; },
            timeout_ms);
  return leader;
}

Epoch ExpectDigestsAgree(const TestCluster& cluster, const std::vector<int>& nodes,
                         int timeout_ms) {
  Epoch ahead = 0;
  for (int i : nodes) {
    StatusReply status;
    // A node on a loaded machine may miss one status deadline.
    if (!WaitUntil([&] { return AskStatus(cluster.node(i), &status); }, timeout_ms)) {
      ADD_FAILURE() << "node " << i << " does not answer";
      return 0;
    }
    ahead = std::max<Epoch>(ahead, status.admitted_epoch() + 200);
  }
  std::vector<std::future<ClientReply>> calls;
  for (int i : nodes) {
    calls.push_back(std::async(std::launch::async, [&cluster, i, ahead, timeout_ms] {
      return DigestAt(cluster.node(i), ahead, timeout_ms);
    }));
  }
  std::string first;
  for (size_t n = 0; n < calls.size(); ++n) {
    const ClientReply reply = calls[n].get();
    EXPECT_EQ(reply.status(), OK) << "node " << nodes[n] << ": " << reply.error();
    EXPECT_EQ(reply.digest().epoch(), ahead) << "node " << nodes[n];
    const std::string digest = DigestHex(reply.digest().digest());
    if (n == 0) first = digest;
    EXPECT_EQ(digest, first) << "node " << nodes[n] << " against node " << nodes[0];
  }
  return ahead;
}

std::string ReplayDigest(const std::string& dir, uint32_t replica, std::string* output) {
  std::string text;
  const int rc = RunProcess({BinaryDir() + "/paxflow-node", "--replay=" + dir,
                             "--replay_replica=" + std::to_string(replica)},
                            &text);
  if (output) *output = text;
  std::smatch match;
  static const std::regex kDigest("state digest at epoch \\d+: (0x[0-9a-f]+)");
  if (rc != 0 || !std::regex_search(text, match, kDigest)) return "replay failed: " + text;
  return match[1];
}

// Nothing was logged twice, nothing skipped: every input log of replica 0
// holds each epoch once, in order, and each txn once. Returns the txn ids.
std::set<TxnId> CheckLogsWhole(const std::string& dir) {
  std::set<TxnId> ids;
  for (const std::string& path : ListInputLogs(dir)) {
    InputLogReader reader;
    EXPECT_EQ(reader.Open(path), "");
    if (reader.header().replica() != 0) continue;
    Epoch expected = 1;
    std::set<TxnId> mine;
    LogEpoch epoch;
    while (reader.Next(&epoch)) {
      EXPECT_EQ(epoch.epoch(), expected) << path << ": an epoch logged twice or missing";
      expected = epoch.epoch() + 1;
      for (const Batch& batch : epoch.batch()) {
        for (const Txn& txn : batch.txns()) {
          EXPECT_TRUE(mine.insert(txn.id()).second) << path << ": txn logged twice";
          ids.insert(txn.id());
        }
      }
    }
    EXPECT_FALSE(reader.truncated()) << path;
  }
  return ids;
}

void StartTransferGroup(TestCluster* cluster, int replicas, int count, int timeout_ms,
                        int* leader, std::vector<std::unique_ptr<TransferClient>>* clients) {
  ASSERT_NO_FATAL_FAILURE(cluster->Start());
  std::vector<int> all;
  for (int i = 0; i < replicas; ++i) all.push_back(i);
  StatusReply status;
  *leader = WaitGroupLeader(*cluster, all, &status, timeout_ms);
  if (*leader < 0) {
    std::string tails;
    for (int i : all) tails += cluster->Tail(i);
    FAIL() << "no leader all " << replicas << " follow:\n" << tails;
  }
  *clients = StartTransferClients(*cluster, count, replicas, timeout_ms);
  ASSERT_TRUE(WaitEachAcked(*clients, 30, 3 * timeout_ms));
}

void ExpectResendsAlreadyApplied(const std::vector<std::unique_ptr<TransferClient>>& clients) {
  for (size_t c = 0; c < clients.size(); ++c) {
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
}

void ExpectEachTransferOnce(const TestCluster& cluster, const std::vector<int>& nodes,
                            const std::vector<std::unique_ptr<TransferClient>>& clients,
                            int64_t initial, int timeout_ms, uint64_t accounts) {
  FailoverOptions options;
  for (int i : nodes) options.endpoints.push_back(ClientEndpoint(cluster.node(i)));
  options.total_timeout_ms = timeout_ms;
  FailoverClient reader(options);
  accounts = std::max<uint64_t>(accounts, 2 * clients.size());
  std::vector<uint64_t> keys;
  for (uint64_t a = 0; a < accounts; ++a) keys.push_back(a);
  ClientReply reply;
  ASSERT_EQ(reader.Call(Client::Get(keys), &reply), "");
  ASSERT_EQ(reply.status(), OK) << reply.error();
  ASSERT_EQ(reply.txn().reads_size(), static_cast<int>(keys.size()));
  for (size_t c = 0; c < clients.size(); ++c) {
    const int64_t acked = clients[c]->acked();
    EXPECT_EQ(BankApplication::DecodeBalance(reply.txn().reads(2 * c).value()), initial - acked)
        << "client " << c;
    EXPECT_EQ(BankApplication::DecodeBalance(reply.txn().reads(2 * c + 1).value()),
              initial + acked)
        << "client " << c;
  }
  for (uint64_t a = 2 * clients.size(); a < accounts; ++a) {
    EXPECT_EQ(BankApplication::DecodeBalance(reply.txn().reads(a).value()), initial)
        << "account " << a << " was touched by no acknowledged transfer";
  }
}

}  // namespace paxflow::testing
