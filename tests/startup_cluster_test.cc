// Start-up never destroys history, with real processes on 127.0.0.1 (ports
// picked free): a node started without --recover over its history, or into
// a running cluster (or beside a peer that recovers), refuses and leaves
// every file as it was; paxflow-cluster start after a crash of every node
// says to restart them, and --wipe starts afresh saying what it removes; --recover refuses a directory that is not
// the node's (empty, another node's) or parameters that differ from the
// recorded ones, naming them; a sequencer whose sequencer log lost its tail
// resumes after what its peers hold and cuts no epoch again, and epochs no
// node holds any more are reported lost on both sides; a sequencer
// that finished, its sequencer log trimmed whole, knows it after a restart;
// an oversized frame on the peer port is refused, not allocated.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <thread>
#include <zmq.hpp>

#include "client/client.h"
#include "common/hash.h"
#include "common/record_file.h"
#include "common/segmented_log.h"
#include "node/node.h"
#include "sequencer/input_log.h"
#include "tests/test_cluster.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::AskStatus;
using testing::ChildProcess;
using testing::CheckLogsWhole;
using testing::ReadFile;
using testing::ReplayDigest;
using testing::TempDir;
using testing::TestCluster;
using testing::WaitUntil;

std::vector<std::string> ListDirectory(const std::string& dir) {
  std::vector<std::string> names;
  DIR* handle = opendir(dir.c_str());
  if (!handle) return names;
  while (dirent* entry = readdir(handle)) {
    const std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(handle);
  return names;
}

// Every file under `dir` whose name starts with `prefix`: name -> size and
// content hash. Equal listings: nothing was removed, added or rewritten.
std::map<std::string, std::string> Listing(const std::string& dir, const std::string& prefix = "") {
  std::map<std::string, std::string> files;
  for (const std::string& name : ListDirectory(dir)) {
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string content = ReadFile(dir + "/" + name);
    files[name] = std::to_string(content.size()) + " bytes, " +
                  DigestHex(HashBytes(content));
  }
  return files;
}

std::string Show(const std::map<std::string, std::string>& files) {
  std::string text;
  for (const auto& [name, what] : files) text += "  " + name + ": " + what + "\n";
  return text;
}

// Kills `nodes` (SIGKILL), a crash of them all: none answers afterwards.
void KillAll(TestCluster* cluster, const std::vector<int>& nodes) {
  for (int i : nodes) cluster->Kill(i);
  ASSERT_TRUE(WaitUntil(
      [&] {
        StatusReply status;
        for (int i : nodes) {
          if (AskStatus(cluster->node(i), &status, 200)) return false;
        }
        return true;
      },
      5000));
}

// Runs a node command that must refuse: its exit status (-1: it still ran
// after 20 s, and was killed) and output.
int RunRefused(const std::vector<std::string>& args, std::string* output) {
  ChildProcess node(args);
  const int status = node.Wait(20000);
  *output = node.output();
  return status;
}

// A start without --recover over a node's history (its original command
// line, as a supervisor would run it) refuses and touches no file; with
// --wipe it gets past that, but the cluster runs: refused again, nothing
// touched. The node then rejoins with --recover and nothing was lost.
TEST(StartupClusterTest, StartWithoutRecoverOverHistoryRefusesAndTouchesNothing) {
  TestCluster cluster("norecover", 3, 1,
                      {"--workload=mixed", "--multi_partition_pct=10", "--checkpoint_every=0.2"});
  cluster.Start();
  cluster.ExpectProgress({0, 1, 2}, 100);
  ASSERT_TRUE(WaitUntil([&] { return ListCheckpoints(cluster.input(), 1).size() >= 1; }, 10000));
  cluster.Kill(1);
  const auto before = Listing(cluster.input(), "node-1");
  ASSERT_NE(before.count("node-1.recovery"), 0u) << Show(before);

  std::string output;
  EXPECT_NE(RunRefused(cluster.NodeCommand(1), &output), 0) << output;
  EXPECT_NE(output.find("holds this node's history"), std::string::npos) << output;
  EXPECT_NE(output.find("nothing was touched"), std::string::npos) << output;
  EXPECT_NE(output.find("--recover (paxflow-cluster restart --node=1)"), std::string::npos)
      << output;
  EXPECT_NE(output.find("--wipe"), std::string::npos) << output;
  EXPECT_EQ(Show(Listing(cluster.input(), "node-1")), Show(before));

  // Past the history check, the peers say the cluster runs: refused before
  // anything is removed.
  EXPECT_NE(RunRefused(cluster.NodeCommand(1, {"--wipe"}), &output), 0) << output;
  EXPECT_NE(output.find("the cluster runs already"), std::string::npos) << output;
  EXPECT_EQ(output.find("removed"), std::string::npos) << output;
  EXPECT_EQ(Show(Listing(cluster.input(), "node-1")), Show(before));

  cluster.Restart(1);
  cluster.ExpectProgress({0, 1, 2}, 60);
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(summary.invariant_failures, 0u);
  std::string replay;
  EXPECT_EQ(ReplayDigest(cluster.input(), 0, &replay), DigestHex(summary.digest)) << replay;
}

// A node recovering without a checkpoint reports no epoch while it waits
// for its peers, but it has a history: a fresh start of another node beside
// it (here with --wipe, which would remove that node's own logs) is refused
// before anything is removed, naming the recovering node.
TEST(StartupClusterTest, AFreshStartBesideARecoveringPeerRefusesAndTouchesNothing) {
  TestCluster cluster("besiderecovery", 2, 1, {"--workload=mixed", "--checkpoint_every=0"});
  cluster.Start();
  cluster.ExpectProgress({0, 1}, 60);
  KillAll(&cluster, {0, 1});
  const auto before = Listing(cluster.input(), "node-1");
  ASSERT_FALSE(before.empty());
  ChildProcess recovering(cluster.NodeCommand(0, {"--recover"}));
  ASSERT_TRUE(recovering.WaitForOutput("waiting for node 1", 30000)) << recovering.output();
  std::string output;
  EXPECT_NE(RunRefused(cluster.NodeCommand(1, {"--wipe"}), &output), 0) << output;
  EXPECT_NE(output.find("the cluster runs already (node 0 recovers its history"),
            std::string::npos)
      << output;
  EXPECT_EQ(output.find("removed"), std::string::npos) << output;
  EXPECT_EQ(Show(Listing(cluster.input(), "node-1")), Show(before));
  // Node 1 rejoins with --recover instead: both recover, and the cluster
  // runs on from its history.
  ChildProcess rejoining(cluster.NodeCommand(1, {"--recover"}));
  EXPECT_TRUE(WaitUntil(
      [&] {
        StatusReply status;
        return AskStatus(cluster.node(0), &status, 200) && status.state() == "running" &&
               AskStatus(cluster.node(1), &status, 200) && status.state() == "running";
      },
      30000))
      << recovering.output() << rejoining.output();
}

// A fresh cluster starts once every node has heard every other, but not
// all at once: a node that has heard all may start while another has yet
// to hear one of them. That node then hears a running peer, which started
// having heard it: it starts with the cluster, where it used to refuse
// ("the cluster runs already", seen once under a loaded CI run). Node 3
// hears nothing of node 0 until the test lets it; nodes 0-2 run meanwhile.
TEST(StartupClusterTest, ANodeThatHearsAPeerLastStartsWithTheCluster) {
  TempDir dir;
  const std::string deaf = dir.path() + "/deaf";
  std::ofstream(deaf) << "node 3 ignores node 0's hellos while this file exists\n";
  TestCluster cluster("late", 2, 2,
                      {"--workload=mixed", "--multi_partition_pct=10",
                       "--fault_deaf_to_hellos=3:0:" + deaf});
  std::string output;
  int status = -1;
  std::thread start([&] { status = cluster.StartVerb({}, &output); });
  EXPECT_TRUE(cluster.WaitForNodeLog(3, "runs already, having heard this node's hello", 60000))
      << cluster.Tail(3);
  std::remove(deaf.c_str());
  start.join();
  ASSERT_EQ(status, 0) << output << cluster.Tail(3);
  EXPECT_EQ(cluster.NodeLog(3).find("the cluster runs already"), std::string::npos);
  cluster.ExpectProgress({0, 1, 2, 3}, 50);
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(summary.invariant_failures, 0u);
  for (uint32_t replica : {0u, 1u}) {
    std::string replay;
    EXPECT_EQ(ReplayDigest(cluster.input(), replica, &replay), DigestHex(summary.digest))
        << replay;
  }
}

// After kill -9 of every node, `start` says the cluster crashed and how to
// restart it, touching nothing; that restart works. After another crash,
// `start --wipe` starts afresh and says what it removes.
TEST(StartupClusterTest, StartAfterAWholeClusterCrashSaysRestartAndWipeStartsAfresh) {
  TestCluster cluster("crashed", 2, 1, {"--workload=mixed", "--checkpoint_every=0"});
  cluster.Start();
  cluster.ExpectProgress({0, 1}, 60);
  KillAll(&cluster, {0, 1});
  const auto before = Listing(cluster.input());
  std::string output;
  EXPECT_NE(cluster.StartVerb({}, &output), 0) << output;
  EXPECT_NE(output.find("the cluster crashed"), std::string::npos) << output;
  EXPECT_NE(output.find("paxflow-cluster restart --node=all"), std::string::npos) << output;
  EXPECT_NE(output.find("start --wipe"), std::string::npos) << output;
  EXPECT_EQ(Show(Listing(cluster.input())), Show(before));

  cluster.Restart(-1);
  cluster.ExpectProgress({0, 1}, 60);
  KillAll(&cluster, {0, 1});
  ASSERT_EQ(cluster.StartVerb({"--wipe"}, &output), 0) << output;
  EXPECT_NE(output.find("--wipe: once every node agreed on a fresh start"), std::string::npos)
      << output;
  EXPECT_TRUE(std::regex_search(output, std::regex(R"(node 0:.* node-0\.(\d+@\d+\.)?log)")))
      << output;
  EXPECT_NE(cluster.NodeLog(0).find("removed " + cluster.input() + "/node-0."),
            std::string::npos)
      << cluster.Tail(0);
  cluster.ExpectProgress({0, 1}, 60);
  const RunSummary summary = cluster.Stop();
  // A fresh run: its logs start at epoch 1 and replay to its state.
  CheckLogsWhole(cluster.input());
  EXPECT_EQ(ReplayDigest(cluster.input()), DigestHex(summary.digest));
}

// --recover refuses an empty directory, another node's files, and flags
// that differ from what the logs and checkpoints recorded, naming the
// values; nothing is touched. With the right ones it rejoins.
TEST(StartupClusterTest, RecoverRefusesADirectoryOrParametersNotItsOwn) {
  TestCluster cluster("owner", 2, 1,
                      {"--workload=mixed", "--checkpoint_every=0.2", "--ltx_timeout=500"});
  cluster.Start();
  cluster.ExpectProgress({0, 1}, 60);
  ASSERT_TRUE(WaitUntil([&] { return ListCheckpoints(cluster.input(), 1).size() >= 1; }, 10000));
  cluster.Kill(1);
  const auto before = Listing(cluster.input(), "node-1");
  std::string output;

  TempDir empty;
  EXPECT_NE(RunRefused(cluster.NodeCommand(1, {"--recover", "--log_dir=" + empty.path()}),
                       &output),
            0)
      << output;
  EXPECT_NE(output.find("holds no history of node 1"), std::string::npos) << output;
  EXPECT_NE(output.find("nothing to recover"), std::string::npos) << output;
  EXPECT_TRUE(Listing(empty.path()).empty()) << Show(Listing(empty.path()));

  // Node 0's files where node 1's should be: named, and refused.
  TempDir other;
  for (const auto& [name, what] : Listing(cluster.input(), "node-0")) {
    std::ofstream(other.path() + "/node-1" + name.substr(6)) << ReadFile(cluster.input() + "/" + name);
  }
  const auto other_before = Listing(other.path());
  EXPECT_NE(RunRefused(cluster.NodeCommand(1, {"--recover", "--log_dir=" + other.path()}),
                       &output),
            0)
      << output;
  EXPECT_NE(output.find("was written by node 0"), std::string::npos) << output;
  EXPECT_EQ(Show(Listing(other.path())), Show(other_before));

  // Changed parameters, each named with the recorded value.
  EXPECT_NE(RunRefused(cluster.NodeCommand(1, {"--recover", "--records=5000"}), &output), 0)
      << output;
  EXPECT_NE(output.find("--records=5000 (recorded: records=3000)"), std::string::npos) << output;
  EXPECT_NE(RunRefused(cluster.NodeCommand(1, {"--recover", "--ltx_timeout=77"}), &output), 0)
      << output;
  EXPECT_NE(output.find("--ltx_timeout=77 (recorded: ltx_timeout=500)"), std::string::npos)
      << output;
  // The LTX lane's other cluster parameters too: a restarted lane with
  // other bounds would decide busy aborts and guards unlike its log.
  EXPECT_NE(RunRefused(cluster.NodeCommand(1, {"--recover", "--max_active_ltx=5"}), &output), 0)
      << output;
  EXPECT_NE(output.find("--max_active_ltx=5 (recorded: max_active_ltx="), std::string::npos)
      << output;
  EXPECT_NE(
      RunRefused(cluster.NodeCommand(1, {"--recover", "--ltx_max_deferrals=9"}), &output), 0)
      << output;
  EXPECT_NE(output.find("--ltx_max_deferrals=9 (recorded: ltx_max_deferrals="),
            std::string::npos)
      << output;
  EXPECT_EQ(Show(Listing(cluster.input(), "node-1")), Show(before));

  cluster.Restart(1);
  cluster.ExpectProgress({0, 1}, 60);
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(ReplayDigest(cluster.input()), DigestHex(summary.digest));
}

// Cuts node `node`'s log of `format` (kill -9 first) after its last record
// of an epoch <= `keep`, as a power loss would lose an unsynced tail.
// Returns the newest epoch it held before.
Epoch CutLog(const std::string& dir, NodeId node, const LogFormat& format,
             Epoch (*epoch_of)(const std::string&), Epoch keep) {
  Epoch newest = 0;
  for (const LogSegment& segment : ListSegments(dir, NodeFileName(node), format.ext)) {
    RecordReader reader;
    EXPECT_EQ(reader.Open(segment.path, format.magic, format.what), "");
    std::string payload;
    EXPECT_TRUE(reader.Next(&payload));  // the header
    uint64_t cut = reader.good_bytes();
    while (reader.Next(&payload)) {
      const Epoch epoch = epoch_of(payload);
      newest = std::max(newest, epoch);
      if (epoch <= keep) cut = reader.good_bytes();
    }
    if (segment.active) {
      EXPECT_EQ(truncate(segment.path.c_str(), static_cast<off_t>(cut)), 0);
    } else {
      EXPECT_LE(segment.last_epoch, keep) << "a closed segment past the cut: " << segment.path;
    }
  }
  return newest;
}
Epoch CutSequencerLog(const std::string& dir, NodeId node, Epoch keep) {
  return CutLog(dir, node, kSequencerLogFormat, EpochOfSequencerRecord, keep);
}
Epoch CutInputLog(const std::string& dir, NodeId node, Epoch keep) {
  return CutLog(dir, node, kInputLogFormat, EpochOfInputRecord, keep);
}

// The newest epoch node `node`'s input log holds (0: none yet).
Epoch LoggedThrough(const std::string& dir, NodeId node) {
  InputLogReader reader;
  if (!reader.Open(InputLogPath(dir, node)).empty()) return 0;
  Epoch logged = 0;
  LogEpoch epoch;
  while (reader.Next(&epoch)) logged = epoch.epoch();
  return logged;
}

// Starts `cluster` with node 0's sequencer held after epoch `pause`
// (--fault_pause_sequencer, in the cluster's flags) and waits until every
// node's input log holds that epoch: every batch node 0 cut has reached
// every node it was for, none is still on its way.
void StartPausedAndWaitUntilLogged(TestCluster* cluster, int nodes, Epoch pause) {
  cluster->Start();
  for (int i = 0; i < nodes; ++i) {
    ASSERT_TRUE(WaitUntil([&] { return LoggedThrough(cluster->input(), i) >= pause; }, 30000))
        << "node " << i << " has not logged epoch " << pause << ": " << cluster->Tail(i);
  }
}

// Every batch of every input log (all replicas), by (epoch, sequencer,
// partition), and every txn by id: one content each. A sequencer that cut
// an epoch again would give one of them two. (Batches are compared without
// their read-only txns, which only the sequencing node's own log holds.)
void ExpectNoEpochCutTwice(const std::string& dir) {
  std::map<std::tuple<Epoch, uint32_t, uint32_t>, std::string> batches;
  std::map<TxnId, std::string> txns;
  size_t count = 0;
  for (const std::string& path : ListInputLogs(dir)) {
    InputLogReader reader;
    ASSERT_EQ(reader.Open(path), "");
    LogEpoch epoch;
    while (reader.Next(&epoch)) {
      for (const Batch& batch : epoch.batch()) {
        // Replicas do not get the sequencing node's local read-only txns
        // (node/kept_reads.h): the rest is what every replica must share.
        Batch content = batch;
        content.clear_close_time_us();
        content.clear_txns();
        for (const Txn& txn : batch.txns()) {
          if (txn.txn_class() != RO) *content.add_txns() = txn;
        }
        const std::string bytes = content.SerializeAsString();
        auto [it, fresh] =
            batches.emplace(std::make_tuple(batch.epoch(), batch.sequencer(), batch.partition()),
                            bytes);
        EXPECT_TRUE(fresh || it->second == bytes)
            << path << ": sequencer " << batch.sequencer() << "'s batch of epoch "
            << batch.epoch() << " for partition " << batch.partition()
            << " differs between replicas: the epoch was cut twice";
        for (const Txn& txn : batch.txns()) {
          const std::string txn_bytes = txn.SerializeAsString();
          auto [at, first] = txns.emplace(txn.id(), txn_bytes);
          EXPECT_TRUE(first || at->second == txn_bytes)
              << path << ": txn id " << txn.id() << " names two different txns";
          ++count;
        }
      }
    }
  }
  EXPECT_GT(count, 0u);
}

// Node 0 loses the tails of its sequencer log and of its input log (cut
// after kill -9, as a power loss without --log_fsync loses unsynced tails)
// after its batches had left: its sequencer is held after epoch 150
// (--fault_pause_sequencer) until every node has logged that epoch, so the
// cut removes only epochs 121..150, which every other node holds, and
// nothing was still on its way. The restarted node learns from its peers
// that its sequencer got to epoch 150, takes its lost batches of 121..150
// from the other replica of its partition, and cuts none of those epochs
// again; it reports nothing lost. Both replicas end in the state a replay
// gives.
TEST(StartupClusterTest, SequencerResumesAfterItsLostLogTailWithoutCuttingAgain) {
  constexpr Epoch kPause = 150;
  TestCluster cluster("seqtail", 2, 2,
                      {"--workload=mixed", "--multi_partition_pct=10", "--checkpoint_every=0",
                       "--max_inflight=100",
                       "--fault_pause_sequencer=0:" + std::to_string(kPause)});
  StartPausedAndWaitUntilLogged(&cluster, 4, kPause);
  if (HasFatalFailure()) return;
  cluster.Kill(0);
  const Epoch cut_after = kPause - 30;
  EXPECT_EQ(CutSequencerLog(cluster.input(), 0, cut_after), kPause);
  EXPECT_EQ(CutInputLog(cluster.input(), 0, cut_after), kPause);
  cluster.Restart(0);
  EXPECT_NE(cluster.NodeLog(0).find("its sequencer log ends at epoch " + std::to_string(cut_after) +
                                    " but its sequencer had cut epochs through " +
                                    std::to_string(kPause)),
            std::string::npos)
      << cluster.Tail(0);
  EXPECT_EQ(cluster.NodeLog(0).find("LOST"), std::string::npos) << cluster.Tail(0);
  cluster.ExpectProgress({0, 1, 2, 3}, 60);
  const RunSummary summary = cluster.Stop();
  if (HasFailure()) ADD_FAILURE() << "node 0: " << cluster.Tail(0);
  EXPECT_EQ(summary.invariant_failures, 0u);
  ExpectNoEpochCutTwice(cluster.input());
  CheckLogsWhole(cluster.input());
  RunSummary nodes[4];
  for (int i = 0; i < 4; ++i) {
    ASSERT_EQ(RunSummary::FromJson(
                  ReadFile(cluster.logs() + "/node-" + std::to_string(i) + ".json"), &nodes[i]),
              "");
  }
  EXPECT_EQ(nodes[0].digest + nodes[1].digest, nodes[2].digest + nodes[3].digest)
      << "the replicas diverged";
  EXPECT_EQ(ReplayDigest(cluster.input(), 0), DigestHex(summary.digest));
  EXPECT_EQ(ReplayDigest(cluster.input(), 1), DigestHex(summary.digest));
}

// A power loss of every node, without --log_fsync: node 0's sequencer log
// loses its records after epoch 110, node 1's input log those after 130
// (node 0's sequencer was held after epoch 150 until both had logged it).
// Node 0's batches for partition 1 of epochs 131..150 are then nowhere
// (node 0's input log holds only its own partition's); the restarted node 0
// resumes after epoch 150 without cutting them again, and says that they
// are lost, naming its sequencer, the epochs and that no node holds them;
// node 1, which waits for them, says so too rather than report a stuck peer.
TEST(StartupClusterTest, EpochsNoNodeHoldsAreReportedLost) {
  constexpr Epoch kPause = 150;
  TestCluster cluster("lost", 2, 1,
                      {"--workload=mixed", "--multi_partition_pct=10", "--checkpoint_every=0",
                       "--fault_pause_sequencer=0:" + std::to_string(kPause)});
  StartPausedAndWaitUntilLogged(&cluster, 2, kPause);
  if (HasFatalFailure()) return;
  KillAll(&cluster, {0, 1});
  EXPECT_EQ(CutSequencerLog(cluster.input(), 0, kPause - 40), kPause);
  EXPECT_EQ(CutInputLog(cluster.input(), 1, kPause - 20), kPause);
  // Both come up (node 1 runs what its input log holds), then wait.
  cluster.Restart(-1);
  const std::string lost =
      "the batches of sequencer 0 (node 0) for partition 1 of epochs 131..150 are lost: no "
      "node holds them";
  StatusReply status;
  EXPECT_TRUE(WaitUntil(
      [&] {
        return AskStatus(cluster.node(1), &status) &&
               status.problem().find("waiting for node 0 at ") !=
                   std::string::npos &&
               status.problem().find(lost) != std::string::npos;
      },
      20000))
      << "node 1 says: " << status.problem() << "\n" << cluster.Tail(1);
  EXPECT_TRUE(WaitUntil(
      [&] {
        return AskStatus(cluster.node(0), &status) &&
               status.problem().find(lost) != std::string::npos;
      },
      20000))
      << "node 0 says: " << status.problem() << "\n" << cluster.Tail(0);
  EXPECT_NE(cluster.NodeLog(0).find("LOST EPOCHS: " + lost), std::string::npos) << cluster.Tail(0);
  EXPECT_NE(cluster.NodeLog(0).find("it resumes at epoch 151 and cuts none of them again"),
            std::string::npos)
      << cluster.Tail(0);
  KillAll(&cluster, {0, 1});
  // Nothing was cut twice: node 0's input log holds epochs 1..150 once, and
  // what it cut after the restart.
  ExpectNoEpochCutTwice(cluster.input());
}

// Node 0 is stopped (SIGTERM: its sequencer ends its run, the node keeps
// executing the others' epochs), its sequencer log is trimmed whole by
// checkpoints, then it is killed and restarted: it knows its sequencer
// finished, cuts nothing, refuses new client txns at once (rather than
// leave them waiting for ever), and the cluster goes on.
TEST(StartupClusterTest, FinishedSequencerWithItsLogTrimmedKnowsItFinished) {
  TestCluster cluster("finished", 2, 1, {"--workload=mixed", "--checkpoint_every=0.1"});
  cluster.Start();
  cluster.ExpectProgress({0, 1}, 60);
  const std::vector<pid_t> pids = cluster.verbs().Pids();
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(kill(pids[0], SIGTERM), 0);
  Epoch finished = 0;
  ASSERT_TRUE(WaitUntil([&] { return (finished = ReadFinished(cluster.input(), 0)) > 0; }, 10000))
      << cluster.Tail(0);
  // Trimmed whole: no closed segment left, and no record in the active one.
  ASSERT_TRUE(WaitUntil(
      [&] {
        for (const LogSegment& segment :
             ListSegments(cluster.input(), NodeFileName(0), kSequencerLogFormat.ext)) {
          if (!segment.active) return false;
        }
        SegmentedLogReader reader;
        std::string payload;
        return reader.Open(cluster.input(), NodeFileName(0), kSequencerLogFormat).empty() &&
               !reader.Next(&payload);
      },
      20000))
      << cluster.Tail(0);
  cluster.Kill(0);
  cluster.Restart(0);
  EXPECT_NE(cluster.NodeLog(0).find("its sequencer finished its run at epoch " +
                                    std::to_string(finished)),
            std::string::npos)
      << cluster.Tail(0);
  Client client;
  ASSERT_EQ(client.Connect(ClientEndpoint(cluster.node(0))), "");
  ClientReply reply;
  ASSERT_EQ(client.Call(Client::Put({{1, "x"}}), &reply, 3000), "")
      << "a client txn to the finished sequencer's node hangs";
  EXPECT_NE(reply.status(), OK);
  cluster.ExpectProgress({0, 1}, 60);
  const RunSummary summary = cluster.Stop();
  // (Checkpoints trimmed the logs: a replay starts from the newest common one.)
  EXPECT_EQ(ReplayDigest(cluster.input()), DigestHex(summary.digest));
}

// Peak resident memory (VmHWM) of a process, in KiB (0: unknown).
uint64_t PeakResidentKiB(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// A 200 MiB frame sent to a node's peer port (limit 8 MiB) is refused by
// the socket, not allocated: the node runs on, its peak memory unchanged.
TEST(StartupClusterTest, OversizedPeerFrameIsRefusedAndTheNodeRunsOn) {
  TestCluster cluster("frame", 1, 1, {"--workload=mixed", "--peer_max_message_mb=8"});
  cluster.Start();
  cluster.ExpectProgress({0}, 20);
  const pid_t pid = cluster.verbs().Pids().at(0);
  const uint64_t before = PeakResidentKiB(pid);
  ASSERT_GT(before, 0u);
  {
    zmq::context_t context(1);
    zmq::socket_t socket(context, zmq::socket_type::push);
    // Closing waits until the frame left or the receiver dropped it.
    socket.set(zmq::sockopt::linger, 10000);
    socket.connect("tcp://127.0.0.1:" + std::to_string(cluster.node(0).port()));
    Header header;
    header.set_magic(kHeaderMagic);
    header.set_channel(REMOTE_READS);
    header.set_from_node(0);
    std::string big(200u << 20, 'x');
    socket.send(zmq::buffer(header.SerializeAsString()), zmq::send_flags::sndmore);
    socket.send(zmq::buffer(big), zmq::send_flags::none);
  }
  cluster.ExpectProgress({0}, 60);
  EXPECT_LT(PeakResidentKiB(pid), before + 100 * 1024) << "the frame was taken in";
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(summary.invariant_failures, 0u);
}

}  // namespace
}  // namespace paxflow
