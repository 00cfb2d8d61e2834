// paxflow-load: drives a running cluster through real clients (YCSB, bank
// or TPC-C, LTXs included when the workload generates them): closed loop
// (--outstanding per client), open loop (--rate, or a --rate_schedule), or a
// latency-throughput sweep (--sweep: open loop at fractions of the
// capacity). Reports end-to-end latency the YCSB way, plus JSON/CSV.
#include <gflags/gflags.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "auth/client_keys.h"
#include "base/flags.h"
#include "applications/tpcc.h"
#include "client/load_driver.h"
#include "client/request.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/json.h"

DEFINE_int32(clients, 2, "Client connections (one thread each), spread over the nodes");
DEFINE_int32(outstanding, 1000, "Closed loop: txns in flight per client");
DEFINE_double(rate, 0, "Open loop: target txns/s over all clients (0: closed loop)");
DEFINE_string(rate_schedule, "",
              "Open loop on a schedule: RATE:SECONDS,... (txn/s over all clients, e.g. "
              "5000:5,120000:30,5000:5); replaces --rate and --duration");
DEFINE_int32(batch, 256, "Most txns per request message (1: one message per txn)");
DEFINE_int32(tick_ms, 1, "Open loop: txns due leave together every tick");
DEFINE_bool(retry_busy, true, "Resubmit txns refused BUSY after a backoff (else give them up)");
DEFINE_int32(busy_backoff_ms, 0,
             "First backoff after a BUSY reply (0: the node's hint, one epoch); doubles per "
             "retry up to --busy_backoff_max_ms; each wait is a random point in the upper "
             "half of that");
DEFINE_int32(busy_backoff_max_ms, 500,
             "Longest backoff after BUSY replies, jitter included (at least 1)");
DEFINE_int32(max_retries, 50, "BUSY retries of one txn before it is given up");
DEFINE_string(nodes, "", "Comma-separated node ids to load (default: every replica-0 node)");
DEFINE_string(report_json, "", "Write the report (or the sweep) as JSON to this file");
DEFINE_string(report_csv, "", "Write the report (or the sweep) as CSV to this file");
DEFINE_string(timeline_csv, "",
              "Write latency per --timeline_ms of scheduled send time (count, busy, p50, "
              "p99, and the node's p50 and p99) as CSV to this file");
DEFINE_int32(timeline_ms, 100, "Interval of --timeline_csv");
DEFINE_int32(drain_ms, 10000, "After the run, how long to wait for replies still due");
DEFINE_string(sweep, "",
              "Latency-throughput sweep: open loop at these percentages of the capacity, "
              "--duration each, e.g. 10,20,30,40,50,60,70,80,90,100,110,120 (not with --rate "
              "or --rate_schedule)");
DEFINE_double(capacity, 0,
              "Sweep: the capacity in txn/s (0: measure it first, closed loop for "
              "--capacity_s)");
DEFINE_double(capacity_s, 5, "Sweep: seconds of the closed-loop capacity measurement");
DEFINE_bool(allow_busy, false, "Exit 0 even if txns were given up after BUSY replies");
DEFINE_double(wait_ready_s, 0,
              "First wait up to this many seconds for every node to answer (a cluster still "
              "loading its data); 0: start at once");

namespace paxflow {
namespace {

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "paxflow-load: %s\n", message.c_str());
  return code;
}

double Ms(uint64_t micros) { return micros / 1000.0; }

std::string Fixed(double x, int digits = 2) {
  char buffer[48];
  snprintf(buffer, sizeof(buffer), "%.*f", digits, x);
  return buffer;
}

std::string ParseSchedule(const std::string& text, std::vector<RateStep>* steps) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    RateStep step;
    char* end = nullptr;
    step.rate = std::strtod(item.c_str(), &end);
    if (*end != ':') return "--rate_schedule: '" + item + "' is not RATE:SECONDS";
    step.seconds = std::strtod(end + 1, &end);
    if (*end != '\0' || !(step.rate >= 0) || !(step.seconds > 0)) {
      return "--rate_schedule: '" + item + "' needs a rate >= 0 and seconds > 0";
    }
    steps->push_back(step);
  }
  if (steps->empty()) return "--rate_schedule is empty";
  return "";
}

