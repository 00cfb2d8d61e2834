#include "cluster/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <gflags/gflags.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/flags.h"
#include "cluster/launch_helpers.h"
#include "base/summary.h"
#include "sequencer/node_history.h"

namespace paxflow {
namespace {

using Clock = std::chrono::steady_clock;

// 0 if `port` on `host` can be bound in the calling thread's network
// namespace, else the errno. As zmq binds: connections of an earlier run in
// TIME_WAIT do not count, a live listener does.
int BindError(const std::string& host, uint32_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &address.sin_addr);
  int error = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) error = errno;
  close(fd);
  return error;
}

// BindError inside network namespace `netns`. A network namespace can be
// entered by one thread alone, so a short-lived thread does it and the
// launcher's own threads stay where they are.
int NetnsBindError(const std::string& netns, const std::string& host, uint32_t port,
                   std::string* problem) {
  int error = 0;
  std::thread([&] {
    const std::string path = "/run/netns/" + netns;
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
      error = errno;
      *problem = "cannot enter namespace " + netns + " (" + path + "): " + std::strerror(errno);
      if (fd >= 0) close(fd);
      return;
    }
    close(fd);
    error = BindError(host, port);
  }).join();
  return error;
}

// Why a port in use may be no cluster's: the kernel's ephemeral range
// (outgoing connections take their local port from it, and hold it for a
// minute in TIME_WAIT once closed), or "" if `port` lies outside it.
std::string EphemeralRangeHint(uint32_t port) {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  uint32_t lo = 0, hi = 0;
  if (!(range >> lo >> hi) || port < lo || port > hi) return "";
  return "; it lies in the kernel's ephemeral range " + std::to_string(lo) + "-" +
         std::to_string(hi) + ", from which outgoing connections take their local port and "
         "keep it for a minute after they close: give the node ports below " +
         std::to_string(lo) + ", as the shipped configs do";
}

std::string Resolve(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  addrinfo* result = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &result);
  if (rc != 0) return gai_strerror(rc);
  freeaddrinfo(result);
  return "";
}

}  // namespace

std::vector<std::string> ForwardedNodeFlags(const std::set<std::string>& explicit_flags) {
  std::vector<std::string> flags;
  for (const std::string& name : NodeFlagNames()) {
    if (!explicit_flags.count(name)) continue;
    std::string value;
    gflags::GetCommandLineOption(name.c_str(), &value);
    flags.push_back("--" + name + "=" + value);
  }
  return flags;
}

LaunchKind KindOf(const NodeConfig& node) {
  if (!node.netns().empty()) return LaunchKind::kNetns;
  return IsLocalHost(node.host()) ? LaunchKind::kLocal : LaunchKind::kSsh;
}

const char* LaunchKindName(LaunchKind kind) {
  switch (kind) {
    case LaunchKind::kLocal:
      return "local";
    case LaunchKind::kNetns:
      return "netns";
    case LaunchKind::kSsh:
      return "ssh";
  }
  return "?";
}

std::string CheckHistory(const ClusterConfig& config, const LaunchOptions& options, bool crashed,
                         const std::string& again) {
  if (options.input_log_dir.empty()) {
    return crashed ? "the cluster crashed (no node of its state file runs) and its nodes keep "
                     "no logs (no --log_dir): nothing to recover; stop it and start afresh"
                   : "";
  }
  std::string found;
  std::vector<std::pair<NodeId, std::vector<std::string>>> history;
  for (const NodeConfig& node : config.node()) {
    if (KindOf(node) == LaunchKind::kSsh) continue;  // it checks for itself
    std::vector<std::string> files = NodeHistoryFiles(options.input_log_dir, node.id());
    if (files.empty()) continue;
    found += (found.empty() ? "" : ", ") + std::string("node ") + std::to_string(node.id()) +
             " (" + std::to_string(files.size()) + " files, e.g. " + files.front() + ")";
    history.emplace_back(node.id(), std::move(files));
  }
  if (history.empty()) return "";
  if (options.wipe) {
    printf("[cluster] --wipe: once every node agreed on a fresh start, each removes its history "
           "from %s:\n", options.input_log_dir.c_str());
    for (const auto& [id, files] : history) {
      std::string listed;
      for (const std::string& file : files) listed += " " + file;
      printf("[cluster]   node %u:%s\n", id, listed.c_str());
    }
    fflush(stdout);
    return "";
  }
  const std::string fresh =
      "for a fresh start that removes that history: paxflow-cluster start --wipe " + again +
      " (with the same node flags), or give another --log_dir. Nothing was touched";
  if (crashed) {
    return "the cluster crashed: no node of its state file runs any more, and " +
           options.input_log_dir + " holds their history (" + found + "). Bring it back "
           "from it with: paxflow-cluster restart --node=all " + again + "; " + fresh;
  }
  return options.input_log_dir + " holds the history of an earlier run (" + found +
         "): a fresh start would remove it; to keep it, start elsewhere; " + fresh;
}

