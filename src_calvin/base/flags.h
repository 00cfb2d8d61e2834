// Command-line flags of paxflow-node (and of the launcher, which forwards
// them), and how they combine with a config's params and workload presets.
// Only main() functions touch flags; components get a NodeParams.
#pragma once
#include <gflags/gflags.h>
#include <glog/logging.h>  // --log_dir (input logs: nodes log to stderr only)

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/params.h"

DECLARE_string(config);
DECLARE_uint32(node_id);
DECLARE_string(replay);
DECLARE_int32(replay_replica);
DECLARE_string(workload);
DECLARE_string(mode);
DECLARE_uint32(workers);
DECLARE_double(duration);
DECLARE_uint64(run_epochs);
DECLARE_bool(recover);

namespace paxflow {

// Flags set on the command line (call right after ParseCommandLineFlags).
std::set<std::string> ExplicitFlags();

// Builds the node's parameters. Precedence, lowest first: built-in
// defaults, the workload preset, `params` (from the config or a log
// header), flags given on the command line. Unknown names and bad values
// are errors that name the parameter.
std::string ResolveFlags(const std::vector<std::pair<std::string, std::string>>& params,
                         const std::set<std::string>& explicit_flags, uint32_t partitions,
                         NodeParams* out);

// Names of the flags a launcher forwards to its nodes.
const std::vector<std::string>& NodeFlagNames();

}  // namespace paxflow
