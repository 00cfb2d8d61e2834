// A detached test cluster of real processes on 127.0.0.1 (paxflow-cluster
// start, ports picked free), its logs and input logs under a temporary
// directory, and the checks of its logs that the crash and start-up tests
// share: an offline replay's digest, and logs whole (each epoch and txn once).
#pragma once
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "base/summary.h"
#include "sequencer/input_log.h"
#include "tests/test_util.h"

namespace paxflow::testing {

// One detached cluster of the test, with its logs and input logs under a
// temporary directory.
class TestCluster {
 public:
  TestCluster(const std::string& name, uint32_t partitions, uint32_t replicas,
              std::vector<std::string> flags)
      : config_(MakeConfig(name, partitions, replicas, "tcp")),
        flags_(std::move(flags)) {
    config_path_ = dir_.path() + "/cluster.conf";
    std::ofstream(config_path_) << ToText(config_);
    verbs_ = std::make_unique<ClusterVerbs>(config_path_, logs());
  }
  std::string logs() const { return dir_.path() + "/logs"; }
  std::string input() const { return dir_.path() + "/input"; }
  const ClusterConfig& config() const { return config_; }
  const NodeConfig& node(int i) const { return config_.node(i); }
  std::string NodeLog(int i) const { return ReadFile(logs() + "/node-" + std::to_string(i) + ".out"); }

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
  const ClusterVerbs& verbs() const { return *verbs_; }
  void Kill(int i) {
    const std::vector<pid_t> pids = verbs_->Pids();
    ASSERT_LT(static_cast<size_t>(i), pids.size());
    ASSERT_EQ(kill(pids[i], SIGKILL), 0);
  }
  // Restarts node `i` (-1: every node, together).
  void Restart(int i, std::vector<std::string> flags = {}) {
    flags.insert(flags.begin(), "--node=" + (i < 0 ? std::string("all") : std::to_string(i)));
    std::string output;
    ASSERT_EQ(verbs_->Run("restart", flags, &output), 0) << output << Tail(i < 0 ? 0 : i);
    EXPECT_NE(output.find("rejoined"), std::string::npos) << output;
  }
  // Every node in `nodes` admits `epochs` more epochs (within 20 s).
  void ExpectProgress(const std::vector<int>& nodes, Epoch epochs) {
    std::vector<Epoch> from;
    for (int i : nodes) {
      StatusReply status;
      ASSERT_TRUE(AskStatus(node(i), &status)) << "node " << i << " does not answer";
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

 private:
  TempDir dir_;
  ClusterConfig config_;
  std::vector<std::string> flags_;
  std::string config_path_;
  std::unique_ptr<ClusterVerbs> verbs_;
};

// The digest an offline replay of `dir` prints (replica `replica`).
inline std::string ReplayDigest(const std::string& dir, uint32_t replica = 0,
                         std::string* output = nullptr) {
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
inline std::set<TxnId> CheckLogsWhole(const std::string& dir) {
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

}  // namespace paxflow::testing
