// Helpers shared by the test suites: temporary directories, free loopback
// ports, generated configs, in-process clusters and child processes.
#pragma once
#include <sys/types.h>

#include <initializer_list>
#include <functional>
#include <memory>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "base/params.h"
#include "base/summary.h"
#include "client.pb.h"
#include "common/config.h"
#include "scheduler/sinks.h"
#include "tests/test_basics.h"

namespace paxflow {
// node/node.h is a heavy header (the whole node's parts): only the tests
// that use a Node of an InProcessCluster include it.
class Node;
}  // namespace paxflow

namespace paxflow::testing {

// A temporary directory with a tmpfs of its own mounted on it (a disk
// that fills up: the disk-failure tests). Needs root; unmounted at the end.
class TmpfsDir {
 public:
  ~TmpfsDir();
  // Mounts a tmpfs of `size` ("64k", "64m"); empty, or why it cannot.
  std::string Mount(const std::string& size);
  // Remounts it with `bytes` of room beyond what it holds now: a test mounts
  // with ample room, lets its node get going, then leaves it little, so
  // that the disk fills under a running node and not before its first
  // acknowledgements, however loaded the machine. Empty, or why not.
  std::string LeaveRoom(uint64_t bytes);
  // Remounts it at `size` again, keeping its files; empty, or why not.
  std::string Resize(const std::string& size);
  const std::string& path() const { return dir_.path(); }

 private:
  TempDir dir_;
  bool mounted_ = false;
};

// A temporary directory with a small ext4 file system of its own: an image
// file on a loop device, the image sparse in a tmpfs (so that its syncs do
// not wait for the machine's disk, and so that the tmpfs can be filled
// under it). Two ways to fail a log on it:
//  - FailReadOnly: the kernel turns it read-only at once, as ext4 does on an
//    I/O error when mounted errors=remount-ro, and writes to the files open
//    on it fail (EROFS). A tmpfs or a bind mount cannot be made read-only
//    while a file on it is open for writing (the remount fails EBUSY).
//  - LeaveRoom: the tmpfs under the image fills, the loop device fails
//    writes, and ext4 reports EIO (its journal aborts), ENOSPC or EROFS.
// Needs root, a loop device and mkfs.ext4; unmounted at the end, the loop
// device released.
class Ext4Dir {
 public:
  enum class OnError { kRemountReadOnly, kContinue };  // ext4's errors= option
  Ext4Dir() = default;
  ~Ext4Dir();
  // Makes and mounts a file system of `mib` MiB; empty, or why it cannot.
  std::string Mount(uint32_t mib, OnError on_error);
  std::string FailReadOnly();
  // Leaves the tmpfs under the image `bytes` of room (TmpfsDir::LeaveRoom).
  std::string LeaveRoom(uint64_t bytes) { return backing_.LeaveRoom(bytes); }
  // After a failure (nothing open on it any more): unmounts it, gives the
  // tmpfs its room back, checks the image (e2fsck) and mounts it again.
  std::string Repair();
  const std::string& path() const { return mount_point_.path(); }

 private:
  std::string MountDevice();
  std::string image() const { return backing_.path() + "/image"; }
  TmpfsDir backing_;  // holds the image; declared first, so unmounted last
  TempDir mount_point_;
  std::string tmpfs_size_;
  std::string options_;  // mount(2)'s data for ext4
  std::string device_;   // the loop device; released at the end
  bool mounted_ = false;
};

// The path of a system tool (mkfs.ext4, losetup, ... live in sbin, which a
// test's PATH may lack).
std::string Tool(const std::string& name);

// `count` distinct TCP ports on 127.0.0.1 that were free a moment ago, below
// the ephemeral range and, under gtest sharding, in this shard's slice of it.
std::vector<uint32_t> FreePorts(size_t count);
// The same, none of them a port `config` already gives a node (ports picked
// by an earlier FreePorts were released, so a later pick may draw them
// again).
std::vector<uint32_t> FreePortsBesides(size_t count, const ClusterConfig& config);

// A config of `partitions` x `replicas` nodes on 127.0.0.1 (node id =
// replica * partitions + partition). Ports are picked free for tcp.
ClusterConfig MakeConfig(const std::string& name, uint32_t partitions, uint32_t replicas,
                         const std::string& transport);
std::string ToText(const ClusterConfig& config);

// Every node of `config` in this process (inproc transport), started
// concurrently (each waits for the others). Fails the test on error.
class InProcessCluster {
 public:
  InProcessCluster(const ClusterConfig& config, const NodeParams& params,
                   ResultSink* tap = nullptr);
  ~InProcessCluster();
  std::string Start();
  // Waits for every node to finish its run; false on timeout.
  bool WaitFinished(int64_t timeout_ms);
  Node& node(size_t i) { return *nodes_[i]; }
  size_t size() const { return nodes_.size(); }
  // Sum of the partitions' digests of replica 0 = digest of the database.
  uint64_t DatabaseDigest() const;

 private:
  zmq::context_t context_;
  std::vector<std::unique_ptr<Node>> nodes_;
};

// Runs a command, returns its exit status; stdout+stderr go to `output`.
int RunProcess(const std::vector<std::string>& args, std::string* output);

// A child process whose merged stdout+stderr the test reads as it comes.
class ChildProcess {
 public:
  explicit ChildProcess(const std::vector<std::string>& args);
  ~ChildProcess();  // kills and reaps the child if it still runs
  // Reads output until it contains `text` (true), or the child closes its
  // output or `timeout_ms` passes (false).
  bool WaitForOutput(const std::string& text, int timeout_ms);
  void Signal(int signal);
  // Reads the rest of the output and reaps the child; -1 on timeout.
  int Wait(int timeout_ms);
  const std::string& output() const { return output_; }

 private:
  bool ReadSome(int timeout_ms);
  pid_t pid_ = -1;
  int fd_ = -1;
  bool reaped_ = false;
  std::string output_;
};

// True if a TCP port on 127.0.0.1 can be bound (nobody holds it).
bool PortIsFree(uint32_t port);

// Directory of the test binary, and the built binaries next to it.
std::string BinaryDir();
std::string SourceDir();  // repository root

std::string ReadFile(const std::string& path);

// paxflow-cluster with a verb and the flags that locate one detached
// cluster (its config and --logs). Stops whatever a failed test left
// running: no node outlives the test.
class ClusterVerbs {
 public:
  ClusterVerbs(std::string config, std::string logs, std::vector<std::string> extra = {});
  ~ClusterVerbs();
  int Run(const std::string& verb, const std::vector<std::string>& flags,
          std::string* output) const;
  std::string state() const { return logs_ + "/cluster.state"; }
  // The pids the state file records, in node order (empty if unreadable).
  std::vector<pid_t> Pids() const;

 private:
  std::string config_, logs_;
  std::vector<std::string> extra_;
};

// A node's status, asked at its client port; false if it does not answer.
bool AskStatus(const NodeConfig& node, StatusReply* status, int timeout_ms = 1000);
// Polls `condition` (every 20 ms) until it holds or `timeout_ms` passes;
// returns whether it held. For conditions on other processes, which
// nothing here can wait on.
bool WaitUntil(const std::function<bool()>& condition, int timeout_ms);

// The bank workload as the cluster tests run it.
WorkloadParams BankWorkload(uint64_t accounts, double audit_fraction);
// Checks a cluster's summary against a serial execution of its input logs:
// the same txn count and the same database digest.
void ExpectMatchesSerialExecution(const std::string& input_dir, const WorkloadParams& workload,
                                  const RunSummary& cluster);

}  // namespace paxflow::testing
