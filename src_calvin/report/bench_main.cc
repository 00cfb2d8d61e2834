// paxflow-bench: runs workloads in calvin and paxflow modes back to back on
// the same cluster config and prints the comparison (txn/s, latency,
// visibility delay, paxflow/calvin ratio, peak memory); writes CSV, JSON and
// Markdown results and PNG plots (report_plots.h). --matrix runs every
// preset at its own and an uncapped batch size (bench_matrix.h) and can
// rewrite the README's performance section. --replot=DIR re-renders a
// finished comparison.
#include <gflags/gflags.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "auth/client_keys.h"
#include "common/config.h"
#include "common/proto_json.h"
#include "common/paths.h"
#include "base/flags.h"
#include "cluster/launcher.h"
#include "report/bench_matrix.h"
#include "report/ltx_report.h"
#include "report/latency_curve.h"
#include "report/report_plots.h"
#include "base/signals.h"

DEFINE_string(runs, "ro,mixed,mixed50",
              "Comma-separated workloads to run; each a preset with optional overrides, e.g. "
              "ro:ro_workers=1 (see --workload for presets)");
DEFINE_string(modes, "calvin,paxflow", "Modes to run each workload in, in this order");
DEFINE_bool(matrix, false,
            "Run the benchmark matrix instead of --runs: every workload preset at its own batch "
            "size and with the batch cap lifted, plus ro and mixed with two sequencers per node");
DEFINE_bool(ltx_sweep, false,
            "Run the long-transaction sweep instead of --runs: long (Shirakami's WL1) over "
            "ltx_ops 125..8000, long-scan (WL2) over scan_length 100..100000, and the report and "
            "bom presets, each next to the same workload without long txns; writes "
            "ltx.txt/ltx.md and ltx_*.png");
DEFINE_uint32(repeat, 1,
              "Run every (workload, mode) this many times, alternating modes; each row is the "
              "run with the median throughput (1..9)");
DEFINE_string(update_readme, "",
              "After the runs, replace the section between the <!-- bench:begin --> and "
              "<!-- bench:end --> lines of this file (e.g. README.md) with compare.md");
DEFINE_string(results, "", "Directory for results (default results/<date-time>)");
DEFINE_string(node_binary, "", "paxflow-node to run (default: next to this binary)");
DEFINE_bool(quiet, false, "Do not relay the nodes' progress lines");
DEFINE_string(curve, "",
              "Also draw the latency-throughput curve of these workloads (comma-separated "
              "presets) in every mode: clients only, open loop at --curve_points percent of "
              "the capacity (paxflow-load --sweep), --curve_seconds each");
DEFINE_string(curve_points, "10,20,30,40,50,60,70,80,90,100,110,120",
              "Load points of --curve, in percent of each mode's closed-loop capacity");
DEFINE_double(curve_seconds, 5, "Seconds per load point of --curve");
DEFINE_string(replot, "",
              "Run nothing: reprint the table of DIR/compare.json and re-render its plots "
              "(into --results if given, else DIR)");

namespace paxflow {
namespace {

struct RunSpec {
  std::string label;
  std::string preset;
  std::vector<std::string> flags;  // --name=value overrides
};

int Fail(const std::string& message, int code = 2) {
  std::fprintf(stderr, "paxflow-bench: %s\n", message.c_str());
  return code;
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, separator)) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

std::string ParseSpec(const std::string& text, RunSpec* spec) {
  std::vector<std::string> parts = Split(text, ':');
  if (parts.empty()) return "empty run spec";
  spec->preset = parts[0];
  spec->label = text;
  if (!FindWorkloadPreset(spec->preset)) {
    return "run '" + text + "': unknown workload '" + spec->preset + "' (expected one of: " +
           WorkloadPresetNames() + ")";
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const size_t equals = parts[i].find('=');
    gflags::CommandLineFlagInfo info;
    if (equals == std::string::npos ||
        !gflags::GetCommandLineFlagInfo(parts[i].substr(0, equals).c_str(), &info)) {
      return "run '" + text + "': '" + parts[i] + "' is not flag=value with a node flag";
    }
    spec->flags.push_back("--" + parts[i]);
  }
  return "";
}

std::string Ms(uint64_t micros, bool present) {
  if (!present) return "-";
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "%.2f", micros / 1000.0);
  return buffer;
}

