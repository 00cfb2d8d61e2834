// paxflow-load: drives a running cluster through real clients (YCSB or
// bank), closed-loop (--outstanding per client) or open-loop (--rate), and
// reports end-to-end latency the YCSB way, plus JSON/CSV.
#include <gflags/gflags.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "applications/bank.h"
#include "applications/workload.h"
#include "client/client.h"
#include "client/request.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/histogram.h"
#include "common/json.h"
#include "base/flags.h"

DEFINE_int32(clients, 4, "Client connections (one thread each), spread over the nodes");
DEFINE_int32(outstanding, 16, "Closed loop: txns in flight per client");
DEFINE_double(rate, 0, "Open loop: target txns/s over all clients (0: closed loop)");
DEFINE_string(nodes, "", "Comma-separated node ids to load (default: every replica-0 node)");
DEFINE_string(report_json, "", "Write the report as JSON to this file");
DEFINE_string(report_csv, "", "Write the report as CSV to this file");
DEFINE_int32(drain_ms, 10000, "After the run, how long to wait for replies still due");

namespace paxflow {
namespace {

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "paxflow-load: %s\n", message.c_str());
  return code;
}

// What one client thread measured; the reporter reads it under the mutex.
struct ClientStats {
  std::mutex mu;
  Histogram latency_us[2];  // RO, RW
  uint64_t errors[8] = {};  // by ReplyStatus
  uint64_t declined = 0;
  uint64_t audit_violations = 0;
  uint64_t lost = 0;        // no reply by the end of the drain
  uint64_t skipped = 0;     // open loop: too far behind to send
};

class LoadClient {
 public:
  LoadClient(const Application* app, const WorkloadParams& workload, PartitionId partition,
             uint32_t partitions, uint64_t seed, std::string endpoint, ClientStats* stats)
      : app_(app),
        workload_(workload),
        generator_(app->NewGenerator(partition, partitions, seed)),
        endpoint_(std::move(endpoint)),
        stats_(stats) {}

  std::string Connect() { return client_.Connect(endpoint_); }

  // Runs until `stop_us`, then drains.
  void Run(int64_t stop_us, double rate_per_client) {
    const bool open_loop = rate_per_client > 0;
    const double interval_us = open_loop ? 1e6 / rate_per_client : 0;
    double next_send_us = static_cast<double>(NowMicros());
    while (true) {
      const int64_t now = NowMicros();
      if (now >= stop_us) break;
      if (open_loop) {
        // Latency counts from the scheduled send time, so a slow server
        // cannot hide queueing behind a slow client (coordinated omission).
        while (next_send_us <= now) {
          if (in_flight_.size() < 100000) SendOne(static_cast<int64_t>(next_send_us));
          else Count([&] { ++stats_->skipped; });
          next_send_us += interval_us;
        }
        const int wait_ms = std::max<int>(0, static_cast<int>((next_send_us - NowMicros()) / 1000));
        ReceiveOne(std::min(wait_ms, 50));
      } else {
        while (in_flight_.size() < static_cast<size_t>(FLAGS_outstanding)) SendOne(NowMicros());
        ReceiveOne(50);
      }
    }
    const int64_t drain_until = NowMicros() + FLAGS_drain_ms * 1000LL;
    while (!in_flight_.empty() && NowMicros() < drain_until) ReceiveOne(50);
    Count([&] { stats_->lost += in_flight_.size(); });
  }

 private:
  template <typename F>
  void Count(F f) {
    std::lock_guard<std::mutex> lock(stats_->mu);
    f();
  }

  void SendOne(int64_t scheduled_us) {
    Txn txn;
    generator_->Next(&txn);
    ClientRequest request;
    TxnRequest* body = request.mutable_txn();
    body->set_procedure(app_->ProcedureName(txn.procedure()));
    body->mutable_read_set()->Swap(txn.mutable_read_set());
    body->mutable_write_set()->Swap(txn.mutable_write_set());
    body->mutable_read_write_set()->Swap(txn.mutable_read_write_set());
    body->set_args(txn.args());
    const bool audit = workload_.application == "bank" && txn.procedure() == BankApplication::kAudit;
    const uint64_t id = client_.Send(std::move(request));
    in_flight_[id] = InFlight{scheduled_us, audit};
  }

  void ReceiveOne(int timeout_ms) {
    ClientReply reply;
    if (!client_.Receive(&reply, timeout_ms)) return;
    // Take everything already here before going back to sending.
    do {
      Handle(reply);
    } while (client_.Receive(&reply, 0));
  }

