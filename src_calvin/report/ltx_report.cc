#include "report/ltx_report.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "report/bench_matrix.h"

namespace paxflow {
namespace {

constexpr uint64_t kLtxOps[] = {125, 250, 500, 1000, 2000, 4000, 8000};
constexpr uint64_t kScanLengths[] = {100, 1000, 10000, 100000};

// What a run of the sweep is: which workload, the size of its long txns
// (0: the same workload without long txns).
struct Point {
  std::string workload;  // "long" or "long-scan"
  uint64_t size = 0;
  bool valid = false;
};

Point PointOf(const std::string& label) {
  Point point;
  const size_t colon = label.find(':');
  point.workload = label.substr(0, colon);
  const std::string setting = colon == std::string::npos ? "" : label.substr(colon + 1);
  if (point.workload == "report" || point.workload == "bom") {
    // The presets as they are (size 1: with long txns), or without them.
    point.valid = true;
    point.size = setting == "ltx_fraction=0" ? 0 : 1;
    return point;
  }
  if (point.workload != "long" && point.workload != "long-scan") return point;
  const std::string size_flag = point.workload == "long" ? "ltx_ops=" : "scan_length=";
  if (setting == "ltx_fraction=0") {
    point.valid = true;
  } else if (setting.rfind(size_flag, 0) == 0) {
    point.size = std::strtoull(setting.c_str() + size_flag.size(), nullptr, 10);
    point.valid = point.size > 0;
  }
  return point;
}

double PerSecond(const RunSummary& s, uint64_t count) {
  return s.seconds > 0 ? count / s.seconds : 0;
}

double ShortPerSecond(const RunSummary& s) {
  return PerSecond(s, s.kinds[kKindReadOnly].committed + s.kinds[kKindReadWrite].committed);
}

double CommitRatio(const RunSummary& s) {
  const uint64_t done = s.kinds[kKindLong].committed + s.kinds[kKindLong].aborted;
  return done ? static_cast<double>(s.kinds[kKindLong].committed) / done : 0;
}

// Short throughput of the same workload and mode without long txns.
double Baseline(const std::vector<BenchRow>& rows, const std::string& workload,
                const std::string& mode) {
  for (const BenchRow& row : rows) {
    const Point point = PointOf(row.label);
    if (point.valid && point.size == 0 && point.workload == workload && row.mode == mode) {
      return ShortPerSecond(row.summary);
    }
  }
  return 0;
}

std::string Format(const char* format, double x) {
  char buffer[64];
  snprintf(buffer, sizeof(buffer), format, x);
  return buffer;
}

struct Cells {
  std::string label, mode, short_rate, share, long_rate, ratio, p50, deferred, max_deferrals,
      guard_share, restarts, failed;
};

std::vector<Cells> TableCells(const std::vector<BenchRow>& rows) {
  std::vector<Cells> cells;
  for (const BenchRow& row : rows) {
    const Point point = PointOf(row.label);
    if (!point.valid) continue;
    const RunSummary& s = row.summary;
    Cells c;
    c.label = row.label;
    c.mode = row.mode;
    c.short_rate = Thousands(ShortPerSecond(s));
    const double baseline = Baseline(rows, point.workload, row.mode);
    c.share = point.size > 0 && baseline > 0
                  ? Format("%.0f%%", 100.0 * ShortPerSecond(s) / baseline)
                  : "-";
    const uint64_t longs = s.kinds[kKindLong].committed + s.kinds[kKindLong].aborted;
    c.long_rate = point.size > 0 ? Format("%.1f", PerSecond(s, s.kinds[kKindLong].committed)) : "-";
    c.ratio = longs ? Format("%.3f", CommitRatio(s)) : "-";
    c.p50 = longs ? Format("%.1f", s.kinds[kKindLong].latency_us.Quantile(0.5) / 1000.0) : "-";
    const uint64_t shorts = s.kinds[kKindReadOnly].committed + s.kinds[kKindReadWrite].committed;
    c.deferred = point.size > 0 && shorts
                     ? Format("%.1f%%", 100.0 * s.ltx.deferred_txns / shorts)
                     : "-";
    // Starvation both ways, and calvin mode's OLLP restarts.
    c.max_deferrals = point.size > 0 ? std::to_string(s.ltx.max_deferrals) : "-";
    c.guard_share = longs ? Format("%.1f%%", 100.0 * s.ltx.GuardAbortShare(longs)) : "-";
    c.restarts = longs ? std::to_string(s.ltx.aborts[kAbortRecon]) : "-";
    c.failed = row.code != 0 ? "  (FAILED)" : "";
    cells.push_back(c);
  }
  return cells;
}

}  // namespace

std::vector<std::string> LtxSweepRuns() {
  std::vector<std::string> runs = {"long:ltx_fraction=0"};
  for (uint64_t ops : kLtxOps) runs.push_back("long:ltx_ops=" + std::to_string(ops));
  runs.push_back("long-scan:ltx_fraction=0");
  for (uint64_t length : kScanLengths) {
    runs.push_back("long-scan:scan_length=" + std::to_string(length));
  }
  // What the lane is for: reports beside updates, and dependent walks.
  for (const char* preset : {"report", "bom"}) {
    runs.push_back(std::string(preset) + ":ltx_fraction=0");
    runs.push_back(preset);
  }
  return runs;
}

bool HasLtxSweepRows(const std::vector<BenchRow>& rows) { return !TableCells(rows).empty(); }

std::string LtxTable(const std::vector<BenchRow>& rows) {
  std::ostringstream out;
  char line[256];
  snprintf(line, sizeof(line), "%-28s %-8s %11s %7s %8s %7s %9s %9s %7s %7s %8s\n", "run",
           "mode", "short/s", "vs none", "LTX/s", "commit", "LTX p50", "deferred", "max def",
           "guard", "restarts");
  out << line;
  for (const Cells& c : TableCells(rows)) {
    snprintf(line, sizeof(line), "%-28s %-8s %11s %7s %8s %7s %9s %9s %7s %7s %8s%s\n",
             c.label.c_str(), c.mode.c_str(), c.short_rate.c_str(), c.share.c_str(),
             c.long_rate.c_str(), c.ratio.c_str(), c.p50.c_str(), c.deferred.c_str(),
             c.max_deferrals.c_str(), c.guard_share.c_str(), c.restarts.c_str(), c.failed.c_str());
    out << line;
  }
  out << "short/s: committed short txns (RO + RW) per second; vs none: that, as a share of the "
         "same workload without long txns in the same mode; LTX/s: long txns committed per "
         "second; commit: committed / (committed + aborted); LTX p50: begin to commit, ms; "
         "deferred: short txns an LTX's write area deferred, as a share of all; max def: the "
         "most deferrals one short txn took; guard: LTXs aborted by guards, as a share of LTXs "
         "begun; restarts: calvin mode's OLLP restarts (recon aborts)\n";
  return out.str();
}

std::string LtxMarkdown(const std::vector<BenchRow>& rows, const std::string& preamble) {
  std::ostringstream out;
  out << preamble << "\n"
      << "| run | mode | short txn/s | vs no LTX | LTX/s | commit ratio | LTX p50 ms | deferred "
         "| max deferrals | guard aborts | OLLP restarts |\n"
      << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const Cells& c : TableCells(rows)) {
    out << "| `" << c.label << "` | " << c.mode << " | " << c.short_rate << " | " << c.share
        << " | " << c.long_rate << " | " << c.ratio << " | " << c.p50 << " | " << c.deferred
        << " | " << c.max_deferrals << " | " << c.guard_share << " | " << c.restarts << " |"
        << (c.failed.empty() ? "" : " FAILED") << "\n";
  }
  return out.str();
}

