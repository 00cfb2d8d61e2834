// The benchmark matrix of paxflow-bench --matrix: which runs it makes, how
// repeated runs reduce to one row, and the Markdown table (with the date,
// the machine and the command) that the README's performance section is
// regenerated from.
//
// Owns nothing; functions of their inputs (the machine description reads
// /proc and /sys). Any thread.
#pragma once
#include <string>
#include <vector>

#include "report/report_plots.h"

namespace paxflow {

// Overrides that lift the batch cap: a sequencer may cut 10,000 txns an
// epoch (1M txn/s at 10 ms epochs, beyond what one node reaches here). The
// generator's in-flight window (--max_inflight) stays: it bounds queues, and
// a deeper queue only adds latency (and lock-table size in calvin mode).
extern const char kUncappedOverrides[];

// Every workload preset at its own batch size and uncapped, then the
// read-only and mixed presets at the paper's setting with two sequencers
// per node. Run specs as --runs takes them ("preset[:flag=value...]").
std::vector<std::string> MatrixRuns();

// Of several runs of one (workload, mode), the one with the median
// throughput (the lower middle for an even count): its latencies and
// memory stay those of one real run. `runs` must not be empty.
BenchRow MedianRun(std::vector<BenchRow> runs);

// `x` rounded, with thousands separators: "1,234,567".
std::string Thousands(double x);

// "<CPU model>, <n> vCPUs, <memory> GiB RAM, L3 <size>" from /proc and /sys.
std::string MachineDescription();

// A Markdown table: one line per workload, calvin and paxflow throughput
// side by side, their ratio and each run's peak resident memory. `preamble`
// goes above it.
std::string MarkdownTable(const std::vector<BenchRow>& rows, const std::string& preamble);

// Replaces the text between the lines "<!-- bench:begin -->" and
// "<!-- bench:end -->" of the file at `path` with `text`. Empty on success,
// else why not (the file is left alone).
std::string ReplaceMarkedSection(const std::string& path, const std::string& text);

}  // namespace paxflow
