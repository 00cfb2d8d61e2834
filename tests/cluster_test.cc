// Multi-process clusters: paxflow-cluster launching paxflow-node processes
// on 127.0.0.1, on ports picked free by the test; and what they do with
// bad configs, Ctrl-C and garbage on the wire.
#include <dirent.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>

#include "base/summary.h"
#include "common/transport.h"
#include "node/node.h"
#include "tests/result_log.h"
#include "tests/serial_reference.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::BinaryDir;
using testing::ChildProcess;
using testing::MakeConfig;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;
using testing::WaitUntil;

std::string WriteConfig(const TempDir& dir, const ClusterConfig& config,
                        const std::string& name = "cluster.conf") {
  const std::string path = dir.path() + "/" + name;
  std::ofstream(path) << testing::ToText(config);
  return path;
}

std::string Cluster() { return BinaryDir() + "/paxflow-cluster"; }

class BankClusterTest : public ::testing::TestWithParam<Mode> {};

// Transfers and audits on three processes: no audit may see a wrong total,
// the state must equal a serial execution of the logged input, and a
// replay of the logs from the command line must print the same digest.
TEST_P(BankClusterTest, AuditsSeeTheRightTotalAndDigestsAgree) {
  TempDir dir;
  ClusterConfig config = MakeConfig("bank", 3, 1, "tcp");
  const std::string config_path = WriteConfig(dir, config);
  std::string output;
  // Short epochs and big batches: epochs queue up, so in paxflow mode
  // read-only audits reach their snapshot before it is published.
  const int rc = RunProcess({Cluster(), "--config=" + config_path, "--workload=bank",
                             std::string("--mode=") + ModeName(GetParam()), "--run_epochs=150",
                             "--epoch_ms=2", "--max_batch=1000", "--bank_accounts=90",
                             "--audit_fraction=0.2", "--progress_ms=100",
                             "--logs=" + dir.path() + "/logs",
                             "--log_dir=" + dir.path() + "/input"},
                            &output);
  ASSERT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("[node 2] "), std::string::npos) << "no progress lines relayed";
  EXPECT_NE(output.find("=== cluster summary: 3 node(s)"), std::string::npos) << output;
  RunSummary cluster;
  ASSERT_EQ(RunSummary::FromJson(ReadFile(dir.path() + "/logs/cluster.json"), &cluster), "");
  EXPECT_EQ(cluster.invariant_failures, 0u) << output;
  EXPECT_GT(cluster.kinds[kKindReadOnly].committed, 100u) << "too few audits ran";
  EXPECT_GT(cluster.kinds[kKindReadWrite].committed, 1000u) << "too few transfers ran";
  if (GetParam() == Mode::kPaxflow) {
    EXPECT_GT(cluster.waited_ro, 0u) << "no audit went through the waiting queue";
  }
  for (int node = 0; node < 3; ++node) {
    const std::string log = ReadFile(dir.path() + "/logs/node-" + std::to_string(node) + ".out");
    EXPECT_NE(log.find("summary"), std::string::npos) << "node " << node << " left no summary";
  }

  testing::ExpectMatchesSerialExecution(dir.path() + "/input", testing::BankWorkload(90, 0.2),
                                        cluster);

  std::string replay;
  ASSERT_EQ(RunProcess({BinaryDir() + "/paxflow-node", "--replay=" + dir.path() + "/input",
                        "--workers=3"},
                       &replay),
            0)
      << replay;
  EXPECT_NE(replay.find(": " + DigestHex(cluster.digest)), std::string::npos)
      << "replay printed another digest:\n" << replay;
}

INSTANTIATE_TEST_SUITE_P(Modes, BankClusterTest, ::testing::Values(Mode::kCalvin, Mode::kPaxflow),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(ModeName(info.param));
                         });

class TpccClusterTest : public ::testing::TestWithParam<Mode> {};

