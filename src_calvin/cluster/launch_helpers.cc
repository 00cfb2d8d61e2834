#include "cluster/launch_helpers.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace paxflow {

std::vector<char*> ExecArgv(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  return argv;
}

void UnblockAllSignals() {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

int RunCommand(const std::vector<std::string>& args, std::string* out, std::string* err) {
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return -1;
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return -1;
  }
  std::vector<char*> argv = ExecArgv(args);
  pid_t pid = fork();
  if (pid == 0) {
    // The launcher's signal watcher blocks SIGINT and SIGTERM; ssh must not
    // inherit that.
    UnblockAllSignals();
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) dup2(null, STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err ? err_pipe[1] : out_pipe[1], STDERR_FILENO);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    return -1;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {out, err ? err : out};
  int open_fds = 2;
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores negative fds
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

pid_t SpawnDetached(const std::vector<std::string>& args, const std::string& log_path,
                    std::string* error, bool append) {
  int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC),
                 0644);
  if (log < 0) {
    *error = "cannot create " + log_path + ": " + std::strerror(errno);
    return -1;
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    close(log);
    return -1;
  }
  std::vector<char*> argv = ExecArgv(args);
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here to exec: the launcher may
    // have threads (the signal watcher).
    setsid();
    int null = open("/dev/null", O_RDONLY);
    dup2(null, STDIN_FILENO);
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    dup2(report[1], 3);
    fcntl(3, F_SETFD, FD_CLOEXEC);
    bool closed = false;
#ifdef SYS_close_range
    closed = syscall(SYS_close_range, 4u, ~0u, 0u) == 0;
#endif
    if (!closed) {
      for (int fd = 4; fd < 65536; ++fd) close(fd);
    }
    UnblockAllSignals();
    // An ignored SIGTERM would survive exec and make the node unstoppable.
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    execvp(argv[0], argv.data());
    const int failure = errno;
    (void)!write(3, &failure, sizeof(failure));
    _exit(127);
  }
  close(log);
  close(report[1]);
  if (pid < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    close(report[0]);
    return -1;
  }
  int failure = 0;
  ssize_t n;
  while ((n = read(report[0], &failure, sizeof(failure))) < 0 && errno == EINTR) {
  }
  close(report[0]);
  if (n == static_cast<ssize_t>(sizeof(failure))) {
    waitpid(pid, nullptr, 0);
    *error = "cannot run " + args[0] + ": " + std::strerror(failure);
    return -1;
  }
  return pid;
}

bool ReadProcessStat(pid_t pid, ProcessStat* stat) {
  const std::string text = ReadWholeFile("/proc/" + std::to_string(pid) + "/stat");
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses.
  const size_t paren = text.rfind(')');
  if (text.empty() || paren == std::string::npos || paren + 2 >= text.size()) return false;
  std::stringstream fields(text.substr(paren + 2));
  std::string field;
  // Field 3 is the state, field 22 the start time.
  for (int number = 3; number <= 22 && fields >> field; ++number) {
    if (number == 3) stat->state = field[0];
    if (number == 22) stat->start_ticks = std::strtoull(field.c_str(), nullptr, 10);
  }
  return true;
}

std::string Trim(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string ShellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string RegexQuote(const std::string& text) {
  std::string quoted;
  for (char c : text) {
    if (std::strchr(".[]()*+?{}|^$\\", c)) quoted += '\\';
    quoted += c;
  }
  return quoted;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool TailFile(const std::string& path, int lines, std::string* text) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat info {};
  fstat(fd, &info);
  const off_t size = info.st_size;
  off_t window = 16384;
  std::string tail;
  while (true) {
    const off_t offset = size > window ? size - window : 0;
    tail.assign(static_cast<size_t>(size - offset), '\0');
    const ssize_t n = pread(fd, &tail[0], tail.size(), offset);
    tail.resize(n > 0 ? static_cast<size_t>(n) : 0);
    const auto newlines = std::count(tail.begin(), tail.end(), '\n');
    if (offset == 0 || newlines > lines) break;
    window *= 4;
  }
  close(fd);
  size_t start = tail.size();
  int seen = 0;
  if (!tail.empty() && tail.back() == '\n') --start;  // the last line's own newline
  while (start > 0 && seen < lines) {
    const size_t newline = tail.rfind('\n', start - 1);
    ++seen;
    if (newline == std::string::npos) {
      start = 0;
      break;
    }
    if (seen == lines) {
      start = newline + 1;
      break;
    }
    start = newline;
  }
  *text = lines > 0 ? tail.substr(start) : "";
  return true;
}

std::vector<std::string> SshArgs(const std::string& ssh, const std::string& host,
                                 const std::string& command) {
  // BatchMode: a password prompt would hang the launcher; fail instead.
  return {ssh, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", host, command};
}

std::string IpBinary() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(std::string(path ? path : "") + ":/usr/sbin:/sbin:/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (!dir.empty() && access((dir + "/ip").c_str(), X_OK) == 0) return dir + "/ip";
  }
  return "";
}

std::string NodeLogPath(const std::string& log_dir, NodeId id) {
  return log_dir + "/node-" + std::to_string(id) + ".out";
}

std::string NodeSummaryPath(const std::string& log_dir, NodeId id) {
  return log_dir + "/node-" + std::to_string(id) + ".json";
}

void RemoveNodeSummaries(const ClusterConfig& config, const std::string& log_dir) {
  for (const NodeConfig& node : config.node()) unlink(NodeSummaryPath(log_dir, node.id()).c_str());
}

std::vector<std::string> NodeArgs(const NodeConfig& node, const LaunchOptions& options) {
  std::vector<std::string> args = {options.node_binary, "--config=" + options.config_path,
                                   "--node_id=" + std::to_string(node.id()),
                                   "--summary_json=" + NodeSummaryPath(options.log_dir,
                                                                       node.id())};
  args.insert(args.end(), options.node_flags.begin(), options.node_flags.end());
  return args;
}

std::vector<std::string> LocalArgs(const NodeConfig& node, const LaunchOptions& options) {
  std::vector<std::string> args = NodeArgs(node, options);
  if (KindOf(node) == LaunchKind::kNetns) {
    const std::string ip = IpBinary();
    args.insert(args.begin(), {ip.empty() ? "ip" : ip, "netns", "exec", node.netns()});
  }
  return args;
}

std::string NodePattern(const std::string& binary, const std::string& config_path, NodeId id) {
  return "^" + RegexQuote(binary) + " --config=" + RegexQuote(config_path) +
         " --node_id=" + std::to_string(id) + "( |$)";
}

int RemotePkill(const std::string& ssh, const std::string& host, const std::string& binary,
                const std::string& config_path, NodeId id, int signal, std::string* out) {
  return RunCommand(SshArgs(ssh, host,
                            "pkill -" + std::to_string(signal) + " -f " +
                                ShellQuote(NodePattern(binary, config_path, id))),
                    out);
}

}  // namespace paxflow