  void Handle(const ClientReply& reply) {
    auto it = in_flight_.find(reply.request_id());
    if (it == in_flight_.end()) return;
    const InFlight sent = it->second;
    in_flight_.erase(it);
    const int64_t latency = NowMicros() - sent.scheduled_us;
    std::lock_guard<std::mutex> lock(stats_->mu);
    if (reply.status() != OK) {
      ++stats_->errors[std::min<int>(reply.status(), 7)];
      return;
    }
    const TxnReply& txn = reply.txn();
    stats_->latency_us[txn.txn_class() == "RO" ? 0 : 1].Record(static_cast<uint64_t>(latency));
    if (!txn.committed()) ++stats_->declined;
    if (sent.audit) {
      // Check the audit ourselves from the balances it returned.
      int64_t total = 0;
      for (const KeyValue& read : txn.reads()) total += BankApplication::DecodeBalance(read.value());
      const int64_t expected =
          static_cast<int64_t>(workload_.bank_accounts) * workload_.bank_initial_balance;
      if (total != expected || !txn.invariant_ok()) ++stats_->audit_violations;
    }
  }

  struct InFlight {
    int64_t scheduled_us;
    bool audit;
  };
  const Application* app_;
  const WorkloadParams workload_;
  std::unique_ptr<TxnGenerator> generator_;
  std::string endpoint_;
  ClientStats* stats_;
  Client client_;
  std::unordered_map<uint64_t, InFlight> in_flight_;
};