std::string Table(const std::vector<BenchRow>& rows) {
  std::map<std::string, double> calvin;
  // The workload column fits the longest label, so runs with several
  // overrides ("ro:max_batch=5000:max_inflight=10000") keep the columns aligned.
  int width = 22;
  for (const BenchRow& row : rows) {
    if (row.mode == "calvin") calvin[row.label] = row.summary.Throughput();
    width = std::max(width, static_cast<int>(row.label.size()));
  }
  std::ostringstream out;
  char line[320];
  snprintf(line, sizeof(line), "%-*s %-8s %10s %8s %8s %8s %8s %8s %8s %9s %7s\n", width,
           "workload", "mode", "txn/s", "RO p50", "RO p99", "RW p50", "RW p99", "vis p50",
           "vis p99", "vs calvin", "RSS MB");
  out << line;
  for (const BenchRow& row : rows) {
    const RunSummary& s = row.summary;
    const Histogram& ro = s.kinds[kKindReadOnly].latency_us;
    const Histogram& rw = s.kinds[kKindReadWrite].latency_us;
    std::string ratio = "-";
    if (row.mode != "calvin" && calvin.count(row.label) && calvin[row.label] > 0) {
      char buffer[32];
      snprintf(buffer, sizeof(buffer), "%.2fx", s.Throughput() / calvin[row.label]);
      ratio = buffer;
    }
    out << row.label << std::string(width - row.label.size(), ' ');
    const std::string rss = s.peak_rss_bytes ? std::to_string(s.peak_rss_bytes >> 20) : "-";
    snprintf(line, sizeof(line), " %-8s %10s %8s %8s %8s %8s %8s %8s %9s %7s%s\n",
             row.mode.c_str(), Thousands(s.Throughput()).c_str(),
             Ms(ro.Quantile(0.5), ro.count()).c_str(), Ms(ro.Quantile(0.99), ro.count()).c_str(),
             Ms(rw.Quantile(0.5), rw.count()).c_str(), Ms(rw.Quantile(0.99), rw.count()).c_str(),
             Ms(s.visibility_us.Quantile(0.5), s.visibility_us.count()).c_str(),
             Ms(s.visibility_us.Quantile(0.99), s.visibility_us.count()).c_str(), ratio.c_str(),
             rss.c_str(), row.code != 0 ? "  (FAILED)" : "");
    out << line;
  }
  out << "latencies in ms; vis = RO visibility delay (end of the snapshot's epoch -> result); "
         "RSS = the node's peak resident memory (largest node)\n";
  std::string bounds;
  for (const BenchRow& row : rows) {
    const std::string bound = row.summary.admission.Bound(row.summary.Throughput());
    if (!bound.empty()) bounds += "  " + row.label + " " + row.mode + ": " + bound + "\n";
  }
  if (!bounds.empty()) {
    out << "bounded by admission (these rows ran at a limit on new txns, so a ratio there "
           "compares limits; raise it with an override, e.g. :max_batch=10000, or a larger "
           ":max_inflight or :max_inflight_ltx, the latter on several partitions with "
           ":max_active_ltx):\n"
        << bounds;
  }
  return out.str();
}

// Per procedure (runs whose summaries count them, e.g. TPC-C): committed
// txns/s of each, declined and OLLP restarts, tpmC (New-Orders committed
// per minute) and the consistency check. Empty if no run counted any.
uint64_t TpccCommitted(const RunSummary& s) {
  uint64_t committed = 0;
  for (const ProcedureSummary& p : s.procedures) {
    if (p.name.rfind("tpcc-", 0) == 0) committed += p.committed;
  }
  return committed;
}

