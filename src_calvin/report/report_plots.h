// The plots of paxflow-bench's comparison report, and reading a finished
// report (compare.json) back so its plots can be re-rendered without running
// anything.
//
// In: the runs' summaries. Out: plot data (*.dat), a gnuplot script
// (plots.gp) and the PNGs it renders (throughput, latency CDFs, RO
// visibility delay, and for CH-benCHmark each query's latency and
// freshness), all in one results directory so a user can restyle
// the plots with `cd DIR && gnuplot plots.gp`. Owns nothing; runs on the
// caller's thread (it forks gnuplot and waits for it).
#pragma once
#include <string>
#include <vector>

#include "base/summary.h"

namespace paxflow {

// One run of a comparison: a workload (preset plus overrides) in one mode.
struct BenchRow {
  std::string label;  // the run spec as given, e.g. "ro:ro_workers=1"
  std::string mode;   // "calvin" or "paxflow"
  RunSummary summary;
  int code = 0;  // the run's exit status; non-zero: it failed
};

// Reads the rows of a compare.json written by paxflow-bench. Empty on
// success, else what is wrong with which file.
std::string LoadCompareJson(const std::string& path, std::vector<BenchRow>* rows);

struct PlotOutcome {
  std::vector<std::string> data_files;  // *.dat and plots.gp, written in any case
  std::vector<std::string> pngs;        // rendered by gnuplot
  std::vector<std::string> skipped;     // plots left out, and why (e.g. no RO txns)
  std::string error;                    // empty: every plot with data was rendered
};

// Writes throughput.dat, latency_cdf.dat, visibility_cdf.dat (and for runs
// with CH's queries ch_latency_cdf.dat, ch_freshness_cdf.dat) and plots.gp
// into `dir`, then runs gnuplot there. A missing gnuplot is an error in the
// outcome, not a failure: the data files are still there.
PlotOutcome WritePlots(const std::vector<BenchRow>& rows, const std::string& dir);

// Writes `text` to `path`; empty on success, else what went wrong.
std::string WriteFile(const std::string& path, const std::string& text);

// Runs `gnuplot script` in `dir` (no shell: the directory name may hold any
// character). Empty on success, else what went wrong (gnuplot missing, ...).
std::string RunGnuplot(const std::string& dir, const std::string& script = "plots.gp");

}  // namespace paxflow
