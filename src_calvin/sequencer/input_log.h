// The input log: every epoch a scheduler executes, appended before any of
// its txns runs, so a node can be rebuilt by replaying it.
//
// File: "PAXFLOG1", then records [u32 length][u32 crc32c][payload]; the first
// payload is a LogHeader, each later one a LogEpoch. A torn or corrupt tail
// (a crash mid-write) ends the log at the last whole epoch.
// Threads: a writer is used by one thread (the scheduler's); readers too.
#pragma once
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "config.pb.h"
#include "scheduler/epoch_merger.h"
#include "txn.pb.h"

namespace paxflow {

class InputLogWriter {
 public:
  // Creates (truncates) `path`. Empty result on success, else the error.
  std::string Open(const std::string& path, const LogHeader& header, bool fsync_each_epoch);
  ~InputLogWriter();
  // Appends one epoch (group commit: one write, one optional fsync).
  void Append(const MergedEpoch& epoch);
  uint64_t bytes_written() const { return bytes_; }

 private:
  void WriteRecord(const std::string& payload);

  FILE* file_ = nullptr;
  std::string path_;
  bool fsync_ = false;
  uint64_t bytes_ = 0;
  std::string buffer_;
};

class InputLogReader {
 public:
  std::string Open(const std::string& path);  // empty on success
  const LogHeader& header() const { return header_; }
  // Next whole epoch; false at the end (or at a torn tail, see truncated()).
  bool Next(LogEpoch* epoch);
  bool truncated() const { return truncated_; }
  const std::string& path() const { return path_; }

 private:
  bool ReadRecord(std::string* payload);

  std::unique_ptr<FILE, int (*)(FILE*)> file_{nullptr, &fclose};
  std::string path_;
  LogHeader header_;
  bool truncated_ = false;
};

// The log file name of a node inside a log directory.
std::string InputLogPath(const std::string& dir, NodeId node);
// Every input log in `dir`, sorted by name.
std::vector<std::string> ListInputLogs(const std::string& dir);

}  // namespace paxflow