std::string ParsePercents(const std::string& text, std::vector<double>* out) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    char* end = nullptr;
    const double pct = std::strtod(item.c_str(), &end);
    if (*end != '\0' || !(pct > 0) || pct > 1000) {
      return "--sweep: '" + item + "' is not a percentage in (0, 1000]";
    }
    out->push_back(pct);
  }
  if (out->empty()) return "--sweep is empty";
  return "";
}

// All client threads, one phase at a time.
class LoadRun {
 public:
  LoadRun(std::vector<std::unique_ptr<LoadClient>>* clients, double epoch_ms)
      : clients_(clients), epoch_ms_(epoch_ms) {}

  // A phase: closed loop for `seconds` (steps empty) or open loop on
  // `steps` (rates over all clients). Prints a progress line a second
  // unless `quiet`. Returns what every client measured.
  LoadStats Phase(double seconds, std::vector<RateStep> steps, bool quiet) {
    for (auto& client : *clients_) client->Reset();
    const double n = static_cast<double>(clients_->size());
    for (RateStep& step : steps) step.rate /= n;
    const int64_t start = NowMicros() + 20000;  // every thread starts on the same schedule
    const int64_t stop = start + static_cast<int64_t>(seconds * 1e6);
    std::vector<std::thread> threads;
    for (auto& client : *clients_) {
      threads.emplace_back([&, c = client.get()] { c->Run(start, stop, steps); });
    }
    uint64_t last_ops = 0, last_busy = 0;
    int64_t last_us = start;
    while (NowMicros() < stop) {
      // A reporting period, not synchronisation.
      std::this_thread::sleep_for(std::chrono::milliseconds(
          std::max<int64_t>(1, std::min<int64_t>(1000, (stop - NowMicros()) / 1000))));
      const int64_t now = NowMicros();
      if (quiet || now >= stop) continue;
      const LoadStats total = Merged(false);
      Histogram all;
      for (const Histogram& h : total.latency_us) all.Merge(h);
      const double period = std::max<int64_t>(1, now - last_us) / 1e6;
      std::printf("[load] %5.1f/%.0f s  %8.0f txn/s  busy %6.0f/s  p50 %.2f ms  p99 %.2f ms  "
                  "errors %llu\n",
                  (now - start) / 1e6, seconds, (total.Completed() - last_ops) / period,
                  (total.busy - last_busy) / period, Ms(all.Quantile(0.5)),
                  Ms(all.Quantile(0.99)), static_cast<unsigned long long>(total.Errors()));
      std::fflush(stdout);
      last_ops = total.Completed();
      last_busy = total.busy;
      last_us = now;
    }
    for (auto& thread : threads) thread.join();
    return Merged();
  }

 private:
  LoadStats Merged(bool buckets = true) const {
    LoadStats total;
    for (const auto& client : *clients_) total.Merge(client->Snapshot(buckets), buckets);
    return total;
  }
  std::vector<std::unique_ptr<LoadClient>>* clients_;
  double epoch_ms_;
};

std::string KindJson(const Histogram& h) {
  return "{\"operations\":" + std::to_string(h.count()) + ",\"average_us\":" +
         Fixed(h.Mean(), 1) + ",\"max_us\":" + std::to_string(h.max()) +
         ",\"p50_us\":" + std::to_string(h.Quantile(0.5)) +
         ",\"p95_us\":" + std::to_string(h.Quantile(0.95)) +
         ",\"p99_us\":" + std::to_string(h.Quantile(0.99)) + "}";
}

// "LABEL p50/p99/max(us), a, b, c", when anything was recorded.
void PrintSpread(const char* label, const Histogram& h) {
  if (h.count() == 0) return;
  std::printf("%s p50/p99/max(us), %llu, %llu, %llu\n", label,
              static_cast<unsigned long long>(h.Quantile(0.5)),
              static_cast<unsigned long long>(h.Quantile(0.99)),
              static_cast<unsigned long long>(h.max()));
}

