// The long-transaction sweep of paxflow-bench --ltx_sweep, in the spirit of
// the Shirakami paper's figures: Shirakami's WL1 (`long`) over the size of
// its long txns (--ltx_ops, 125 to 8,000) and WL2 (`long-scan`) over the
// length of its scans (--scan_length, 100 to 100,000), and the `report` and
// `bom` presets, each next to the same workload without long txns, in both
// modes. For every run: short-txn throughput (and its share of the no-LTX
// run's), long-txn throughput, the long txns' commit ratio and latency, how
// many short txns an LTX's write area deferred, starvation both ways (most
// deferrals of one short txn, share of LTXs guards aborted) and calvin
// mode's OLLP restarts.
//
// Owns nothing; functions of their inputs. Any thread (WriteLtxPlots forks
// gnuplot and waits for it).
#pragma once
#include <string>
#include <vector>

#include "report/report_plots.h"

namespace paxflow {

// The runs, as paxflow-bench --runs takes them.
std::vector<std::string> LtxSweepRuns();
// Some of `rows` are runs of the sweep (so --replot redraws its plots too).
bool HasLtxSweepRows(const std::vector<BenchRow>& rows);

// The sweep's table, as text (and as Markdown).
std::string LtxTable(const std::vector<BenchRow>& rows);
std::string LtxMarkdown(const std::vector<BenchRow>& rows, const std::string& preamble);

// ltx_long.dat, ltx_scan.dat, ltx.gp and the PNGs (ltx_long.png,
// ltx_scan.png: short-txn throughput, long-txn throughput and commit ratio
// against the long txns' size, one line per mode) in `dir`.
PlotOutcome WriteLtxPlots(const std::vector<BenchRow>& rows, const std::string& dir);

}  // namespace paxflow
