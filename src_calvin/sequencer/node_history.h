// A node's durable files in a log directory, read without changing them:
// what each of its logs holds (LogExtent), the files that are its history
// (a start without --recover must not remove them), for the node at start
// and for paxflow-cluster before it starts nodes over a directory.
// Owns: no state. Threads: any.
#pragma once
#include <string>
#include <vector>

#include "common/segmented_log.h"
#include "common/types.h"

namespace paxflow {

// What a log holds, read without changing it.
struct LogExtent {
  bool exists = false;      // it has segments
  std::string header;       // its header record (of its first segment)
  uint64_t records = 0;     // 0: none (a log only created); else at least that many
  Epoch last_epoch = 0;
  std::string last_record;  // the last whole record read (empty: none)
  std::string error;        // its segments could not be read
};

LogExtent ReadLogExtent(const std::string& dir, const std::string& name, const LogFormat& format,
                        const SegmentedLogWriter::EpochOf& epoch_of);

// Every durable file of node `id` in `dir` (node-<id>.*, node-<id>@*: logs,
// checkpoints, state, and their temporaries; not a launcher's node-<id>.out
// or .json), sorted.
std::vector<std::string> NodeFiles(const std::string& dir, NodeId id);

// History: every file but logs that hold no record yet (a node stopped
// between creating its logs and its first epoch ran nothing).
std::vector<std::string> HistoryOf(const std::vector<std::string>& files, const std::string& name,
                                   const LogExtent& input, const LogExtent& sequenced,
                                   const LogExtent& reads);

// Node `node`'s history in `dir`: its files (names, sorted) but for logs
// that hold no record yet. A fresh start over them needs --wipe.
std::vector<std::string> NodeHistoryFiles(const std::string& dir, NodeId node);

}  // namespace paxflow