// The YCSB-style report of one run, and its JSON and CSV.
// Per procedure, when the workload has several (TPC-C's five, bank's
// transfers and audits...): throughput, commits, declines, latency.
// TPC-C adds tpmC, its New-Orders committed per minute.
std::string ReportProcedures(const LoadStats& total, double seconds, const Application& app,
                             const std::string& application) {
  if (total.by_procedure.size() < 2) return "";
  std::string json = ",\"procedures\":{";
  bool first = true;
  for (const auto& [id, stats] : total.by_procedure) {
    const char* name = app.ProcedureName(id);
    const Histogram& h = stats.latency_us;
    std::printf("[%s], Operations, %llu\n", name, static_cast<unsigned long long>(h.count()));
    std::printf("[%s], Throughput(ops/sec), %.2f\n", name, h.count() / seconds);
    std::printf("[%s], Committed, %llu\n", name, static_cast<unsigned long long>(stats.committed));
    std::printf("[%s], Declined, %llu\n", name, static_cast<unsigned long long>(stats.declined));
    for (double q : {0.5, 0.95, 0.99}) {
      std::printf("[%s], %.0fthPercentileLatency(us), %llu\n", name, q * 100,
                  static_cast<unsigned long long>(h.Quantile(q)));
    }
    std::printf("[%s], MaxLatency(us), %llu\n", name, static_cast<unsigned long long>(h.max()));
    json += std::string(first ? "" : ",") + JsonEscape(name) +
            ":{\"committed\":" + std::to_string(stats.committed) +
            ",\"declined\":" + std::to_string(stats.declined) + ",\"latency\":" + KindJson(h) + "}";
    first = false;
  }
  json += "}";
  if (application == "tpcc") {
    const auto new_order = total.by_procedure.find(TpccApplication::kNewOrder);
    const uint64_t committed = new_order == total.by_procedure.end() ? 0 : new_order->second.committed;
    const double tpmc = committed * 60.0 / seconds;
    std::printf("[TPCC], tpmC(New-Orders committed per minute), %.0f\n", tpmc);
    json += ",\"tpmC\":" + Fixed(tpmc, 0);
  }
  return json;
}

