// Crash recovery with real processes on 127.0.0.1 (ports picked free): a
// detached cluster (paxflow-cluster start) whose nodes are killed with
// SIGKILL and brought back with `paxflow-cluster restart`. After each
// crash the others report the silent node within 2 s (status, CLI, client
// errors); after each restart the cluster goes on; at the end the state
// equals an offline replay of the logs and a serial execution of them:
// nothing lost, nothing run twice. Also: a crash loop over checkpoints, a
// crash in the middle of a checkpoint, a full log disk (root), and a dead
// replica that replica 0 does not wait for.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "applications/bank.h"
#include "base/summary.h"
#include "checkpoint/checkpoint.h"
#include "client/client.h"
#include "common/clock.h"
#include "sequencer/input_log.h"
#include "tests/serial_reference.h"
#include "tests/test_cluster.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::AskStatus;
using testing::BankClients;
using testing::CheckLogsWhole;
using testing::ReplayDigest;
using testing::TestCluster;
using testing::BinaryDir;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;
using testing::TmpfsDir;
using testing::WaitUntil;

// While node `dead` is down, node `alive` says so within 2 s: in status
// (its client port, paxflow-cluster status, paxflow-cli status), and a
// txn sent to it gets an error saying why, not a timeout.
void ExpectStallReported(TestCluster* cluster, int dead, int alive, int64_t killed_us) {
  const std::string expected = "waiting for node " + std::to_string(dead) + " at 127.0.0.1:" +
                               std::to_string(cluster->node(dead).port()) + ", silent for ";
  StatusReply status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return AskStatus(cluster->node(alive), &status, 300) &&
               status.problem().find(expected) != std::string::npos;
      },
      2000))
      << "not reported within 2 s: " << status.problem();
  EXPECT_LT(NowMicros() - killed_us, 2000000);
  Client client;
  ASSERT_EQ(client.Connect(ClientEndpoint(cluster->node(alive))), "");
  ClientReply reply;
  ASSERT_EQ(client.Call(Client::Put({{1, "x"}}), &reply, 2000), "") << "a timeout, not an error";
  EXPECT_EQ(reply.status(), UNAVAILABLE);
  EXPECT_NE(reply.error().find(expected), std::string::npos) << reply.error();
  std::string output;
  EXPECT_EQ(cluster->Verb("status", &output), 1) << output;
  EXPECT_NE(output.find(expected), std::string::npos) << output;
  EXPECT_NE(output.find("node " + std::to_string(dead) + "  local  127.0.0.1  pid "),
            std::string::npos);
  EXPECT_NE(output.find("DOWN"), std::string::npos) << output;
  output.clear();
  EXPECT_EQ(RunProcess({BinaryDir() + "/paxflow-cli",
                        "--address=" + ClientEndpoint(cluster->node(alive)), "status"},
                       &output),
            1);
  EXPECT_NE(output.find(expected), std::string::npos) << output;
}

// kill -9 of each node in turn during a 3-node mixed run with 10%
// multi-partition txns; each is restarted and the cluster goes on. The
// final state equals a replay of the logs and a serial execution of them.
TEST(RecoveryClusterTest, KillEachNodeInTurnThenRestart) {
  TestCluster cluster("kill", 3, 1,
                      {"--workload=mixed", "--multi_partition_pct=10", "--checkpoint_every=0"});
  cluster.Start();
  for (int dead = 0; dead < 3; ++dead) {
    cluster.ExpectProgress({0, 1, 2}, 60);
    cluster.Kill(dead);
    const int64_t killed = NowMicros();
    ExpectStallReported(&cluster, dead, (dead + 1) % 3, killed);
    cluster.Restart(dead);
    cluster.ExpectProgress({0, 1, 2}, 60);
  }
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(summary.invariant_failures, 0u);
  EXPECT_GT(summary.Committed(), 1000u);
  EXPECT_EQ(ReplayDigest(cluster.input()), DigestHex(summary.digest));
  CheckLogsWhole(cluster.input());
  // The test parameters load the same records (3000 of 24 bytes).
  testing::SerialResult serial = testing::SerialExecute(
      cluster.input(), testing::TestParams("mixed", Mode::kPaxflow, 0).workload);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(serial.digest, summary.digest) << "the state is not a serial execution of the logs";
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(cluster.NodeLog(i).find("recovered: rejoined the cluster"), std::string::npos)
        << "node " << i << ": " << cluster.Tail(i);
  }
}

