#include "tests/test_util.h"

#include "client/client.h"
#include "common/paths.h"
#include "common/proto_json.h"
#include "files.pb.h"
#include "node/node.h"
#include "tests/serial_reference.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <google/protobuf/text_format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

namespace paxflow::testing {

std::string TmpfsDir::Mount(const std::string& size) {
  if (geteuid() != 0) return "mounting a tmpfs needs root";
  if (mount("tmpfs", path().c_str(), "tmpfs", 0, ("size=" + size).c_str()) != 0) {
    return std::string("cannot mount a tmpfs: ") + std::strerror(errno);
  }
  mounted_ = true;
  return "";
}

std::string TmpfsDir::Resize(const std::string& size) {
  if (mount("tmpfs", path().c_str(), "tmpfs", MS_REMOUNT, ("size=" + size).c_str()) != 0) {
    return "cannot remount the tmpfs at size " + size + ": " + std::strerror(errno);
  }
  return "";
}

std::string TmpfsDir::LeaveRoom(uint64_t bytes) {
  // A node writing meanwhile may pass the size asked for before the
  // remount (which then fails): ask again from what it holds by then.
  std::string why;
  for (int attempt = 0; attempt < 10; ++attempt) {
    struct statvfs info {};
    if (statvfs(path().c_str(), &info) != 0) return std::string("statvfs: ") + std::strerror(errno);
    const uint64_t used = (info.f_blocks - info.f_bfree) * info.f_frsize;
    why = Resize(std::to_string(used + bytes));
    if (why.empty()) return "";
  }
  return why;
}

TmpfsDir::~TmpfsDir() {
  if (mounted_) umount2(path().c_str(), MNT_DETACH);
}

std::string Tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    const std::string path = dir + name;
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return name;
}

std::string Ext4Dir::Mount(uint32_t mib, OnError on_error) {
  if (geteuid() != 0) return "mounting a file system needs root";
  // Room for the whole image, and as much again for what a test adds.
  tmpfs_size_ = std::to_string(2 * mib) + "m";
  if (std::string why = backing_.Mount(tmpfs_size_); !why.empty()) return why;
  options_ = on_error == OnError::kContinue ? "errors=continue" : "errors=remount-ro";
  std::string output;
  if (RunProcess({Tool("truncate"), "-s", std::to_string(mib) + "M", image()}, &output) != 0 ||
      RunProcess({Tool("mkfs.ext4"), "-q", "-E", "nodiscard,lazy_itable_init=1,lazy_journal_init=1",
                  image()},
                 &output) != 0) {
    return "cannot make an ext4 image: " + output;
  }
  if (RunProcess({Tool("losetup"), "-f", "--show", image()}, &output) != 0) {
    return "no loop device: " + output;
  }
  device_ = output.substr(0, output.find('\n'));
  RunProcess({Tool("blockdev"), "--setrw", device_}, &output);
  return MountDevice();
}

std::string Ext4Dir::MountDevice() {
  if (mount(device_.c_str(), path().c_str(), "ext4", 0, options_.c_str()) != 0) {
    return "cannot mount the ext4 image on " + device_ + ": " + std::strerror(errno);
  }
  mounted_ = true;
  return "";
}

std::string Ext4Dir::FailReadOnly() {
  // ext4 lists its file systems by the loop device's name (loopN).
  if (!mounted_) return "not mounted";
  const std::string trigger =
      "/sys/fs/ext4/" + device_.substr(device_.rfind('/') + 1) + "/trigger_fs_error";
  std::ofstream out(trigger);
  if (!(out << "1" << std::flush)) return "cannot write " + trigger;
  return "";
}

std::string Ext4Dir::Repair() {
  umount2(path().c_str(), MNT_DETACH);
  mounted_ = false;
  if (std::string why = backing_.Resize(tmpfs_size_); !why.empty()) return why;
  std::string output;
  // 0: clean, 1: errors corrected.
  const int rc = RunProcess({Tool("e2fsck"), "-fy", device_}, &output);
  if (rc != 0 && rc != 1) return "e2fsck failed: " + output;
  return MountDevice();
}

Ext4Dir::~Ext4Dir() {
  if (mounted_) umount2(path().c_str(), MNT_DETACH);
  // Released once the detached mount lets go of it (losetup marks it so).
  std::string output;
  if (!device_.empty()) RunProcess({Tool("losetup"), "-d", device_}, &output);
}

