// An append-only log of epoch-tagged records, cut into segment files so
// that its old part can be dropped once nobody needs it any more (after a
// checkpoint every node holds).
//
//   <dir>/<name>.<ext>                 the active segment, being written
//   <dir>/<name>.<N>@<E>.<ext>         closed segment number N: every record's
//                                      epoch is <= E
//
// Each segment is a record file (record_file.h): the log's magic, a header
// record (the same in every segment), then the records. A reader sees the
// closed segments in order, then the active one, as one log.
//
// Threads: the writer is thread-safe (one mutex): several threads append,
// another rolls and drops segments. A reader belongs to one thread.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/record_file.h"
#include "common/types.h"

namespace paxflow {

struct LogSegment {
  std::string path;
  uint64_t number = 0;  // closed segments: their order
  Epoch last_epoch = 0;  // closed segments: no record's epoch is above it
  bool active = false;
};

// The segments of log `name` in `dir`: closed ones in order, then the
// active one if it exists.
std::vector<LogSegment> ListSegments(const std::string& dir, const std::string& name,
                                     const std::string& ext);
// The names of the logs with extension `ext` in `dir` (a name has one or
// more segments), sorted.
std::vector<std::string> ListLogNames(const std::string& dir, const std::string& ext);

struct LogFormat {
  std::string ext;    // file extension, without the dot
  std::string magic;  // 8 bytes
  std::string what;   // for messages: "input log", ...
};

class SegmentedLogWriter {
 public:
  // Reads a record's epoch back (to close a segment left by a crash).
  using EpochOf = std::function<Epoch(const std::string& payload)>;

  // With `sync` (--log_fsync), creating, renaming, cutting and removing a
  // segment is made durable (the directory fsynced), as appends are by
  // Flush(true). Set before Create or Reopen.
  void SetSyncDirectory(bool sync) { sync_directory_ = sync; }

  // A fresh log: every segment of `name` is removed first.
  std::string Create(const std::string& dir, const std::string& name, const LogFormat& format,
                     const std::string& header);
  // Goes on with an existing log after a restart: the active segment left
  // behind is cut after its last whole record and closed, and a new one
  // started. `last_epoch` gets the newest epoch in the log (0: none), and
  // `last_record` (if given) the log's last record (empty: none).
  std::string Reopen(const std::string& dir, const std::string& name, const LogFormat& format,
                     const std::string& header, const EpochOf& epoch_of, Epoch* last_epoch,
                     std::string* last_record = nullptr);
  ~SegmentedLogWriter();

  // Appends a record of `epoch`. After a failure every call returns the
  // first error (sticky): the log is not written any more.
  std::string Append(Epoch epoch, std::string_view payload);
  // See RecordWriter::Flush.
  std::string Flush(bool sync);
  // Closes the active segment (if it holds records) and starts a new one.
  std::string Roll();
  // Removes the closed segments whose records are all of epochs <= `epoch`;
  // returns how many.
  size_t DropThrough(Epoch epoch);
  // Closes the log (flushing it).
  std::string Close(bool sync);

  std::string error() const;
  Epoch last_epoch() const;  // newest epoch appended (0: none)
  std::string active_path() const;

 private:
  void Reset(const std::string& dir, const std::string& name, const LogFormat& format,
             const std::string& header);  // mu_ held
  std::string StartSegment();  // mu_ held
  std::string CloseActive();   // mu_ held
  std::string Fail(std::string error);  // mu_ held: makes it sticky
  std::string SyncDir();                 // mu_ held: if sync_directory_

  mutable std::mutex mu_;
  std::string dir_, name_, header_;
  LogFormat format_;
  RecordWriter active_;
  uint64_t active_records_ = 0;
  Epoch active_max_epoch_ = 0;
  Epoch last_epoch_ = 0;
  uint64_t next_number_ = 1;
  std::string error_;
  bool sync_directory_ = false;
};

class SegmentedLogReader {
 public:
  // Opens log `name` in `dir`, but for closed segments whose records are all
  // of epochs below `from_epoch`; the header is the first segment's. Empty
  // on success, else why not. A log written meanwhile is read on: at each
  // segment's end the segments are listed again, so what a roll moved to a
  // new segment is found (each file is read once).
  std::string Open(const std::string& dir, const std::string& name, const LogFormat& format,
                   Epoch from_epoch = 0);
  const std::string& header() const { return header_; }
  // The next whole record, across segments; false at the end. A torn
  // record ends the segment it is in (truncated() says so).
  bool Next(std::string* payload);
  bool truncated() const { return truncated_; }

  // With this set, a closed segment that is damaged (unreadable, or torn
  // before its end: a writer closes a segment whole, and a restart cuts a
  // torn tail before it closes it) stops the reader there: Next returns
  // false, damaged() says where, Resume goes on with the next segment.
  void StopAtDamage() { stop_at_damage_ = true; }
  bool damaged() const { return !damage_.empty(); }
  const std::string& damage() const { return damage_; }      // what is wrong, naming the file
  const LogSegment& damaged_segment() const { return damaged_segment_; }
  void Resume() { damage_.clear(); }

 private:
  // Opens the first segment not read yet; false if there is none (or a
  // damaged one stops the reader).
  bool OpenNextSegment(std::string* header);
  // A damaged segment: true if that stops the reader.
  bool Damaged(const LogSegment& segment, const std::string& what);

  std::string dir_, name_;
  LogFormat format_;
  Epoch from_epoch_ = 0;
  RecordReader reader_;
  bool reading_ = false;
  std::set<uint64_t> read_;  // inodes of the segments opened so far
  std::string header_;
  bool truncated_ = false;
  LogSegment current_;  // the segment being read
  bool stop_at_damage_ = false;
  std::string damage_;
  LogSegment damaged_segment_;
};

}  // namespace paxflow