void Report(const LoadStats& total, double seconds, const Application& app,
            const std::string& application, std::string* json, std::string* csv) {
  const uint64_t ops = total.Completed();
  std::printf("[OVERALL], RunTime(ms), %.0f\n", seconds * 1000);
  std::printf("[OVERALL], Throughput(ops/sec), %.2f\n", ops / seconds);
  *json = "{\"runtime_ms\":" + Fixed(seconds * 1000, 0) + ",\"throughput\":" +
          Fixed(ops / seconds) + ",\"kinds\":{";
  *csv = "kind,operations,average_us,max_us,p50_us,p95_us,p99_us\n";
  for (int k = 0; k < kLoadKinds; ++k) {
    const Histogram& h = total.latency_us[k];
    const char* name = LoadKindName(k);
    if (h.count() > 0) {
      std::printf("[%s], Operations, %llu\n", name, static_cast<unsigned long long>(h.count()));
      std::printf("[%s], AverageLatency(us), %.1f\n", name, h.Mean());
      std::printf("[%s], MaxLatency(us), %llu\n", name, static_cast<unsigned long long>(h.max()));
      for (double q : {0.5, 0.95, 0.99}) {
        std::printf("[%s], %.0fthPercentileLatency(us), %llu\n", name, q * 100,
                    static_cast<unsigned long long>(h.Quantile(q)));
      }
    }
    *json += std::string(k ? "," : "") + "\"" + name + "\":" + KindJson(h);
    *csv += std::string(name) + "," + std::to_string(h.count()) + "," + Fixed(h.Mean(), 1) + "," +
            std::to_string(h.max()) + "," + std::to_string(h.Quantile(0.5)) + "," +
            std::to_string(h.Quantile(0.95)) + "," + std::to_string(h.Quantile(0.99)) + "\n";
  }
  *json += "}";
  // The node's latency is what its admission control bounds; the gap to the
  // kinds' client latency is time in queues outside the node (sockets, the driver).
  PrintSpread("[NODE], Latency(admission to result)", total.server_latency_us);
  const Histogram& vis = total.visibility_us;
  PrintSpread("[RO], VisibilityDelay", vis);
  *json += ",\"visibility\":" + KindJson(vis) +
           ",\"node_latency\":" + KindJson(total.server_latency_us);
  std::printf("[ERRORS], Total, %llu\n", static_cast<unsigned long long>(total.Errors()));
  std::string errors_json;
  for (int e = 1; e < 8; ++e) {
    if (e == BUSY || !total.errors[e]) continue;
    std::printf("[ERRORS], %s, %llu\n", ReplyStatusName(static_cast<ReplyStatus>(e)),
                static_cast<unsigned long long>(total.errors[e]));
    errors_json += std::string(errors_json.empty() ? "" : ",") + "\"" +
                   ReplyStatusName(static_cast<ReplyStatus>(e)) +
                   "\":" + std::to_string(total.errors[e]);
  }
  std::printf("[BUSY], Replies, %llu\n", static_cast<unsigned long long>(total.busy));
  std::printf("[BUSY], RefusedLocally(backing off), %llu\n",
              static_cast<unsigned long long>(total.busy_local));
  std::printf("[BUSY], Retries, %llu\n", static_cast<unsigned long long>(total.retries));
  std::printf("[BUSY], GaveUp, %llu\n", static_cast<unsigned long long>(total.gave_up));
  if (total.failovers > 0 || total.already_applied > 0) {
    std::printf("[CLIENT], Failovers(moved to another replica), %llu\n",
                static_cast<unsigned long long>(total.failovers));
    std::printf("[CLIENT], AlreadyApplied(retries that had run), %llu\n",
                static_cast<unsigned long long>(total.already_applied));
  }
  std::printf("[CLIENT], Lost(no reply), %llu\n", static_cast<unsigned long long>(total.lost));
  std::printf("[CLIENT], Skipped(behind schedule), %llu\n",
              static_cast<unsigned long long>(total.skipped));
  std::printf("[TXN], Declined, %llu\n", static_cast<unsigned long long>(total.declined));
  std::string aborts_json;
  for (const auto& [reason, n] : total.ltx_aborts) {
    std::printf("[LTX], Aborted(%s), %llu\n", reason.c_str(), static_cast<unsigned long long>(n));
    aborts_json += std::string(aborts_json.empty() ? "" : ",") + JsonEscape(reason) + ":" +
                   std::to_string(n);
  }
  if (application == "bank") {
    std::printf("[BANK], AuditViolations, %llu\n",
                static_cast<unsigned long long>(total.audit_violations));
  }
  *json += ReportProcedures(total, seconds, app, application);
  *json += ",\"errors\":" + std::to_string(total.Errors()) + ",\"errors_by_status\":{" +
           errors_json + "},\"busy\":" + std::to_string(total.busy) +
           ",\"busy_local\":" + std::to_string(total.busy_local) +
           ",\"retries\":" + std::to_string(total.retries) +
           ",\"failovers\":" + std::to_string(total.failovers) +
           ",\"already_applied\":" + std::to_string(total.already_applied) +
           ",\"gave_up\":" + std::to_string(total.gave_up) +
           ",\"lost\":" + std::to_string(total.lost) +
           ",\"skipped\":" + std::to_string(total.skipped) +
           ",\"declined\":" + std::to_string(total.declined) + ",\"ltx_aborts\":{" + aborts_json +
           "},\"audit_violations\":" + std::to_string(total.audit_violations) + "}";
}

void WriteTimeline(const LoadStats& total, const std::string& path) {
  std::ofstream out(path);
  out << "t_s,count,busy,p50_us,p99_us,node_p50_us,node_p99_us\n";
  for (size_t i = 0; i < total.timeline.size(); ++i) {
    const TimelineBucket& b = total.timeline[i];
    out << Fixed(i * FLAGS_timeline_ms / 1000.0, 3) << "," << b.latency_us.count() << ","
        << b.busy << "," << b.latency_us.Quantile(0.5) << "," << b.latency_us.Quantile(0.99)
        << "," << b.server_latency_us.Quantile(0.5) << "," << b.server_latency_us.Quantile(0.99)
        << "\n";
  }
}