// TPC-C on three processes, one warehouse each, so that 1% of New-Order
// lines and 15% of Payments cross partitions: every partition's final
// state passes clause 3.3.2, every txn type commits, and a replay of the
// logs prints the live digest.
TEST_P(TpccClusterTest, RemoteTxnsKeepTheConsistencyConditionsAndReplaysAgree) {
  TempDir dir;
  ClusterConfig config = MakeConfig("tpcc", 3, 1, "tcp");
  const std::string config_path = WriteConfig(dir, config);
  std::string output;
  const int rc = RunProcess({Cluster(), "--config=" + config_path, "--workload=tpcc",
                             std::string("--mode=") + ModeName(GetParam()), "--run_epochs=150",
                             "--epoch_ms=5", "--max_batch=300", "--progress_ms=0",
                             "--logs=" + dir.path() + "/logs",
                             "--log_dir=" + dir.path() + "/input"},
                            &output);
  ASSERT_EQ(rc, 0) << output;
  RunSummary cluster;
  ASSERT_EQ(RunSummary::FromJson(ReadFile(dir.path() + "/logs/cluster.json"), &cluster), "");
  EXPECT_EQ(cluster.invariant_failures, 0u) << output;
  EXPECT_EQ(cluster.consistency, "") << output;
  ASSERT_EQ(cluster.procedures.size(), 5u) << output;
  for (const ProcedureSummary& p : cluster.procedures) {
    EXPECT_GT(p.committed, 0u) << p.name;
  }
  std::string replay;
  ASSERT_EQ(RunProcess({BinaryDir() + "/paxflow-node", "--replay=" + dir.path() + "/input",
                        "--workers=2"},
                       &replay),
            0)
      << replay;
  EXPECT_NE(replay.find(": " + DigestHex(cluster.digest)), std::string::npos)
      << "replay printed another digest:\n" << replay;
}

INSTANTIATE_TEST_SUITE_P(Modes, TpccClusterTest, ::testing::Values(Mode::kCalvin, Mode::kPaxflow),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(ModeName(info.param));
                         });

class BankLtxClusterTest : public ::testing::TestWithParam<Mode> {};

// Runs bank with long txns (each moves money around a ring of accounts) on
// `nodes` processes for `run_epochs` epochs: audits never see a wrong total
// while LTXs run, some LTXs commit, and replays of the input logs with each
// of `replay_workers` print the live digest. `read_outside`: each LTX also
// declares a read outside its ring, which keeps it off the "locked at its
// begin" rule (docs/ltx.md).
void RunBankLtxAndReplay(uint32_t nodes, Mode mode, const std::string& run_epochs,
                         const std::vector<std::string>& replay_workers,
                         bool read_outside = false) {
  TempDir dir;
  ClusterConfig config = MakeConfig("bankltx", nodes, 1, "tcp");
  const std::string config_path = WriteConfig(dir, config);
  std::string output;
  const int rc = RunProcess({Cluster(), "--config=" + config_path, "--workload=bank-ltx",
                             std::string("--mode=") + ModeName(mode),
                             "--run_epochs=" + run_epochs, "--epoch_ms=5", "--max_batch=300",
                             "--max_inflight=600", "--bank_accounts=90", "--audit_fraction=0.2",
                             "--ltx_fraction=0.02", "--ltx_ops=12", "--progress_ms=100",
                             std::string("--bank_ltx_read_outside=") +
                                 (read_outside ? "true" : "false"),
                             "--logs=" + dir.path() + "/logs",
                             "--log_dir=" + dir.path() + "/input"},
                            &output);
  ASSERT_EQ(rc, 0) << output;
  RunSummary cluster;
  ASSERT_EQ(RunSummary::FromJson(ReadFile(dir.path() + "/logs/cluster.json"), &cluster), "");
  EXPECT_EQ(cluster.invariant_failures, 0u) << output;
  EXPECT_GT(cluster.kinds[kKindReadOnly].committed, 100u) << "too few audits ran";
  EXPECT_GT(cluster.kinds[kKindLong].committed, 5u) << "too few long txns committed\n" << output;
  for (const std::string& workers : replay_workers) {
    std::string replay;
    ASSERT_EQ(RunProcess({BinaryDir() + "/paxflow-node", "--replay=" + dir.path() + "/input",
                          "--workers=" + workers},
                         &replay),
              0)
        << replay;
    EXPECT_NE(replay.find(": " + DigestHex(cluster.digest)), std::string::npos)
        << workers << " worker(s): replay printed another digest:\n" << replay;
  }
}

