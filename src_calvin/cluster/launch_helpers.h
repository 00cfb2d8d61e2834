// Internal to the launcher (launcher.cc, detached_cluster.cc): running a
// command to completion, ssh, starting a detached process, reading a log's
// tail, and the paxflow-node command line and file names that the attached
// and detached modes agree on.
//
// Owns: nothing; every function is stateless. Threads: the launcher's
// (the caller's) only; RunCommand and SpawnDetached fork.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "cluster/launcher.h"

namespace paxflow {

// --- Processes --------------------------------------------------------------

// argv for execvp: pointers into `args`, null-terminated.
std::vector<char*> ExecArgv(const std::vector<std::string>& args);

// Unblocks every signal, in a child about to exec: the launcher's signal
// watcher blocks SIGINT and SIGTERM, and a child must not inherit that.
// Async-signal-safe.
void UnblockAllSignals();

// Runs a command to completion; returns its exit status (-1 if it could not
// run or died of a signal). Its stdout goes to `out`; its stderr to `err`,
// or to `out` too when `err` is null (ssh's complaints belong in messages,
// not in a summary fetched with cat).
int RunCommand(const std::vector<std::string>& args, std::string* out,
               std::string* err = nullptr);

// Starts `args` in a session of its own, detached from the launcher: stdin
// from /dev/null, stdout and stderr to `log_path`, no other descriptor
// inherited (a test reading the launcher's output must see it end when the
// launcher exits), default signal handling. Returns its pid, or -1 with
// `error` set (exec failures included, reported through a CLOEXEC pipe).
// `append`: add to the log instead of replacing it (a restarted node).
pid_t SpawnDetached(const std::vector<std::string>& args, const std::string& log_path,
                    std::string* error, bool append = false);

// What /proc/PID/stat says of a local process.
struct ProcessStat {
  char state = '?';          // R, S, D, Z (zombie), X (dead), ...
  uint64_t start_ticks = 0;  // start time, clock ticks since boot
};
// False if there is no such process.
bool ReadProcessStat(pid_t pid, ProcessStat* stat);

// --- Text and files ---------------------------------------------------------

// `text` without trailing newlines and spaces.
std::string Trim(std::string text);

// For a POSIX shell: one word, whatever `text` holds.
std::string ShellQuote(const std::string& text);

// For pkill's extended regular expressions: matches `text` literally.
std::string RegexQuote(const std::string& text);

// A local file's contents; empty if it cannot be read.
std::string ReadWholeFile(const std::string& path);

// The last `lines` lines of a local file; false if it cannot be read. Reads
// from the end, in growing windows: logs of long runs are large.
bool TailFile(const std::string& path, int lines, std::string* text);

// --- ssh and ip -------------------------------------------------------------

// `command` run on `host` with the ssh client `ssh`, never prompting.
std::vector<std::string> SshArgs(const std::string& ssh, const std::string& host,
                                 const std::string& command);

// iproute2's ip: on $PATH, or where distributions put it (root's PATH has
// the sbin directories, other users' often do not). Empty if missing.
std::string IpBinary();

// --- paxflow-node processes -------------------------------------------------

// <log_dir>/node-<id>.out: the node's stdout and stderr.
std::string NodeLogPath(const std::string& log_dir, NodeId id);
// <log_dir>/node-<id>.json: the node's summary.
std::string NodeSummaryPath(const std::string& log_dir, NodeId id);

// Removes every node's summary from `log_dir`: a summary left by an earlier
// run must not pass for this one's.
void RemoveNodeSummaries(const ClusterConfig& config, const std::string& log_dir);

// paxflow-node's command line for `node`: the binary, then --config and
// --node_id in this order (NodePattern relies on it).
std::vector<std::string> NodeArgs(const NodeConfig& node, const LaunchOptions& options);

// The command that runs `node` on this machine: as is, or inside its
// namespace. `ip netns exec` execs the node (no fork), so the pid the
// launcher gets is the node's own.
std::vector<std::string> LocalArgs(const NodeConfig& node, const LaunchOptions& options);

// pkill -f pattern matching exactly node `id` of `config_path` run by
// `binary`: anchored, so that neither another node, another cluster, nor
// the shell running pkill itself (whose command line holds the pattern)
// matches.
std::string NodePattern(const std::string& binary, const std::string& config_path, NodeId id);

// Sends `signal` to node `id` of `config_path` run by `binary` on `host`,
// with pkill over ssh (killing a local ssh client does not reach the remote
// node). Returns pkill's exit status (1: no process matched; -1: ssh could
// not run); what ssh and pkill printed goes to `out`.
int RemotePkill(const std::string& ssh, const std::string& host, const std::string& binary,
                const std::string& config_path, NodeId id, int signal, std::string* out);

}  // namespace paxflow
