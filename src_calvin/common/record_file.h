// Files of checksummed records, the format every durable file of a node
// shares (input, sequencer and reads logs, checkpoints): an 8-byte magic
// naming the kind of file (its last byte the format's version), then
// records [u32 length][u32 crc][payload], little-endian, where crc is the
// masked crc32c of length and payload (format 2; format 1's plain crc32c of
// the payload let a zero-filled frame pass as an empty record, and is no
// longer read). A crash can tear the last record; readers stop at the last
// whole one.
//
// Threads: one thread at a time per writer or reader.
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace paxflow {

class RecordWriter {
 public:
  RecordWriter() = default;
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Creates (truncates) `path` and writes `magic` (8 bytes). Empty on
  // success, else the error, naming the file.
  std::string Create(const std::string& path, std::string_view magic);
  // Appends one record; it reaches the file by Flush at the latest.
  std::string Append(std::string_view payload);
  // Hands what is buffered to the kernel (it survives a crash of the
  // process); with `sync`, also to the disk (fdatasync).
  std::string Flush(bool sync);
  // Flush (and sync), then close. Empty on success.
  std::string Close(bool sync);
  bool is_open() const { return file_ != nullptr; }
  uint64_t bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

 private:
  std::string Failed(const char* what);

  FILE* file_ = nullptr;
  std::string path_;
  uint64_t bytes_ = 0;
};

class RecordReader {
 public:
  // Empty on success; else why not (missing, not a `what` file, or one of
  // another format version).
  std::string Open(const std::string& path, std::string_view magic, const std::string& what);
  // The next whole record; false at the end or at a torn or corrupt one.
  bool Next(std::string* payload);
  // The file ended in a torn or corrupt record.
  bool truncated() const { return truncated_; }
  // Where the last whole record ends: a writer continuing the file cuts it there.
  uint64_t good_bytes() const { return good_bytes_; }
  const std::string& path() const { return path_; }
  // The open file's inode: names it whatever it is renamed to.
  uint64_t inode() const;

 private:
  std::unique_ptr<FILE, int (*)(FILE*)> file_{nullptr, &fclose};
  std::string path_;
  bool truncated_ = false;
  uint64_t good_bytes_ = 0;
};

// fsyncs a directory, so that a create, rename or unlink in it is durable.
std::string SyncDirectory(const std::string& dir);
// fsyncs a file by name (e.g. after truncate()).
std::string SyncFile(const std::string& path);
// Tests: `hook` is called with the directory at every SyncDirectory (null:
// none). Set it while no other thread syncs.
void SetDirectorySyncHookForTesting(std::function<void(const std::string&)> hook);
// The directory part of a path ("." if none).
std::string DirectoryOf(const std::string& path);

}  // namespace paxflow
