// paxflow-cluster's detached mode: the verbs start, stop, restart, status
// and logs.
// start launches every node in a session of its own, independent of the
// launcher, and records them in a state file in the log directory
// (<log_dir>/cluster.state); stop, status and logs, each run by a later
// paxflow-cluster process, read it to find, signal and inspect those nodes
// (locally, in their namespaces or over ssh).
//
// Owns: the state file (written by start, read by stop, status and logs,
// removed by stop). It keeps no handle on the nodes: they outlive the
// launcher, and every verb finds them through the state file.
// Threads: the caller's only.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
#include "cluster/launcher.h"
#include "base/summary.h"

namespace paxflow {

// One node `start` launched: enough to find, signal and read it later
// without the launcher that started it.
struct NodeRecord {
  NodeId id = 0;
  pid_t pid = -1;  // on `host` for ssh nodes, else on this machine
  LaunchKind kind = LaunchKind::kLocal;
  std::string host, netns;
  std::string log;  // its stdout+stderr (on `host` for ssh nodes)
  uint64_t start_ticks = 0;  // local nodes: the process's start time (0: unknown)
};

struct ClusterState {
  std::string config_path, log_dir, ssh, node_binary;
  int64_t started_unix = 0;
  std::vector<NodeRecord> nodes;
  std::vector<std::string> node_flags;  // what start gave every node
  std::vector<NodeId> removed;  // removed for good (remove): not restarted
};

// <log_dir>/cluster.state: written by start, read by stop and status,
// removed by stop.
std::string StatePath(const std::string& log_dir);
std::string WriteClusterState(const std::string& path, const ClusterState& state);
// Empty on success; else names the file and what is wrong with it.
std::string ReadClusterState(const std::string& path, ClusterState* state);

// What became of a recorded node's process.
enum class Liveness {
  kRunning,  // the pid runs paxflow-node with this node's id and config
  kGone,     // no such process (or only a zombie)
  kOther,    // the pid now belongs to another program: a stale record
  kUnknown,  // could not ask (ssh failed)
};
struct Probe {
  Liveness liveness = Liveness::kUnknown;
  std::string detail;  // for people: "pid 123 is not running", ...
};
Probe ProbeNode(const ClusterState& state, const NodeRecord& node);

// Empty if a start may proceed: no state file naming a running node, and
// CheckMachine passes.
// `again` (--config/--logs) is for the hints of its messages.
std::string CheckStartable(const ClusterConfig& config, const LaunchOptions& options,
                           const std::string& again);

// The verbs. Each prints its progress on stdout and returns the exit status
// for paxflow-cluster (0 ok, 1 a node failed or is down, 2 bad input, 3 an
// invariant failed); `error` says what went wrong.
// start: launches every node detached, records them, and returns once all
// are up, or stops them again and fails with the failing node's last lines.
int StartDetached(const ClusterConfig& config, const LaunchOptions& options,
                  const std::function<int()>& interrupts, std::string* error);
// stop: SIGTERM to every recorded node, SIGKILL after stop_timeout_s;
// combines their summaries and removes the state file.
// `have_summary` says whether `combined` holds every node's summary.
int StopDetached(const ClusterConfig& config, const LaunchOptions& options,
                 RunSummary* combined, bool* have_summary, std::string* error);
// restart: starts nodes `ids` again, all at once (killing those that still
// run first), with start's flags and --recover: each loads its newest
// checkpoint, replays its log, catches up from its peers and rejoins.
// Returns once all have.
int RestartDetached(const ClusterConfig& config, const LaunchOptions& options,
                    const std::vector<NodeId>& ids, const std::function<int()>& interrupts,
                    std::string* error);
// remove: takes node `id` (a dead replica) out of the cluster for good:
// every other node is told over its client port (and those that miss it
// learn it from their peers), stops waiting for it and keeping logs for
// it; the state file records it so that restart leaves it out. Refused
// for a node that runs (unless `force`), of replica 0, or the last of its
// partition, saying why.
int RemoveDetached(const ClusterConfig& config, const LaunchOptions& options, NodeId id,
                   bool force, std::string* error);
// status: each node's process and client-port status.
int ShowStatus(const ClusterConfig& config, const LaunchOptions& options, std::string* error);
// logs: the last log_lines lines of each node's log.
int ShowLogs(const ClusterConfig& config, const LaunchOptions& options, std::string* error);

}  // namespace paxflow
