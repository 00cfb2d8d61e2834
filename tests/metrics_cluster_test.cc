// The metrics endpoint of real nodes: promtool accepts what a live node
// serves, a node refuses to start on a metrics port in use, and a real
// Prometheus server scraping a 3-node loopback cluster under load gets the
// cluster's committed rate from a query over its HTTP API.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>

#include "common/config.h"
#include "common/json.h"
#include "tests/http_get.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::BinaryDir;
using testing::ChildProcess;
using testing::ClusterVerbs;
using testing::FreePorts;
using testing::FreePortsBesides;
using testing::HttpGet;
using testing::RunProcess;
using testing::TempDir;
using testing::WaitUntil;

const std::vector<std::string> kNodeFlags = {"--duration=0", "--workload=mixed",
                                             "--records=3000", "--epoch_ms=5",
                                             "--progress_ms=0", "--max_inflight=400"};

// A detached loopback cluster whose config gives every node a metrics port.
class MetricsCluster {
 public:
  MetricsCluster(const std::string& name, uint32_t partitions) {
    config_ = testing::MakeConfig(name, partitions, 1, "tcp");
    const std::vector<uint32_t> ports = FreePortsBesides(partitions, config_);
    for (uint32_t i = 0; i < partitions; ++i) config_.mutable_node(i)->set_metrics_port(ports[i]);
    config_path_ = dir_.path() + "/cluster.conf";
    std::ofstream(config_path_) << testing::ToText(config_);
    verbs_ = std::make_unique<ClusterVerbs>(config_path_, dir_.path() + "/logs");
  }
  void Start() {
    std::vector<std::string> flags = kNodeFlags;
    flags.push_back("--log_dir=" + dir_.path() + "/input");
    std::string output;
    ASSERT_EQ(verbs_->Run("start", flags, &output), 0) << output;
  }
  uint16_t metrics_port(int i) const { return static_cast<uint16_t>(config_.node(i).metrics_port()); }
  const ClusterConfig& config() const { return config_; }
  const std::string& config_path() const { return config_path_; }
  const TempDir& dir() const { return dir_; }
  void Stop() {
    std::string output;
    EXPECT_EQ(verbs_->Run("stop", {"--stop_timeout=30"}, &output), 0) << output;
  }
  // Kills every node (SIGKILL) and restarts them from their logs, once the
  // killed ones have exited (a zombie holds no ports any more).
  void KillAndRestart() {
    for (pid_t pid : verbs_->Pids()) {
      ASSERT_EQ(kill(pid, SIGKILL), 0);
      const std::string stat = "/proc/" + std::to_string(pid) + "/stat";
      ASSERT_TRUE(WaitUntil([&] {
        const std::string text = testing::ReadFile(stat);
        const size_t paren = text.rfind(')');
        return text.empty() || (paren != std::string::npos && paren + 2 < text.size() &&
                                text[paren + 2] == 'Z');
      }, 5000));
    }
    std::string output;
    ASSERT_EQ(verbs_->Run("restart", {"--node=all"}, &output), 0) << output;
  }

 private:
  TempDir dir_;
  ClusterConfig config_;
  std::string config_path_;
  std::unique_ptr<ClusterVerbs> verbs_;  // its destructor stops what a failed test left
};

// The value of `name` (no labels) in a scrape, or -1.
double Sample(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + name.size() + 2, nullptr);
}