// A schedule's steps side by side: what each step offered, what ran, how
// much was refused, and the latency of the txns that ran.
void PrintSteps(const LoadStats& total, const std::vector<RateStep>& steps, double epoch_ms) {
  std::printf("latency of the txns that ran: client = from the scheduled send, node = from "
              "admission at the node; in ms and in epochs (ep)\n");
  std::printf("%5s %10s %8s %10s %10s %9s %9s %8s %9s %9s %8s\n", "step", "offered", "seconds",
              "ran/s", "busy/s", "p50 ms", "p99 ms", "p99 ep", "node p50", "node p99",
              "node ep");
  for (size_t i = 0; i < steps.size() && i < total.steps.size(); ++i) {
    const Histogram& h = total.steps[i].latency_us;
    const Histogram& n = total.steps[i].server_latency_us;
    std::printf("%5zu %10.0f %8.1f %10.0f %10.0f %9.2f %9.2f %8.2f %9.2f %9.2f %8.2f\n", i + 1,
                steps[i].rate, steps[i].seconds, h.count() / steps[i].seconds,
                total.steps[i].busy / steps[i].seconds, Ms(h.Quantile(0.5)),
                Ms(h.Quantile(0.99)), Ms(h.Quantile(0.99)) / epoch_ms, Ms(n.Quantile(0.5)),
                Ms(n.Quantile(0.99)), Ms(n.Quantile(0.99)) / epoch_ms);
  }
}

// Until every node answers a status request, or `seconds` pass.
std::string WaitUntilReady(zmq::context_t* context, const std::vector<const NodeConfig*>& nodes,
                           double seconds) {
  const int64_t deadline = NowMicros() + static_cast<int64_t>(seconds * 1e6);
  for (const NodeConfig* node : nodes) {
    Client client(context);
    std::string error = client.Connect(ClientEndpoint(*node));
    ClientReply reply;
    while (error.empty()) {
      if (client.Call(Client::Status(), &reply, 500).empty()) break;
      if (NowMicros() > deadline) {
        error = "node " + std::to_string(node->id()) + " did not answer within " +
                Fixed(seconds, 0) + " s";
      }
    }
    if (!error.empty()) return error;
  }
  return "";
}

// The node's mode, from its status (for the sweep's records).
std::string NodeMode(zmq::context_t* context, const std::string& endpoint) {
  Client client(context);
  ClientReply reply;
  if (!client.Connect(endpoint).empty() || !client.Call(Client::Status(), &reply, 5000).empty()) {
    return "unknown";
  }
  return reply.node_status().mode();
}

