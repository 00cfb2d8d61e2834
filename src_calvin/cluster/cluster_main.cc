// paxflow-cluster: launches every node of a deployment config. `run` (the
// default) relays their progress, stops them cleanly (also on Ctrl-C) and
// prints the cluster's summary; `start`, `stop`, `status` and `logs` manage
// a detached cluster that outlives the launcher. Node flags given to run
// or start are forwarded to every node.
#include <gflags/gflags.h>

#include <cstdio>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "auth/client_keys.h"
#include "common/config.h"
#include "common/paths.h"
#include "cluster/detached_cluster.h"
#include "base/flags.h"
#include "cluster/launcher.h"
#include "base/signals.h"

DEFINE_string(logs, "",
              "Directory for the nodes' logs and summaries, and start's state file (default "
              "logs/<config name>)");
DEFINE_string(node_binary, "", "paxflow-node to run (default: next to this binary)");
DEFINE_double(grace, 60, "run: seconds past --duration before lingering nodes are stopped");
DEFINE_string(cluster_json, "", "run, stop: also write the cluster summary as JSON to this file");
DEFINE_bool(check_only, false, "run, start: validate the config and the machine, start nothing");
DEFINE_string(ssh, "ssh",
              "ssh client for remote hosts (takes -o options like OpenSSH's); start records it "
              "for the later verbs");
DEFINE_double(start_timeout, 90,
              "start: seconds for every node to be up; then the nodes are stopped and start "
              "fails");
DEFINE_double(stop_timeout, 40,
              "stop, and run on Ctrl-C (or past --grace): seconds the nodes get to drain and "
              "exit after SIGTERM before SIGKILL");
DEFINE_int32(status_timeout_ms, 2000, "status: how long each node's client port may take");
DEFINE_int32(lines, 20, "logs: how many of the last lines of each node's log to print");
DEFINE_string(node, "",
              "restart: the node(s) to restart: an id, ids separated by commas, or all; "
              "remove: the node to remove");
DEFINE_bool(force, false, "remove: remove the node even though it still runs");
DEFINE_bool(from_peer, false,
            "restart (replicated_input): the node copies a live peer of its partition (its "
            "newest checkpoint and the committed epochs after it) instead of recovering from "
            "its own log directory, whose files of it are moved aside, not deleted; for a "
            "node whose disk was lost or whose group trimmed its log past what it holds. A "
            "node whose log directory holds nothing of it does so without the flag");

