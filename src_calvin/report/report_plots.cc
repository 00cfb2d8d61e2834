#include "report/report_plots.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <utility>

#include "common/proto_json.h"
#include "common/stats.h"

namespace paxflow {
namespace {

// A point of an empirical CDF: the fraction of samples <= value_ms.
struct CdfPoint {
  double value_ms;
  double fraction;
};

// The histogram keeps its bucket counts private; its sparse encoding
// ("count;sum;max;bucket:count,...") is the public way to read them. Each
// non-empty bucket gives the cumulative fraction at its upper bound (capped
// at the largest sample, as Quantile does), and a leading point at the first
// bucket's lower bound makes every curve start from 0.
std::vector<CdfPoint> Cdf(const Histogram& histogram) {
  std::vector<CdfPoint> points;
  if (histogram.count() == 0) return points;
  std::string encoded = histogram.Encode();
  size_t start = 0;
  for (int field = 0; field < 3 && start != std::string::npos; ++field) {
    start = encoded.find(';', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos) return points;
  std::stringstream in(encoded.substr(start));
  std::string item;
  uint64_t seen = 0;
  const double total = static_cast<double>(histogram.count());
  // A log axis cannot show 0: a 0 us sample is drawn at 1 us.
  auto ms = [](uint64_t micros) { return std::max<uint64_t>(micros, 1) / 1000.0; };
  while (std::getline(in, item, ',')) {
    const size_t colon = item.find(':');
    if (colon == std::string::npos) continue;
    const int bucket = std::atoi(item.substr(0, colon).c_str());
    const uint64_t count = std::strtoull(item.substr(colon + 1).c_str(), nullptr, 10);
    if (points.empty()) {
      const uint64_t low = bucket > 0 ? Histogram::BucketUpperBound(bucket - 1) + 1 : 0;
      points.push_back({ms(low), 0.0});
    }
    seen += count;
    const uint64_t upper = std::min(Histogram::BucketUpperBound(bucket), histogram.max());
    points.push_back({ms(upper), seen / total});
  }
  return points;
}

// Labels come from the user's --runs text: escape what would end a gnuplot
// double-quoted string.
std::string GnuplotString(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

// Data files have no escapes: a quote inside a quoted field would split it.
std::string DataLabel(std::string text) {
  std::replace(text.begin(), text.end(), '"', '\'');
  return "\"" + text + "\"";
}

std::string Number(double x, const char* format = "%.6g") {
  char buffer[64];
  snprintf(buffer, sizeof(buffer), format, x);
  return buffer;
}

// Bars are coloured by mode; CDF curves by workload (a workload's two modes
// share a hue, dashed for calvin). The workload palette avoids the two mode
// colours so a colour means one thing per plot.
std::string ModeColor(const std::string& mode, size_t index) {
  if (mode == "calvin") return "#e08214";
  if (mode == "paxflow") return "#2166ac";
  static const char* const kOthers[] = {"#7b3294", "#1a9850", "#636363"};
  return kOthers[index % 3];
}

std::string WorkloadColor(size_t index) {
  static const char* const kPalette[] = {"#1b9e77", "#7570b3", "#e7298a", "#66a61e",
                                         "#a6761d", "#d62728", "#17becf", "#555555"};
  return kPalette[index % 8];
}

// How a mode's CDF curves are drawn (colour aside). Curves other than
// paxflow's also carry point marks where the terminal has no dashes
// (MARKED, chosen at the top of plots.gp): libgd's png draws every dash type
// solid.
std::string ModeStyle(const std::string& mode, size_t index) {
  if (mode == "paxflow") return "with lines lw 2 dt 1";
  if (mode == "calvin") return "with @MARKED lw 2 dt 2";
  return "with @MARKED lw 2 dt " + std::to_string(3 + index % 3);
}

const char* KindTitle(int kind) {
  switch (kind) {
    case kKindReadOnly:
      return "read-only (RO) txns";
    case kKindReadWrite:
      return "read-write (RW) txns";
    default:
      return "long (LTX) txns";
  }
}

template <typename T>
size_t IndexOf(const std::vector<T>& items, const T& item) {
  return static_cast<size_t>(std::find(items.begin(), items.end(), item) - items.begin());
}

// Workloads and modes in the order they were run. A workload given twice
// in --runs becomes "label #2", so no run hides another in the plots.
struct Layout {
  std::vector<std::string> workloads, modes;
  std::map<std::pair<size_t, size_t>, const BenchRow*> rows;  // (workload, mode) -> row

  explicit Layout(const std::vector<BenchRow>& all) {
    std::map<std::pair<std::string, std::string>, int> seen;  // (label, mode) -> runs so far
    for (const BenchRow& row : all) {
      const int n = ++seen[{row.label, row.mode}];
      const std::string label = n == 1 ? row.label : row.label + " #" + std::to_string(n);
      if (IndexOf(workloads, label) == workloads.size()) workloads.push_back(label);
      if (IndexOf(modes, row.mode) == modes.size()) modes.push_back(row.mode);
      rows[{IndexOf(workloads, label), IndexOf(modes, row.mode)}] = &row;
    }
  }
  const BenchRow* Find(size_t workload, size_t mode) const {
    auto it = rows.find({workload, mode});
    return it == rows.end() ? nullptr : it->second;
  }
};

// The x axis of a CDF over [low, high] ms: 1-2-5 tics, as gnuplot's log
// axis labels only powers of ten, too few to read a latency off; and the
// range with a little room either side, as autoscaling a log axis stretches
// it to whole decades and squeezes the curves.
std::string LogAxis(double low, double high) {
  low /= 1.25;
  high *= 1.25;
  std::string tics;
  for (double decade = 1e-3; decade <= 1e6; decade *= 10) {
    for (double step : {1.0, 2.0, 5.0}) {
      const double tic = decade * step;
      if (tic < low || tic > high) continue;
      if (!tics.empty()) tics += ", ";
      tics += GnuplotString(Number(tic, "%g")) + " " + Number(tic, "%g");
    }
  }
  return "set xrange [" + Number(low) + ":" + Number(high) + "]\nset xtics (" + tics + ")\n";
}

// One curve of a CDF plot: its block in the data file and its style.
struct Curve {
  int block;
  std::string color, style;
};

// The legend names each workload (a colour) and each mode (a line style) once:
// a line per (workload, mode) pair would outgrow the plot.
struct LegendEntry {
  std::string name, color, style;
  std::vector<std::string> failed_modes;  // runs of this workload that failed
};

struct CdfPanel {
  std::string title;
  std::vector<Curve> curves;
  std::vector<LegendEntry> workloads, modes;
  double low = 1e300, high = 0;
};

LegendEntry* AddLegend(std::vector<LegendEntry>* entries, const LegendEntry& entry) {
  for (LegendEntry& e : *entries) {
    if (e.name == entry.name) return &e;
  }
  entries->push_back(entry);
  return &entries->back();
}

std::string LegendTitle(const LegendEntry& entry) {
  if (entry.failed_modes.empty()) return entry.name;
  std::string modes;
  for (const std::string& mode : entry.failed_modes) modes += (modes.empty() ? "" : ", ") + mode;
  return entry.name + " (" + modes + " run FAILED)";
}

// Appends each (workload, mode) histogram picked by `pick` as one block of
// `data` (blocks are separated by two blank lines, gnuplot's `index`).
CdfPanel AddCdfBlocks(const Layout& layout, const std::string& what,
                      const std::function<const Histogram&(const RunSummary&)>& pick,
                      std::ostringstream* data, int* blocks) {
  CdfPanel panel;
  for (size_t w = 0; w < layout.workloads.size(); ++w) {
    for (size_t m = 0; m < layout.modes.size(); ++m) {
      const BenchRow* row = layout.Find(w, m);
      if (!row) continue;
      const std::string& workload = layout.workloads[w];
      const Histogram& histogram = pick(row->summary);
      std::vector<CdfPoint> points = Cdf(histogram);
      if (points.empty()) continue;
      *data << "# block " << *blocks << ": " << what << ", workload " << workload << ", mode "
            << row->mode << ", " << histogram.count() << " samples"
            << (row->code != 0 ? ", run FAILED" : "") << "\n# value_ms  fraction_le\n";
      for (const CdfPoint& point : points) {
        *data << Number(point.value_ms) << " " << Number(point.fraction) << "\n";
        panel.low = std::min(panel.low, point.value_ms);
        panel.high = std::max(panel.high, point.value_ms);
      }
      *data << "\n\n";
      panel.curves.push_back({*blocks, WorkloadColor(w), ModeStyle(row->mode, m)});
      LegendEntry* entry =
          AddLegend(&panel.workloads, {workload, WorkloadColor(w), "with lines lw 2", {}});
      if (row->code != 0) entry->failed_modes.push_back(row->mode);
      AddLegend(&panel.modes, {row->mode, "#000000", ModeStyle(row->mode, m), {}});
      ++*blocks;
    }
  }
  return panel;
}

// One legend entry per line, below the plot, in a bottom margin sized for
// it: gnuplot's own sizing lets a multi-column key run into the x label,
// and equal margins line up the panels of a multiplot.
std::string LegendRoom(size_t entries) {
  return "set key maxrows " + std::to_string(entries) + "\nset bmargin " +
         std::to_string(entries + 4) + "\n";
}

// The plot command of one CDF panel, with dotted guides at the p50 and p99
// the table reports, so the two can be read against each other.
std::string CdfPlot(const CdfPanel& panel, const std::string& data_file,
                    const std::string& xlabel) {
  std::ostringstream gp;
  gp << "set title " << GnuplotString(panel.title) << "\n"
     << "set xlabel " << GnuplotString(xlabel) << "\n"
     << LogAxis(panel.low, panel.high) << "plot ";
  for (size_t i = 0; i < panel.curves.size(); ++i) {
    const Curve& curve = panel.curves[i];
    gp << (i ? ", \\\n     " : "") << GnuplotString(data_file) << " index " << curve.block
       << " using 1:2 " << curve.style << " lc rgb " << GnuplotString(curve.color)
       << " notitle";
  }
  // Legend-only lines: NaN draws nothing but gets a key entry.
  std::vector<LegendEntry> legend = panel.workloads;
  legend.insert(legend.end(), panel.modes.begin(), panel.modes.end());
  for (const LegendEntry& entry : legend) {
    gp << ", \\\n     NaN " << entry.style << " lc rgb " << GnuplotString(entry.color)
       << " title " << GnuplotString(LegendTitle(entry));
  }
  gp << "\n";
  return gp.str();
}

std::string CdfSetup() {
  return "set logscale x\n"
         "set yrange [0:1.02]\n"
         "set ytics 0.1\n"
         "set ylabel \"cumulative fraction of txns\"\n"
         "set grid xtics ytics lc rgb \"#dddddd\"\n"
         "set key below vertical box Left reverse\n"
         "set arrow 1 from graph 0, first 0.5 to graph 1, first 0.5 nohead dt 3 lc rgb "
         "\"#888888\"\n"
         "set arrow 2 from graph 0, first 0.99 to graph 1, first 0.99 nohead dt 3 lc rgb "
         "\"#888888\"\n"
         "set label 1 \"p50\" at graph 0.01, first 0.5 offset 0,0.6 textcolor rgb \"#666666\"\n"
         "set label 2 \"p99\" at graph 0.01, first 0.99 offset 0,-0.7 textcolor rgb "
         "\"#666666\"\n";
}

// Throughput bars: one group per workload, one bar per mode, each bar of a
// mode other than calvin labelled with its ratio to calvin's.
std::string ThroughputPlot(const Layout& layout, std::ostringstream* data) {
  const size_t groups = layout.workloads.size(), bars = layout.modes.size();
  const size_t calvin = IndexOf(layout.modes, std::string("calvin"));
  *data << "# committed txn/s by workload (one row each) and mode; ratio_<mode> = mode / calvin;\n"
        << "# failed_<mode> = 1 if that run failed; ? = no such run\n# x";
  for (const std::string& mode : layout.modes) *data << " " << mode;
  for (size_t m = 0; m < bars; ++m) {
    if (m != calvin && calvin < bars) *data << " ratio_" << layout.modes[m];
  }
  for (const std::string& mode : layout.modes) *data << " failed_" << mode;
  *data << " workload\n";
  double top = 0;
  size_t longest = 0;
  for (size_t w = 0; w < groups; ++w) {
    *data << w;
    for (size_t m = 0; m < bars; ++m) {
      const BenchRow* row = layout.Find(w, m);
      *data << " " << (row ? Number(row->summary.Throughput(), "%.1f") : "?");
      if (row) top = std::max(top, row->summary.Throughput());
    }
    const BenchRow* base = calvin < bars ? layout.Find(w, calvin) : nullptr;
    for (size_t m = 0; m < bars; ++m) {
      if (m == calvin || calvin >= bars) continue;
      const BenchRow* row = layout.Find(w, m);
      const bool ratio = row && base && base->summary.Throughput() > 0;
      *data << " "
            << (ratio ? Number(row->summary.Throughput() / base->summary.Throughput(), "%.4f")
                      : "?");
    }
    for (size_t m = 0; m < bars; ++m) {
      const BenchRow* row = layout.Find(w, m);
      *data << " " << (row && row->code != 0 ? "1" : "?");
    }
    *data << " " << DataLabel(layout.workloads[w]) << "\n";
    longest = std::max(longest, layout.workloads[w].size());
  }
  // Wide enough for ~70 px per bar; tic labels turn when they would overlap.
  const int width = std::max<int>(900, static_cast<int>(groups * (bars * 70 + 50) + 200));
  const bool rotate =
      longest * 8 > static_cast<size_t>((width - 200) / std::max<size_t>(groups, 1));
  // A lone bar of a one-mode run would fill its whole group.
  const double bar_width = std::min(0.8 / static_cast<double>(bars), 0.4);
  std::ostringstream gp;
  gp << "# --- throughput.png: committed txn/s, one group per workload, one bar per mode\n"
     << "reset\n"
     << "set terminal @TERM size " << width << "," << (rotate ? 640 : 560) << "\n"
     << "set output \"throughput.png\"\n"
     << "set datafile missing \"?\"\nset tmargin 5\n"
     << "set title \"Throughput by workload and mode"
     << (calvin < bars && bars > 1 ? " (label on a bar: its ratio to calvin)" : "")
     << "\" offset 0,1.5\n"
     << "set ylabel \"committed txn/s\"\nset xlabel \"workload\"\n"
     // "200k" reads better than 200000, but below 10k tics fall between
     // thousands and would round ("1.5k" as "2k").
     << "set format y \"" << (top >= 10000 ? "%.0s%c" : "%.0f") << "\"\n"
     << "set yrange [0:" << Number(std::max(top, 1.0) * 1.15, "%.0f") << "]\n"
     << "set xrange [-0.6:" << Number(groups - 0.4, "%.1f") << "]\n"
     << "set style fill solid 0.9 border rgb \"#333333\"\n"
     << "set boxwidth " << Number(bar_width) << " absolute\n"
     << "set grid ytics lc rgb \"#dddddd\"\n"
     << "set key at graph 0.5, graph 1.02 center bottom horizontal\n"
     << "set xtics nomirror" << (rotate ? " rotate by 25 right" : "") << " (";
  for (size_t w = 0; w < groups; ++w) {
    gp << (w ? ", " : "") << GnuplotString(layout.workloads[w]) << " " << w;
  }
  gp << ")\nplot ";
  int ratio_column = static_cast<int>(bars) + 2;
  const int failed_column =
      static_cast<int>(bars) + 2 + static_cast<int>(calvin < bars ? bars - 1 : 0);
  std::vector<bool> mode_failed(bars, false);
  for (const auto& [where, row] : layout.rows) {
    if (row->code != 0) mode_failed[where.second] = true;
  }
  for (size_t m = 0; m < bars; ++m) {
    const std::string x =
        "($1 + " + Number((static_cast<double>(m) - (bars - 1) / 2.0) * bar_width) + ")";
    const std::string y = "($" + std::to_string(m + 2) + ")";
    gp << (m ? ", \\\n     " : "") << "\"throughput.dat\" using " << x << ":" << y
       << " with boxes lc rgb " << GnuplotString(ModeColor(layout.modes[m], m)) << " title "
       << GnuplotString(layout.modes[m]);
    if (m != calvin && calvin < bars) {
      gp << ", \\\n     \"\" using " << x << ":" << y << ":(sprintf(\"%.2fx\", $"
         << ratio_column++ << ")) with labels offset 0,0.8 font \",12\" notitle";
    }
    if (!mode_failed[m]) continue;
    gp << ", \\\n     \"\" using " << x << ":($" << failed_column + m
       << " * 0):(\"FAILED\") with labels rotate left offset 0,0.5 textcolor rgb \"#cc0000\""
          " notitle";
  }
  gp << "\n";
  return gp.str();
}

// CH-benCHmark's queries (procedures whose results carry a snapshot age),
// in the order the runs name them.
std::vector<std::string> QueryNames(const std::vector<BenchRow>& rows) {
  std::vector<std::string> names;
  for (const BenchRow& row : rows) {
    for (const ProcedureSummary& p : row.summary.procedures) {
      if (p.age_epochs.count() > 0 && IndexOf(names, p.name) == names.size()) {
        names.push_back(p.name);
      }
    }
  }
  return names;
}

// One multiplot of CDF panels, one per query: `pick` chooses the
// histogram (latency or snapshot age) of a query's procedure summary.
std::string QueryPanels(const Layout& layout, const std::vector<std::string>& queries,
                        const std::string& what, const std::string& png,
                        const std::string& data_file, const std::string& xlabel,
                        const std::function<const Histogram&(const ProcedureSummary&)>& pick,
                        std::ostringstream* data) {
  static const Histogram kNone;
  int blocks = 0;
  std::vector<CdfPanel> panels;
  size_t entries = 0;
  for (const std::string& query : queries) {
    CdfPanel panel = AddCdfBlocks(
        layout, query + " " + what,
        [&](const RunSummary& s) -> const Histogram& {
          for (const ProcedureSummary& p : s.procedures) {
            if (p.name == query) return pick(p);
          }
          return kNone;
        },
        data, &blocks);
    panel.title = query;
    if (panel.curves.empty()) continue;
    entries = std::max(entries, panel.workloads.size() + panel.modes.size());
    panels.push_back(panel);
  }
  if (panels.empty()) return "";
  std::ostringstream gp;
  gp << "# --- " << png << ": CH-benCHmark's queries, " << what
     << ", one panel per query; colour = workload, line = mode\n"
     << "reset\n"
     << "set terminal @TERM size " << 520 * panels.size() << "," << 420 + 18 * entries << "\n"
     << "set output " << GnuplotString(png) << "\n"
     << "set multiplot layout 1," << panels.size() << " title "
     << GnuplotString("CH-benCHmark queries: " + what + " CDF by workload and mode") << "\n"
     << CdfSetup() << "set ylabel \"cumulative fraction of queries\"\n" << LegendRoom(entries);
  for (const CdfPanel& panel : panels) gp << CdfPlot(panel, data_file, xlabel);
  gp << "unset multiplot\n\n";
  return gp.str();
}

}  // namespace

std::string WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  return out ? "" : "cannot write " + path + ": " + std::strerror(errno);
}

std::string RunGnuplot(const std::string& dir, const std::string& script) {
  // What we printed so far comes before gnuplot's own messages.
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) return std::string("cannot fork gnuplot: ") + std::strerror(errno);
  if (pid == 0) {
    // Our SignalWatcher blocks SIGINT/SIGTERM; gnuplot must stay stoppable.
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, nullptr);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execlp("gnuplot", "gnuplot", script.c_str(), static_cast<char*>(nullptr));
    _exit(errno == ENOENT ? 127 : 126);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return std::string("waiting for gnuplot: ") + std::strerror(errno);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return "gnuplot is not installed (Debian: apt-get install gnuplot-nox; `make` installs it), "
           "so no PNGs were rendered";
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 126) {
    return "cannot run gnuplot in " + dir;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return "gnuplot failed on " + dir + "/" + script + " (its messages are above)";
  }
  return "";
}