// Bank with long transfers (the LTX lane) over checkpoints: a node killed
// while LTXs are active and short transfers deferred restarts from its
// checkpoint (the lane's state in it), the LTXs it began and had not
// committed are aborted through the log, and the state stays a replay of
// the logs with every audit right.
TEST(RecoveryClusterTest, LongTransfersSurviveAKillAndRestart) {
  // Declared reads outside the rings keep the LTXs on the record protocol
  // (locked at their begin they would be short txns for checkpoints).
  TestCluster cluster("ltx", 3, 1,
                      {"--workload=bank-ltx", "--ltx_fraction=0.01", "--checkpoint_every=0.2",
                       "--bank_ltx_read_outside"});
  cluster.Start();
  cluster.KillAndRestartInTurn({0, 2}, {0, 1, 2}, 60);
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(summary.invariant_failures, 0u);
  EXPECT_GT(summary.kinds[kKindLong].committed, 0u) << "no long transfer committed";
  std::string replay;
  EXPECT_EQ(ReplayDigest(cluster.input(), 0, &replay), DigestHex(summary.digest)) << replay;
}

// LTX reads lost in a participant's crash (asked after its last checkpoint,
// not answered when it died) are asked again once the origin hears of the
// restart: no LTX waits for its timeout, which here (3,000 epochs, 15 s)
// outlasts each stall, so a request left unanswered shows as a timeout abort.
TEST(RecoveryClusterTest, LtxReadsLostInACrashAreAskedAgainNotLeftToTheTimeout) {
  TestCluster cluster("ltxlost", 3, 1,
                      {"--workload=bank-ltx", "--ltx_fraction=0.05", "--multi_partition_pct=50",
                       "--checkpoint_every=0.2", "--ltx_timeout=3000",
                       "--bank_ltx_read_outside"});
  cluster.Start();
  cluster.KillAndRestartInTurn({1, 2, 1, 0}, {0, 1, 2}, 60);
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(summary.invariant_failures, 0u);
  EXPECT_GT(summary.kinds[kKindLong].committed, 0u) << "no long transfer committed";
  std::string aborts;
  for (int reason = 0; reason < kLtxAbortReasons; ++reason) {
    aborts += std::string(" ") + LtxAbortReasonName(reason) + "=" +
              std::to_string(summary.ltx.aborts[reason]);
  }
  std::cout << "LTXs committed " << summary.kinds[kKindLong].committed << ", aborted:" << aborts
            << std::endl;
  EXPECT_EQ(summary.ltx.aborts[kAbortTimeout], 0u)
      << "an LTX waited for its timeout: a read request lost in a crash was never answered";
  std::string replay;
  EXPECT_EQ(ReplayDigest(cluster.input(), 0, &replay), DigestHex(summary.digest)) << replay;
}