// Wall-clock seconds now.
double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// paxflow_checkpoint_age_seconds is the time since the newest checkpoint
// was written, by the wall clock: it counts the time the node was down, so
// after a restart it is at least the time since the checkpoint was asked.
TEST(MetricsClusterTest, CheckpointAgeIsWallTimeSinceTheCheckpointAcrossARestart) {
  MetricsCluster cluster("metrics-ckpt-age", 1);
  cluster.Start();
  std::string output, text;
  const double asked = WallSeconds();
  ASSERT_EQ(RunProcess({BinaryDir() + "/paxflow-cli", "--config=" + cluster.config_path(),
                        "checkpoint"}, &output), 0) << output;
  const double written = WallSeconds();  // the checkpoint was written in [asked, written]
  ASSERT_EQ(HttpGet(cluster.metrics_port(0), "/metrics", &text), 200);
  EXPECT_GT(Sample(text, "paxflow_checkpoint_epoch"), 0) << text;
  EXPECT_LE(Sample(text, "paxflow_checkpoint_age_seconds"), WallSeconds() - asked + 0.01) << text;
  cluster.KillAndRestart();
  ASSERT_TRUE(WaitUntil([&] {
    return HttpGet(cluster.metrics_port(0), "/metrics", &text) == 200 &&
           Sample(text, "paxflow_checkpoint_age_seconds") >= 0;
  }, 10000));
  const double scraped = WallSeconds();
  const double age = Sample(text, "paxflow_checkpoint_age_seconds");
  // Restarted, the node holds the same checkpoint; its age kept counting
  // while the node was down (epochs x epoch length would not have).
  EXPECT_GE(age, scraped - written - 0.05) << text;
  EXPECT_LE(age, WallSeconds() - asked + 0.01) << text;
  cluster.Stop();
}