std::string ProcedureTable(const std::vector<BenchRow>& rows) {
  std::ostringstream out;
  char line[320];
  std::map<std::string, double> calvin;  // TPC-C txn/s of each label's calvin run
  for (const BenchRow& row : rows) {
    if (row.mode == "calvin" && row.summary.seconds > 0) {
      calvin[row.label] = TpccCommitted(row.summary) / row.summary.seconds;
    }
  }
  for (const BenchRow& row : rows) {
    const RunSummary& s = row.summary;
    if (s.procedures.empty()) continue;
    if (out.tellp() == 0) {
      snprintf(line, sizeof(line), "%-22s %-8s %-18s %10s %10s %10s\n", "workload", "mode",
               "procedure", "txn/s", "declined", "OLLP-rest.");
      out << "\n" << line;
    }
    const uint64_t tpcc = TpccCommitted(s);  // TPC-C's five txns (CH's queries apart)
    for (const ProcedureSummary& p : s.procedures) {
      snprintf(line, sizeof(line), "%-22s %-8s %-18s %10s %10llu %10llu", row.label.c_str(),
               row.mode.c_str(), p.name.c_str(),
               Thousands(s.seconds > 0 ? p.committed / s.seconds : 0).c_str(),
               static_cast<unsigned long long>(p.declined),
               static_cast<unsigned long long>(p.restarts));
      out << line;
      if (p.latency_us.count() > 0 && p.age_epochs.count() == 0) {
        // A short txn: its latency percentiles, from the batch it entered
        // (an OLLP restart's attempts in one).
        snprintf(line, sizeof(line), "  lat p50/p95/p99 %s/%s/%s ms",
                 Ms(p.latency_us.Quantile(0.5), true).c_str(),
                 Ms(p.latency_us.Quantile(0.95), true).c_str(),
                 Ms(p.latency_us.Quantile(0.99), true).c_str());
        out << line;
      } else if (p.latency_us.count() > 0) {
        // A long txn (CH's queries): latency, and the age of its snapshot
        // when its result came back (freshness), in epochs and ms.
        snprintf(line, sizeof(line), "  lat p50/p99 %s/%s ms  age p50 %llu ep %s ms, p99 %llu ep %s ms",
                 Ms(p.latency_us.Quantile(0.5), true).c_str(),
                 Ms(p.latency_us.Quantile(0.99), true).c_str(),
                 static_cast<unsigned long long>(p.age_epochs.Quantile(0.5)),
                 Ms(p.age_us.Quantile(0.5), p.age_us.count()).c_str(),
                 static_cast<unsigned long long>(p.age_epochs.Quantile(0.99)),
                 Ms(p.age_us.Quantile(0.99), p.age_us.count()).c_str());
        out << line;
      }
      out << "\n";
      if (p.name == "tpcc-new-order" && s.seconds > 0) {
        snprintf(line, sizeof(line), "%-22s %-8s %-18s %10s\n", row.label.c_str(),
                 row.mode.c_str(), "tpmC", Thousands(p.committed * 60.0 / s.seconds).c_str());
        out << line;
      }
    }
    if (tpcc > 0 && s.seconds > 0) {
      const double rate = tpcc / s.seconds;
      std::string ratio;
      if (row.mode != "calvin" && calvin.count(row.label) && calvin[row.label] > 0) {
        char buffer[48];
        snprintf(buffer, sizeof(buffer), "  %.2fx calvin", rate / calvin[row.label]);
        ratio = buffer;
      }
      snprintf(line, sizeof(line), "%-22s %-8s %-18s %10s%s\n", row.label.c_str(), row.mode.c_str(),
               "tpcc txn/s", Thousands(rate).c_str(), ratio.c_str());
      out << line;
    }
    snprintf(line, sizeof(line), "%-22s %-8s consistency: %s\n", row.label.c_str(),
             row.mode.c_str(), s.consistency.empty() ? "ok" : ("FAILED: " + s.consistency).c_str());
    out << line;
  }
  if (out.tellp() > 0) {
    out << "declined: rolled back by the procedure (TPC-C's 1% of New-Orders) or restarted; "
           "OLLP-rest.: restarts of dependent txns whose reconnaissance was stale; tpcc txn/s: "
           "the five TPC-C txns committed (CH's queries apart); lat = latency from the batch a txn "
           "entered to its result (a restarted txn's attempts in one); ch-q*: "
           "age = its snapshot's age when the result came back (ep = epochs)\n";
  }
  return out.str();
}

