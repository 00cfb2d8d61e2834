// The metrics endpoint's pieces: Prometheus's text format as MetricsText
// writes it, and the HTTP server (answers, refusals, a port in use).
#include <gtest/gtest.h>

#include <atomic>

#include "common/config.h"
#include "metrics/exposition.h"
#include "metrics/metrics_server.h"
#include "tests/http_get.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::HttpGet;
using testing::SendRaw;

TEST(MetricsTextTest, FamiliesStayTogetherWithOneHelpAndType) {
  MetricsText out;
  out.Counter("a_total", "A's help", 1, {{"kind", "ro"}});
  out.Gauge("b_bytes", "B's help\nsecond line", 2.5);
  out.Counter("a_total", "ignored", 3, {{"kind", "rw\"\\\n"}});
  EXPECT_EQ(out.Text(),
            "# HELP a_total A's help\n"
            "# TYPE a_total counter\n"
            "a_total{kind=\"ro\"} 1\n"
            "a_total{kind=\"rw\\\"\\\\\\n\"} 3\n"
            "# HELP b_bytes B's help\\nsecond line\n"
            "# TYPE b_bytes gauge\n"
            "b_bytes 2.5\n");
}

TEST(MetricsTextTest, NumbersReadBackExactly) {
  EXPECT_EQ(MetricsText::FormatValue(0.0001), "0.0001");
  EXPECT_EQ(MetricsText::FormatValue(12345678901234), "12345678901234");
  EXPECT_EQ(MetricsText::FormatValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(MetricsText::FormatValue(1.0 / 0.0), "+Inf");
}

TEST(MetricsTextTest, LatencyHistogramIsCumulativeInSeconds) {
  Histogram micros;
  micros.Record(50);         // 50 us: in every bucket
  micros.Record(3000);       // 3 ms: from le=0.005 on
  micros.Record(120000000);  // 120 s: only in +Inf
  MetricsText out;
  out.HistogramSeconds("lat_seconds", "latency", micros, {{"kind", "ro"}});
  const std::string text = out.Text();
  EXPECT_NE(text.find("# TYPE lat_seconds histogram\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_bucket{kind=\"ro\",le=\"0.0001\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_bucket{kind=\"ro\",le=\"0.0025\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_bucket{kind=\"ro\",le=\"0.005\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_bucket{kind=\"ro\",le=\"60\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_bucket{kind=\"ro\",le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_sum{kind=\"ro\"} 120.00305\n"), std::string::npos) << text;
  EXPECT_NE(text.find("lat_seconds_count{kind=\"ro\"} 3\n"), std::string::npos) << text;
}

TEST(MetricsServerTest, ServesMetricsRefusesTheRestAndGoesOn) {
  std::atomic<int> scrapes{0};
  MetricsServer server([&] { return "up " + std::to_string(++scrapes) + "\n"; });
  ASSERT_EQ(server.Listen("127.0.0.1", 0), "");
  server.Start();
  const uint16_t port = server.port();
  ASSERT_NE(port, 0);
  std::string body;
  EXPECT_EQ(HttpGet(port, "/metrics", &body), 200);
  EXPECT_EQ(body, "up 1\n");
  EXPECT_EQ(HttpGet(port, "/metrics?x=1", &body), 200);
  EXPECT_EQ(HttpGet(port, "/", &body), 404);
  EXPECT_EQ(HttpGet(port, "/metricsx", &body), 404);
  // Not HTTP: a 400, the connection closed, and the server carries on.
  EXPECT_EQ(SendRaw(port, "GARBAGE\r\n\r\n").rfind("HTTP/1.1 400 Bad Request\r\n", 0), 0u);
  EXPECT_EQ(SendRaw(port, std::string("GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: zz\r\n\r\n"))
                .rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(SendRaw(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 2\r\n\r\nab")
                .rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(SendRaw(port, "GET /metrics HTTP/1.1\r\nX: " + std::string(20000, 'A') + "\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(HttpGet(port, "/metrics", &body), 200);
  EXPECT_EQ(body, "up 3\n");
  server.Stop();
  EXPECT_EQ(HttpGet(port, "/metrics", &body, 500), 0);
}

TEST(MetricsServerTest, APortInUseIsRefusedWithTheReason) {
  MetricsServer first([] { return std::string(); });
  ASSERT_EQ(first.Listen("127.0.0.1", 0), "");
  MetricsServer second([] { return std::string(); });
  const std::string error = second.Listen("127.0.0.1", first.port());
  EXPECT_NE(error.find("cannot listen on 127.0.0.1:" + std::to_string(first.port())),
            std::string::npos) << error;
  EXPECT_NE(error.find("in use"), std::string::npos) << error;
  // An address not of this machine (TEST-NET-1).
  EXPECT_NE(MetricsServer([] { return std::string(); }).Listen("192.0.2.1", 0).find("cannot listen"),
            std::string::npos);
}

// deployment/prometheus.yml is a valid scrape config and scrapes every
// node of every example cluster at its metrics port.
TEST(DeploymentMetricsTest, ScrapeConfigCoversEveryExampleNode) {
  const std::string yml = testing::SourceDir() + "/deployment/prometheus.yml";
  std::string output;
  EXPECT_EQ(testing::RunProcess({"/usr/bin/promtool", "check", "config", yml}, &output), 0)
      << output;
  const std::string text = testing::ReadFile(yml);
  for (const char* name : {"local-1", "local-3", "local-2x2", "netns-3", "hosts-3"}) {
    ClusterConfig config;
    ASSERT_EQ(LoadClusterConfig(testing::SourceDir() + "/deployment/" + name + ".conf", &config),
              "");
    EXPECT_NE(text.find("job_name: " + std::string(name) + "\n"), std::string::npos) << name;
    for (const NodeConfig& node : config.node()) {
      ASSERT_NE(node.metrics_port(), 0u) << name << " node " << node.id();
      EXPECT_NE(text.find("'" + node.host() + ":" + std::to_string(node.metrics_port()) + "'"),
                std::string::npos)
          << name << " node " << node.id();
    }
  }
}

}  // namespace
}  // namespace paxflow