// On three processes: in paxflow mode the transfers are locked at their
// begin (docs/ltx.md), and with a declared read outside their rings they
// take the record protocol (a replay installs from the logged commit
// records).
TEST_P(BankLtxClusterTest, AuditsHoldWithLongTxnsAndReplaysReachTheLiveDigest) {
  RunBankLtxAndReplay(3, GetParam(), "200", {"1", "2", "4"});
}

TEST(BankLtxRecordsClusterTest, AuditsHoldWithRecordProtocolLtxsAndReplaysReachTheLiveDigest) {
  RunBankLtxAndReplay(3, Mode::kPaxflow, "200", {"1", "4"}, /*read_outside=*/true);
}

INSTANTIATE_TEST_SUITE_P(Modes, BankLtxClusterTest,
                         ::testing::Values(Mode::kCalvin, Mode::kPaxflow),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(ModeName(info.param));
                         });

// On one node, paxflow mode: every LTX runs in place, and audits
// (read-only txns over every account) whose snapshot an unfinished LTX's
// install holds are let go key by key (docs/ltx.md, "Publication around
// LTXs in place"): a key of the LTX's area, or of a transfer queued behind
// its install, keeps an audit waiting, so no audit sees a wrong total. A
// replay of this log runs every LTX in place again (seconds): two of them.
TEST(BankLtxInPlaceClusterTest, AuditsHoldWhileLtxsInPlaceHoldPublicationAndReplaysAgree) {
  // A declared read outside each ring keeps the LTXs in place (they would
  // be locked at their begin otherwise): they run locked from their installs.
  RunBankLtxAndReplay(1, Mode::kPaxflow, "100", {"1", "4"}, /*read_outside=*/true);
}