std::string Csv(const std::vector<BenchRow>& rows) {
  std::ostringstream out;
  out << "workload,mode,seconds,txn_per_s,ro_txn_per_s,rw_txn_per_s,ro_p50_ms,ro_p95_ms,ro_p99_ms,"
         "rw_p50_ms,rw_p95_ms,rw_p99_ms,vis_p50_ms,vis_p99_ms,invariant_failures,peak_rss_mib,"
         "status\n";
  for (const BenchRow& row : rows) {
    const RunSummary& s = row.summary;
    const Histogram& ro = s.kinds[kKindReadOnly].latency_us;
    const Histogram& rw = s.kinds[kKindReadWrite].latency_us;
    auto ms = [](uint64_t us) { return std::to_string(us / 1000.0); };
    out << row.label << "," << row.mode << "," << s.seconds << "," << s.Throughput() << ","
        << (s.seconds > 0 ? s.kinds[kKindReadOnly].committed / s.seconds : 0) << ","
        << (s.seconds > 0 ? s.kinds[kKindReadWrite].committed / s.seconds : 0) << ","
        << ms(ro.Quantile(0.5)) << "," << ms(ro.Quantile(0.95)) << "," << ms(ro.Quantile(0.99))
        << "," << ms(rw.Quantile(0.5)) << "," << ms(rw.Quantile(0.95)) << ","
        << ms(rw.Quantile(0.99)) << "," << ms(s.visibility_us.Quantile(0.5)) << ","
        << ms(s.visibility_us.Quantile(0.99)) << "," << s.invariant_failures << ","
        << (s.peak_rss_bytes >> 20) << ","
        << (row.code == 0 ? "ok" : "failed") << "\n";
  }
  return out.str();
}

// compare.json: a JSON array of runs (files.proto's CompareRun), one a line.
std::string Json(const std::vector<BenchRow>& rows) {
  std::string out = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    CompareRun run;
    run.set_workload(rows[i].label);
    run.set_mode(rows[i].mode);
    run.set_status(rows[i].code == 0 ? "ok" : "failed");
    *run.mutable_summary() = rows[i].summary.ToFile();
    out += (i ? ",\n" : "") + MessageToJson(run);
  }
  return out + "]\n";
}

std::string DefaultResultsDir() {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", std::localtime(&now));
  return std::string("results/") + stamp;
}

// Renders the plots into `dir` and says where they are. False if gnuplot
// failed or is missing; the table, CSV and JSON do not depend on it.
bool Plot(const std::vector<BenchRow>& rows, const std::string& dir) {
  const PlotOutcome plots = WritePlots(rows, dir);
  for (const std::string& note : plots.skipped) std::printf("plots: skipped %s\n", note.c_str());
  if (!plots.pngs.empty()) {
    std::string names;
    for (const std::string& png : plots.pngs) {
      const std::string base = png.substr(png.rfind('/') + 1);
      names += (names.empty() ? "" : ",") + base.substr(0, base.size() - 4);
    }
    if (plots.pngs.size() > 1) names = "{" + names + "}";
    std::printf("plots:   %s/%s.png (data: *.dat; restyle: cd %s && gnuplot plots.gp)\n",
                dir.c_str(), names.c_str(), dir.c_str());
  }
  if (plots.pngs.empty() && !plots.data_files.empty()) {
    std::printf("plot data: %s/*.dat, %s/plots.gp (with gnuplot: cd %s && gnuplot plots.gp)\n",
                dir.c_str(), dir.c_str(), dir.c_str());
  }
  if (!plots.error.empty()) std::fprintf(stderr, "paxflow-bench: plots: %s\n", plots.error.c_str());
  return plots.error.empty();
}