std::string LoadCompareJson(const std::string& path, std::vector<BenchRow>* rows) {
  std::string text, error;
  if (!ReadTextFile(path, &text, &error)) return error;
  // The file is the array of runs; protobuf reads it as CompareFile's field.
  CompareFile file;
  error = JsonToMessage("{\"runs\":" + text + "}", &file);
  if (!error.empty()) return path + ": expected a JSON array of runs: " + error;
  rows->clear();
  for (int i = 0; i < file.runs_size(); ++i) {
    const CompareRun& run = file.runs(i);
    const std::string where = path + ": run " + std::to_string(i + 1);
    BenchRow row;
    row.label = run.workload();
    row.mode = run.mode();
    if (row.label.empty() || row.mode.empty()) return where + ": no workload or mode";
    row.code = run.status().empty() || run.status() == "ok" ? 0 : 1;
    error = RunSummary::FromFile(run.summary(), &row.summary);
    if (!error.empty()) return where + " (" + row.label + ", " + row.mode + "): " + error;
    rows->push_back(std::move(row));
  }
  if (rows->empty()) return path + ": no runs in it";
  return "";
}

PlotOutcome WritePlots(const std::vector<BenchRow>& rows, const std::string& dir) {
  PlotOutcome outcome;
  const Layout layout(rows);
  // Each plot starts with `reset`, from gnuplot's defaults rather than the
  // previous plot's ranges and formats.
  std::ostringstream gp;
  gp << "# Plots of a paxflow-bench comparison, written with its data files; re-render (e.g.\n"
     << "# after restyling) with: cd <this directory> && gnuplot plots.gp\n"
     << "# pngcairo draws smoother text and dashed lines; the libgd png terminal is the\n"
     << "# fallback, where calvin's curves get point marks instead of dashes.\n"
     << "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
     << "  TERM = \"pngcairo noenhanced font 'sans,11'\"\n"
     << "  MARKED = \"lines\"\n"
     << "} else {\n"
     << "  TERM = \"png noenhanced\"\n"
     << "  MARKED = \"linespoints pointtype 6 pointinterval 6 pointsize 0.8\"\n"
     << "}\n\n";

  std::ostringstream throughput;
  gp << ThroughputPlot(layout, &throughput) << "\n";
  std::vector<std::pair<std::string, std::string>> files = {{"throughput.dat", throughput.str()}};
  std::vector<std::string> pngs = {"throughput.png"};

  // Latency: one panel per kind that has samples in any run.
  std::ostringstream latency;
  int blocks = 0;
  std::vector<CdfPanel> panels;
  for (int kind = 0; kind < kTxnKinds; ++kind) {
    CdfPanel panel = AddCdfBlocks(
        layout, std::string(TxnKindName(kind)) + " latency",
        [kind](const RunSummary& s) -> const Histogram& { return s.kinds[kind].latency_us; },
        &latency, &blocks);
    panel.title = KindTitle(kind);
    if (!panel.curves.empty()) panels.push_back(panel);
  }
  if (!panels.empty()) {
    // Every panel gets the bottom margin of the longest legend, so the plot
    // areas line up; the canvas grows with it so they keep their size.
    size_t entries = 0;
    for (const CdfPanel& panel : panels) {
      entries = std::max(entries, panel.workloads.size() + panel.modes.size());
    }
    gp << "# --- latency_cdf.png: end-to-end latency (txn enters its batch -> result), one\n"
       << "# panel per txn kind; colour = workload, line = mode (dashed calvin, solid paxflow)\n"
       << "reset\n"
       << "set terminal @TERM size " << 640 * panels.size() << "," << 420 + 18 * entries
       << "\n"
       << "set output \"latency_cdf.png\"\n"
       << "set multiplot layout 1," << panels.size()
       << " title \"End-to-end latency CDF by workload and mode\"\n"
       << CdfSetup() << LegendRoom(entries);
    for (const CdfPanel& panel : panels) {
      gp << CdfPlot(panel, "latency_cdf.dat", "latency (ms, log scale)");
    }
    gp << "unset multiplot\n\n";
    files.push_back({"latency_cdf.dat", latency.str()});
    pngs.push_back("latency_cdf.png");
  } else {
    outcome.skipped.push_back("latency_cdf.png: no latency samples in any run");
  }

  std::ostringstream visibility;
  blocks = 0;
  CdfPanel panel = AddCdfBlocks(
      layout, "RO visibility delay",
      [](const RunSummary& s) -> const Histogram& { return s.visibility_us; }, &visibility,
      &blocks);
  panel.title = "Read-only visibility delay CDF by workload and mode";
  if (!panel.curves.empty()) {
    const size_t entries = panel.workloads.size() + panel.modes.size();
    gp << "# --- visibility.png: read-only visibility delay (end of the epoch whose snapshot\n"
       << "# the txn reads -> its result), colour = workload, line = mode\n"
       << "reset\n"
       << "set terminal @TERM size 900,"
       << 420 + 18 * entries << "\n"
       << "set output \"visibility.png\"\n"
       << CdfSetup() << LegendRoom(entries)
       << CdfPlot(panel, "visibility_cdf.dat",
                  "visibility delay (ms, log scale): end of the snapshot's epoch -> result")
       << "\n";
    files.push_back({"visibility_cdf.dat", visibility.str()});
    pngs.push_back("visibility.png");
  } else {
    outcome.skipped.push_back("visibility.png: no read-only txns in any run");
  }
  // CH-benCHmark: each query's latency and freshness (the age of the
  // snapshot it read when its result came back), per mode.
  const std::vector<std::string> queries = QueryNames(rows);
  if (!queries.empty()) {
    struct QueryPlot {
      const char* what;
      const char* png;
      const char* data;
      const char* xlabel;
      const Histogram& (*pick)(const ProcedureSummary&);
    };
    const QueryPlot plots[] = {
        {"latency", "ch_latency.png", "ch_latency_cdf.dat",
         "latency (ms, log scale): batch entered -> result",
         [](const ProcedureSummary& p) -> const Histogram& { return p.latency_us; }},
        {"freshness", "ch_freshness.png", "ch_freshness_cdf.dat",
         "snapshot age at result (ms, log scale)",
         [](const ProcedureSummary& p) -> const Histogram& { return p.age_us; }}};
    for (const QueryPlot& plot : plots) {
      std::ostringstream data;
      const std::string script =
          QueryPanels(layout, queries, plot.what, plot.png, plot.data, plot.xlabel, plot.pick, &data);
      if (script.empty()) continue;
      gp << script;
      files.push_back({plot.data, data.str()});
      pngs.push_back(plot.png);
    }
  }
  gp << "set output\n";
  files.push_back({"plots.gp", gp.str()});

  // Stale outputs of an earlier render would pass for this one's.
  for (const char* name : {"throughput.png", "latency_cdf.png", "visibility.png",
                           "latency_cdf.dat", "visibility_cdf.dat", "ch_latency.png",
                           "ch_freshness.png", "ch_latency_cdf.dat", "ch_freshness_cdf.dat"}) {
    std::remove((dir + "/" + name).c_str());
  }
  for (const auto& [name, text] : files) {
    outcome.error = WriteFile(dir + "/" + name, text);
    if (!outcome.error.empty()) return outcome;
    outcome.data_files.push_back(dir + "/" + name);
  }
  outcome.error = RunGnuplot(dir, "plots.gp");
  if (!outcome.error.empty()) return outcome;
  for (const std::string& png : pngs) outcome.pngs.push_back(dir + "/" + png);
  return outcome;
}

}  // namespace paxflow