void Merge(std::vector<std::unique_ptr<ClientStats>>& stats, ClientStats* total) {
  for (auto& s : stats) {
    std::lock_guard<std::mutex> lock(s->mu);
    for (int k = 0; k < 2; ++k) total->latency_us[k].Merge(s->latency_us[k]);
    for (int e = 0; e < 8; ++e) total->errors[e] += s->errors[e];
    total->declined += s->declined;
    total->audit_violations += s->audit_violations;
    total->lost += s->lost;
    total->skipped += s->skipped;
  }
}

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "drives a running cluster through real clients and reports end-to-end latency.\n"
      "  paxflow-load --config=deployment/local-3.conf --workload=mixed --duration=10 "
      "[--clients=4 --outstanding=16 | --rate=5000]\n"
      "Start the cluster with --generate=false --duration=0 so that clients are the only load.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) return Fail(std::string("unexpected argument '") + argv[1] + "'");
  if (FLAGS_config.empty()) return Fail("--config is required; see --help");
  if (FLAGS_clients < 1 || FLAGS_clients > 1024) return Fail("--clients must be 1..1024");
  if (FLAGS_outstanding < 1) return Fail("--outstanding must be at least 1");
  if (FLAGS_rate < 0) return Fail("--rate must be >= 0");
  if (!(FLAGS_duration > 0)) return Fail("--duration must be positive");
  ClusterConfig config;
  ClusterLayout layout;
  std::string error = LoadValidClusterConfig(FLAGS_config, &config, &layout);
  if (!error.empty()) return Fail(error);
  NodeParams resolved;
  error = ResolveFlags(ConfigParams(config), ExplicitFlags(), layout.partitions(), &resolved);
  if (!error.empty()) return Fail(error);
  std::unique_ptr<Application> app = MakeApplication(resolved.workload);

  std::vector<const NodeConfig*> nodes;
  for (const NodeConfig& node : config.node()) {
    const bool listed = FLAGS_nodes.empty()
                            ? node.replica() == 0
                            : ("," + FLAGS_nodes + ",").find("," + std::to_string(node.id()) + ",") !=
                                  std::string::npos;
    if (listed && node.client_port() != 0) nodes.push_back(&node);
  }
  if (nodes.empty()) return Fail("no node to load (none with a client_port among --nodes)");

  std::vector<std::unique_ptr<ClientStats>> stats;
  std::vector<std::unique_ptr<LoadClient>> clients;
  zmq::context_t context(1);
  for (int i = 0; i < FLAGS_clients; ++i) {
    const NodeConfig* node = nodes[i % nodes.size()];
    stats.push_back(std::make_unique<ClientStats>());
    clients.push_back(std::make_unique<LoadClient>(
        app.get(), resolved.workload, node->partition(), layout.partitions(),
        resolved.engine.seed * 7919 + i, ClientEndpoint(*node), stats.back().get()));
    error = clients.back()->Connect();
    if (!error.empty()) return Fail(error, 1);
  }
  std::printf("[load] %d client(s) on %zu node(s), workload %s, %s, %.0f s\n", FLAGS_clients,
              nodes.size(), resolved.workload.workload.c_str(),
              FLAGS_rate > 0 ? ("open loop at " + std::to_string(static_cast<int64_t>(FLAGS_rate)) + " txn/s").c_str()
                             : ("closed loop, " + std::to_string(FLAGS_outstanding) + " in flight each").c_str(),
              FLAGS_duration);
  std::fflush(stdout);
  const int64_t start = NowMicros();
  const int64_t stop = start + static_cast<int64_t>(FLAGS_duration * 1e6);
  std::vector<std::thread> threads;
  for (auto& client : clients) {
    threads.emplace_back([&, c = client.get()] { c->Run(stop, FLAGS_rate / FLAGS_clients); });
  }
  // Progress once a second: elapsed/total, throughput, p99 so far.
  uint64_t last_ops = 0;
  int64_t last_us = start;
  while (NowMicros() < stop) {
    std::this_thread::sleep_for(std::chrono::seconds(1));  // a reporting period, not synchronisation
    ClientStats total;
    Merge(stats, &total);
    const uint64_t ops = total.latency_us[0].count() + total.latency_us[1].count();
    const int64_t now = NowMicros();
    Histogram all = total.latency_us[0];
    all.Merge(total.latency_us[1]);
    std::printf("[load] %3.0f/%.0f s  %8.0f txn/s  p99 %.2f ms  errors %llu\n",
                (now - start) / 1e6, FLAGS_duration, (ops - last_ops) * 1e6 / (now - last_us),
                all.Quantile(0.99) / 1000.0,
                static_cast<unsigned long long>(total.errors[1] + total.errors[2] + total.errors[3] +
                                                total.errors[4] + total.errors[5] + total.errors[6]));
    std::fflush(stdout);
    last_ops = ops;
    last_us = now;
  }
  for (auto& thread : threads) thread.join();
  const double seconds = FLAGS_duration;

  ClientStats total;
  Merge(stats, &total);
  const uint64_t ops = total.latency_us[0].count() + total.latency_us[1].count();
  uint64_t errors = 0;
  for (int e = 1; e < 8; ++e) errors += total.errors[e];
  std::printf("[OVERALL], RunTime(ms), %.0f\n", seconds * 1000);
  std::printf("[OVERALL], Throughput(ops/sec), %.2f\n", ops / seconds);
  std::string json = "{\"runtime_ms\":" + std::to_string(seconds * 1000) +
                     ",\"throughput\":" + std::to_string(ops / seconds) + ",\"kinds\":{";
  std::string csv = "kind,operations,average_us,min_us,max_us,p50_us,p95_us,p99_us\n";
  const char* names[2] = {"RO", "RW"};
  for (int k = 0; k < 2; ++k) {
    const Histogram& h = total.latency_us[k];
    if (h.count() > 0) {
      std::printf("[%s], Operations, %llu\n", names[k], static_cast<unsigned long long>(h.count()));
      std::printf("[%s], AverageLatency(us), %.1f\n", names[k], h.Mean());
      std::printf("[%s], MaxLatency(us), %llu\n", names[k], static_cast<unsigned long long>(h.max()));
      std::printf("[%s], 50thPercentileLatency(us), %llu\n", names[k],
                  static_cast<unsigned long long>(h.Quantile(0.5)));
      std::printf("[%s], 95thPercentileLatency(us), %llu\n", names[k],
                  static_cast<unsigned long long>(h.Quantile(0.95)));
      std::printf("[%s], 99thPercentileLatency(us), %llu\n", names[k],
                  static_cast<unsigned long long>(h.Quantile(0.99)));
    }
    if (k) json += ",";
    json += "\"" + std::string(names[k]) + "\":{\"operations\":" + std::to_string(h.count()) +
            ",\"average_us\":" + std::to_string(h.Mean()) + ",\"max_us\":" +
            std::to_string(h.max()) + ",\"p50_us\":" + std::to_string(h.Quantile(0.5)) +
            ",\"p95_us\":" + std::to_string(h.Quantile(0.95)) +
            ",\"p99_us\":" + std::to_string(h.Quantile(0.99)) + "}";
    csv += std::string(names[k]) + "," + std::to_string(h.count()) + "," + std::to_string(h.Mean()) +
           ",0," + std::to_string(h.max()) + "," + std::to_string(h.Quantile(0.5)) + "," +
           std::to_string(h.Quantile(0.95)) + "," + std::to_string(h.Quantile(0.99)) + "\n";
  }
  std::printf("[ERRORS], Total, %llu\n", static_cast<unsigned long long>(errors));
  for (int e = 1; e < 8; ++e) {
    if (total.errors[e]) {
      std::printf("[ERRORS], %s, %llu\n", ReplyStatusName(static_cast<ReplyStatus>(e)),
                  static_cast<unsigned long long>(total.errors[e]));
    }
  }
  std::printf("[CLIENT], Lost(no reply), %llu\n", static_cast<unsigned long long>(total.lost));
  std::printf("[CLIENT], Skipped(behind schedule), %llu\n", static_cast<unsigned long long>(total.skipped));
  std::printf("[TXN], Declined, %llu\n", static_cast<unsigned long long>(total.declined));
  if (resolved.workload.application == "bank") {
    std::printf("[BANK], AuditViolations, %llu\n", static_cast<unsigned long long>(total.audit_violations));
  }
  json += "},\"errors\":" + std::to_string(errors) + ",\"lost\":" + std::to_string(total.lost) +
          ",\"skipped\":" + std::to_string(total.skipped) + ",\"declined\":" +
          std::to_string(total.declined) + ",\"audit_violations\":" +
          std::to_string(total.audit_violations) + "}";
  if (!FLAGS_report_json.empty()) std::ofstream(FLAGS_report_json) << json << "\n";
  if (!FLAGS_report_csv.empty()) std::ofstream(FLAGS_report_csv) << csv;
  return errors > 0 || total.lost > 0 || total.audit_violations > 0 ? 1 : 0;
}

}  // namespace
}  // namespace paxflow

int main(int argc, char** argv) { return paxflow::Main(argc, argv); }