// The long-transaction sweep's table (ltx.txt, ltx.md) and plots.
void WriteLtxReport(const std::vector<BenchRow>& rows, const std::string& dir,
                    const std::string& preamble) {
  const std::string table = LtxTable(rows);
  std::printf("\n%s", table.c_str());
  std::ofstream(dir + "/ltx.txt") << table;
  std::ofstream(dir + "/ltx.md") << LtxMarkdown(rows, preamble);
  std::printf("results: %s/ltx.{txt,md}\n", dir.c_str());
  const PlotOutcome plots = WriteLtxPlots(rows, dir);
  for (const std::string& png : plots.pngs) std::printf("plots:   %s\n", png.c_str());
  if (!plots.error.empty()) std::fprintf(stderr, "paxflow-bench: plots: %s\n", plots.error.c_str());
}

// --replot: the table and plots of a finished comparison, from its
// compare.json alone, so plots can be restyled or regenerated without
// running a cluster again.
int Replot(const std::set<std::string>& explicit_flags) {
  std::vector<std::string> run_flags = {"config", "runs",   "modes",         "node_binary",
                                        "matrix", "repeat", "update_readme", "ltx_sweep",
                                        "curve"};
  const std::vector<std::string>& node_flags = NodeFlagNames();
  run_flags.insert(run_flags.end(), node_flags.begin(), node_flags.end());
  for (const std::string& name : run_flags) {
    if (explicit_flags.count(name)) {
      return Fail("--replot runs nothing, so --" + name + " would have no effect; drop it");
    }
  }
  std::vector<BenchRow> rows;
  std::string error = LoadCompareJson(FLAGS_replot + "/compare.json", &rows);
  if (!error.empty()) return Fail(error);
  const std::string dir = FLAGS_results.empty() ? FLAGS_replot : FLAGS_results;
  if (!MakeDirectories(dir)) return Fail("cannot create " + dir);
  std::printf("%s", Table(rows).c_str());
  const bool plotted = Plot(rows, dir);
  if (HasLtxSweepRows(rows)) WriteLtxReport(rows, dir, "Replotted from " + FLAGS_replot + ".\n");
  return plotted ? 0 : 1;
}

// Above the Markdown table: when, where and how it was measured.
std::string MarkdownPreamble(const std::string& command) {
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d", std::localtime(&now));
  std::string text = "Measured " + std::string(date) + " on " + MachineDescription() +
                     ", with `" + command + "`";
  if (FLAGS_repeat > 1) {
    text += " (each figure the run with the median throughput of " +
            std::to_string(FLAGS_repeat) + ")";
  }
  return text + ". RSS is the node's peak resident memory.\n";
}

