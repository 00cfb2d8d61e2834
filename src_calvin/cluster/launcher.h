// paxflow-cluster's attached mode (`run`, and every paxflow-bench run), and
// what the detached verbs share with it: checks a config against the
// machine (ports free, hosts reachable, namespaces present) and starts one
// paxflow-node per node: a local process for loopback hosts, `ip netns
// exec` for nodes with a netns, over ssh otherwise. RunCluster and Launcher
// relay their output, stop them on request and combine their summaries.
// The detached verbs (start, stop, status, logs) are in detached_cluster.h.
//
// Owns: the node processes it started, their output pipes and log files
// (Launcher). Threads: the caller's only.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "common/config.h"
#include "base/summary.h"

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
  double stop_timeout_s = 40;    // stop, and run's Ctrl-C: from SIGTERM to SIGKILL
  // Detached mode.
  double start_timeout_s = 90;   // start: until every node is up
  int status_timeout_ms = 2000;  // status: per client-port query
  int log_lines = 20;            // logs: lines per node
  bool progress_lines = true;    // nodes print progress lines (--progress_ms > 0)
  // The nodes' --log_dir (their durable logs; empty: none) and --wipe.
  std::string input_log_dir;
  bool wipe = false;
};

// The node flags (NodeFlagNames) among `explicit_flags`, as "--name=value"
// with their current values: what a launcher forwards to every node.
std::vector<std::string> ForwardedNodeFlags(const std::set<std::string>& explicit_flags);

// How a node is started: where its process runs decides how it is
// signalled, probed and how its log is read.
enum class LaunchKind { kLocal, kNetns, kSsh };
LaunchKind KindOf(const NodeConfig& node);
const char* LaunchKindName(LaunchKind kind);

// Empty if every node can start: local ports free, namespaces present
// (with the node's address and ports free in them), remote hosts reachable
// with `ssh`.
std::string CheckMachine(const ClusterConfig& config, const std::string& ssh = "ssh");

// Empty if a fresh start may go on: the nodes on this machine have no
// history in options.input_log_dir, or --wipe was given (then what each
// node will remove is printed). `crashed`: a state file names nodes of
// which none runs any more (the message says to restart them instead).
// Nodes on other hosts check for themselves (they refuse without --wipe).
std::string CheckHistory(const ClusterConfig& config, const LaunchOptions& options, bool crashed,
                         const std::string& again);

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
  // running stop_timeout_s later (or at the next interrupt) gets SIGKILL.
  // Returns 0 when every node exited 0.
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

}  // namespace paxflow