std::string CheckMachine(const ClusterConfig& config, const std::string& ssh) {
  const bool tcp = config.transport().empty() || config.transport() == "tcp";
  std::vector<std::string> checked_hosts;
  for (const NodeConfig& node : config.node()) {
    const std::string who = "node " + std::to_string(node.id());
    std::vector<std::pair<const char*, uint32_t>> ports;
    if (tcp) ports.emplace_back("port", node.port());
    if (node.client_port() != 0) ports.emplace_back("client_port", node.client_port());
    if (node.metrics_port() != 0) ports.emplace_back("metrics_port", node.metrics_port());
    // Replicated input's consensus member (--replicated_input) binds it too.
    if (node.consensus_port() != 0) ports.emplace_back("consensus_port", node.consensus_port());
    switch (KindOf(node)) {
      case LaunchKind::kLocal:
        for (const auto& [what, port] : ports) {
          const int error = BindError(node.host(), port);
          if (error != 0) {
            return who + ": " + what + " " + std::to_string(port) + " on " + node.host() +
                   " is not available (" + std::strerror(error) +
                   "); is another cluster running?" + EphemeralRangeHint(port);
          }
        }
        break;
      case LaunchKind::kNetns: {
        const std::string& netns = node.netns();
        if (IpBinary().empty()) {
          return who + " runs in network namespace " + netns +
                 ", but 'ip' (iproute2) is not installed";
        }
        if (geteuid() != 0) {
          return who + " runs in network namespace " + netns +
                 "; entering one (ip netns exec) needs root";
        }
        struct stat info {};
        if (stat(("/run/netns/" + netns).c_str(), &info) != 0) {
          return who + ": namespace " + netns + " does not exist; run tools/netns.sh up (as "
                 "root) first";
        }
        for (const auto& [what, port] : ports) {
          std::string problem;
          const int error = NetnsBindError(netns, node.host(), port, &problem);
          if (!problem.empty()) return who + ": " + problem;
          if (error == EADDRNOTAVAIL) {
            return who + ": namespace " + netns + " has no address " + node.host() +
                   "; run tools/netns.sh up (it gives namespace i the address SUBNET.(i+1))";
          }
          if (error != 0) {
            return who + ": " + what + " " + std::to_string(port) + " on " + node.host() +
                   " in namespace " + netns + " is not available (" + std::strerror(error) +
                   "); is another cluster running?";
          }
        }
        break;
      }
      case LaunchKind::kSsh: {
        if (std::find(checked_hosts.begin(), checked_hosts.end(), node.host()) !=
            checked_hosts.end()) {
          break;
        }
        checked_hosts.push_back(node.host());
        std::string problem = Resolve(node.host());
        if (!problem.empty()) {
          return who + ": host '" + node.host() + "' is unreachable: " + problem;
        }
        std::string output;
        int rc = RunCommand(SshArgs(ssh, node.host(), "true"), &output);
        if (rc != 0) {
          return who + ": host '" + node.host() + "' is unreachable over ssh (exit " +
                 std::to_string(rc) + "): " + Trim(output);
        }
        break;
      }
    }
  }
  return "";
}

