#include "cluster/detached_cluster.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <thread>

#include "client/client.h"
#include "client/group_status.h"
#include "client/request.h"
#include "common/proto_json.h"
#include "cluster/launch_helpers.h"
#include "common/membership.h"

namespace paxflow {
namespace {

using Clock = std::chrono::steady_clock;

// The last `lines` lines of node `record`'s log, wherever it runs; on
// failure, what went wrong.
bool NodeLogTail(const ClusterState& state, const NodeRecord& record, int lines,
                 std::string* text) {
  if (record.kind != LaunchKind::kSsh) {
    if (TailFile(record.log, lines, text)) return true;
    *text = "cannot read " + record.log + ": " + std::strerror(errno);
    return false;
  }
  std::string err;
  const int rc = RunCommand(SshArgs(state.ssh, record.host,
                                    "tail -n " + std::to_string(lines) + " " +
                                        ShellQuote(record.log)),
                            text, &err);
  if (rc == 0) return true;
  *text = "cannot read " + record.log + " on " + record.host + " (exit " + std::to_string(rc) +
          "): " + Trim(err);
  return false;
}

// Lines of a node's log for a message, indented under it.
std::string Indented(const std::string& text) {
  std::string out;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) out += "    " + line + "\n";
  return out.empty() ? "    (nothing)\n" : out;
}

// Local process `pid`: is it node `id` of `config_path`, run by `binary`
// (or a paxflow-node)? Reads /proc, so a pid that the system gave to
// another program since is not mistaken for the node. With `start_ticks`
// (the process's start time, recorded at spawn) the pid and that time name
// one process for good; a node tearing itself down (its cmdline already
// empty, not yet a zombie) still counts as running until it is gone.
Probe ProbeLocal(pid_t pid, NodeId id, const std::string& config_path, const std::string& binary,
                 uint64_t start_ticks) {
  const std::string who = "pid " + std::to_string(pid);
  if (pid <= 0) return {Liveness::kGone, who + " is not a process id"};
  if (kill(pid, 0) != 0 && errno == ESRCH) return {Liveness::kGone, who + " is not running"};
  ProcessStat stat;
  if (!ReadProcessStat(pid, &stat)) return {Liveness::kGone, who + " is not running"};
  if (stat.state == 'Z' || stat.state == 'X') return {Liveness::kGone, who + " has exited"};
  if (start_ticks != 0) {
    if (stat.start_ticks != start_ticks) {
      return {Liveness::kOther, who + " is another process now (started at another time): the "
                                      "node exited and its pid was reused (stale record)"};
    }
    return {Liveness::kRunning, who + " runs the node"};
  }
  const std::string cmdline = ReadWholeFile("/proc/" + std::to_string(pid) + "/cmdline");
  std::vector<std::string> args;
  std::stringstream parts(cmdline);
  std::string arg;
  while (std::getline(parts, arg, '\0')) args.push_back(arg);
  // An empty cmdline on a live, unreaped process: it is exiting.
  if (args.empty()) return {Liveness::kRunning, who + " is exiting"};
  const bool same_binary = args[0] == binary || args[0].find("paxflow-node") != std::string::npos;
  const bool same_id =
      std::find(args.begin(), args.end(), "--node_id=" + std::to_string(id)) != args.end();
  const bool same_config =
      std::find(args.begin(), args.end(), "--config=" + config_path) != args.end();
  if (same_binary && same_id && same_config) return {Liveness::kRunning, who + " runs the node"};
  std::string shown;
  for (const std::string& part : args) shown += (shown.empty() ? "" : " ") + part;
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  return {Liveness::kOther, who + " now runs another program (" + shown +
                                "): the node exited and its pid was reused (stale record)"};
}

// The same question asked on a remote host, in one ssh round trip.
Probe ProbeRemote(const std::string& ssh, const std::string& host, pid_t pid, NodeId id,
                  const std::string& config_path) {
  const std::string p = std::to_string(pid);
  const std::string script =
      "if ! kill -0 " + p + " 2>/dev/null; then echo gone; else "
      "c=$(tr '\\0' '\\n' < /proc/" + p + "/cmdline 2>/dev/null); "
      "s=$(sed 's/.*) //' /proc/" + p + "/stat 2>/dev/null | cut -c1); "
      "if [ -z \"$s\" ] || [ \"$s\" = Z ] || [ \"$s\" = X ]; then echo gone; "
      "elif [ -z \"$c\" ]; then echo running; "
      "elif printf '%s\\n' \"$c\" | grep -qxF -e " +
      ShellQuote("--node_id=" + std::to_string(id)) +
      " && printf '%s\\n' \"$c\" | grep -qxF -e " + ShellQuote("--config=" + config_path) +
      "; then echo running; else echo other; fi; fi";
  std::string out, err;
  const int rc = RunCommand(SshArgs(ssh, host, script), &out, &err);
  // The script's word is the last line: a login banner may come first.
  const std::string trimmed = Trim(out);
  const size_t newline = trimmed.rfind('\n');
  const std::string answer = newline == std::string::npos ? trimmed : trimmed.substr(newline + 1);
  const std::string who = "pid " + p + " on " + host;
  if (rc == 0 && answer == "running") return {Liveness::kRunning, who + " runs the node"};
  if (rc == 0 && answer == "gone") return {Liveness::kGone, who + " is not running"};
  if (rc == 0 && answer == "other") {
    return {Liveness::kOther,
            who + " now runs another program: the node exited and its pid was reused (stale "
                  "record)"};
  }
  return {Liveness::kUnknown, "cannot ask " + host + " over ssh (exit " + std::to_string(rc) +
                                  "): " + Trim(err + out)};
}

// Sends `signal` to a recorded node if, and only if, it still is that node.
// Empty on success, else why not. Locally a pidfd pins the process between
// the check and the signal, so a pid reused in between is never signalled.
std::string SignalNode(const ClusterState& state, const NodeRecord& record, int signal) {
  if (record.kind == LaunchKind::kSsh) {
    std::string out;
    const int rc = RemotePkill(state.ssh, record.host, state.node_binary, state.config_path,
                               record.id, signal, &out);
    if (rc == 0) return "";
    if (rc == 1) return "no process on " + record.host + " matches node " +
                        std::to_string(record.id) + " (exited already?)";
    return "pkill on " + record.host + " failed (exit " + std::to_string(rc) + "): " + Trim(out);
  }
  int pidfd = -1;
#ifdef SYS_pidfd_open
  pidfd = static_cast<int>(syscall(SYS_pidfd_open, record.pid, 0));
#endif
  const Probe probe = ProbeLocal(record.pid, record.id, state.config_path, state.node_binary,
                                 record.start_ticks);
  int rc = 0;
  if (probe.liveness == Liveness::kRunning) {
#ifdef SYS_pidfd_send_signal
    if (pidfd >= 0) {
      rc = static_cast<int>(syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
    } else {
      rc = kill(record.pid, signal);
    }
#else
    rc = kill(record.pid, signal);
#endif
  }
  const int saved = errno;
  if (pidfd >= 0) close(pidfd);
  if (probe.liveness != Liveness::kRunning) return "not signalled: " + probe.detail;
  if (rc != 0) return "cannot signal pid " + std::to_string(record.pid) + ": " +
                      std::strerror(saved);
  return "";
}

std::string Seconds(Clock::duration elapsed) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%.1f s", std::chrono::duration<double>(elapsed).count());
  return buffer;
}

// Stops the recorded nodes that still run: SIGTERM (they drain and write
// their summaries), up to `timeout_s` for them to exit, then SIGKILL. Says
// what happens on stdout. Returns the nodes that had to be killed, and
// those whose fate is unknown (ssh failed) in `unknown`. `own_children`:
// the local nodes are this launcher's unreaped children (a failed start),
// whose pids cannot have been reused, so whatever runs there is signalled
// and waited for as such.
std::vector<NodeId> TerminateNodes(const ClusterState& state, double timeout_s,
                                   bool own_children, std::vector<NodeId>* unknown) {
  const auto start = Clock::now();
  auto probe_node = [&](const NodeRecord& record) {
    if (!own_children || record.kind == LaunchKind::kSsh) return ProbeNode(state, record);
    const std::string who = "pid " + std::to_string(record.pid);
    return waitpid(record.pid, nullptr, WNOHANG) == 0
               ? Probe{Liveness::kRunning, who + " runs"}
               : Probe{Liveness::kGone, who + " has exited"};
  };
  auto signal_node = [&](const NodeRecord& record, int signal) -> std::string {
    if (!own_children || record.kind == LaunchKind::kSsh) {
      return SignalNode(state, record, signal);
    }
    return kill(record.pid, signal) == 0 ? "" : std::string("kill: ") + std::strerror(errno);
  };
  std::vector<const NodeRecord*> waiting;
  for (const NodeRecord& record : state.nodes) {
    const Probe probe = probe_node(record);
    if (probe.liveness == Liveness::kRunning) {
      const std::string problem = signal_node(record, SIGTERM);
      if (!problem.empty()) printf("[cluster] node %u: %s\n", record.id, problem.c_str());
      waiting.push_back(&record);
    } else if (probe.liveness == Liveness::kGone) {
      printf("[cluster] node %u had exited already (%s)\n", record.id, probe.detail.c_str());
    } else if (probe.liveness == Liveness::kOther) {
      printf("[cluster] node %u: %s; left alone\n", record.id, probe.detail.c_str());
    } else {
      printf("[cluster] node %u: %s\n", record.id, probe.detail.c_str());
      unknown->push_back(record.id);
    }
  }
  fflush(stdout);
  std::vector<NodeId> killed;
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(timeout_s));
  bool kill_sent = false;
  auto last_remote = Clock::time_point();
  while (!waiting.empty()) {
    // Polled: these are not (all) our children, so nothing can be waited on.
    const bool remote_round = Clock::now() - last_remote >= std::chrono::milliseconds(500);
    if (remote_round) last_remote = Clock::now();
    for (auto it = waiting.begin(); it != waiting.end();) {
      const NodeRecord& record = **it;
      if (record.kind == LaunchKind::kSsh && !remote_round) {
        ++it;
        continue;
      }
      const Probe probe = probe_node(record);
      if (probe.liveness == Liveness::kGone || probe.liveness == Liveness::kOther) {
        printf("[cluster] node %u exited (after %s)\n", record.id,
               Seconds(Clock::now() - start).c_str());
        fflush(stdout);
        it = waiting.erase(it);
      } else {
        ++it;
      }
    }
    if (waiting.empty()) break;
    if (Clock::now() > deadline) {
      if (kill_sent) {
        for (const NodeRecord* record : waiting) {
          printf("[cluster] node %u still runs after SIGKILL\n", record->id);
          unknown->push_back(record->id);
        }
        break;
      }
      for (const NodeRecord* record : waiting) {
        printf("[cluster] node %u still runs %.0f s after SIGTERM; killing it\n", record->id,
               timeout_s);
        const std::string problem = signal_node(*record, SIGKILL);
        if (!problem.empty()) printf("[cluster] node %u: %s\n", record->id, problem.c_str());
        killed.push_back(record->id);
      }
      fflush(stdout);
      kill_sent = true;
      deadline = Clock::now() + std::chrono::seconds(10);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return killed;
}

// Starts node `node` on `host` over ssh, detached there too, and returns
// its pid on that host. The remote shell prints the pid of the `sh` that
// then execs the node (so it is the node's), and redirects everything else
// to the log so that ssh returns at once.
pid_t SpawnRemote(const NodeConfig& node, const LaunchOptions& options, const std::string& log,
                  bool append, std::string* error) {
  std::string command = "mkdir -p " + ShellQuote(options.log_dir) + " && rm -f " +
                        ShellQuote(NodeSummaryPath(options.log_dir, node.id())) +
                        " && setsid sh -c 'echo $$ >&3; exec \"$0\" \"$@\" 3>&-'";
  for (const std::string& arg : NodeArgs(node, options)) command += " " + ShellQuote(arg);
  command += std::string(" 3>&1 ") + (append ? ">>" : ">") + ShellQuote(log) + " 2>&1 </dev/null &";
  std::string out, err;
  const int rc = RunCommand(SshArgs(options.ssh, node.host(), command), &out, &err);
  const std::string pid_text = Trim(out);
  if (rc != 0 || pid_text.empty() ||
      pid_text.find_first_not_of("0123456789") != std::string::npos) {
    *error = "cannot start it on " + node.host() + " over ssh (exit " + std::to_string(rc) +
             "): " + Trim(err + out);
    return -1;
  }
  return static_cast<pid_t>(std::stol(pid_text));
}

NodeRecord RecordOf(const NodeConfig& node, const LaunchOptions& options);

// Starts `node` detached (locally, in its namespace or over ssh) and fills
// in its pid (and start time, for local processes). False, with `problem`
// set, if it could not be started.
bool LaunchNode(const NodeConfig& node, const LaunchOptions& options, bool append_log,
                NodeRecord* record, std::string* problem) {
  *record = RecordOf(node, options);
  record->pid = record->kind == LaunchKind::kSsh
                    ? SpawnRemote(node, options, record->log, append_log, problem)
                    : SpawnDetached(LocalArgs(node, options), record->log, problem, append_log);
  if (record->pid < 0) return false;
  ProcessStat stat;
  if (record->kind != LaunchKind::kSsh && ReadProcessStat(record->pid, &stat)) {
    record->start_ticks = stat.start_ticks;
  }
  return true;
}

void PrintLaunched(const NodeRecord& record) {
  printf("[cluster] node %u: pid %d (%s%s%s)\n", record.id, record.pid,
         LaunchKindName(record.kind), record.kind == LaunchKind::kLocal ? "" : " ",
         record.kind == LaunchKind::kNetns  ? record.netns.c_str()
         : record.kind == LaunchKind::kSsh ? record.host.c_str()
                                            : "");
  fflush(stdout);
}

// True if the node's log shows a progress line: it has started its run.
bool LogShowsProgress(const std::string& log, NodeId id) {
  const std::string prefix = "[node " + std::to_string(id) + "] ";
  return log.rfind(prefix, 0) == 0 || log.find("\n" + prefix) != std::string::npos;
}

const NodeConfig* FindNode(const ClusterConfig& config, NodeId id) {
  for (const NodeConfig& node : config.node()) {
    if (node.id() == id) return &node;
  }
  return nullptr;
}

// What start records about `node`, but for its pid; also where the logs
// command looks for a node's log without a state file.
NodeRecord RecordOf(const NodeConfig& node, const LaunchOptions& options) {
  NodeRecord record;
  record.id = node.id();
  record.kind = KindOf(node);
  record.host = node.host();
  record.netns = node.netns();
  record.log = NodeLogPath(options.log_dir, node.id());
  return record;
}

// Reads the state file that `options` point at; an error names the file
// and what to do.
std::string LoadState(const LaunchOptions& options, ClusterState* state) {
  const std::string path = StatePath(options.log_dir);
  if (access(path.c_str(), F_OK) != 0) {
    return "no cluster state " + path + ": no cluster started with `paxflow-cluster start` "
           "for this config and --logs is running (stopped already?)";
  }
  std::string error = ReadClusterState(path, state);
  if (!error.empty()) return error;
  if (state->config_path != options.config_path) {
    return path + " belongs to a cluster started with --config=" + state->config_path +
           ", not " + options.config_path;
  }
  return "";
}

std::string NodeList(const std::vector<NodeId>& ids) {
  std::string list;
  for (NodeId id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
  return list;
}

// Waits until every recorded node is up: its client port reports admitted
// epochs (it found its peers and runs), or, without a client port, its log
// shows a progress line. Returns 0, or 1 with `error` naming the node that
// died or is late, with its last log lines.
// `log_from`: where in each node's log to look for progress lines (a
// restarted node's log still holds its previous life's).
int WaitUntilUp(const ClusterConfig& config, const ClusterState& state,
                const LaunchOptions& options, const std::function<int()>& interrupts,
                std::string* error, const std::map<NodeId, uint64_t>& log_from = {}) {
  struct Watch {
    const NodeRecord* record;
    std::unique_ptr<Client> client;
    bool up = false;
  };
  zmq::context_t context(1);
  std::vector<Watch> watches;
  for (const NodeRecord& record : state.nodes) {
    Watch watch{&record, nullptr};
    const NodeConfig* node = FindNode(config, record.id);
    if (node && node->client_port() != 0) {
      watch.client = std::make_unique<Client>(&context);
      watch.client->Connect(ClientEndpoint(*node));
    }
    watches.push_back(std::move(watch));
  }
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(options.start_timeout_s));
  auto last_remote = Clock::time_point();
  while (true) {
    // ssh round trips are slow: remote processes are looked at once a second.
    const bool remote_round = Clock::now() - last_remote >= std::chrono::seconds(1);
    if (remote_round) last_remote = Clock::now();
    const auto round_start = Clock::now();
    bool all_up = true;
    for (Watch& watch : watches) {
      if (watch.up) continue;
      const NodeRecord& record = *watch.record;
      const bool remote = record.kind == LaunchKind::kSsh;
      std::string died;
      if (!remote) {
        int status = 0;
        if (waitpid(record.pid, &status, WNOHANG) == record.pid) {
          died = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                   : "died of signal " + std::to_string(WTERMSIG(status));
        }
      } else if (remote_round) {
        const Probe probe = ProbeNode(state, record);
        if (probe.liveness == Liveness::kGone || probe.liveness == Liveness::kOther) {
          died = "is not running any more (" + probe.detail + ")";
        }
      }
      if (!died.empty()) {
        std::string tail;
        NodeLogTail(state, record, 20, &tail);
        *error = "node " + std::to_string(record.id) + " " + died + " before it was up; the " +
                 "end of " + record.log + ":\n" + Indented(tail);
        return 1;
      }
      if (watch.client) {
        ClientReply reply;
        // A recovering node answers at once, but is up once it has rejoined.
        watch.up = watch.client->Call(Client::Status(), &reply, 200).empty() &&
                   reply.status() == OK && reply.node_status().admitted_epoch() > 0 &&
                   reply.node_status().state() != "recovering" &&
                   reply.node_status().state() != "starting";
      }
      // Without a client port to ask, a progress line says it runs.
      if (!watch.client && (!remote || remote_round)) {
        std::string tail;
        if (!remote) {
          const std::string log = ReadWholeFile(record.log);
          auto from = log_from.find(record.id);
          const size_t skip = from == log_from.end() ? 0 : from->second;
          watch.up = LogShowsProgress(log.size() > skip ? log.substr(skip) : "", record.id);
        } else if (NodeLogTail(state, record, 50, &tail)) {
          watch.up = LogShowsProgress(tail, record.id);
        }
      }
      if (watch.up) {
        printf("[cluster] node %u up after %s\n", record.id, Seconds(Clock::now() - start).c_str());
        fflush(stdout);
      } else {
        all_up = false;
      }
    }
    if (all_up) return 0;
    if (interrupts && interrupts() > 0) {
      *error = "interrupted while waiting for the nodes to come up";
      return 1;
    }
    if (Clock::now() > deadline) {
      std::string late;
      for (const Watch& watch : watches) {
        if (watch.up) continue;
        std::string tail;
        NodeLogTail(state, *watch.record, 10, &tail);
        late += "node " + std::to_string(watch.record->id) + " (" + watch.record->log +
                "):\n" + Indented(tail);
      }
      char limit[32];
      snprintf(limit, sizeof(limit), "%.0f", options.start_timeout_s);
      *error = std::string("not every node was up within ") + limit +
               " s (--start_timeout); the end of the late ones' logs:\n" + late;
      return 1;
    }
    // One look every 100 ms at most: a node waiting for its peers answers
    // status at once, and asking again right away would only spin.
    std::this_thread::sleep_until(round_start + std::chrono::milliseconds(100));
  }
}


}  // namespace

std::string StatePath(const std::string& log_dir) { return log_dir + "/cluster.state"; }

std::string WriteClusterState(const std::string& path, const ClusterState& state) {
  ClusterStateFile file;
  file.set_comment("written by paxflow-cluster start and restart; read by the other verbs; "
                   "removed by stop");
  file.set_config(state.config_path);
  file.set_log_dir(state.log_dir);
  file.set_ssh(state.ssh);
  file.set_node_binary(state.node_binary);
  file.set_started_unix(state.started_unix);
  for (const std::string& flag : state.node_flags) file.add_node_flags(flag);
  for (NodeId id : state.removed) file.add_removed(id);
  for (const NodeRecord& node : state.nodes) {
    NodeRecordFile* record = file.add_nodes();
    record->set_id(node.id);
    record->set_pid(node.pid);
    record->set_launch(LaunchKindName(node.kind));
    record->set_host(node.host);
    record->set_netns(node.netns);
    record->set_log(node.log);
    record->set_start_ticks(node.start_ticks);
  }
  return WriteFileAtomically(path, MessageToJson(file, /*pretty=*/true));
}

std::string ReadClusterState(const std::string& path, ClusterState* state) {
  std::string text, error;
  if (!ReadTextFile(path, &text, &error)) return error;
  const std::string bad = path + " is not a paxflow-cluster state file (";
  ClusterStateFile file;
  error = JsonToMessage(text, &file);
  if (!error.empty()) return bad + error + ")";
  ClusterState result;
  result.config_path = file.config();
  result.log_dir = file.log_dir();
  result.ssh = file.ssh().empty() ? "ssh" : file.ssh();
  result.node_binary = file.node_binary();
  result.started_unix = file.started_unix();
  result.node_flags.assign(file.node_flags().begin(), file.node_flags().end());
  result.removed.assign(file.removed().begin(), file.removed().end());
  if (result.config_path.empty()) return bad + "no \"config\")";
  for (const NodeRecordFile& node : file.nodes()) {
    NodeRecord record;
    if (node.pid() <= 0) return bad + "a node without a pid)";
    record.id = node.id();
    record.pid = node.pid();
    const std::string& kind = node.launch();
    if (kind == "local") {
      record.kind = LaunchKind::kLocal;
    } else if (kind == "netns") {
      record.kind = LaunchKind::kNetns;
    } else if (kind == "ssh") {
      record.kind = LaunchKind::kSsh;
    } else {
      return bad + "node " + std::to_string(record.id) + " has launch '" + kind + "')";
    }
    record.host = node.host();
    record.netns = node.netns();
    record.log = node.log();
    record.start_ticks = node.start_ticks();
    result.nodes.push_back(record);
  }
  *state = std::move(result);
  return "";
}

Probe ProbeNode(const ClusterState& state, const NodeRecord& node) {
  if (node.kind == LaunchKind::kSsh) {
    return ProbeRemote(state.ssh, node.host, node.pid, node.id, state.config_path);
  }
  return ProbeLocal(node.pid, node.id, state.config_path, state.node_binary, node.start_ticks);
}

std::string CheckStartable(const ClusterConfig& config, const LaunchOptions& options,
                           const std::string& again) {
  const std::string path = StatePath(options.log_dir);
  bool crashed = false;
  if (access(path.c_str(), F_OK) == 0) {
    ClusterState state;
    const std::string error = ReadClusterState(path, &state);
    if (!error.empty()) return error + "; remove it if none of its nodes runs";
    std::string running;
    for (const NodeRecord& record : state.nodes) {
      const Probe probe = ProbeNode(state, record);
      if (probe.liveness == Liveness::kRunning || probe.liveness == Liveness::kUnknown) {
        running += (running.empty() ? "" : ", ") + std::string("node ") +
                   std::to_string(record.id) + " (" + probe.detail + ")";
      }
    }
    if (!running.empty()) {
      return path + " names nodes still running: " + running +
             "; stop them first: paxflow-cluster stop --config=" + state.config_path +
             " --logs=" + state.log_dir;
    }
    // Not stopped (stop removes it): the whole cluster crashed.
    crashed = true;
    const std::string history = CheckHistory(config, options, crashed, again);
    if (!history.empty()) return history;
    printf("[cluster] %s is stale (none of its nodes runs any more); start replaces it\n",
           path.c_str());
    fflush(stdout);
  } else {
    const std::string error = CheckHistory(config, options, crashed, again);
    if (!error.empty()) return error;
  }
  return CheckMachine(config, options.ssh);
}

int StartDetached(const ClusterConfig& config, const LaunchOptions& options,
                  const std::function<int()>& interrupts, std::string* error) {
  for (const NodeConfig& node : config.node()) {
    if (node.client_port() == 0 && !options.progress_lines) {
      *error = "node " + std::to_string(node.id()) + " has no client_port and --progress_ms=0: "
               "start could not tell when it is up; give it a client_port or a progress period";
      return 2;
    }
  }
  ClusterState state;
  state.config_path = options.config_path;
  state.log_dir = options.log_dir;
  state.ssh = options.ssh;
  state.node_binary = options.node_binary;
  state.started_unix = static_cast<int64_t>(std::time(nullptr));
  state.node_flags = options.node_flags;
  const std::string state_path = StatePath(options.log_dir);
  auto give_up = [&](int code) {
    if (!state.nodes.empty()) {
      printf("[cluster] stopping the nodes started\n");
      fflush(stdout);
      std::vector<NodeId> unknown;
      // Nodes that never came up have nothing to drain, and one still
      // waiting for its peers does not look at SIGTERM until it gives up.
      TerminateNodes(state, std::min(options.stop_timeout_s, 5.0), /*own_children=*/true,
                     &unknown);
      // Keep the state file only if it still names something running.
      if (unknown.empty()) unlink(state_path.c_str());
    }
    return code;
  };
  RemoveNodeSummaries(config, options.log_dir);
  for (const NodeConfig& node : config.node()) {
    NodeRecord record;
    std::string problem;
    if (!LaunchNode(node, options, /*append_log=*/false, &record, &problem)) {
      *error = "node " + std::to_string(node.id()) + ": " + problem;
      return give_up(1);
    }
    state.nodes.push_back(record);
    // Recorded at once: if this launcher dies now, stop still finds them.
    problem = WriteClusterState(state_path, state);
    if (!problem.empty()) {
      *error = problem;
      return give_up(1);
    }
    PrintLaunched(record);
  }
  const int code = WaitUntilUp(config, state, options, interrupts, error);
  *error = Trim(*error);  // the log lines quoted end with a newline
  if (code != 0) return give_up(code);
  printf("[cluster] %zu node(s) up; state in %s\n", state.nodes.size(), state_path.c_str());
  fflush(stdout);
  return 0;
}

int RestartDetached(const ClusterConfig& config, const LaunchOptions& options,
                    const std::vector<NodeId>& ids, const std::function<int()>& interrupts,
                    std::string* error) {
  ClusterState state;
  *error = LoadState(options, &state);
  if (!error->empty()) return 2;
  std::vector<NodeRecord*> records;
  for (NodeId id : ids) {
    if (std::count(state.removed.begin(), state.removed.end(), id)) {
      if (ids.size() < static_cast<size_t>(config.node_size())) {
        *error = "node " + std::to_string(id) + " was removed from the cluster (paxflow-cluster "
                 "remove): the others no longer keep the logs it would need to catch up";
        return 2;
      }
      printf("[cluster] node %u was removed from the cluster; not restarted\n", id);
      continue;
    }
    auto recorded = std::find_if(state.nodes.begin(), state.nodes.end(),
                                 [&](const NodeRecord& record) { return record.id == id; });
    const NodeConfig* node = FindNode(config, id);
    if (recorded == state.nodes.end() || !node) {
      *error = "node " + std::to_string(id) + " is not " +
               (node ? "in " + StatePath(options.log_dir) : "in " + options.config_path);
      return 2;
    }
    records.push_back(&*recorded);
  }
  for (NodeRecord* recorded : records) {
    const Probe probe = ProbeNode(state, *recorded);
    if (probe.liveness == Liveness::kUnknown) {
      *error = "cannot tell whether node " + std::to_string(recorded->id) + " runs: " +
               probe.detail;
      return 1;
    }
    if (probe.liveness != Liveness::kRunning) {
      printf("[cluster] node %u is down (%s); restarting it\n", recorded->id,
             probe.detail.c_str());
      fflush(stdout);
      continue;
    }
    // Killed, not stopped: a node that stops ends its sequencer's part of
    // the run for good, and could not rejoin.
    printf("[cluster] node %u still runs (%s); killing it first\n", recorded->id,
           probe.detail.c_str());
    fflush(stdout);
    const std::string problem = SignalNode(state, *recorded, SIGKILL);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (problem.empty() && ProbeNode(state, *recorded).liveness == Liveness::kRunning) {
      if (Clock::now() > deadline) {
        *error = "node " + std::to_string(recorded->id) +
                 " still runs 10 s after SIGKILL; not restarted";
        return 1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polled: not our child
    }
  }
  // The flags start gave them, then --recover (and any given to restart).
  LaunchOptions launch = options;
  // --wipe was for that start only: a restart keeps what the node has.
  launch.node_flags.clear();
  for (const std::string& flag : state.node_flags) {
    if (flag.rfind("--wipe", 0) != 0) launch.node_flags.push_back(flag);
  }
  launch.node_flags.push_back("--recover");
  launch.node_flags.insert(launch.node_flags.end(), options.node_flags.begin(),
                           options.node_flags.end());
  // All of them at once: nodes restarting together wait for each other.
  ClusterState restarted = state;
  restarted.nodes.clear();
  std::map<NodeId, uint64_t> log_from;
  for (NodeRecord* recorded : records) {
    struct stat log_info {};
    log_from[recorded->id] =
        stat(recorded->log.c_str(), &log_info) == 0 ? static_cast<uint64_t>(log_info.st_size) : 0;
    NodeRecord record;
    std::string problem;
    if (!LaunchNode(*FindNode(config, recorded->id), launch, /*append_log=*/true, &record,
                    &problem)) {
      *error = "node " + std::to_string(recorded->id) + ": " + problem;
      return 1;
    }
    *recorded = record;
    problem = WriteClusterState(StatePath(options.log_dir), state);
    if (!problem.empty()) {
      *error = problem;
      return 1;
    }
    PrintLaunched(record);
    restarted.nodes.push_back(record);
  }
  const int code = WaitUntilUp(config, restarted, launch, interrupts, error, log_from);
  *error = Trim(*error);
  if (code != 0) return code;
  for (const NodeRecord& record : restarted.nodes) {
    printf("[cluster] node %u recovered and rejoined the cluster\n", record.id);
  }
  fflush(stdout);
  return 0;
}

int RemoveDetached(const ClusterConfig& config, const LaunchOptions& options, NodeId id,
                   bool force, std::string* error) {
  ClusterState state;
  *error = LoadState(options, &state);
  if (!error->empty()) return 2;
  const NodeConfig* removed_node = FindNode(config, id);
  if (!removed_node) {
    *error = "node " + std::to_string(id) + " is not in " + options.config_path;
    return 2;
  }
  const std::set<NodeId> removed(state.removed.begin(), state.removed.end());
  const std::string why = Membership::CheckRemovable(config, id, removed);
  if (!why.empty()) {
    *error = "cannot remove node " + std::to_string(id) + ": " + why;
    return 2;
  }
  for (const NodeRecord& record : state.nodes) {
    if (record.id != id) continue;
    const Probe probe = ProbeNode(state, record);
    if (probe.liveness == Liveness::kGone || probe.liveness == Liveness::kOther) continue;
    if (!force) {
      *error = "node " + std::to_string(id) + " is alive (" + probe.detail +
               "): remove is for a node that will not return; stop it first, or give --force "
               "(it then falls behind what the others keep and cannot catch up)";
      return 1;
    }
    printf("[cluster] node %u still runs (%s); removed anyway (--force)\n", id,
           probe.detail.c_str());
  }
  zmq::context_t context(1);
  std::vector<NodeId> told, refused;
  for (const NodeConfig& node : config.node()) {
    if (node.id() == id || removed.count(node.id())) continue;
    std::string line;
    if (node.client_port() == 0) {
      line = "no client port; it learns of the removal from its peers";
    } else {
      Client client(&context);
      ClientReply reply;
      std::string problem = client.Connect(ClientEndpoint(node));
      if (problem.empty()) {
        problem = client.Call(Client::RemoveNode(id, force), &reply, options.status_timeout_ms);
      }
      if (!problem.empty()) {
        line = "no answer (" + problem + "); it learns of the removal from its peers";
      } else if (reply.status() != OK) {
        line = "refused: " + reply.error();
        refused.push_back(node.id());
      } else {
        line = reply.removed().detail();
        told.push_back(node.id());
      }
    }
    printf("[cluster] node %u: %s\n", node.id(), line.c_str());
  }
  fflush(stdout);
  if (told.empty()) {
    *error = "no node took the removal of node " + std::to_string(id) +
             (refused.empty() ? " (none answered)" : " (see above)");
    return 1;
  }
  if (!removed.count(id)) state.removed.push_back(id);
  const std::string problem = WriteClusterState(StatePath(options.log_dir), state);
  if (!problem.empty()) {
    *error = problem;
    return 1;
  }
  // What it means for the rest of its replica.
  std::vector<NodeId> same_replica;
  for (const NodeConfig& node : config.node()) {
    if (node.replica() == removed_node->replica() && node.id() != id &&
        !removed.count(node.id())) {
      same_replica.push_back(node.id());
    }
  }
  printf("[cluster] node %u (partition %u, replica %u) removed for good: no node waits for it "
         "or keeps logs for it any more; it cannot rejoin.\n",
         id, removed_node->partition(), removed_node->replica());
  if (!same_replica.empty()) {
    printf("[cluster] replica %u has no node of partition %u now: its node(s) %s cannot run "
           "multi-partition txns that need partition %u, and fall behind on them\n",
           removed_node->replica(), removed_node->partition(), NodeList(same_replica).c_str(),
           removed_node->partition());
  }
  fflush(stdout);
  if (!refused.empty()) {
    *error = "node(s) " + NodeList(refused) + " refused the removal (see above)";
    return 1;
  }
  return 0;
}

int StopDetached(const ClusterConfig& config, const LaunchOptions& options,
                 RunSummary* combined, bool* have_summary, std::string* error) {
  *have_summary = false;
  ClusterState state;
  *error = LoadState(options, &state);
  if (!error->empty()) return 2;
  printf("[cluster] stopping %zu node(s) (SIGTERM: they drain and write their summaries; "
         "SIGKILL after %.0f s)\n",
         state.nodes.size(), options.stop_timeout_s);
  fflush(stdout);
  std::vector<NodeId> unknown;
  const std::vector<NodeId> killed =
      TerminateNodes(state, options.stop_timeout_s, /*own_children=*/false, &unknown);
  if (!unknown.empty()) {
    *error = "cannot tell whether node(s) " + NodeList(unknown) + " stopped; kept " +
             StatePath(options.log_dir) + " for another try";
    return 1;
  }
  // A remote node wrote its summary on its host; bring it here.
  for (const NodeRecord& record : state.nodes) {
    if (record.kind != LaunchKind::kSsh) continue;
    const std::string path = NodeSummaryPath(state.log_dir, record.id);
    std::string json, err;
    if (RunCommand(SshArgs(state.ssh, record.host, "cat " + ShellQuote(path)), &json, &err) ==
        0) {
      std::ofstream(path) << json;
    }
  }
  unlink(StatePath(options.log_dir).c_str());
  // A removed node (a replica) wrote no summary: the cluster's is the others'.
  ClusterConfig remaining = config;
  remaining.clear_node();
  for (const NodeConfig& node : config.node()) {
    if (!std::count(state.removed.begin(), state.removed.end(), node.id())) {
      *remaining.add_node() = node;
    }
  }
  Launcher launcher(remaining, options);
  std::string problem;
  *have_summary = launcher.CombinedSummary(combined, &problem);
  if (!killed.empty()) {
    *error = "node(s) " + NodeList(killed) + " did not exit within " +
             std::to_string(static_cast<int>(options.stop_timeout_s)) +
             " s (--stop_timeout) and were killed";
    if (!*have_summary) *error += "; " + problem;
    return 1;
  }
  if (!*have_summary) {
    *error = problem + " (did the node fail? see paxflow-cluster logs)";
    return 1;
  }
  return 0;
}

int ShowStatus(const ClusterConfig& config, const LaunchOptions& options, std::string* error) {
  ClusterState state;
  *error = LoadState(options, &state);
  if (!error->empty()) return 2;
  zmq::context_t context(1);
  std::vector<NodeId> down, troubled;
  std::vector<GroupMemberStatus> groups;
  for (const NodeRecord& record : state.nodes) {
    std::string where = LaunchKindName(record.kind);
    if (record.kind == LaunchKind::kNetns) where += " " + record.netns;
    const NodeConfig* node = FindNode(config, record.id);
    std::string line = "node " + std::to_string(record.id) + "  " + where + "  " + record.host +
                       "  pid " + std::to_string(record.pid) + ": ";
    const Probe probe = ProbeNode(state, record);
    const bool removed =
        std::count(state.removed.begin(), state.removed.end(), record.id) > 0;
    if (removed && probe.liveness != Liveness::kRunning) {
      line += "REMOVED (paxflow-cluster remove; " + probe.detail + ")";
    } else if (probe.liveness != Liveness::kRunning) {
      line += "DOWN (" + probe.detail + ")";
      down.push_back(record.id);
    } else if (!node) {
      line += "running, but it is not in " + options.config_path + " (edited since start?)";
    } else if (node->client_port() == 0) {
      line += "up (no client port to ask)";
    } else {
      Client client(&context);
      ClientReply reply;
      std::string problem = client.Connect(ClientEndpoint(*node));
      if (problem.empty()) {
        problem = client.Call(Client::Status(), &reply, options.status_timeout_ms);
      }
      if (!problem.empty()) {
        line += "DOWN (its process runs but its client port does not answer: " + problem + ")";
        down.push_back(record.id);
      } else if (reply.status() != OK) {
        line += std::string("up, ") + ReplyStatusName(reply.status()) + ": " + reply.error();
      } else {
        const StatusReply& status = reply.node_status();
        groups.push_back({record.id, status.partition(), true, status});
        char text[256];
        snprintf(text, sizeof(text),
                 "up  epoch %llu (published %llu)  ro %.0f/s  rw %.0f/s  committed %llu  "
                 "pending %llu  uptime %.1f s",
                 static_cast<unsigned long long>(status.admitted_epoch()),
                 static_cast<unsigned long long>(status.published_epoch()), status.ro_per_s(),
                 status.rw_per_s(), static_cast<unsigned long long>(status.committed()),
                 static_cast<unsigned long long>(status.pending()), status.uptime_s());
        line += text;
        if (!status.state().empty() && status.state() != "running") {
          line += "  (" + status.state() + ")";
        }
        if (status.checkpoint_epoch() > 0) {
          line += "  checkpoint " + std::to_string(status.checkpoint_epoch());
        }
        if (!status.group_role().empty()) {
          // Replicated input: who leads the node's partition, as it knows.
          line += "  " + status.group_role() + " of partition " +
                  std::to_string(status.partition()) + " (term " +
                  std::to_string(status.group_term()) + ", " +
                  (status.group_leader() < 0 ? std::string("no leader known")
                                             : "leader node " + std::to_string(status.group_leader())) +
                  ", committed epoch " + std::to_string(status.group_committed_epoch()) +
                  (status.group_trimmed_epoch() > 0
                       ? ", log trimmed through epoch " + std::to_string(status.group_trimmed_epoch())
                       : std::string()) +
                  ")";
        }
        if (!status.problem().empty()) {
          line += "\n    " + status.problem();
          troubled.push_back(record.id);
        }
      }
    }
    printf("%s\n", line.c_str());
    if (node && (groups.empty() || groups.back().node != record.id)) {
      groups.push_back({record.id, node->partition(), false, StatusReply()});
    }
  }
  // Replicated input: each partition's leader and how far its followers are.
  for (const std::string& line : GroupStatusLines(groups)) printf("[cluster] %s\n", line.c_str());
  printf("[cluster] %zu of %zu node(s) up\n", state.nodes.size() - down.size(),
         state.nodes.size());
  fflush(stdout);
  if (!down.empty() || !troubled.empty()) {
    *error = down.empty() ? "" : "node(s) " + NodeList(down) + " down";
    if (!troubled.empty()) {
      *error += std::string(error->empty() ? "" : "; ") + "node(s) " + NodeList(troubled) +
                " cannot go on (see above)";
    }
    return 1;
  }
  return 0;
}

int ShowLogs(const ClusterConfig& config, const LaunchOptions& options, std::string* error) {
  // The state file, when there is one, says where each log is; after a
  // stop (or a `run`) the logs are where the config puts them.
  ClusterState state;
  if (!LoadState(options, &state).empty()) {
    state = ClusterState();
    state.config_path = options.config_path;
    state.log_dir = options.log_dir;
    state.ssh = options.ssh;
    for (const NodeConfig& node : config.node()) state.nodes.push_back(RecordOf(node, options));
  }
  std::vector<std::string> problems;
  for (const NodeRecord& record : state.nodes) {
    std::string text;
    if (!NodeLogTail(state, record, options.log_lines, &text)) {
      problems.push_back("node " + std::to_string(record.id) + ": " + text);
      continue;
    }
    const std::string prefix = "[node " + std::to_string(record.id) + "] ";
    std::stringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      // Progress lines name their node already, as `run` relays them.
      printf("%s%s\n", line.rfind(prefix, 0) == 0 ? "" : prefix.c_str(), line.c_str());
    }
  }
  fflush(stdout);
  if (!problems.empty()) {
    for (const std::string& problem : problems) *error += (error->empty() ? "" : "; ") + problem;
    return 1;
  }
  return 0;
}

}  // namespace paxflow