// Test ports come from below the kernel's ephemeral range (32768-60999 by
// default), from which every outgoing connection takes its local port:
// asked for port 0, the kernel handed out ports that a client or a node of
// a test running beside it then took before this test's node bound them
// ("Address already in use", seen with four shards). Each gtest shard
// draws from its own slice of the range, so shards never pick the same.
constexpr uint32_t kTestPortsLo = 20000, kTestPortsHi = 32768;

namespace {

// This process's share of the test ports: its gtest shard's slice, or all.
std::pair<uint32_t, uint32_t> ShardPortRange() {
  const char* total_text = std::getenv("GTEST_TOTAL_SHARDS");
  const char* index_text = std::getenv("GTEST_SHARD_INDEX");
  const int total = total_text ? std::atoi(total_text) : 0;
  const int index = index_text ? std::atoi(index_text) : -1;
  if (total <= 1 || index < 0 || index >= total) return {kTestPortsLo, kTestPortsHi};
  const uint32_t slice = (kTestPortsHi - kTestPortsLo) / static_cast<uint32_t>(total);
  const uint32_t lo = kTestPortsLo + slice * static_cast<uint32_t>(index);
  return {lo, lo + slice};
}

}  // namespace

std::vector<uint32_t> FreePorts(size_t count) {
  const auto [lo, hi] = ShardPortRange();
  std::random_device seed;
  std::mt19937 random(seed());
  std::uniform_int_distribution<uint32_t> pick(lo, hi - 1);
  std::vector<int> sockets;
  std::vector<uint32_t> ports;
  while (ports.size() < count) {
    const uint32_t port = pick(random);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
      close(fd);  // held by someone (or lingering): another
      continue;
    }
    ports.push_back(port);
    sockets.push_back(fd);  // held until all are picked, so they differ
  }
  for (int fd : sockets) close(fd);
  return ports;
}

std::vector<uint32_t> FreePortsBesides(size_t count, const ClusterConfig& config) {
  std::set<uint32_t> taken;
  for (const NodeConfig& node : config.node()) {
    taken.insert({node.port(), node.client_port(), node.consensus_port(), node.metrics_port()});
  }
  std::vector<uint32_t> ports;
  while (ports.size() < count) {
    for (uint32_t port : FreePorts(count)) {
      if (ports.size() < count && taken.insert(port).second) ports.push_back(port);
    }
  }
  return ports;
}

ClusterConfig MakeConfig(const std::string& name, uint32_t partitions, uint32_t replicas,
                         const std::string& transport) {
  ClusterConfig config;
  config.set_name(name + "-" + std::to_string(getpid()));
  config.set_transport(transport);
  const uint32_t nodes = partitions * replicas;
  std::vector<uint32_t> ports = FreePorts(2 * nodes);
  for (uint32_t r = 0; r < replicas; ++r) {
    for (uint32_t p = 0; p < partitions; ++p) {
      const uint32_t id = r * partitions + p;
      NodeConfig* node = config.add_node();
      node->set_id(id);
      node->set_partition(p);
      node->set_replica(r);
      node->set_host("127.0.0.1");
      node->set_port(ports[2 * id]);
      node->set_client_port(ports[2 * id + 1]);
    }
  }
  return config;
}

std::string ToText(const ClusterConfig& config) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(config, &text);
  return text;
}

InProcessCluster::InProcessCluster(const ClusterConfig& config, const NodeParams& params,
                                   ResultSink* tap)
    : context_(1) {
  for (const NodeConfig& node : config.node()) {
    NodeOptions options;
    options.config = config;
    options.id = node.id();
    options.params = params;
    options.shared_context = &context_;
    options.print = [](const std::string&) {};
    options.result_tap = tap;
    nodes_.push_back(std::make_unique<Node>(options));
  }
}

InProcessCluster::~InProcessCluster() {
  for (auto& node : nodes_) node->Shutdown();
  nodes_.clear();
}

std::string InProcessCluster::Start() {
  std::vector<std::string> errors(nodes_.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    threads.emplace_back([&, i] { errors[i] = nodes_[i]->Start(); });
  }
  for (auto& thread : threads) thread.join();
  for (size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i].empty()) return "node " + std::to_string(i) + ": " + errors[i];
  }
  return "";
}

bool InProcessCluster::WaitFinished(int64_t timeout_ms) {
  for (auto& node : nodes_) {
    if (!node->WaitFinished(timeout_ms)) return false;
  }
  for (auto& node : nodes_) node->Shutdown();
  return true;
}

