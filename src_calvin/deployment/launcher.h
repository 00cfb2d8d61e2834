// paxflow-cluster's logic: checks a config against the machine (ports
// free, hosts reachable), starts one paxflow-node per node (a local process
// for loopback hosts, over ssh otherwise), relays their output, stops them
// on request, and combines their summaries.
//
// Owns: the node processes it started. Threads: the caller's only.
#pragma once
#include <sys/types.h>

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
};

// Empty if every node can start: local ports free, remote hosts reachable.
std::string CheckMachine(const ClusterConfig& config);

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
  std::vector<std::string> NodeArgs(const NodeConfig& node) const;
  void Relay(Child* child, int fd, std::string* pending, bool is_err);
  void SignalAll(int signal);

  ClusterConfig config_;
  LaunchOptions options_;
  std::vector<Child> children_;
};

}  // namespace paxflow
