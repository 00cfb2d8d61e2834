// Replays the input logs of one replica, with no generator and no network:
// every partition's scheduler runs in this process and multi-partition
// reads pass between them in memory. Determinism makes the resulting state
// digest equal to the recorded run's.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/params.h"
#include "base/summary.h"

namespace paxflow {

struct ReplayResult {
  std::string error;  // empty on success
  Epoch epoch = 0;    // last epoch replayed
  Epoch start_epoch = 0;  // the checkpoint it started from (0: the initial state)
  uint64_t digest = 0;  // whole database (sum over partitions)
  std::vector<uint64_t> partition_digests;
  uint64_t txns = 0;  // txns executed (counted at their origin)
  bool truncated = false;  // a log ended in a torn record
  double seconds = 0;
};

// The cluster parameters recorded in the logs of `dir` (as name=value).
std::string ReadLogParams(const std::string& dir,
                          std::vector<std::pair<std::string, std::string>>* params,
                          uint32_t* partitions);

// Starts from the newest checkpoint every partition of the replica holds
// (<dir>/node-<id>@<epoch>.ckpt), else from the initial state.
// `params` should be the recorded ones; mode and workers may differ.
ReplayResult ReplayLogs(const std::string& dir, uint32_t replica, const NodeParams& params);

}  // namespace paxflow
