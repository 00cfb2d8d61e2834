#include "deployment/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <sstream>

#include "deployment/summary.h"

namespace paxflow {
namespace {

std::string PortProblem(const std::string& host, uint32_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::string("socket: ") + std::strerror(errno);
  // As zmq binds: connections of an earlier run in TIME_WAIT do not count,
  // a live listener does.
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host.c_str(), &address.sin_addr);
  std::string problem;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    problem = std::strerror(errno);
  }
  close(fd);
  return problem;
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

// Runs a command to completion; returns its exit status and output.
int RunCommand(const std::vector<std::string>& args, std::string* output) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    std::vector<char*> argv;
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) output->append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

}  // namespace

std::string CheckMachine(const ClusterConfig& config) {
  const bool tcp = config.transport().empty() || config.transport() == "tcp";
  std::vector<std::string> checked_hosts;
  for (const NodeConfig& node : config.node()) {
    const std::string who = "node " + std::to_string(node.id());
    if (IsLocalHost(node.host())) {
      std::vector<std::pair<const char*, uint32_t>> ports;
      if (tcp) ports.emplace_back("port", node.port());
      if (node.client_port() != 0) ports.emplace_back("client_port", node.client_port());
      for (const auto& [what, port] : ports) {
        std::string problem = PortProblem(node.host(), port);
        if (!problem.empty()) {
          return who + ": " + what + " " + std::to_string(port) + " on " + node.host() +
                 " is not available (" + problem + "); is another cluster running?";
        }
      }
      continue;
    }
    if (std::find(checked_hosts.begin(), checked_hosts.end(), node.host()) != checked_hosts.end()) {
      continue;
    }
    checked_hosts.push_back(node.host());
    std::string problem = Resolve(node.host());
    if (!problem.empty()) return who + ": host '" + node.host() + "' is unreachable: " + problem;
    std::string output;
    int rc = RunCommand({"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", node.host(),
                         "true"},
                        &output);
    if (rc != 0) {
      return who + ": host '" + node.host() + "' is unreachable over ssh (exit " +
             std::to_string(rc) + "): " + Trim(output);
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

std::vector<std::string> Launcher::NodeArgs(const NodeConfig& node) const {
  std::vector<std::string> args = {options_.node_binary, "--config=" + options_.config_path,
                                   "--node_id=" + std::to_string(node.id()),
                                   "--summary_json=" + options_.log_dir + "/node-" +
                                       std::to_string(node.id()) + ".json"};
  args.insert(args.end(), options_.node_flags.begin(), options_.node_flags.end());
  return args;
}

std::string Launcher::Start() {
  for (const NodeConfig& node : config_.node()) {
    Child child;
    child.id = node.id();
    child.host = node.host();
    child.remote = !IsLocalHost(node.host());
    std::vector<std::string> args = NodeArgs(node);
    if (child.remote) {
      // Same checkout, same paths on the remote host; exec so that killing
      // the remote shell's child is killing the node.
      std::string command = "exec";
      for (const auto& arg : args) command += " '" + arg + "'";
      args = {options_.ssh, "-o", "BatchMode=yes", node.host(), command};
    }
    const std::string log_path = options_.log_dir + "/node-" + std::to_string(node.id()) + ".out";
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
      sigset_t none;
      sigemptyset(&none);
      sigprocmask(SIG_SETMASK, &none, nullptr);
      std::vector<char*> argv;
      for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
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
      std::string output;
      RunCommand({options_.ssh, "-o", "BatchMode=yes", child.host,
                  "pkill -" + std::to_string(signal) + " -f 'node_id=" +
                      std::to_string(child.id) + "'"},
                 &output);
    }
    kill(child.pid, signal);
  }
}

int Launcher::Wait(const std::function<int()>& interrupts) {
  using Clock = std::chrono::steady_clock;
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
        const int code = WIFEXITED(child.status) ? WEXITSTATUS(child.status) : 128 + WTERMSIG(child.status);
        if (code != 0) {
          if (exit_code == 0) exit_code = code;
          printf("[cluster] node %u exited with status %d; stopping the others (see %s/node-%u.out)\n",
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
               (requested > 1 || Clock::now() - last_signal > std::chrono::seconds(20))) {
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
    const std::string path = options_.log_dir + "/node-" + std::to_string(node.id()) + ".json";
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
  for (const NodeConfig& node : config.node()) {
    // A summary left by an earlier run must not pass for this one's.
    unlink((options.log_dir + "/node-" + std::to_string(node.id()) + ".json").c_str());
  }
  Launcher launcher(config, options);
  *error = launcher.Start();
  if (!error->empty()) return 1;
  const int code = launcher.Wait(interrupts);
  if (!launcher.CombinedSummary(combined, error) && code == 0) return 1;
  return code;
}

}  // namespace paxflow
