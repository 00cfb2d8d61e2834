// The latency-throughput curve of paxflow-bench (--curve): for each mode,
// the cluster runs with clients as its only load, and paxflow-load
// measures its capacity (closed loop) then offers open-loop load at
// fractions of it (--sweep), recording p50/p99 latency, RO visibility
// delay and BUSY replies at each point. Out: curve-<workload>.{txt,csv,
// json}, curve-<workload>.dat and .gp, and the PNG gnuplot renders (latency
// against throughput, p50 and p99, one colour per mode).
//
// Owns: the node processes and the paxflow-load process of one sweep at a
// time. Threads: the caller's only (it forks and waits).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "common/config.h"

namespace paxflow {

struct CurveOptions {
  std::string workload;                 // a preset
  std::vector<std::string> modes;       // each swept on its own cluster, in order
  std::string percents = "10,20,30,40,50,60,70,80,90,100,110,120";
  double seconds_per_point = 5;
  std::string config_path;              // absolute
  std::string node_binary, load_binary;
  std::vector<std::string> node_flags;  // for every node (and paxflow-load's workload)
  std::string results;                  // directory
  bool echo = true;                     // relay the nodes' progress lines
};

// Runs the sweeps and writes the outputs. Returns 0 if every sweep ran
// cleanly; `report` gets the table, `error` what went wrong.
int RunLatencyCurve(const ClusterConfig& config, const CurveOptions& options,
                    const std::function<int()>& interrupts, std::string* report,
                    std::string* error);

}  // namespace paxflow
