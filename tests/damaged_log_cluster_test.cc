// A damaged closed input log segment (issue 15, point 5), with real
// processes on 127.0.0.1 (ports picked free): a node is killed with
// SIGKILL, a byte in the middle of one of its closed input log segments is
// changed, and it is restarted with --recover. Recovery stops at the damage
// and says which file and which epochs; the epochs are fetched from the
// nodes whose sequencer logs hold them, and the final state equals an
// offline replay of the logs (the damaged segment put back as it was
// written) and a serial execution of them. Where no log holds them any
// more, the node refuses to go on, naming the file and the epochs: it
// never waits silently.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <fstream>
#include <regex>

#include "base/summary.h"
#include "checkpoint/checkpoint.h"
#include "client/client.h"
#include "common/segmented_log.h"
#include "sequencer/input_log.h"
#include "tests/serial_reference.h"
#include "tests/test_cluster.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::ReadFile;
using testing::WaitUntil;

// A detached cluster of the test, its logs and input logs in a temporary
// directory (the shared tests/test_cluster.h).
using DamageCluster = testing::TestCluster;

// `paxflow-cluster restart --node=i`; its exit code, its output in `output`.
int Restart(const DamageCluster& cluster, int i, std::string* output,
            std::vector<std::string> flags = {}) {
  flags.insert(flags.begin(), "--node=" + std::to_string(i));
  return cluster.Verb("restart", flags, output);
}

// The closed segments of a node's log `ext` ("log", "seq").
std::vector<LogSegment> ClosedSegments(const std::string& dir, NodeId node,
                                       const std::string& ext) {
  std::vector<LogSegment> closed;
  for (const LogSegment& segment : ListSegments(dir, NodeFileName(node), ext)) {
    if (!segment.active) closed.push_back(segment);
  }
  return closed;
}

// Flips a byte in the middle of `path`; returns its bytes as they were.
std::string Corrupt(const std::string& path) {
  const std::string original = ReadFile(path);
  std::string bytes = original;
  bytes[bytes.size() / 2] ^= 0x5a;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return original;
}

// Kills node `node` twice: the first restart closes the segment it was
// writing, so the second crash leaves a closed segment after the run's
// start that recovery must replay (no checkpoints).
void MakeClosedSegment(DamageCluster* cluster, int node, const std::vector<int>& all) {
  cluster->ExpectProgress(all, 60);
  cluster->Kill(node);
  std::string output;
  ASSERT_EQ(Restart(*cluster, node, &output), 0) << output << cluster->Tail(node);
  cluster->ExpectProgress(all, 100);
  cluster->Kill(node);
}

TEST(DamagedLogClusterTest, LostEpochsAreFetchedFromThePeersAndTheStateIsRight) {
  DamageCluster cluster("damaged", 3, 1,
                        {"--workload=mixed", "--multi_partition_pct=10", "--checkpoint_every=0"});
  cluster.Start();
  MakeClosedSegment(&cluster, 1, {0, 1, 2});
  const std::vector<LogSegment> closed = ClosedSegments(cluster.input(), 1, "log");
  ASSERT_EQ(closed.size(), 1u);
  const std::string path = closed[0].path;
  const std::string original = Corrupt(path);

  std::string output;
  ASSERT_EQ(Restart(cluster, 1, &output), 0) << output << cluster.Tail(1);
  const std::string log = cluster.NodeLog(1);
  std::smatch match;
  ASSERT_TRUE(std::regex_search(
      log, match,
      std::regex("its input log is DAMAGED: ([^ :]+): .*; epochs (\\d+)\\.\\.(\\d+) are missing")))
      << cluster.Tail(1);
  EXPECT_EQ(match[1].str(), path);
  EXPECT_GT(std::stoull(match[2]), 1u);
  EXPECT_EQ(std::stoull(match[3]), closed[0].last_epoch);
  // Said on the heartbeat after the fetch (the restart may return first).
  const std::string got = "got epochs " + match[2].str() + ".." + match[3].str();
  EXPECT_TRUE(cluster.WaitForNodeLog(1, got, 5000)) << cluster.Tail(1);
  cluster.ExpectProgress({0, 1, 2}, 60);
  const RunSummary summary = cluster.Stop();
  EXPECT_EQ(summary.invariant_failures, 0u);
  EXPECT_GT(summary.Committed(), 1000u);

  // An offline replay of the damaged logs refuses, naming the file.
  std::string refused;
  EXPECT_EQ(testing::ReplayDigest(cluster.input(), 0, &refused).rfind("replay failed", 0), 0u)
      << refused;
  EXPECT_NE(refused.find("is damaged: " + path), std::string::npos) << refused;

  // The segment as it was written: with it, the logs replay to the live
  // state (the fetched epochs were the logged ones), as does a serial run.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << original;
  std::string replay;
  // (Logs before the stable checkpoint are gone: a replay from it, no serial run.)
  EXPECT_EQ(testing::ReplayDigest(cluster.input(), 0, &replay), DigestHex(summary.digest)) << replay;
}