int Sweep(LoadRun* run, double epoch_ms, const std::string& mode, const std::string& workload) {
  std::vector<double> percents;
  std::string error = ParsePercents(FLAGS_sweep, &percents);
  if (!error.empty()) return Fail(error);
  double capacity = FLAGS_capacity;
  if (!(capacity > 0)) {
    std::printf("[sweep] measuring capacity: closed loop, %d client(s) x %d in flight, %.0f s\n",
                FLAGS_clients, FLAGS_outstanding, FLAGS_capacity_s);
    std::fflush(stdout);
    const LoadStats peak = run->Phase(FLAGS_capacity_s, {}, true);
    capacity = peak.Completed() / FLAGS_capacity_s;
    if (peak.Errors() > 0 || !(capacity > 0)) {
      return Fail("capacity measurement failed: " + std::to_string(peak.Completed()) +
                  " txns ran, " + std::to_string(peak.Errors()) + " errors", 1);
    }
  }
  std::printf("[sweep] mode %s, workload %s, capacity %.0f txn/s, epoch %.0f ms, %.0f s per point\n",
              mode.c_str(), workload.c_str(), capacity, epoch_ms, FLAGS_duration);
  std::printf("%6s %10s %10s %8s %8s %8s %8s %8s %8s %8s %8s %8s\n", "load%", "offered",
              "txn/s", "busy/s", "p50 ms", "p99 ms", "p50 ep", "p99 ep", "RO p99", "RW p99",
              "vis p50", "vis p99");
  std::string json = "{\"mode\":" + JsonEscape(mode) + ",\"workload\":" + JsonEscape(workload) +
                     ",\"capacity\":" + Fixed(capacity, 1) + ",\"epoch_ms\":" +
                     Fixed(epoch_ms, 1) + ",\"seconds_per_point\":" + Fixed(FLAGS_duration, 1) +
                     ",\"points\":[";
  std::string csv =
      "percent,offered,throughput,busy_per_s,p50_us,p99_us,ro_p50_us,ro_p99_us,rw_p50_us,"
      "rw_p99_us,vis_p50_us,vis_p99_us,errors,lost,gave_up\n";
  int status = 0;
  for (size_t i = 0; i < percents.size(); ++i) {
    const double offered = capacity * percents[i] / 100;
    const LoadStats s = run->Phase(FLAGS_duration, {RateStep{offered, FLAGS_duration}}, true);
    Histogram all;
    for (const Histogram& h : s.latency_us) all.Merge(h);
    const Histogram& ro = s.latency_us[kLoadRO];
    const Histogram& rw = s.latency_us[kLoadRW];
    const double throughput = s.Completed() / FLAGS_duration;
    std::printf("%6.0f %10.0f %10.0f %8.0f %8.2f %8.2f %8.2f %8.2f %8s %8s %8s %8s\n",
                percents[i], offered, throughput, s.busy / FLAGS_duration, Ms(all.Quantile(0.5)),
                Ms(all.Quantile(0.99)), Ms(all.Quantile(0.5)) / epoch_ms,
                Ms(all.Quantile(0.99)) / epoch_ms,
                ro.count() ? Fixed(Ms(ro.Quantile(0.99))).c_str() : "-",
                rw.count() ? Fixed(Ms(rw.Quantile(0.99))).c_str() : "-",
                s.visibility_us.count() ? Fixed(Ms(s.visibility_us.Quantile(0.5))).c_str() : "-",
                s.visibility_us.count() ? Fixed(Ms(s.visibility_us.Quantile(0.99))).c_str() : "-");
    std::fflush(stdout);
    json += std::string(i ? "," : "") + "{\"percent\":" + Fixed(percents[i], 1) +
            ",\"offered\":" + Fixed(offered, 1) + ",\"throughput\":" + Fixed(throughput, 1) +
            ",\"busy\":" + std::to_string(s.busy) + ",\"all\":" + KindJson(all) +
            ",\"RO\":" + KindJson(ro) + ",\"RW\":" + KindJson(rw) +
            ",\"LTX\":" + KindJson(s.latency_us[kLoadLTX]) +
            ",\"visibility\":" + KindJson(s.visibility_us) +
            ",\"errors\":" + std::to_string(s.Errors()) + ",\"lost\":" + std::to_string(s.lost) +
            ",\"gave_up\":" + std::to_string(s.gave_up) + "}";
    csv += Fixed(percents[i], 1) + "," + Fixed(offered, 1) + "," + Fixed(throughput, 1) + "," +
           Fixed(s.busy / FLAGS_duration, 1) + "," + std::to_string(all.Quantile(0.5)) + "," +
           std::to_string(all.Quantile(0.99)) + "," + std::to_string(ro.Quantile(0.5)) + "," +
           std::to_string(ro.Quantile(0.99)) + "," + std::to_string(rw.Quantile(0.5)) + "," +
           std::to_string(rw.Quantile(0.99)) + "," +
           std::to_string(s.visibility_us.Quantile(0.5)) + "," +
           std::to_string(s.visibility_us.Quantile(0.99)) + "," + std::to_string(s.Errors()) +
           "," + std::to_string(s.lost) + "," + std::to_string(s.gave_up) + "\n";
    if (s.Errors() > 0 || s.lost > 0) status = 1;
  }
  json += "]}";
  if (!FLAGS_report_json.empty()) std::ofstream(FLAGS_report_json) << json << "\n";
  if (!FLAGS_report_csv.empty()) std::ofstream(FLAGS_report_csv) << csv;
  return status;
}

