// paxflow-cluster: launches every node of a deployment config, relays
// their progress, stops them cleanly (also on Ctrl-C) and prints the
// cluster's summary. Node flags given here are forwarded to every node.
#include <gflags/gflags.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "common/config.h"
#include "deployment/flags.h"
#include "deployment/launcher.h"
#include "deployment/signals.h"

DEFINE_string(logs, "", "Directory for the nodes' logs and summaries (default logs/<config name>)");
DEFINE_string(node_binary, "", "paxflow-node to run (default: next to this binary)");
DEFINE_double(grace, 60, "Seconds past --duration before lingering nodes are stopped");
DEFINE_string(cluster_json, "", "Write the cluster summary as JSON to this file");
DEFINE_bool(check_only, false, "Validate the config and the machine, start nothing");

namespace paxflow {
namespace {

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "paxflow-cluster: %s\n", message.c_str());
  return code;
}

std::string Absolute(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? resolved : path;
}

std::string SelfDirectory() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  path[n] = '\0';
  std::string self(path);
  return self.substr(0, self.rfind('/'));
}

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "launches a PaxFlow cluster from a deployment config and runs a workload.\n"
      "  paxflow-cluster --config=deployment/local-3.conf [--workload=mixed] [--mode=calvin]\n"
      "                  [--duration=10] [node flags...]\n"
      "Every node flag given here (see paxflow-node --help) is forwarded to all nodes.\n"
      "Logs: one node-<id>.out per node under --logs. Ctrl-C stops the nodes cleanly.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) return Fail(std::string("unexpected argument '") + argv[1] + "'");
  if (FLAGS_config.empty()) return Fail("--config is required; see --help");

  ClusterConfig config;
  std::string error = LoadClusterConfig(FLAGS_config, &config);
  if (!error.empty()) return Fail(error);
  ClusterLayout layout;
  error = ValidateClusterConfig(config, &layout);
  if (!error.empty()) return Fail(FLAGS_config + ": " + error);
  // Resolve the parameters here too, so a bad one fails before any node starts.
  const std::set<std::string> explicit_flags = ExplicitFlags();
  std::vector<std::pair<std::string, std::string>> params;
  for (const Param& param : config.param()) params.emplace_back(param.name(), param.value());
  NodeParams resolved;
  error = ResolveFlags(params, explicit_flags, layout.partitions(), &resolved);
  if (!error.empty()) return Fail(FLAGS_config + ": " + error);
  error = CheckMachine(config);
  if (!error.empty()) return Fail(FLAGS_config + ": " + error);
  if (FLAGS_check_only) {
    std::printf("%s: %d node(s), %u partition(s), %u replica(s): ok\n", FLAGS_config.c_str(),
                config.node_size(), layout.partitions(), layout.replicas());
    return 0;
  }

  LaunchOptions options;
  options.config_path = Absolute(FLAGS_config);
  options.node_binary = FLAGS_node_binary.empty() ? SelfDirectory() + "/paxflow-node"
                                                  : FLAGS_node_binary;
  options.log_dir = FLAGS_logs.empty()
                        ? "logs/" + (config.name().empty() ? std::string("cluster") : config.name())
                        : FLAGS_logs;
  options.duration_s = resolved.engine.run_epochs > 0 ? 0 : resolved.engine.duration_s;
  options.grace_s = FLAGS_grace;
  for (const std::string& name : NodeFlagNames()) {
    if (!explicit_flags.count(name)) continue;
    std::string value;
    gflags::GetCommandLineOption(name.c_str(), &value);
    options.node_flags.push_back("--" + name + "=" + value);
  }
  if (explicit_flags.count("log_dir")) options.node_flags.push_back("--log_dir=" + Absolute(FLAGS_log_dir));
  std::string mkdir_command = "mkdir -p '" + options.log_dir + "'";
  if (std::system(mkdir_command.c_str()) != 0) return Fail("cannot create " + options.log_dir);
  options.log_dir = Absolute(options.log_dir);

  SignalWatcher signals;
  std::printf("[cluster] %s: starting %d node(s) (%u partition(s), %u replica(s)), mode %s, "
              "workload %s, logs in %s\n",
              FLAGS_config.c_str(), config.node_size(), layout.partitions(), layout.replicas(),
              ModeName(resolved.engine.mode), resolved.workload.workload.c_str(),
              options.log_dir.c_str());
  std::fflush(stdout);
  RunSummary combined;
  const int code = RunCluster(config, options, [&] { return signals.interrupted() ? 1 : 0; },
                              &combined, &error);
  if (!error.empty()) {
    std::fprintf(stderr, "paxflow-cluster: %s\n", error.c_str());
    return code != 0 ? code : 1;
  }
  std::fputs(combined.ToText().c_str(), stdout);
  const std::string json = combined.ToJson();
  if (!FLAGS_cluster_json.empty()) std::ofstream(FLAGS_cluster_json) << json << "\n";
  std::ofstream(options.log_dir + "/cluster.json") << json << "\n";
  return code;
}

}  // namespace
}  // namespace paxflow

int main(int argc, char** argv) { return paxflow::Main(argc, argv); }