uint64_t InProcessCluster::DatabaseDigest() const {
  uint64_t digest = 0;
  for (const auto& node : nodes_) {
    const NodeConfig* self = node->layout().Node(node->Summary().node);
    if (self && self->replica() == 0) digest += node->FinalDigest();
  }
  return digest;
}

int RunProcess(const std::vector<std::string>& args, std::string* output) {
  ChildProcess child(args);
  const int status = child.Wait(10 * 60 * 1000);
  *output += child.output();
  return status;
}

ChildProcess::ChildProcess(const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv;
    for (const auto& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(fds[1]);
  fd_ = fds[0];
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !reaped_) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (fd_ >= 0) close(fd_);
}

bool ChildProcess::ReadSome(int timeout_ms) {
  if (fd_ < 0) return false;
  pollfd item{fd_, POLLIN, 0};
  if (poll(&item, 1, timeout_ms) <= 0) return true;  // nothing yet
  char buffer[4096];
  ssize_t n = read(fd_, buffer, sizeof(buffer));
  if (n <= 0) {
    close(fd_);
    fd_ = -1;
    return false;
  }
  output_.append(buffer, static_cast<size_t>(n));
  return true;
}

bool ChildProcess::WaitForOutput(const std::string& text, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (output_.find(text) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !ReadSome(static_cast<int>(left.count()))) {
      return output_.find(text) != std::string::npos;
    }
  }
  return true;
}

void ChildProcess::Signal(int signal) {
  if (pid_ > 0 && !reaped_) kill(pid_, signal);
}

int ChildProcess::Wait(int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (fd_ >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return -1;
    ReadSome(static_cast<int>(left.count()));
  }
  int status = 0;
  if (waitpid(pid_, &status, 0) != pid_) return -1;
  reaped_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool PortIsFree(uint32_t port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;  // TIME_WAIT leftovers are not a bound port
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return free;
}

std::string BinaryDir() { return SelfDirectory(); }

std::string SourceDir() {
  std::string file = __FILE__;  // .../tests/test_util.cc, or relative to the repo root
  size_t slash = file.rfind("/tests/");
  if (slash == std::string::npos) return ".";
  return file.substr(0, slash).empty() ? "." : file.substr(0, slash);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

WorkloadParams BankWorkload(uint64_t accounts, double audit_fraction) {
  WorkloadParams bank;
  bank.workload = "bank";
  bank.application = "bank";
  bank.bank_accounts = accounts;
  bank.audit_fraction = audit_fraction;
  return bank;
}

void ExpectMatchesSerialExecution(const std::string& input_dir, const WorkloadParams& workload,
                                  const RunSummary& cluster) {
  SerialResult serial = SerialExecute(input_dir, workload);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(serial.txns, cluster.Committed());
  EXPECT_EQ(serial.digest, cluster.digest) << "cluster digest differs from serial execution";
}

ClusterVerbs::ClusterVerbs(std::string config, std::string logs, std::vector<std::string> extra)
    : config_(std::move(config)), logs_(std::move(logs)), extra_(std::move(extra)) {}

ClusterVerbs::~ClusterVerbs() {
  if (access(state().c_str(), F_OK) != 0) return;
  std::string output;
  Run("stop", {"--stop_timeout=10"}, &output);
}

int ClusterVerbs::Run(const std::string& verb, const std::vector<std::string>& flags,
                      std::string* output) const {
  std::vector<std::string> args = {BinaryDir() + "/paxflow-cluster", verb, "--config=" + config_,
                                   "--logs=" + logs_};
  args.insert(args.end(), extra_.begin(), extra_.end());
  args.insert(args.end(), flags.begin(), flags.end());
  output->clear();
  return RunProcess(args, output);
}

std::vector<pid_t> ClusterVerbs::Pids() const {
  ClusterStateFile file;
  std::vector<pid_t> pids;
  if (!JsonToMessage(ReadFile(state()), &file).empty()) return pids;
  for (const NodeRecordFile& node : file.nodes()) pids.push_back(node.pid());
  return pids;
}

bool AskStatus(const NodeConfig& node, StatusReply* status, int timeout_ms) {
  Client client;
  ClientReply reply;
  if (!client.Connect(ClientEndpoint(node)).empty() ||
      !client.Call(Client::Status(), &reply, timeout_ms).empty() || reply.status() != OK) {
    return false;
  }
  *status = reply.node_status();
  return true;
}

bool WaitUntil(const std::function<bool()>& condition, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling another process
  }
  return true;
}

}  // namespace paxflow::testing