// Each bad config is refused before any node starts, naming the problem.
TEST(ClusterConfigTest, BadConfigsFailFastWithAClearMessage) {
  TempDir dir;
  const ClusterConfig good = MakeConfig("bad", 2, 1, "tcp");
  const std::string good_text = testing::ToText(good);
  struct Case {
    std::string name, text, expected;
  };
  ClusterConfig duplicate = good;
  duplicate.mutable_node(1)->set_id(0);
  ClusterConfig missing = good;
  missing.mutable_node(1)->set_partition(2);
  ClusterConfig clash = good;
  clash.mutable_node(1)->set_port(good.node(0).port());
  ClusterConfig unreachable = good;
  unreachable.mutable_node(1)->set_host("no-such-host.invalid");
  std::vector<Case> cases = {
      {"unknown field", good_text + "\nnodes_count: 3\n", "nodes_count"},
      {"duplicate node", testing::ToText(duplicate), "duplicate node id 0"},
      {"missing partition", testing::ToText(missing), "missing partition 1"},
      {"port clash", testing::ToText(clash), "port clash"},
      {"unreachable host", testing::ToText(unreachable), "no-such-host.invalid"},
      {"unknown param", good_text + "\nparam { name: \"epoch_size\" value: \"5\" }\n",
       "unknown parameter 'epoch_size'"},
      {"bad param value", good_text + "\nparam { name: \"epoch_ms\" value: \"ten\" }\n",
       "epoch_ms='ten'"},
      {"out of range", good_text + "\nparam { name: \"ro_fraction\" value: \"1.5\" }\n",
       "ro_fraction=1.5"},
  };
  for (const Case& c : cases) {
    const std::string path = dir.path() + "/case.conf";
    std::ofstream(path) << c.text;
    std::string output;
    const auto start = std::chrono::steady_clock::now();
    const int rc = RunProcess({Cluster(), "--config=" + path}, &output);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(rc, 2) << c.name << ": " << output;
    EXPECT_NE(output.find(c.expected), std::string::npos) << c.name << ": " << output;
    EXPECT_LT(seconds, 15) << c.name << " did not fail fast";
  }
  // A port another process holds is found before any node starts.
  int holder = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(good.node(1).port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  std::string output;
  EXPECT_EQ(RunProcess({Cluster(), "--config=" + WriteConfig(dir, good)}, &output), 2);
  EXPECT_NE(output.find("port " + std::to_string(good.node(1).port())), std::string::npos)
      << output;
  close(holder);
  // A bad flag is refused too.
  output.clear();
  EXPECT_NE(RunProcess({Cluster(), "--config=" + WriteConfig(dir, good), "--workload=nope"},
                       &output),
            0);
  EXPECT_NE(output.find("unknown workload 'nope'"), std::string::npos) << output;
}

// Ctrl-C: every node stops its load, drains, prints its summary, and the
// launcher prints the cluster's; nothing is left holding a port.
TEST(ClusterLifecycleTest, InterruptStopsEveryNodeCleanly) {
  TempDir dir;
  ClusterConfig config = MakeConfig("sigint", 3, 1, "tcp");
  // A small in-flight window: the nodes drain every txn already sequenced
  // before they exit, and the launcher kills what has not exited
  // --stop_timeout after the signal (a fixed 20 s when this failed). With
  // the default window (4,000 txns a sequencer) the backlog at start-up
  // took longer than that once, with four test shards and a build sharing
  // the machine's two cores.
  ChildProcess launcher({Cluster(), "--config=" + WriteConfig(dir, config), "--duration=0",
                         "--workload=mixed", "--records=30000", "--epoch_ms=5",
                         "--max_inflight=500", "--progress_ms=200",
                         "--logs=" + dir.path() + "/logs"});
  ASSERT_TRUE(launcher.WaitForOutput("[node 2] ", 60000)) << launcher.output();
  launcher.Signal(SIGINT);
  EXPECT_EQ(launcher.Wait(60000), 0) << launcher.output();
  EXPECT_NE(launcher.output().find("stopping every node"), std::string::npos);
  EXPECT_NE(launcher.output().find("=== cluster summary"), std::string::npos) << launcher.output();
  for (const NodeConfig& node : config.node()) {
    EXPECT_TRUE(testing::PortIsFree(node.port())) << "port " << node.port() << " still bound";
  }
}

// The pid of the process whose command line holds every one of `parts`
// (0: none).
pid_t FindProcess(const std::vector<std::string>& parts) {
  DIR* proc = opendir("/proc");
  pid_t found = 0;
  while (dirent* entry = proc ? readdir(proc) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    std::string line = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    std::replace(line.begin(), line.end(), '\0', ' ');
    if (std::all_of(parts.begin(), parts.end(),
                    [&](const std::string& part) { return line.find(part) != std::string::npos; })) {
      found = pid;
      break;
    }
  }
  if (proc) closedir(proc);
  return found;
}

// A node that cannot drain (stopped with SIGSTOP, it takes no SIGTERM) is
// killed --stop_timeout after Ctrl-C, not after a fixed wait, and the
// launcher says so and fails.
TEST(ClusterLifecycleTest, InterruptKillsANodeThatDoesNotExitAfterStopTimeout) {
  TempDir dir;
  ClusterConfig config = MakeConfig("stuck", 3, 1, "tcp");
  const std::string config_path = WriteConfig(dir, config);
  ChildProcess launcher({Cluster(), "--config=" + config_path, "--duration=0",
                         "--workload=mixed", "--records=3000", "--epoch_ms=5",
                         "--progress_ms=200", "--stop_timeout=1",
                         "--logs=" + dir.path() + "/logs"});
  ASSERT_TRUE(launcher.WaitForOutput("[node 2] ", 60000)) << launcher.output();
  const pid_t stuck = FindProcess({"paxflow-node", "--config=" + config_path, "--node_id=1"});
  ASSERT_NE(stuck, 0) << "node 1's process not found";
  ASSERT_EQ(kill(stuck, SIGSTOP), 0);
  const auto signalled = std::chrono::steady_clock::now();
  launcher.Signal(SIGINT);
  EXPECT_EQ(launcher.Wait(60000), 1) << launcher.output();
  const auto waited = std::chrono::steady_clock::now() - signalled;
  // Whatever happened, the stopped node does not outlive the test.
  if (FindProcess({"paxflow-node", "--config=" + config_path, "--node_id=1"}) == stuck) {
    kill(stuck, SIGKILL);
  }
  EXPECT_LT(waited, std::chrono::seconds(15)) << launcher.output();
  EXPECT_NE(launcher.output().find("killing the nodes still running"), std::string::npos)
      << launcher.output();
  for (const NodeConfig& node : config.node()) {
    EXPECT_TRUE(WaitUntil([&] { return testing::PortIsFree(node.port()); }, 10000))
        << "port " << node.port() << " still bound";
  }
}

// A node whose peers never come can still be stopped: it gives up its
// start-up wait on SIGTERM and says what it was waiting for.
TEST(ClusterLifecycleTest, NodeWaitingForPeersStopsOnSigterm) {
  TempDir dir;
  ClusterConfig config = MakeConfig("lonely", 3, 1, "tcp");
  ChildProcess node({BinaryDir() + "/paxflow-node", "--config=" + WriteConfig(dir, config),
                     "--node_id=0", "--records=3000", "--peer_wait_s=600"});
  ASSERT_TRUE(node.WaitForOutput("waiting for node 1", 30000)) << node.output();
  const auto signalled = std::chrono::steady_clock::now();
  node.Signal(SIGTERM);
  EXPECT_EQ(node.Wait(30000), 1) << node.output();
  EXPECT_LT(std::chrono::steady_clock::now() - signalled, std::chrono::seconds(5));
  EXPECT_NE(node.output().find("interrupted while waiting for node 1"), std::string::npos)
      << node.output();
}

// Garbage sent to a running node is counted and dropped; the node carries
// on, and its state is still exactly the serial execution of its input.
TEST(ClusterRobustnessTest, GarbledMessagesAreDroppedAndTheRunStaysCorrect) {
  TempDir logs;
  ClusterConfig config = MakeConfig("garbled", 2, 1, "tcp");
  NodeParams params = testing::TestParams("mixed", Mode::kPaxflow, 150);
  params.engine.log_dir = logs.path();
  params.workload.multi_partition_pct = 20;
  testing::InProcessCluster cluster(config, params);
  ASSERT_EQ(cluster.Start(), "");
  {
    zmq::context_t context(1);
    zmq::socket_t socket(context, zmq::socket_type::push);
    socket.set(zmq::sockopt::linger, 2000);
    socket.connect("tcp://127.0.0.1:" + std::to_string(config.node(0).port()));
    socket.send(zmq::str_buffer("not a paxflow message"), zmq::send_flags::none);
    socket.send(zmq::str_buffer("\x08\x01"), zmq::send_flags::sndmore);  // wrong magic
    socket.send(zmq::str_buffer("payload"), zmq::send_flags::none);
    auto send = [&](Channel channel, const std::string& payload) {
      Header header;
      header.set_magic(kHeaderMagic);
      header.set_channel(channel);
      header.set_from_node(1);
      socket.send(zmq::buffer(header.SerializeAsString()), zmq::send_flags::sndmore);
      socket.send(zmq::buffer(payload), zmq::send_flags::none);
    };
    for (Channel channel : {BATCH, REMOTE_READS, HELLO, static_cast<Channel>(77)}) {
      send(channel, "\xff\xff\xff garbage \x01");
    }
    // Well-formed protobufs that do not fit: reads with mismatched fields,
    // a batch for the other partition.
    RemoteReads reads;
    reads.set_txn_id(MakeTxnId(1000000, 0, 0));
    reads.set_from_partition(1);
    reads.add_position(0);
    send(REMOTE_READS, reads.SerializeAsString());
    Batch batch;
    batch.set_epoch(1000000);
    batch.set_partition(1);
    send(BATCH, batch.SerializeAsString());
  }
  ASSERT_TRUE(cluster.WaitFinished(120000));
  // Three dropped by the transport (one frame, wrong magic, unknown
  // channel), three unparsable payloads, and the two that do not fit.
  EXPECT_EQ(cluster.node(0).Summary().dropped_messages, 8u);
  testing::SerialResult serial = testing::SerialExecute(logs.path(), params.workload);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(cluster.DatabaseDigest(), serial.digest);
}

}  // namespace
}  // namespace paxflow
