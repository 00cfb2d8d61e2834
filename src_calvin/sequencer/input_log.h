// A node's durable logs of its input, in its log directory (--log_dir):
//
//   node-<id>.log    the input log: every epoch this partition executes
//                    (LogEpoch: the batches of every sequencer), appended
//                    before any of its txns runs, so the partition can be
//                    rebuilt by replaying it (from a checkpoint).
//   node-<id>.seq    the sequencer log: what this node's sequencers cut
//                    (SequencedEpoch: one batch per partition), appended
//                    before anything is sent, so that a peer that missed a
//                    batch (restarted, or a lagging replica) gets it again.
//   node-<id>.reads  the reads log: reads of read-write txns this node sent
//                    to other partitions (SentReads), for a participant
//                    that restarts and runs those txns again.
//
// Each is a segmented log (common/segmented_log.h): it rolls to a new
// segment at every checkpoint, and segments every node's checkpoints have
// passed are removed. A torn tail (a crash mid-write) ends a log at its
// last whole record.
// Threads: writers are thread-safe; a reader belongs to one thread.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "common/histogram.h"
#include "common/segmented_log.h"
#include "config.pb.h"
#include "recovery.pb.h"
#include "scheduler/epoch_merger.h"
#include "scheduler/remote_reads.h"
#include "txn.pb.h"

namespace paxflow {

extern const LogFormat kInputLogFormat;      // node-<id>.log
extern const LogFormat kSequencerLogFormat;  // node-<id>.seq
extern const LogFormat kReadsLogFormat;      // node-<id>.reads

// "node-<id>": the name of every file of node `id` in a log directory.
std::string NodeFileName(NodeId node);

class InputLogWriter {
 public:
  // A fresh log at `path` (<dir>/<name>.log): any earlier one is removed.
  // Empty result on success, else the error.
  std::string Open(const std::string& path, const LogHeader& header, bool fsync_each_epoch);
  // Goes on with the log at `path` after a restart; `last_epoch` gets the
  // newest epoch it holds (0: none).
  std::string Reopen(const std::string& path, const LogHeader& header, bool fsync_each_epoch,
                     Epoch* last_epoch);
  // Appends one epoch (group commit: one write, one optional fsync). Empty
  // on success; after a failure, the first error (the log is dead).
  std::string Append(const MergedEpoch& epoch);
  SegmentedLogWriter& log() { return log_; }
  // Any thread (the metrics endpoint) may read these while it appends.
  uint64_t bytes_written() const { return bytes_.load(std::memory_order_relaxed); }  // header included
  // Each epoch's write-out: flush, and fdatasync with fsync_each_epoch.
  const Histogram& sync_us() const { return sync_us_; }

 private:
  SegmentedLogWriter log_;
  bool fsync_ = false;
  std::atomic<uint64_t> bytes_{0};  // one writer (the appending thread)
  Histogram sync_us_;
  std::string buffer_;
  bool open_ = false;
};

class InputLogReader {
 public:
  // `path`: <dir>/node-<id>.log, the log's name (its segments are found);
  // closed segments wholly before `from_epoch` are not read.
  std::string Open(const std::string& path, Epoch from_epoch = 0);
  SegmentedLogReader& log() { return reader_; }  // e.g. StopAtDamage
  const LogHeader& header() const { return header_; }
  // Next whole epoch; false at the end (or at a torn tail, see truncated()).
  bool Next(LogEpoch* epoch);
  bool truncated() const { return reader_.truncated() || garbled_; }
  const std::string& path() const { return path_; }

 private:
  SegmentedLogReader reader_;
  std::string path_;
  LogHeader header_;
  bool garbled_ = false;
};

// The input log of a node inside a log directory.
std::string InputLogPath(const std::string& dir, NodeId node);
// Every node's input log in `dir` (node-<id>.log, by name), sorted.
std::vector<std::string> ListInputLogs(const std::string& dir);

// The epoch of a record of each log, read back.
Epoch EpochOfInputRecord(const std::string& payload);
Epoch EpochOfSequencerRecord(const std::string& payload);
Epoch EpochOfReadsRecord(const std::string& payload);

}  // namespace paxflow