// Clients that transfer money and audit it, one per node, while each node
// is killed and restarted in turn (calvin mode): no audit sees a wrong
// total, and every transfer a client saw succeed is in the final state.
TEST(RecoveryClusterTest, BankThroughClientsLosesNoAcknowledgedTransfer) {
  constexpr uint64_t kAccounts = 30;
  TestCluster cluster("bank", 3, 1,
                      {"--workload=bank", "--mode=calvin", "--generate=false",
                       "--bank_accounts=" + std::to_string(kAccounts), "--checkpoint_every=0"});
  cluster.Start();
  BankClients clients(cluster.config(), kAccounts, kAccounts * 1000);
  for (int dead = 0; dead < 3; ++dead) {
    cluster.ExpectProgress({0, 1, 2}, 40);
    const size_t before = clients.acked().size();
    ASSERT_TRUE(WaitUntil([&] { return clients.acked().size() > before + 20; }, 10000));
    cluster.Kill(dead);
    ASSERT_TRUE(WaitUntil([&] { return clients.unavailable() > 0; }, 5000))
        << "no client was told the cluster waits for node " << dead;
    cluster.Restart(dead);
  }
  const size_t before = clients.acked().size();
  ASSERT_TRUE(WaitUntil([&] { return clients.acked().size() > before + 20; }, 10000));
  clients.Stop();
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(clients.wrong_audits(), 0);
  EXPECT_GT(clients.audits(), 5);
  EXPECT_EQ(summary.invariant_failures, 0u);
  const std::set<TxnId> logged = CheckLogsWhole(cluster.input());
  const std::set<TxnId> acked = clients.acked();
  ASSERT_GT(acked.size(), 50u);
  for (TxnId id : acked) {
    ASSERT_TRUE(logged.count(id)) << "acknowledged transfer " << TxnIdString(id) << " was lost";
  }
  WorkloadParams workload = testing::BankWorkload(kAccounts, 0.1);
  testing::SerialResult serial = testing::SerialExecute(cluster.input(), workload);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(serial.digest, summary.digest);
  EXPECT_EQ(ReplayDigest(cluster.input()), DigestHex(summary.digest));
}

// Five kills and restarts of random nodes in one run, then of all of them
// at once, with checkpoints every 0.2 s (so restarts load them, and old
// logs go) and one asked for by a client: nothing lost, and a replay from
// the newest common checkpoint ends in the same state.
TEST(RecoveryClusterTest, CrashLoopOverCheckpoints) {
  TestCluster cluster("loop", 3, 1,
                      {"--workload=mixed", "--multi_partition_pct=10", "--checkpoint_every=0.2"});
  cluster.Start();
  // A checkpoint asked for by a client: every node writes one at one epoch.
  std::string output;
  ASSERT_EQ(RunProcess({BinaryDir() + "/paxflow-cli",
                        "--address=" + ClientEndpoint(cluster.node(1)), "checkpoint"},
                       &output),
            0)
      << output;
  std::smatch match;
  ASSERT_TRUE(std::regex_search(output, match, std::regex("checkpoint at epoch (\\d+)")))
      << output;
  const Epoch asked = std::stoull(match[1]);
  for (NodeId node = 0; node < 3; ++node) {
    EXPECT_TRUE(WaitUntil(
        [&] {
          const std::vector<Epoch> held = ListCheckpoints(cluster.input(), node);
          return std::find(held.begin(), held.end(), asked) != held.end() ||
                 (!held.empty() && held.front() > asked);  // a newer one every node holds
        },
        5000))
        << "node " << node << " has no checkpoint at epoch " << asked;
  }
  std::mt19937 random(static_cast<unsigned>(getpid()));
  for (int round = 0; round < 5; ++round) {
    const int dead = static_cast<int>(random() % 3);
    cluster.ExpectProgress({0, 1, 2}, 60);
    cluster.Kill(dead);
    cluster.Restart(dead);
  }
  // Then the whole cluster at once: restarted together, they find each other.
  cluster.ExpectProgress({0, 1, 2}, 60);
  for (int node = 0; node < 3; ++node) cluster.Kill(node);
  cluster.Restart(-1);
  cluster.ExpectProgress({0, 1, 2}, 60);
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(summary.invariant_failures, 0u);
  std::string replay;
  EXPECT_EQ(ReplayDigest(cluster.input(), 0, &replay), DigestHex(summary.digest)) << replay;
  EXPECT_NE(replay.find("started from the checkpoint at epoch"), std::string::npos) << replay;
  bool loaded = false;
  for (int i = 0; i < 3; ++i) {
    loaded |= cluster.NodeLog(i).find("loaded the checkpoint at epoch") != std::string::npos;
  }
  EXPECT_TRUE(loaded) << "no restart used a checkpoint";
  // Old logs went: the first epochs are in no log any more.
  for (const std::string& path : ListInputLogs(cluster.input())) {
    InputLogReader reader;
    ASSERT_EQ(reader.Open(path), "");
    LogEpoch first;
    // Empty: everything it held is in a checkpoint every node holds (one
    // fell on the run's last epoch), so it was trimmed whole.
    if (!reader.Next(&first)) {
      EXPECT_FALSE(reader.truncated()) << path << " is damaged";
      continue;
    }
    EXPECT_GT(first.epoch(), 1u) << path << " was never trimmed";
  }
}

