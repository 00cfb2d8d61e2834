// Lost messages on a live connection, with real processes on 127.0.0.1
// (ports picked free): every node of a 3-node cluster drops a fraction of
// the batches and remote reads it sends its peers (--fault_drop_peer_messages,
// silently, as a broken connection loses what it held). Batches are asked
// for again from the sequencers' logs, remote reads from what their senders
// keep (ReadExchange); the run must drain, and its state must equal an
// offline replay and a serial execution of the logs. Without asking for
// reads again (--reads_retry_ms=-1, what the code did before) the same run
// waits forever for a lost read and gives up draining.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <regex>

#include "base/summary.h"
#include "tests/serial_reference.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::BinaryDir;
using testing::ChildProcess;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;

struct LossyRun {
  bool finished = false;  // within the time given
  int rc = -1;            // its exit status (after an interrupt if it did not finish)
  std::string output;
  RunSummary summary;
  bool have_summary = false;
  std::string logs[3];  // each node's output
};

// A 3-node mixed run (10% multi-partition txns) in `mode` whose nodes drop
// `drop` of their outgoing batches and remote reads, with `extra` flags.
// Interrupted (Ctrl-C: every node drains or gives up, and exits) if it has
// not finished within `finish_within_ms`.
LossyRun RunLossyCluster(const TempDir& dir, Mode mode, double drop,
                         const std::vector<std::string>& extra, int finish_within_ms) {
  const ClusterConfig config = testing::MakeConfig("lossy", 3, 1, "tcp");
  const std::string config_path = dir.path() + "/cluster.conf";
  std::ofstream(config_path) << testing::ToText(config);
  std::vector<std::string> args = {
      BinaryDir() + "/paxflow-cluster", "--config=" + config_path,
      std::string("--mode=") + ModeName(mode), "--workload=mixed", "--multi_partition_pct=10",
      "--run_epochs=300", "--epoch_ms=5", "--records=3000", "--value_size=24",
      "--hot_records=5", "--ops_per_ro_txn=20", "--ops_per_rw_txn=6", "--max_inflight=400",
      "--progress_ms=500", "--checkpoint_every=0", "--logs=" + dir.path() + "/logs",
      "--log_dir=" + dir.path() + "/input",
      "--fault_drop_peer_messages=" + std::to_string(drop),
      "--fault_drop_channels=BATCH,REMOTE_READS"};
  args.insert(args.end(), extra.begin(), extra.end());
  LossyRun run;
  ChildProcess cluster(args);
  run.rc = cluster.Wait(finish_within_ms);
  run.finished = run.rc != -1;
  if (!run.finished) {
    cluster.Signal(SIGINT);
    run.rc = cluster.Wait(120000);
  }
  run.output = cluster.output();
  run.have_summary =
      RunSummary::FromJson(ReadFile(dir.path() + "/logs/cluster.json"), &run.summary).empty();
  for (int i = 0; i < 3; ++i) {
    run.logs[i] = ReadFile(dir.path() + "/logs/node-" + std::to_string(i) + ".out");
  }
  return run;
}

std::string Tail(const std::string& text) {
  return text.size() > 4000 ? text.substr(text.size() - 4000) : text;
}

// The digest an offline replay of `dir` prints.
std::string ReplayDigest(const std::string& dir, std::string* output) {
  const int rc = RunProcess({BinaryDir() + "/paxflow-node", "--replay=" + dir}, output);
  std::smatch match;
  static const std::regex kDigest("state digest at epoch \\d+: (0x[0-9a-f]+)");
  if (rc != 0 || !std::regex_search(*output, match, kDigest)) return "replay failed";
  return match[1];
}

WorkloadParams MixedWorkload() {
  WorkloadParams workload = testing::TestParams("mixed", Mode::kPaxflow, 0).workload;
  workload.multi_partition_pct = 10;
  return workload;
}

class LossyClusterTest : public ::testing::TestWithParam<Mode> {};

// 5% of the batches and remote reads every node sends are lost: the run
// drains, reads were asked for again, and the state is the logs' replay.
TEST_P(LossyClusterTest, LostBatchesAndReadsAreAskedForAgainAndTheRunDrains) {
  TempDir dir;
  const LossyRun run =
      RunLossyCluster(dir, GetParam(), 0.05, {"--drain_timeout_s=20"}, 180000);
  ASSERT_TRUE(run.finished) << "still running after 3 minutes: " << Tail(run.output);
  ASSERT_EQ(run.rc, 0) << Tail(run.output) << "\nnode 0:\n"
                       << Tail(run.logs[0]) << "\nnode 1:\n"
                       << Tail(run.logs[1]) << "\nnode 2:\n"
                       << Tail(run.logs[2]);
  ASSERT_TRUE(run.have_summary) << Tail(run.output);
  EXPECT_EQ(run.summary.invariant_failures, 0u);
  EXPECT_GT(run.summary.Committed(), 1000u);
  // Reads sent again and their originals are expected repeats, not bad
  // messages.
  EXPECT_EQ(run.summary.dropped_messages, 0u);
  // The faults bit, and were repaired: messages were dropped, and reads
  // were asked for again and sent again.
  int dropped = 0, asked = 0, resent = 0;
  for (const std::string& log : run.logs) {
    dropped += log.find("dropped on purpose") != std::string::npos;
    asked += log.find("asked peers again for the reads of") != std::string::npos;
    resent += log.find("sent reads again for") != std::string::npos;
  }
  EXPECT_EQ(dropped, 3) << "every node should have lost messages";
  EXPECT_GT(asked, 0) << "no node asked for reads again";
  EXPECT_GT(resent, 0) << "no node sent reads again";

  std::string replay;
  EXPECT_EQ(ReplayDigest(dir.path() + "/input", &replay), DigestHex(run.summary.digest))
      << replay;
  testing::ExpectMatchesSerialExecution(dir.path() + "/input", MixedWorkload(), run.summary);
}

INSTANTIATE_TEST_SUITE_P(Modes, LossyClusterTest,
                         ::testing::Values(Mode::kCalvin, Mode::kPaxflow),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(ModeName(info.param));
                         });

// The same faults without asking for reads again (--reads_retry_ms=-1, as
// the code did before): a partition waits for a lost read with every batch
// present, and the run never drains: its nodes give up draining once their
// load is over (or, still sequencing, once interrupted). What the test
// above guards against: it fails the same way without the re-requests.
TEST(LossyClusterStallTest, WithoutAskingAgainALostReadStallsTheRun) {
  TempDir dir;
  const LossyRun run = RunLossyCluster(dir, Mode::kPaxflow, 0.05,
                                       {"--drain_timeout_s=3", "--reads_retry_ms=-1"}, 20000);
  EXPECT_NE(run.rc, 0) << "the run drained: " << Tail(run.output);
  const std::string all = run.logs[0] + run.logs[1] + run.logs[2];
  EXPECT_NE(all.find("gave up draining"), std::string::npos) << Tail(run.output);
  EXPECT_EQ(all.find("asked peers again"), std::string::npos);
}

}  // namespace
}  // namespace paxflow