PlotOutcome WriteLtxPlots(const std::vector<BenchRow>& rows, const std::string& dir) {
  PlotOutcome outcome;
  // One data block per (workload, mode): size, short/s, its share of the
  // no-LTX run, LTX/s, commit ratio.
  const char* const workloads[] = {"long", "long-scan"};
  const char* const modes[] = {"calvin", "paxflow"};
  bool any = false;
  for (const char* workload : workloads) {
    std::ostringstream data;
    for (const char* mode : modes) {
      data << "# " << workload << " " << mode << "\n";
      std::map<uint64_t, const BenchRow*> points;
      for (const BenchRow& row : rows) {
        const Point point = PointOf(row.label);
        if (point.valid && point.size > 0 && point.workload == workload && row.mode == mode) {
          points[point.size] = &row;
        }
      }
      const double baseline = Baseline(rows, workload, mode);
      for (const auto& [size, row] : points) {
        const RunSummary& s = row->summary;
        data << size << " " << ShortPerSecond(s) << " "
             << (baseline > 0 ? ShortPerSecond(s) / baseline : 0) << " "
             << PerSecond(s, s.kinds[kKindLong].committed) << " " << CommitRatio(s) << "\n";
        any = true;
      }
      data << "\n\n";
    }
    const std::string name = std::string("ltx_") + (std::string(workload) == "long" ? "long" : "scan");
    const std::string error = WriteFile(dir + "/" + name + ".dat", data.str());
    if (!error.empty()) {
      outcome.error = error;
      return outcome;
    }
    outcome.data_files.push_back(dir + "/" + name + ".dat");
  }
  if (!any) {
    outcome.skipped.push_back("the long-transaction plots (no long or long-scan runs)");
    return outcome;
  }
  std::ostringstream gp;
  gp << "# Long-transaction sweep; restyle and run `gnuplot ltx.gp` here.\n"
        "set terminal pngcairo size 1500,450 font ',10' noenhanced\n"
        "set logscale x 2\nset grid\nset key bottom left\n";
  auto tics = [](const auto& sizes) {
    std::string text = "set xtics (";
    for (size_t i = 0; i < std::size(sizes); ++i) {
      text += (i ? ", " : "") + std::to_string(sizes[i]);
    }
    return text + ")\n";
  };
  const struct {
    const char* name;
    const char* x;
    const char* title;
    std::string tics;
  } figures[] = {{"ltx_long", "long txn size (ops, ltx_ops)", "WL1 (long): 1 in 1,000 txns long",
                  tics(kLtxOps)},
                 {"ltx_scan", "scan length (keys, scan_length)",
                  "WL2 (long-scan): 1 in 1,000 txns a long scan", tics(kScanLengths)}};
  for (const auto& figure : figures) {
    gp << "set output '" << figure.name << ".png'\n" << figure.tics
       << "set multiplot layout 1,3 title '" << figure.title << "'\n"
       << "set xlabel '" << figure.x << "'\n"
       << "set ylabel 'short txns committed / s'\nset yrange [0:*]\n"
       << "plot '" << figure.name << ".dat' index 0 using 1:2 with linespoints title 'calvin', "
       << "'' index 1 using 1:2 with linespoints title 'paxflow'\n"
       << "set ylabel 'long txns committed / s'\n"
       << "plot '" << figure.name << ".dat' index 0 using 1:4 with linespoints title 'calvin', "
       << "'' index 1 using 1:4 with linespoints title 'paxflow'\n"
       << "set ylabel 'long txns: commit ratio'\nset yrange [0:1.05]\n"
       << "plot '" << figure.name << ".dat' index 0 using 1:5 with linespoints title 'calvin', "
       << "'' index 1 using 1:5 with linespoints title 'paxflow'\n"
       << "unset multiplot\nset yrange [*:*]\n";
  }
  std::string error = WriteFile(dir + "/ltx.gp", gp.str());
  if (error.empty()) error = RunGnuplot(dir, "ltx.gp");
  outcome.data_files.push_back(dir + "/ltx.gp");
  if (!error.empty()) {
    outcome.error = error;
    return outcome;
  }
  outcome.pngs = {dir + "/ltx_long.png", dir + "/ltx_scan.png"};
  return outcome;
}

}  // namespace paxflow