// One node: its own sequencer log is the only other copy of its epochs.
// Both damaged at the same place: the node stops and says why.
TEST(DamagedLogClusterTest, LostEpochsNoLogHoldsAreRefusedNamingFileAndEpochs) {
  DamageCluster cluster("nowhere", 1, 1, {"--workload=mixed", "--checkpoint_every=0"});
  cluster.Start();
  MakeClosedSegment(&cluster, 0, {0});
  const std::vector<LogSegment> input = ClosedSegments(cluster.input(), 0, "log");
  const std::vector<LogSegment> sequenced = ClosedSegments(cluster.input(), 0, "seq");
  ASSERT_EQ(input.size(), 1u);
  ASSERT_EQ(sequenced.size(), 1u);
  Corrupt(input[0].path);
  // From its first quarter on, so that no epoch the input log lost is left.
  {
    std::string bytes = ReadFile(sequenced[0].path);
    for (size_t at = bytes.size() / 4; at < bytes.size(); at += 512) bytes[at] ^= 0x5a;
    std::ofstream(sequenced[0].path, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::string output;
  EXPECT_NE(Restart(cluster, 0, &output, {"--start_timeout=20"}), 0) << output;
  std::smatch match;
  ASSERT_TRUE(cluster.WaitForNodeLog(0, "it cannot recover", 30000)) << cluster.Tail(0);
  const std::string log = cluster.NodeLog(0);
  ASSERT_TRUE(std::regex_search(
      log, match,
      std::regex("STOPPED: its input log is damaged \\(([^ :]+): .*\\) and epochs "
                 "(\\d+)\\.\\.(\\d+) can be had nowhere else")))
      << cluster.Tail(0);
  EXPECT_EQ(match[1].str(), input[0].path);
  EXPECT_EQ(std::stoull(match[3]), input[0].last_epoch);
}

// A checkpoint cut after its first chunk (here its only one: the trailer
// lost) loaded as an empty partition. Now the restart does not use it: it
// recovers from the older checkpoint if the node still holds one (one
// node: the checkpoint every node holds is its newest, so an older one is
// there only until the node's heartbeat removes it), else it refuses,
// naming the file.
TEST(DamagedLogClusterTest, ACheckpointCutAfterItsFirstChunkIsNotLoaded) {
  DamageCluster cluster("cut", 1, 1, {"--workload=mixed", "--checkpoint_every=0.2"});
  cluster.Start();
  ASSERT_TRUE(WaitUntil([&] { return !ListCheckpoints(cluster.input(), 0).empty(); }, 20000));
  cluster.ExpectProgress({0}, 20);
  cluster.Kill(0);
  const std::vector<Epoch> held = ListCheckpoints(cluster.input(), 0);
  ASSERT_FALSE(held.empty());
  const std::string path = CheckpointPath(cluster.input(), 0, held.back());
  const std::string bytes = ReadFile(path);
  // Magic, header record, first chunk: where the first chunk ends.
  size_t at = 8;
  for (int record = 0; record < 2; ++record) {
    uint32_t length;
    ASSERT_LE(at + 8, bytes.size());
    std::memcpy(&length, bytes.data() + at, 4);
    at += 8 + length;
  }
  ASSERT_LT(at, bytes.size());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, at);
  std::string output;
  const int restarted = Restart(cluster, 0, &output, {"--start_timeout=20"});
  const std::string log = cluster.NodeLog(0) + output;
  EXPECT_NE(log.find(path + ": torn or without its trailer"), std::string::npos) << log;
  EXPECT_EQ(log.find("loaded the checkpoint at epoch " + std::to_string(held.back())),
            std::string::npos)
      << log;
  if (held.size() == 1) {
    EXPECT_NE(restarted, 0) << output;
    EXPECT_NE(log.find("cannot recover"), std::string::npos) << log;
    return;
  }
  ASSERT_EQ(restarted, 0) << output;
  const std::string older = CheckpointPath(cluster.input(), 0, held[held.size() - 2]);
  EXPECT_NE(log.find("recovers from the older checkpoint " + older), std::string::npos) << log;
  cluster.ExpectProgress({0}, 40);
  const RunSummary summary = cluster.Stop();
  std::string replay;
  // (Logs before the stable checkpoint are gone: a replay from it, no serial run.)
  EXPECT_EQ(testing::ReplayDigest(cluster.input(), 0, &replay), DigestHex(summary.digest)) << replay;
}

}  // namespace
}  // namespace paxflow