namespace paxflow {
namespace {

constexpr char kUsage[] =
    "launches a PaxFlow cluster from a deployment config, attached or detached.\n"
    "  paxflow-cluster [VERB] --config=FILE [launcher flags] [node flags...]\n"
    "verbs:\n"
    "  run     (default) start every node, relay their progress, wait for the run's end\n"
    "          (--duration, --run_epochs) and print the cluster summary (also\n"
    "          <logs>/cluster.json). Ctrl-C stops the nodes cleanly.\n"
    "  start   start every node detached (own session, output in <logs>/node-<id>.out),\n"
    "          record them in <logs>/cluster.state and return once all are up (client port\n"
    "          answers with epochs running, or a progress line), within --start_timeout;\n"
    "          else stop them and fail with the failing node's last lines. Refused while\n"
    "          the state file names running nodes, and over the nodes' history in their\n"
    "          --log_dir (after a crash of every node it says to `restart --node=all`):\n"
    "          --wipe starts afresh over it, each node removing (and naming) its files once\n"
    "          every node agreed. Nodes run until `stop` unless --duration, --run_epochs\n"
    "          or the config say otherwise.\n"
    "  stop    SIGTERM every node of the state file (they drain and write summaries), wait\n"
    "          for them (--stop_timeout, then SIGKILL), print the cluster summary like run\n"
    "          and remove the state file.\n"
    "  restart --node=ID[,ID...]|all\n"
    "          start nodes of a started cluster again, together (after a crash; one that\n"
    "          still runs is killed first), with start's flags and --recover: each loads\n"
    "          its newest checkpoint, replays its input log, fetches from its peers what it\n"
    "          missed and rejoins; the other nodes waited for it. Returns once all have\n"
    "          rejoined. Needs --log_dir at start. With replicated_input, a node whose\n"
    "          --log_dir holds nothing of it (a replaced machine, a wiped disk) copies a live\n"
    "          peer of its partition (newest checkpoint, checked, and the committed epochs\n"
    "          after it) and rejoins its group as a follower; --from_peer does so for a node\n"
    "          whose files are there but unusable (moved aside, not deleted).\n"
    "  remove  --node=ID [--force]\n"
    "          take a node that will not return (a dead replica) out of the cluster for good:\n"
    "          every other node stops waiting for it and stops keeping logs for it (until\n"
    "          then the oldest checkpoint every node holds cannot advance, and logs grow;\n"
    "          progress lines say \"keeping logs from epoch E for node ID, silent for T s\"\n"
    "          once it has been silent for --peer_timeout_ms x 10). The nodes remember it\n"
    "          in their log directories, and restart leaves it out. Refused for a node\n"
    "          that runs (unless --force), for a node of replica 0 (its sequencer orders\n"
    "          its partition; no other node takes over) and for a partition's last node.\n"
    "  status  for each node: is its process alive, and what its client port reports\n"
    "          (epochs, and who it waits for if it cannot go on). Exits 1 if any node is\n"
    "          down or cannot go on.\n"
    "  logs    the last --lines lines of each node's log, prefixed by the node.\n"
    "Where nodes run: loopback hosts on this machine; nodes with a `netns` in their network\n"
    "namespace here (ip netns exec, as root; make them with tools/netns.sh up); any other\n"
    "host over --ssh (same paths on every host). stop, status and logs need the --config and\n"
    "--logs that start was given. Node flags (see paxflow-node --help) go to run and start.\n"
    "Exit status: 0 ok, 1 a node failed or is down, 2 bad input, 3 an invariant failed.";

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "paxflow-cluster: %s\n", message.c_str());
  return code;
}

