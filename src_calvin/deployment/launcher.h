// paxflow-cluster's logic: checks a config against the machine (ports
// free, hosts reachable, namespaces present) and starts one paxflow-node
// per node: a local process for loopback hosts, `ip netns exec` for nodes
// with a netns, over ssh otherwise. Two ways to run them:
//  - attached (RunCluster, Launcher): relays their output, stops them on
//    request and combines their summaries;
//  - detached (StartDetached, StopDetached, ShowStatus, ShowLogs): nodes
//    run in their own sessions, independent of the launcher; a state file
//    in the log directory tells the later verbs which processes they are.
//
// Owns: the node processes it started (attached mode). Threads: the caller's only.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/config.h"
#include "deployment/summary.h"

namespace paxflow {

struct LaunchOptions {
  std::string config_path;   // absolute
  std::string node_binary;   // paxflow-node
  std::string log_dir;       // one node-<id>.out and node-<id>.json per node
  std::vector<std::string> node_flags;  // forwarded to every node
  double duration_s = 10;    // for the watchdog; 0: no limit
  double grace_s = 60;       // beyond duration before nodes are stopped
  std::string ssh = "ssh";
  bool echo = true;          // relay node output to stdout
  bool echo_progress_only = false;  // relay only progress lines and errors
  // Detached mode.
  double start_timeout_s = 90;   // start: until every node is up
  double stop_timeout_s = 40;    // stop: from SIGTERM to SIGKILL
  int status_timeout_ms = 2000;  // status: per client-port query
  int log_lines = 20;            // logs: lines per node
  bool progress_lines = true;    // nodes print progress lines (--progress_ms > 0)
};

// How a node is started: where its process runs decides how it is
// signalled, probed and how its log is read.
enum class LaunchKind { kLocal, kNetns, kSsh };
LaunchKind KindOf(const NodeConfig& node);
const char* LaunchKindName(LaunchKind kind);

// Empty if every node can start: local ports free, namespaces present
// (with the node's address and ports free in them), remote hosts reachable
// with `ssh`.
std::string CheckMachine(const ClusterConfig& config, const std::string& ssh = "ssh");

// Starts every node, relays their output until they exit (stopping them
// when `interrupts` says so) and reads back their summaries. Returns the
// first non-zero node exit status (0 if none); `error` says what failed.
int RunCluster(const ClusterConfig& config, const LaunchOptions& options,
               const std::function<int()>& interrupts, RunSummary* combined,
               std::string* error);

class Launcher {
 public:
  Launcher(ClusterConfig config, LaunchOptions options);
  ~Launcher();
  // Starts every node; empty on success.
  std::string Start();
  // Relays output until every node exits. `interrupted` is polled: once
  // true, nodes get SIGTERM (they drain and print summaries); a node still
  // running 20 s later gets SIGKILL. Returns 0 when every node exited 0.
  int Wait(const std::function<int()>& interrupts);
  // Every node's summary, combined (replica 0's throughput, sum of digests).
  bool CombinedSummary(RunSummary* combined, std::string* error) const;

 private:
  struct Child {
    NodeId id = 0;
    pid_t pid = -1;
    int out_fd = -1, err_fd = -1;
    std::string pending_out, pending_err;
    FILE* log = nullptr;
    bool running = false;
    int status = 0;
    bool remote = false;
    std::string host;
  };
  void Relay(Child* child, int fd, std::string* pending, bool is_err);
  void SignalAll(int signal);

  ClusterConfig config_;
  LaunchOptions options_;
  std::vector<Child> children_;
};

// --- Detached mode ---------------------------------------------------------

// One node `start` launched: enough to find, signal and read it later
// without the launcher that started it.
struct NodeRecord {
  NodeId id = 0;
  pid_t pid = -1;  // on `host` for ssh nodes, else on this machine
  LaunchKind kind = LaunchKind::kLocal;
  std::string host, netns;
  std::string log;  // its stdout+stderr (on `host` for ssh nodes)
};

struct ClusterState {
  std::string config_path, log_dir, ssh, node_binary;
  int64_t started_unix = 0;
  std::vector<NodeRecord> nodes;
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
std::string CheckStartable(const ClusterConfig& config, const LaunchOptions& options);

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
// status: each node's process and client-port status.
int ShowStatus(const ClusterConfig& config, const LaunchOptions& options, std::string* error);
// logs: the last log_lines lines of each node's log.
int ShowLogs(const ClusterConfig& config, const LaunchOptions& options, std::string* error);

}  // namespace paxflow