// A node killed while it writes a checkpoint (held half written by a test
// flag) restarts from the previous one; the half-written file is ignored
// and removed, and the state is right.
TEST(RecoveryClusterTest, CrashDuringACheckpointKeepsThePreviousOne) {
  TestCluster cluster("ckpt", 1, 1,
                      {"--workload=mixed", "--checkpoint_every=0.2",
                       "--fault_stall_checkpoint=2"});
  cluster.Start();
  ASSERT_TRUE(cluster.WaitForNodeLog(0, "stalled half written", 20000)) << cluster.Tail(0);
  const std::vector<Epoch> held = ListCheckpoints(cluster.input(), 0);
  ASSERT_EQ(held.size(), 1u);
  struct stat info {};
  bool half_written = false;
  for (Epoch epoch = held[0] + 1; epoch < held[0] + 200 && !half_written; ++epoch) {
    half_written = stat((CheckpointPath(cluster.input(), 0, epoch) + ".tmp").c_str(), &info) == 0;
  }
  ASSERT_TRUE(half_written) << "no checkpoint being written";
  cluster.Kill(0);
  cluster.Restart(0, {"--fault_stall_checkpoint=0"});
  EXPECT_NE(cluster.NodeLog(0).find("loaded the checkpoint at epoch " + std::to_string(held[0])),
            std::string::npos)
      << cluster.Tail(0);
  cluster.ExpectProgress({0}, 100);
  const RunSummary summary = cluster.Stop();
  std::string replay;
  EXPECT_EQ(ReplayDigest(cluster.input(), 0, &replay), DigestHex(summary.digest)) << replay;
  for (Epoch epoch : ListCheckpoints(cluster.input(), 0)) {
    EXPECT_NE(stat((CheckpointPath(cluster.input(), 0, epoch) + ".tmp").c_str(), &info), 0);
  }
}

// The log directory fills up (a tmpfs left 64 KiB of room once clients
// have their first acknowledgements; needs root): the node stops admitting
// and acknowledging, says why (file and error) in status and to clients,
// and every transfer it acknowledged is in its log.
TEST(RecoveryClusterTest, FullLogDiskStopsAcknowledgingAndLosesNothing) {
  TmpfsDir mount_point;  // the log dir
  if (const std::string why = mount_point.Mount("64m"); !why.empty()) GTEST_SKIP() << why;
  constexpr uint64_t kAccounts = 20;
  TestCluster cluster("full", 1, 1,
                      {"--workload=bank", "--generate=false", "--log_fsync", "--epoch_ms=1",
                       "--bank_accounts=" + std::to_string(kAccounts),
                       "--log_dir=" + mount_point.path()});
  cluster.Start();
  BankClients clients(cluster.config(), kAccounts, kAccounts * 1000);
  // The node's own 1-ms epochs fill a small disk whatever the clients do:
  // it is made small only once they have been acknowledged.
  ASSERT_TRUE(WaitUntil([&] { return clients.acked().size() > 50; }, 30000)) << cluster.Tail(0);
  ASSERT_EQ(mount_point.LeaveRoom(64 << 10), "");
  StatusReply status;
  ASSERT_TRUE(WaitUntil(
      [&] {
        return AskStatus(cluster.node(0), &status) &&
               status.problem().find("No space left on device") != std::string::npos;
      },
      60000))
      << cluster.Tail(0);
  EXPECT_NE(status.problem().find(mount_point.path() + "/node-0."), std::string::npos)
      << status.problem();
  clients.Stop();
  Client client;
  ASSERT_EQ(client.Connect(ClientEndpoint(cluster.node(0))), "");
  ClientReply reply;
  ASSERT_EQ(client.Call(Client::Put({{1, "x"}}), &reply, 2000), "");
  EXPECT_EQ(reply.status(), UNAVAILABLE);
  EXPECT_NE(reply.error().find("No space left on device"), std::string::npos) << reply.error();
  // The reply comes from the failure noted; the log line follows it.
  EXPECT_TRUE(cluster.WaitForNodeLog(0, "STOPPED: cannot write", 10000)) << cluster.Tail(0);
  EXPECT_EQ(clients.wrong_audits(), 0);
  // Every acknowledged transfer is in the log (read up to where the disk filled).
  std::set<TxnId> logged;
  InputLogReader reader;
  ASSERT_EQ(reader.Open(InputLogPath(mount_point.path(), 0)), "");
  LogEpoch epoch;
  while (reader.Next(&epoch)) {
    for (const Batch& batch : epoch.batch()) {
      for (const Txn& txn : batch.txns()) logged.insert(txn.id());
    }
  }
  const std::set<TxnId> acked = clients.acked();
  ASSERT_GT(acked.size(), 50u);
  for (TxnId id : acked) {
    ASSERT_TRUE(logged.count(id)) << "acknowledged transfer " << TxnIdString(id)
                                  << " is not in the log";
  }
  std::string output;
  cluster.Verb("stop", &output);  // it cannot drain: killed after the timeout
}