int Main(int argc, char** argv) {
  gflags::SetUsageMessage(
      "drives a running cluster through real clients and reports end-to-end latency.\n"
      "  paxflow-load --config=deployment/local-3.conf --workload=mixed --duration=10 "
      "[--clients=2 --outstanding=500 | --rate=5000 | --rate_schedule=R:S,...]\n"
      "  paxflow-load --config=... --workload=mixed --sweep=10,20,...,120 --duration=5\n"
      "Start the cluster with --generate=false --duration=0 so that clients are the only load.\n"
      "Txns travel --batch per message; a BUSY reply (the node is at its admission bound) is\n"
      "counted apart and, with --retry_busy, retried after a backoff. Exit status 1 on any\n"
      "error, lost reply, bad audit or (without --allow_busy) txn given up after BUSY.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) return Fail(std::string("unexpected argument '") + argv[1] + "'");
  if (FLAGS_config.empty()) return Fail("--config is required; see --help");
  if (FLAGS_clients < 1 || FLAGS_clients > 1024) return Fail("--clients must be 1..1024");
  if (FLAGS_outstanding < 1) return Fail("--outstanding must be at least 1");
  if (FLAGS_batch < 1 || FLAGS_batch > 10000) return Fail("--batch must be 1..10000");
  if (FLAGS_tick_ms < 1 || FLAGS_tick_ms > 1000) return Fail("--tick_ms must be 1..1000");
  if (FLAGS_timeline_ms < 1) return Fail("--timeline_ms must be at least 1");
  if (FLAGS_rate < 0) return Fail("--rate must be >= 0");
  if (!FLAGS_sweep.empty() && !gflags::GetCommandLineFlagInfoOrDie("rate").is_default) {
    return Fail("--sweep sets its own rates (percentages of the capacity; see --capacity), so "
                "--rate would be ignored; give one of them");
  }
  if (FLAGS_busy_backoff_ms < 0) return Fail("--busy_backoff_ms must be >= 0 (0: the node's hint)");
  if (FLAGS_busy_backoff_max_ms < 1) return Fail("--busy_backoff_max_ms must be at least 1");
  if (FLAGS_max_retries < 0) return Fail("--max_retries must be >= 0");
  if (!(FLAGS_duration > 0) && FLAGS_rate_schedule.empty()) {
    return Fail("--duration must be positive");
  }
  std::vector<RateStep> steps;
  double seconds = FLAGS_duration;
  if (!FLAGS_rate_schedule.empty()) {
    if (FLAGS_rate > 0 || !FLAGS_sweep.empty()) {
      return Fail("--rate_schedule replaces --rate and --sweep; give one of them");
    }
    std::string error = ParseSchedule(FLAGS_rate_schedule, &steps);
    if (!error.empty()) return Fail(error);
    seconds = 0;
    for (const RateStep& step : steps) seconds += step.seconds;
  } else if (FLAGS_rate > 0) {
    steps.push_back(RateStep{FLAGS_rate, seconds});
  }
  ClusterConfig config;
  ClusterLayout layout;
  std::string error = LoadValidClusterConfig(FLAGS_config, &config, &layout);
  if (error.empty()) error = ApplyClientKeyFlags(&config);  // CURVE keys (auth.curve)
  if (!error.empty()) return Fail(error);
  NodeParams resolved;
  // replicated_input is the nodes' (it needs their --log_dir); here it only
  // says that clients follow the leader.
  std::vector<std::pair<std::string, std::string>> params = ConfigParams(config);
  bool replicated = false;
  for (auto it = params.begin(); it != params.end();) {
    if (it->first != "replicated_input") {
      ++it;
      continue;
    }
    replicated = it->second == "true";
    it = params.erase(it);
  }
  error = ResolveFlags(params, ExplicitFlags(), layout.partitions(), &resolved);
  if (!error.empty()) return Fail(error);
  if (resolved.workload.tpcc_delivery_ltx) {
    // Clients send Delivery as a txn and the node plans it; only the
    // nodes' embedded generator plans a Delivery LTX's areas.
    return Fail("tpcc_delivery_ltx is the embedded generator's (paxflow-node, paxflow-bench): "
                "clients send Delivery as a txn");
  }
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

  LoadOptions options;
  options.outstanding = FLAGS_outstanding;
  options.batch = static_cast<size_t>(FLAGS_batch);
  options.tick_ms = FLAGS_tick_ms;
  options.retry_busy = FLAGS_retry_busy;
  options.busy_backoff_ms = FLAGS_busy_backoff_ms;
  options.busy_backoff_max_ms = FLAGS_busy_backoff_max_ms;
  options.max_retries = FLAGS_max_retries;
  options.drain_ms = FLAGS_drain_ms;
  options.timeline_us = FLAGS_timeline_csv.empty() ? 0 : FLAGS_timeline_ms * 1000LL;
  zmq::context_t context(1);
  std::vector<std::unique_ptr<LoadClient>> clients;
  for (int i = 0; i < FLAGS_clients; ++i) {
    const NodeConfig* node = nodes[i % nodes.size()];
    LoadOptions client_options = options;
    if (replicated) {
      // Every replica of its partition, its node first: it follows the leader.
      client_options.replicas.push_back(ClientEndpoint(*node));
      for (const NodeConfig& other : config.node()) {
        if (other.partition() == node->partition() && other.id() != node->id() &&
            other.client_port() != 0) {
          client_options.replicas.push_back(ClientEndpoint(other));
        }
      }
    }
    clients.push_back(std::make_unique<LoadClient>(
        app.get(), resolved.workload, node->partition(), layout.partitions(),
        resolved.engine.seed * 7919 + i, ClientEndpoint(*node), client_options, &context));
    error = clients.back()->Connect();
    if (!error.empty()) return Fail(error, 1);
  }
  if (FLAGS_wait_ready_s > 0) {
    error = WaitUntilReady(&context, nodes, FLAGS_wait_ready_s);
    if (!error.empty()) return Fail(error, 1);
  }
  LoadRun run(&clients, resolved.engine.epoch_ms);
  if (!FLAGS_sweep.empty()) {
    return Sweep(&run, resolved.engine.epoch_ms, NodeMode(&context, ClientEndpoint(*nodes[0])),
                 resolved.workload.workload);
  }
  std::string how;
  if (!FLAGS_rate_schedule.empty()) how = "open loop on schedule " + FLAGS_rate_schedule;
  else if (FLAGS_rate > 0) how = "open loop at " + Fixed(FLAGS_rate, 0) + " txn/s";
  else how = "closed loop, " + std::to_string(FLAGS_outstanding) + " in flight each";
  std::printf("[load] %d client(s) on %zu node(s), workload %s, %s, %.0f s, %d txns/message\n",
              FLAGS_clients, nodes.size(), resolved.workload.workload.c_str(), how.c_str(),
              seconds, FLAGS_batch);
  std::fflush(stdout);
  const LoadStats total = run.Phase(seconds, steps, false);
  std::string json, csv;
  Report(total, seconds, *app, resolved.workload.application, &json, &csv);
  if (!FLAGS_report_json.empty()) std::ofstream(FLAGS_report_json) << json << "\n";
  if (!FLAGS_report_csv.empty()) std::ofstream(FLAGS_report_csv) << csv;
  if (!FLAGS_timeline_csv.empty()) WriteTimeline(total, FLAGS_timeline_csv);
  if (total.steps.size() > 1) PrintSteps(total, steps, resolved.engine.epoch_ms);
  const bool failed = total.Errors() > 0 || total.lost > 0 || total.audit_violations > 0 ||
                      (total.gave_up > 0 && !FLAGS_allow_busy);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace paxflow

int main(int argc, char** argv) { return paxflow::Main(argc, argv); }