Launcher::Launcher(ClusterConfig config, LaunchOptions options)
    : config_(std::move(config)), options_(std::move(options)) {}

Launcher::~Launcher() {
  SignalAll(SIGKILL);
  for (Child& child : children_) {
    if (child.running) waitpid(child.pid, &child.status, 0);
    if (child.log) fclose(child.log);
    if (child.out_fd >= 0) close(child.out_fd);
    if (child.err_fd >= 0) close(child.err_fd);
  }
}

std::string Launcher::Start() {
  for (const NodeConfig& node : config_.node()) {
    Child child;
    child.id = node.id();
    child.host = node.host();
    child.remote = KindOf(node) == LaunchKind::kSsh;
    std::vector<std::string> args = LocalArgs(node, options_);
    if (child.remote) {
      // Same checkout, same paths on the remote host; exec so that killing
      // the remote shell's child is killing the node.
      std::string command = "exec";
      for (const auto& arg : args) command += " " + ShellQuote(arg);
      args = {options_.ssh, "-o", "BatchMode=yes", node.host(), command};
    }
    const std::string log_path = NodeLogPath(options_.log_dir, node.id());
    child.log = fopen(log_path.c_str(), "w");
    if (!child.log) return "cannot create " + log_path + ": " + std::strerror(errno);
    int out[2], err[2];
    if (pipe(out) != 0 || pipe(err) != 0) return std::string("pipe: ") + std::strerror(errno);
    pid_t pid = fork();
    if (pid < 0) return std::string("fork: ") + std::strerror(errno);
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      dup2(err[1], STDERR_FILENO);
      close(out[0]);
      close(err[0]);
      close(out[1]);
      close(err[1]);
      UnblockAllSignals();
      std::vector<char*> argv = ExecArgv(args);
      execvp(argv[0], argv.data());
      fprintf(stderr, "cannot run %s: %s\n", argv[0], std::strerror(errno));
      _exit(127);
    }
    close(out[1]);
    close(err[1]);
    child.pid = pid;
    child.out_fd = out[0];
    child.err_fd = err[0];
    child.running = true;
    children_.push_back(std::move(child));
  }
  return "";
}

void Launcher::Relay(Child* child, int fd, std::string* pending, bool is_err) {
  char buffer[8192];
  ssize_t n = read(fd, buffer, sizeof(buffer));
  if (n <= 0) {
    if (!pending->empty()) {
      fprintf(child->log, "%s\n", pending->c_str());
      if (options_.echo) printf("[node %u] %s\n", child->id, pending->c_str());
      pending->clear();
    }
    close(fd);
    (is_err ? child->err_fd : child->out_fd) = -1;
    return;
  }
  fwrite(buffer, 1, static_cast<size_t>(n), child->log);
  fflush(child->log);
  pending->append(buffer, static_cast<size_t>(n));
  size_t newline;
  while ((newline = pending->find('\n')) != std::string::npos) {
    std::string line = pending->substr(0, newline);
    pending->erase(0, newline + 1);
    if (!options_.echo) continue;
    // Progress lines name their node already; others get a prefix.
    const bool progress = line.rfind("[node ", 0) == 0;
    // Quiet mode keeps progress lines and what a node says on stderr, but
    // for glog's informational lines.
    const bool info = line.size() > 1 && line[0] == 'I' &&
                      std::isdigit(static_cast<unsigned char>(line[1]));
    if (options_.echo_progress_only && !progress && (!is_err || info)) continue;
    if (progress) printf("%s\n", line.c_str());
    else printf("[node %u] %s\n", child->id, line.c_str());
  }
  fflush(stdout);
}

void Launcher::SignalAll(int signal) {
  for (Child& child : children_) {
    if (!child.running) continue;
    if (child.remote && signal != SIGKILL) {
      // Killing the local ssh client does not reach the remote node.
      std::string output;
      RemotePkill(options_.ssh, child.host, options_.node_binary, options_.config_path, child.id,
                  signal, &output);
    }
    kill(child.pid, signal);
  }
}