// A dead replica (replica 1) never stalls replica 0, which holds a bounded
// queue for it; it rejoins, catches up from the logs, and reaches replica
// 0's state.
TEST(RecoveryClusterTest, DeadReplicaDoesNotStallReplicaZeroAndCatchesUp) {
  // A light load, so that the replica catches up quickly on two shared cores.
  TestCluster cluster("replica", 2, 2,
                      {"--workload=mixed", "--multi_partition_pct=10", "--checkpoint_every=0.5",
                       "--peer_queue_mb=1", "--max_inflight=100"});
  cluster.Start();
  cluster.ExpectProgress({0, 1, 2, 3}, 60);
  cluster.Kill(3);
  cluster.ExpectProgress({0, 1}, 400);  // 2 s of epochs without it
  StatusReply status;
  ASSERT_TRUE(AskStatus(cluster.node(0), &status));
  EXPECT_EQ(status.problem(), "") << "replica 0 waits for a replica";
  // Replica 0's nodes report what they hold for it, within the bound.
  static const std::regex kHeld("held for node 3: ([0-9.]+) MiB, (\\d+) dropped");
  static const std::regex kDropping("held for node 3: [0-9.]+ MiB, [1-9][0-9]* dropped");
  std::string log;
  // The queue fills at the light load's pace: with three other test shards
  // running, it once held only 0.4 MiB after 21 s.
  ASSERT_TRUE(WaitUntil(
      [&] {
        log = cluster.NodeLog(0);
        return std::regex_search(log, kDropping);
      },
      90000))
      << cluster.Tail(0);
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kHeld); it != std::sregex_iterator();
       ++it) {
    EXPECT_LE(std::stod((*it)[1]), 1.05) << (*it)[0];
  }
  cluster.Restart(3);
  cluster.ExpectProgress({0, 1, 2, 3}, 60);
  const RunSummary summary = cluster.Stop();
  // Both replicas end at the same epoch with the same state.
  RunSummary nodes[4];
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(RunSummary::FromJson(ReadFile(cluster.logs() + "/node-" + std::to_string(i) +
                                            ".json"),
                                   &nodes[i]),
              "");
  }
  EXPECT_EQ(nodes[0].digest_epoch, nodes[2].digest_epoch);
  EXPECT_EQ(nodes[0].digest + nodes[1].digest, nodes[2].digest + nodes[3].digest);
  EXPECT_EQ(ReplayDigest(cluster.input(), 1), DigestHex(summary.digest));
}

}  // namespace
}  // namespace paxflow
