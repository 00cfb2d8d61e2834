// paxflow-node: runs one node of a cluster described by a deployment
// config, or (--replay) re-executes recorded input logs.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "common/config.h"
#include "base/flags.h"
#include "node/node.h"
#include "replay/replay.h"
#include "base/signals.h"

namespace paxflow {
namespace {

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "paxflow-node: %s\n", message.c_str());
  return code;
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text << "\n";
  return static_cast<bool>(out);
}

int Replay(const std::set<std::string>& explicit_flags) {
  std::vector<std::pair<std::string, std::string>> recorded;
  uint32_t partitions = 0;
  std::string error = ReadLogParams(FLAGS_replay, &recorded, &partitions);
  if (!error.empty()) return Fail(error);
  // replicated_input is how the live nodes agreed on the input (a consensus
  // group, which needs their --log_dir); a replay reads what they logged,
  // in the same format, and needs no group: without this, the logs of a
  // replicated cluster could not be replayed.
  recorded.erase(std::remove_if(recorded.begin(), recorded.end(),
                                [](const auto& param) { return param.first == "replicated_input"; }),
                 recorded.end());
  NodeParams params;
  error = ResolveFlags(recorded, explicit_flags, partitions, &params);
  if (!error.empty()) return Fail(error);
  if (FLAGS_replay_replica < 0) return Fail("--replay_replica must be >= 0");
  std::printf("replaying %s (replica %d, %u partition(s), mode %s, %u worker(s))\n",
              FLAGS_replay.c_str(), FLAGS_replay_replica, partitions,
              ModeName(params.engine.mode), params.engine.workers);
  ReplayResult result = ReplayLogs(FLAGS_replay, static_cast<uint32_t>(FLAGS_replay_replica), params);
  if (!result.error.empty()) return Fail(result.error, 1);
  if (result.start_epoch > 0) {
    std::printf("started from the checkpoint at epoch %llu (every partition's newest common one)\n",
                static_cast<unsigned long long>(result.start_epoch));
  }
  if (result.truncated) std::printf("note: a log ended in a torn record; replayed up to it\n");
  for (size_t p = 0; p < result.partition_digests.size(); ++p) {
    std::printf("partition %zu digest at epoch %llu: %s\n", p,
                static_cast<unsigned long long>(result.epoch),
                DigestHex(result.partition_digests[p]).c_str());
  }
  std::printf("replayed %llu txns in %.2f s\n", static_cast<unsigned long long>(result.txns),
              result.seconds);
  std::printf("state digest at epoch %llu: %s\n", static_cast<unsigned long long>(result.epoch),
              DigestHex(result.digest).c_str());
  return 0;
}

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "runs one PaxFlow node.\n"
      "  paxflow-node --config=deployment/local-1.conf --node_id=0 [--workload=ro] [--mode=calvin]\n"
      "  paxflow-node --replay=LOGDIR [--workers=4] [--mode=calvin]\n"
      "Usually started by paxflow-cluster, which starts every node of a config.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_logtostderr = true;
  google::InitGoogleLogging(argv[0]);
  if (argc > 1) return Fail(std::string("unexpected argument '") + argv[1] + "' (flags start with --)");
  const std::set<std::string> explicit_flags = ExplicitFlags();
  if (!FLAGS_replay.empty()) return Replay(explicit_flags);
  if (FLAGS_config.empty()) return Fail("--config is required (or --replay=DIR); see --help");

  NodeOptions options;
  ClusterLayout layout;
  std::string error = LoadValidClusterConfig(FLAGS_config, &options.config, &layout);
  if (!error.empty()) return Fail(error);
  error = ResolveFlags(ConfigParams(options.config), explicit_flags, layout.partitions(),
                       &options.params);
  if (!error.empty()) return Fail(FLAGS_config + ": " + error);
  options.id = FLAGS_node_id;
  if (!layout.Node(options.id)) {
    return Fail("node id " + std::to_string(options.id) + " is not in " + FLAGS_config);
  }

  SignalWatcher signals;
  options.interrupted = [&] { return signals.interrupted(); };
  Node node(options);
  error = node.Start();
  if (!error.empty()) return Fail("node " + std::to_string(options.id) + " cannot start: " + error, 1);
  node.Run([&] { return signals.interrupted(); });
  RunSummary summary = node.Summary();
  std::fputs(summary.ToText().c_str(), stdout);
  std::fflush(stdout);
  if (!options.params.engine.summary_json.empty() &&
      !WriteFile(options.params.engine.summary_json, summary.ToJson())) {
    return Fail("cannot write " + options.params.engine.summary_json, 1);
  }
  if (node.drain_failed()) return 4;
  return summary.invariant_failures > 0 ? 3 : 0;
}

}  // namespace
}  // namespace paxflow

int main(int argc, char** argv) { return paxflow::Main(argc, argv); }