int Launcher::Wait(const std::function<int()>& interrupts) {
  const auto start = Clock::now();
  const double limit = options_.duration_s > 0 ? options_.duration_s + options_.grace_s : 0;
  int signals_sent = 0;
  auto last_signal = Clock::now();
  int exit_code = 0;
  while (true) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Child*, bool>> owners;
    for (Child& child : children_) {
      if (child.out_fd >= 0) {
        fds.push_back({child.out_fd, POLLIN, 0});
        owners.emplace_back(&child, false);
      }
      if (child.err_fd >= 0) {
        fds.push_back({child.err_fd, POLLIN, 0});
        owners.emplace_back(&child, true);
      }
    }
    if (!fds.empty()) poll(fds.data(), fds.size(), 200);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child* child = owners[i].first;
      const bool is_err = owners[i].second;
      Relay(child, fds[i].fd, is_err ? &child->pending_err : &child->pending_out, is_err);
    }
    bool any_running = false;
    for (Child& child : children_) {
      if (!child.running) continue;
      if (waitpid(child.pid, &child.status, WNOHANG) == child.pid) {
        child.running = false;
        const int code = WIFEXITED(child.status) ? WEXITSTATUS(child.status)
                                                 : 128 + WTERMSIG(child.status);
        if (code != 0) {
          if (exit_code == 0) exit_code = code;
          printf("[cluster] node %u exited with status %d; stopping the others (see "
                 "%s/node-%u.out)\n",
                 child.id, code, options_.log_dir.c_str(), child.id);
          fflush(stdout);
          if (signals_sent == 0) {
            SignalAll(SIGTERM);
            signals_sent = 1;
            last_signal = Clock::now();
          }
        }
      } else {
        any_running = true;
      }
    }
    bool open_pipes = false;
    for (Child& child : children_) open_pipes |= child.out_fd >= 0 || child.err_fd >= 0;
    if (!any_running && !open_pipes) break;
    if (!any_running) continue;

    const int requested = interrupts ? interrupts() : 0;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (signals_sent == 0 && (requested > 0 || (limit > 0 && elapsed > limit))) {
      if (requested == 0) {
        printf("[cluster] nodes still running %.0f s after the run's end; stopping them\n",
               options_.grace_s);
        if (exit_code == 0) exit_code = 1;
      } else {
        printf("[cluster] stopping every node (they drain and print their summaries)\n");
      }
      fflush(stdout);
      SignalAll(SIGTERM);
      signals_sent = 1;
      last_signal = Clock::now();
    } else if (signals_sent == 1 &&
               (requested > 1 || std::chrono::duration<double>(Clock::now() - last_signal).count() >
                                     options_.stop_timeout_s)) {
      printf("[cluster] killing the nodes still running\n");
      fflush(stdout);
      SignalAll(SIGKILL);
      signals_sent = 2;
      if (exit_code == 0) exit_code = 1;
    }
  }
  return exit_code;
}

bool Launcher::CombinedSummary(RunSummary* combined, std::string* error) const {
  std::vector<RunSummary> nodes;
  for (const NodeConfig& node : config_.node()) {
    const std::string path = NodeSummaryPath(options_.log_dir, node.id());
    std::ifstream in(path);
    if (!in) {
      *error = "no summary from node " + std::to_string(node.id()) + " (" + path + ")";
      return false;
    }
    std::stringstream text;
    text << in.rdbuf();
    RunSummary summary;
    std::string problem = RunSummary::FromJson(text.str(), &summary);
    if (!problem.empty()) {
      *error = path + ": " + problem;
      return false;
    }
    nodes.push_back(summary);
  }
  *combined = RunSummary::Combine(nodes);
  return true;
}

int RunCluster(const ClusterConfig& config, const LaunchOptions& options,
               const std::function<int()>& interrupts, RunSummary* combined,
               std::string* error) {
  RemoveNodeSummaries(config, options.log_dir);
  Launcher launcher(config, options);
  *error = launcher.Start();
  if (!error->empty()) return 1;
  const int code = launcher.Wait(interrupts);
  if (!launcher.CombinedSummary(combined, error) && code == 0) return 1;
  return code;
}

}  // namespace paxflow