// --node: "all", or ids separated by commas, each in the config.
std::string ParseNodeList(const std::string& text, const ClusterConfig& config,
                          std::vector<NodeId>* ids) {
  if (text == "all") {
    for (const NodeConfig& node : config.node()) ids->push_back(node.id());
    return "";
  }
  std::stringstream items(text);
  std::string item;
  while (std::getline(items, item, ',')) {
    char* end = nullptr;
    const unsigned long id = std::strtoul(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0') return "--node: '" + item + "' is not a node id";
    bool known = false;
    for (const NodeConfig& node : config.node()) known |= node.id() == id;
    if (!known) return "--node: node " + item + " is not in " + FLAGS_config;
    if (std::find(ids->begin(), ids->end(), id) == ids->end()) ids->push_back(static_cast<NodeId>(id));
  }
  return "";
}

bool ConfigSets(const ClusterConfig& config, const std::string& name) {
  for (const Param& param : config.param()) {
    if (param.name() == name) return true;
  }
  return false;
}

void WriteSummary(const RunSummary& combined, const std::string& log_dir) {
  std::fputs(combined.ToText().c_str(), stdout);
  std::fflush(stdout);
  const std::string json = combined.ToJson();
  if (!FLAGS_cluster_json.empty()) std::ofstream(FLAGS_cluster_json) << json << "\n";
  std::ofstream(log_dir + "/cluster.json") << json << "\n";
}

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(kUsage);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  const std::string verb = argc > 1 ? argv[1] : "run";
  if (verb != "run" && verb != "start" && verb != "stop" && verb != "status" && verb != "logs" &&
      verb != "restart" && verb != "remove") {
    return Fail("unknown verb '" + verb + "' (expected run, start, stop, restart, remove, "
                "status or logs; see --help)");
  }
  if (argc > 2) return Fail(std::string("unexpected argument '") + argv[2] + "'");
  if (FLAGS_config.empty()) return Fail("--config is required; see --help");
  const bool launches = verb == "run" || verb == "start";
  std::set<std::string> explicit_flags = ExplicitFlags();
  if (verb == "restart" && FLAGS_node.empty()) return Fail("restart needs --node=ID (or all)");
  if (verb == "remove" && FLAGS_node.empty()) return Fail("remove needs --node=ID");
  if (verb != "restart" && verb != "remove" && explicit_flags.count("node")) {
    return Fail("--node is for restart and remove, not " + verb);
  }
  if (verb != "restart" && explicit_flags.count("from_peer")) {
    return Fail("--from_peer is for restart, not " + verb);
  }
  if (verb != "remove" && explicit_flags.count("force")) {
    return Fail("--force is for remove, not " + verb);
  }
  if (!launches && verb != "restart") {
    // Node flags only mean something to nodes being started.
    std::vector<std::string> node_flags = NodeFlagNames();
    node_flags.push_back("log_dir");
    for (const std::string& name : node_flags) {
      if (explicit_flags.count(name)) {
        return Fail("--" + name + " is a node flag: it applies to run and start, not " + verb);
      }
    }
  }
  if (FLAGS_lines < 0) return Fail("--lines must be >= 0");
  const std::pair<const char*, double> timeouts[] = {
      {"start_timeout", FLAGS_start_timeout}, {"stop_timeout", FLAGS_stop_timeout},
      {"grace", FLAGS_grace}};
  for (const auto& [name, seconds] : timeouts) {
    // A day at most: the waits are converted to integer clocks.
    if (!(seconds >= 0 && seconds <= 86400)) {
      return Fail(std::string("--") + name + " must be 0..86400 seconds");
    }
  }

  ClusterConfig config;
  ClusterLayout layout;
  std::string error = LoadValidClusterConfig(FLAGS_config, &config, &layout);
  if (error.empty()) error = ApplyClientKeyFlags(&config);  // CURVE keys (auth.curve)
  if (!error.empty()) return Fail(error);

  if (verb == "start" && !explicit_flags.count("duration") &&
      !explicit_flags.count("run_epochs") && !ConfigSets(config, "duration") &&
      !ConfigSets(config, "run_epochs")) {
    // A detached cluster runs until `stop`, not for run's default 10 s.
    gflags::SetCommandLineOption("duration", "0");
    explicit_flags.insert("duration");
  }
  NodeParams resolved;
  if (launches) {
    // Resolve the parameters here too, so a bad one fails before any node starts.
    error = ResolveFlags(ConfigParams(config), explicit_flags, layout.partitions(), &resolved);
    if (error.empty() && resolved.engine.replicated_input) error = ReplicationConfigProblem(config);
    if (!error.empty()) return Fail(FLAGS_config + ": " + error);
  }

  LaunchOptions options;
  options.config_path = Absolute(FLAGS_config);
  options.node_binary = Absolute(FLAGS_node_binary.empty() ? SelfDirectory() + "/paxflow-node"
                                                           : FLAGS_node_binary);
  options.log_dir = FLAGS_logs.empty()
                        ? "logs/" + (config.name().empty() ? std::string("cluster") : config.name())
                        : FLAGS_logs;
  options.duration_s = resolved.engine.run_epochs > 0 ? 0 : resolved.engine.duration_s;
  options.grace_s = FLAGS_grace;
  options.ssh = FLAGS_ssh;
  options.start_timeout_s = FLAGS_start_timeout;
  options.stop_timeout_s = FLAGS_stop_timeout;
  options.status_timeout_ms = FLAGS_status_timeout_ms;
  options.log_lines = FLAGS_lines;
  options.progress_lines = resolved.engine.progress_ms > 0;
  options.node_flags = ForwardedNodeFlags(explicit_flags);
  if (FLAGS_from_peer) options.node_flags.push_back("--from_peer");
  if (explicit_flags.count("log_dir")) {
    options.node_flags.push_back("--log_dir=" + Absolute(FLAGS_log_dir));
  }
  // How to reach this cluster again, for the hints printed after start.
  const std::string again =
      "--config=" + FLAGS_config + (FLAGS_logs.empty() ? "" : " --logs=" + FLAGS_logs);

  if (!launches) {
    options.log_dir = Absolute(options.log_dir);
    int code = 0;
    if (verb == "stop") {
      RunSummary combined;
      bool have_summary = false;
      code = StopDetached(config, options, &combined, &have_summary, &error);
      if (have_summary) {
        WriteSummary(combined, options.log_dir);
        if (code == 0 && combined.invariant_failures > 0) {
          return Fail(std::to_string(combined.invariant_failures) + " invariant failure(s)", 3);
        }
      }
    } else if (verb == "restart") {
      std::vector<NodeId> ids;
      error = ParseNodeList(FLAGS_node, config, &ids);
      if (!error.empty()) return Fail(error);
      SignalWatcher signals;
      code = RestartDetached(config, options, ids, [&] { return signals.interrupted() ? 1 : 0; },
                             &error);
    } else if (verb == "remove") {
      std::vector<NodeId> ids;
      error = ParseNodeList(FLAGS_node, config, &ids);
      if (!error.empty()) return Fail(error);
      if (ids.size() != 1 || FLAGS_node == "all") return Fail("remove takes one node: --node=ID");
      code = RemoveDetached(config, options, ids[0], FLAGS_force, &error);
    } else if (verb == "status") {
      code = ShowStatus(config, options, &error);
    } else {
      code = ShowLogs(config, options, &error);
    }
    if (!error.empty()) return Fail(error, code != 0 ? code : 1);
    return code;
  }

  options.input_log_dir = resolved.engine.log_dir.empty() ? "" : Absolute(resolved.engine.log_dir);
  options.wipe = resolved.engine.wipe;
  error = verb == "start" ? CheckStartable(config, options, again)
                          : CheckHistory(config, options, /*crashed=*/false, again);
  if (error.empty() && verb == "run") error = CheckMachine(config, options.ssh);
  if (!error.empty()) return Fail(FLAGS_config + ": " + error);
  if (FLAGS_check_only) {
    std::printf("%s: %d node(s), %u partition(s), %u replica(s): ok\n", FLAGS_config.c_str(),
                config.node_size(), layout.partitions(), layout.replicas());
    return 0;
  }
  if (!MakeDirectories(options.log_dir)) return Fail("cannot create " + options.log_dir);
  options.log_dir = Absolute(options.log_dir);

  SignalWatcher signals;
  std::printf("[cluster] %s: starting %d node(s)%s (%u partition(s), %u replica(s)), mode %s, "
              "workload %s, logs in %s\n",
              FLAGS_config.c_str(), config.node_size(), verb == "start" ? " detached" : "",
              layout.partitions(), layout.replicas(), ModeName(resolved.engine.mode),
              resolved.workload.workload.c_str(), options.log_dir.c_str());
  std::fflush(stdout);
  if (verb == "start") {
    const int code =
        StartDetached(config, options, [&] { return signals.interrupted() ? 1 : 0; }, &error);
    if (code != 0) return Fail(error, code);
    std::printf("[cluster] see them: paxflow-cluster status %s (or logs); stop them: "
                "paxflow-cluster stop %s\n",
                again.c_str(), again.c_str());
    return 0;
  }
  RunSummary combined;
  const int code = RunCluster(config, options, [&] { return signals.interrupted() ? 1 : 0; },
                              &combined, &error);
  if (!error.empty()) {
    std::fprintf(stderr, "paxflow-cluster: %s\n", error.c_str());
    return code != 0 ? code : 1;
  }
  WriteSummary(combined, options.log_dir);
  return code;
}

}  // namespace
}  // namespace paxflow

int main(int argc, char** argv) { return paxflow::Main(argc, argv); }