int Main(int argc, char** argv) {
  std::string command = "paxflow-bench";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  gflags::SetUsageMessage(
      "compares calvin and paxflow modes on the same cluster config and workloads.\n"
      "  paxflow-bench --config=deployment/local-1.conf --runs=ro,mixed --duration=10\n"
      "  paxflow-bench --replot=results/<date-time>    # table and plots again, no runs\n"
      "  paxflow-bench --config=deployment/local-1.conf --matrix --update_readme=README.md\n"
      "Node flags given here (paxflow-node --help) apply to every run.");
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  if (argc > 1) return Fail(std::string("unexpected argument '") + argv[1] + "'");
  const std::set<std::string> explicit_flags = ExplicitFlags();
  if (!FLAGS_replot.empty()) return Replot(explicit_flags);
  if (FLAGS_config.empty()) return Fail("--config is required; see --help");
  ClusterConfig config;
  ClusterLayout layout;
  std::string error = LoadValidClusterConfig(FLAGS_config, &config, &layout);
  if (error.empty()) error = ApplyClientKeyFlags(&config);  // CURVE keys (auth.curve)
  if (!error.empty()) return Fail(error);
  if (explicit_flags.count("workload") || explicit_flags.count("mode")) {
    return Fail("use --runs and --modes (not --workload/--mode) to choose what to compare");
  }
  if ((FLAGS_matrix || FLAGS_ltx_sweep) && explicit_flags.count("runs")) {
    return Fail("--matrix and --ltx_sweep choose the runs themselves; drop --runs");
  }
  if (FLAGS_matrix && FLAGS_ltx_sweep) return Fail("--matrix and --ltx_sweep are two runs; pick one");
  if (FLAGS_repeat < 1 || FLAGS_repeat > 9) return Fail("--repeat must be 1..9");
  std::vector<std::string> run_texts = FLAGS_matrix      ? MatrixRuns()
                                       : FLAGS_ltx_sweep ? LtxSweepRuns()
                                                         : Split(FLAGS_runs, ',');
  std::vector<RunSpec> specs;
  for (const std::string& text : run_texts) {
    RunSpec spec;
    error = ParseSpec(text, &spec);
    if (!error.empty()) return Fail(error);
    specs.push_back(spec);
  }
  std::vector<std::string> modes = Split(FLAGS_modes, ',');
  for (const std::string& mode : modes) {
    Mode parsed;
    if (!ParseMode(mode, &parsed)) return Fail("mode '" + mode + "' is not calvin or paxflow");
  }
  if ((specs.empty() && FLAGS_curve.empty()) || modes.empty()) {
    return Fail("nothing to run (--runs / --modes are empty)");
  }
  for (const std::string& workload : Split(FLAGS_curve, ',')) {
    if (!FindWorkloadPreset(workload)) return Fail("--curve: unknown workload '" + workload + "'");
  }

  const std::vector<std::string> common_flags = ForwardedNodeFlags(explicit_flags);
  const std::string results = FLAGS_results.empty() ? DefaultResultsDir() : FLAGS_results;
  if (!MakeDirectories(results)) return Fail("cannot create " + results);

  SignalWatcher signals;
  // Runs `spec` once in `mode`; `round` numbers repeats.
  auto run_once = [&](const RunSpec& spec, const std::string& mode, uint32_t round,
                      BenchRow* row) -> std::string {
    // Resolve exactly what the nodes will: bad combinations fail here.
    std::vector<std::string> run_flags = common_flags;
    run_flags.push_back("--workload=" + spec.preset);
    run_flags.push_back("--mode=" + mode);
    run_flags.insert(run_flags.end(), spec.flags.begin(), spec.flags.end());
    std::string failure = CheckMachine(config);
    if (!failure.empty()) return FLAGS_config + ": " + failure;
    LaunchOptions options;
    options.config_path = Absolute(FLAGS_config);
    options.node_binary =
        FLAGS_node_binary.empty() ? SelfDirectory() + "/paxflow-node" : FLAGS_node_binary;
    std::string label = spec.label;
    for (char& c : label) {
      if (c == ':' || c == '=' || c == '/') c = '_';
    }
    options.log_dir = Absolute(results) + "/" + label + "-" + mode +
                      (FLAGS_repeat > 1 ? "-" + std::to_string(round + 1) : "");
    if (!MakeDirectories(options.log_dir)) return "cannot create " + options.log_dir;
    options.node_flags = run_flags;
    options.duration_s = FLAGS_run_epochs > 0 ? 0 : FLAGS_duration;
    options.echo = !FLAGS_quiet;
    options.echo_progress_only = true;
    std::printf("[bench] %s in %s mode (%s)\n", spec.label.c_str(), mode.c_str(),
                options.log_dir.c_str());
    std::fflush(stdout);
    row->label = spec.label;
    row->mode = mode;
    std::string run_error;
    row->code = RunCluster(config, options, [&] { return signals.interrupted() ? 1 : 0; },
                           &row->summary, &run_error);
    if (!run_error.empty()) std::fprintf(stderr, "paxflow-bench: %s\n", run_error.c_str());
    std::printf("[bench] %s %s: %s txn/s, peak RSS %s MiB\n", spec.label.c_str(), mode.c_str(),
                Thousands(row->summary.Throughput()).c_str(),
                std::to_string(row->summary.peak_rss_bytes >> 20).c_str());
    return "";
  };
  // Every run of each (workload, mode), in the order first run; repeats
  // go round the whole list, so a slow minute of the machine spreads out.
  std::vector<std::vector<BenchRow>> runs(specs.size() * modes.size());
  int status = 0;
  for (uint32_t round = 0; round < FLAGS_repeat; ++round) {
    for (size_t s = 0; s < specs.size(); ++s) {
      for (size_t m = 0; m < modes.size() && !signals.interrupted(); ++m) {
        BenchRow row;
        error = run_once(specs[s], modes[m], round, &row);
        if (!error.empty()) return Fail(error);
        if (row.code != 0) status = row.code;
        runs[s * modes.size() + m].push_back(row);
      }
    }
  }
  std::vector<BenchRow> rows;
  for (const auto& tries : runs) {
    if (!tries.empty()) rows.push_back(MedianRun(tries));
  }
  if (!rows.empty()) {
    const std::string table = Table(rows) + ProcedureTable(rows);
    std::printf("\n%s", table.c_str());
    std::ofstream(results + "/compare.txt") << table;
    std::ofstream(results + "/compare.csv") << Csv(rows);
    std::ofstream(results + "/compare.json") << Json(rows);
    const std::string markdown = MarkdownTable(rows, MarkdownPreamble(command));
    std::ofstream(results + "/compare.md") << markdown;
    std::printf("results: %s/compare.{txt,csv,json,md}\n", results.c_str());
    if (!FLAGS_update_readme.empty() && (signals.interrupted() || status != 0)) {
      std::fprintf(stderr, "paxflow-bench: %s left alone: the runs did not all finish well\n",
                   FLAGS_update_readme.c_str());
    } else if (!FLAGS_update_readme.empty()) {
      error = ReplaceMarkedSection(FLAGS_update_readme, markdown);
      if (!error.empty()) return Fail(error);
      std::printf("updated the performance section of %s\n", FLAGS_update_readme.c_str());
    }
    if (FLAGS_ltx_sweep) WriteLtxReport(rows, results, MarkdownPreamble(command));
    // Plots are a view of the results above: a gnuplot problem is reported
    // but does not turn a good comparison into a failed one.
    Plot(rows, results);
  }
  for (const std::string& workload : Split(FLAGS_curve, ',')) {
    if (signals.interrupted()) break;
    CurveOptions curve;
    curve.workload = workload;
    curve.modes = modes;
    curve.percents = FLAGS_curve_points;
    curve.seconds_per_point = FLAGS_curve_seconds;
    curve.config_path = Absolute(FLAGS_config);
    curve.node_binary =
        FLAGS_node_binary.empty() ? SelfDirectory() + "/paxflow-node" : FLAGS_node_binary;
    curve.load_binary = SelfDirectory() + "/paxflow-load";
    curve.node_flags = common_flags;
    curve.results = results;
    curve.echo = !FLAGS_quiet;
    std::string table;
    const int code = RunLatencyCurve(config, curve, [&] { return signals.interrupted() ? 1 : 0; },
                                     &table, &error);
    if (!error.empty()) std::fprintf(stderr, "paxflow-bench: %s\n", error.c_str());
    if (code != 0) status = code;
    std::printf("\n%sresults: %s/curve-%s.{txt,csv,png} (and one .json per mode)\n",
                table.c_str(), results.c_str(), workload.c_str());
  }
  return status;
}

}  // namespace
}  // namespace paxflow

int main(int argc, char** argv) { return paxflow::Main(argc, argv); }