TEST(MetricsClusterTest, PromtoolAcceptsWhatALiveNodeServes) {
  MetricsCluster cluster("metrics-promtool", 1);
  cluster.Start();
  std::string text;
  // Committed txns show once the load runs.
  ASSERT_TRUE(WaitUntil([&] {
    return HttpGet(cluster.metrics_port(0), "/metrics", &text) == 200 &&
           text.find("paxflow_txns_committed_total{kind=\"rw\"} 0\n") == std::string::npos &&
           text.find("paxflow_txns_committed_total{kind=\"rw\"} ") != std::string::npos;
  }, 20000)) << text;
  const std::string path = cluster.dir().path() + "/metrics.txt";
  std::ofstream(path) << text;
  std::string output;
  EXPECT_EQ(RunProcess({"/bin/sh", "-c", "promtool check metrics < " + path}, &output), 0)
      << output << "\n" << text;
  EXPECT_EQ(output, "") << "promtool's remarks on the names or help texts";
  // Every figure the issue names is there.
  for (const char* name :
       {"paxflow_txns_aborted_total{kind=\"ltx\"}", "paxflow_ltx_aborts_total{reason=\"busy\"}",
        "paxflow_txn_latency_seconds_bucket{kind=\"ro\",le=\"+Inf\"}",
        "paxflow_txn_latency_seconds_bucket{kind=\"ltx\",le=\"0.01\"}",
        "paxflow_ro_visibility_delay_seconds_count", "paxflow_sequenced_epoch",
        "paxflow_admitted_epoch", "paxflow_published_epoch", "paxflow_publish_lag_epochs",
        "paxflow_pending_txns", "paxflow_ltx_deferred_txns", "paxflow_ltx_parked_reads",
        "paxflow_store_versions", "paxflow_store_reclaimed_versions_total",
        "process_resident_memory_bytes", "paxflow_input_log_written_bytes_total",
        "paxflow_input_log_sync_seconds_count", "paxflow_checkpoint_age_seconds",
        "paxflow_client_busy_replies_total", "paxflow_node_state{state=\"running\"} 1"}) {
    EXPECT_NE(text.find(name), std::string::npos) << name;
  }
  EXPECT_GT(Sample(text, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(Sample(text, "paxflow_input_log_written_bytes_total"), 0);
  cluster.Stop();
}

TEST(MetricsClusterTest, AMetricsPortInUseRefusesTheStartNamingTheFlag) {
  MetricsCluster cluster("metrics-busy", 1);
  cluster.Start();
  const NodeConfig& node = cluster.config().node(0);
  // A second node of another config, told to use the first one's port.
  ClusterConfig other = testing::MakeConfig("metrics-busy-2", 1, 1, "tcp");
  const std::string other_path = cluster.dir().path() + "/other.conf";
  std::ofstream(other_path) << testing::ToText(other);
  std::string output;
  const int rc = RunProcess({BinaryDir() + "/paxflow-node", "--config=" + other_path, "--node_id=0",
                             "--records=3000", "--metrics_port=" + std::to_string(node.metrics_port())},
                            &output);
  EXPECT_EQ(rc, 1) << output;
  EXPECT_NE(output.find("--metrics_port"), std::string::npos) << output;
  EXPECT_NE(output.find("in use"), std::string::npos) << output;
  // The running node is not disturbed.
  std::string text;
  EXPECT_EQ(HttpGet(cluster.metrics_port(0), "/metrics", &text), 200);
  // A bad value is refused by name.
  EXPECT_EQ(RunProcess({BinaryDir() + "/paxflow-node", "--config=" + other_path, "--node_id=0",
                        "--metrics_port=70000"}, &output), 2) << output;
  EXPECT_NE(output.find("metrics_port=70000 is out of range"), std::string::npos) << output;
  cluster.Stop();
}

// The first value of a Prometheus instant-query answer, or -1.
double QueryValue(const std::string& json) {
  JsonValue root;
  if (!ParseJson(json, &root).empty() || root.StringOr("status", "") != "success") return -1;
  const JsonValue* data = root.Find("data");
  const JsonValue* result = data ? data->Find("result") : nullptr;
  if (!result || result->type != JsonValue::kArray || result->array.empty()) return -1;
  const JsonValue* value = result->array[0].Find("value");
  if (!value || value->type != JsonValue::kArray || value->array.size() != 2) return -1;
  return std::strtod(value->array[1].text.c_str(), nullptr);
}

TEST(MetricsClusterTest, PrometheusScrapesTheClusterAndGetsItsCommittedRate) {
  MetricsCluster cluster("metrics-prometheus", 3);
  cluster.Start();
  // A scrape config like deployment/prometheus.yml's, for this cluster.
  const std::string dir = cluster.dir().path();
  std::string targets;
  for (const NodeConfig& node : cluster.config().node()) {
    targets += "      - targets: ['127.0.0.1:" + std::to_string(node.metrics_port()) + "']\n" +
               "        labels: {node: '" + std::to_string(node.id()) + "', partition: '" +
               std::to_string(node.partition()) + "', replica: '" +
               std::to_string(node.replica()) + "'}\n";
  }
  std::ofstream(dir + "/prometheus.yml")
      << "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
      << "scrape_configs:\n  - job_name: paxflow\n    static_configs:\n" << targets;
  const uint16_t port = static_cast<uint16_t>(FreePorts(1)[0]);
  ChildProcess prometheus({"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                           "--storage.tsdb.path=" + dir + "/tsdb",
                           "--web.listen-address=127.0.0.1:" + std::to_string(port),
                           "--log.level=warn"});
  std::string body;
  ASSERT_TRUE(WaitUntil([&] { return HttpGet(port, "/-/ready", &body, 500) == 200; }, 30000))
      << "prometheus not ready: " << body;
  // Every node is scraped and up.
  EXPECT_TRUE(WaitUntil([&] {
    return HttpGet(port, "/api/v1/query?query=sum(up%7Bjob%3D%22paxflow%22%7D)", &body) == 200 &&
           QueryValue(body) == 3;
  }, 20000)) << body;
  // sum(rate(paxflow_txns_committed_total{replica="0"}[5s])): the cluster's rate.
  const std::string query =
      "/api/v1/query?query=sum(rate(paxflow_txns_committed_total%7Breplica%3D%220%22%7D%5B5s%5D))";
  double rate = -1;
  EXPECT_TRUE(WaitUntil([&] {
    rate = HttpGet(port, query, &body) == 200 ? QueryValue(body) : -1;
    return rate > 0;
  }, 20000)) << body;
  EXPECT_GT(rate, 0) << body;
  prometheus.Signal(SIGTERM);  // a clean stop; the destructor kills it if it hangs
  EXPECT_EQ(prometheus.Wait(20000), 0) << prometheus.output();
  cluster.Stop();
}

}  // namespace
}  // namespace paxflow
