// Checkpoints of one partition: its store as of an epoch, with the
// scheduler's state there, in one file of the node's log directory:
//
//   <dir>/node-<id>@<epoch>.ckpt
//
// A record file (common/record_file.h, magic PAXFCKP2): a CheckpointHeader,
// chunks of (key, value) pairs, and a trailer with the key and chunk counts,
// the state digest and an end marker, all checked on load: a file cut
// anywhere (after its header, after a chunk, mid-record) is refused. Written as <name>.tmp, fsynced, then
// renamed and the directory fsynced: a crash while writing leaves the
// previous checkpoint as it was, and a .tmp that the next start removes.
//
// Owns nothing; functions run on the caller's thread (the node's
// checkpoint thread). Writing reads the store under Store::Scan's
// conditions (the epoch pinned, or the partition paused).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend/store.h"
#include "common/types.h"
#include "recovery.pb.h"

namespace paxflow {

struct CheckpointStats {
  std::string path;
  uint64_t keys = 0;
  uint64_t bytes = 0;
  uint64_t digest = 0;
  double seconds = 0;
};

std::string CheckpointPath(const std::string& dir, NodeId node, Epoch epoch);

// Writes the checkpoint of `store` at header.epoch(). `midway` (tests) runs
// once the file holds its header and first chunk. Empty on success, else
// the error (the .tmp is removed).
std::string WriteCheckpoint(const std::string& dir, const CheckpointHeader& header, Store* store,
                            size_t slot, CheckpointStats* stats,
                            const std::function<void()>& midway = nullptr);

// Loads the checkpoint at `path` into `store` (a fresh one, nothing loaded;
// null: nothing is loaded) and checks it whole: every record's checksum, the key count and the
// digest. Empty on success, else what is wrong with the file.
std::string LoadCheckpoint(const std::string& path, Store* store, size_t slot,
                           CheckpointHeader* header, CheckpointStats* stats);
// The same checks as LoadCheckpoint without loading anything: whether the
// file is whole. Empty if so, else what is wrong with it.
std::string CheckCheckpoint(const std::string& path, CheckpointHeader* header);
// Reads only the header (which epoch, which node).
std::string ReadCheckpointHeader(const std::string& path, CheckpointHeader* header);

// The epochs of node `node`'s checkpoints in `dir` (whole files), ascending.
std::vector<Epoch> ListCheckpoints(const std::string& dir, NodeId node);
// Removes node `node`'s checkpoints older than `epoch`; returns how many.
size_t RemoveCheckpointsBefore(const std::string& dir, NodeId node, Epoch epoch);
// Removes what a crash while writing left behind (*.ckpt.tmp).
void RemoveUnfinishedCheckpoints(const std::string& dir, NodeId node);
// Removes every checkpoint of `node` (a fresh start).
void RemoveAllCheckpoints(const std::string& dir, NodeId node);

}  // namespace paxflow
