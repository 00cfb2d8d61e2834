#include "common/record_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "common/hash.h"

namespace paxflow {
namespace {
constexpr uint32_t kMaxRecord = 1u << 30;
constexpr size_t kMagicSize = 8;

// A record's checksum: crc32c over its length and payload, masked (as
// LevelDB does). Unmasked, the crc of empty input is 0, and a zero-filled
// region (preallocated, or a torn tail the file system filled with zeros)
// would read as a run of valid empty records.
uint32_t FrameCrc(uint32_t length, const char* payload, size_t size) {
  uint32_t crc = Crc32c(&length, sizeof(length));
  crc = Crc32cExtend(crc, payload, size);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::function<void(const std::string&)>& DirectorySyncHook() {
  static std::function<void(const std::string&)> hook;
  return hook;
}

}  // namespace

void SetDirectorySyncHookForTesting(std::function<void(const std::string&)> hook) {
  DirectorySyncHook() = std::move(hook);
}

RecordWriter::~RecordWriter() {
  if (file_) fclose(file_);
}

std::string RecordWriter::Failed(const char* what) {
  return std::string("cannot ") + what + " " + path_ + ": " + std::strerror(errno);
}

std::string RecordWriter::Create(const std::string& path, std::string_view magic) {
  if (file_) fclose(file_);
  path_ = path;
  bytes_ = 0;
  file_ = fopen(path.c_str(), "wb");
  if (!file_) return Failed("create");
  if (fwrite(magic.data(), 1, kMagicSize, file_) != kMagicSize) return Failed("write");
  bytes_ = kMagicSize;
  return "";
}

std::string RecordWriter::Append(std::string_view payload) {
  if (!file_) return "cannot write " + path_ + ": not open";
  const uint32_t length = static_cast<uint32_t>(payload.size());
  const uint32_t frame[2] = {length, FrameCrc(length, payload.data(), payload.size())};
  if (fwrite(frame, 1, sizeof(frame), file_) != sizeof(frame) ||
      fwrite(payload.data(), 1, payload.size(), file_) != payload.size()) {
    return Failed("write");
  }
  bytes_ += sizeof(frame) + payload.size();
  return "";
}

std::string RecordWriter::Flush(bool sync) {
  if (!file_) return "cannot write " + path_ + ": not open";
  if (fflush(file_) != 0) return Failed("write");
  if (sync && fdatasync(fileno(file_)) != 0) return Failed("sync");
  return "";
}

std::string RecordWriter::Close(bool sync) {
  if (!file_) return "";
  std::string error = Flush(sync);
  if (fclose(file_) != 0 && error.empty()) error = Failed("close");
  file_ = nullptr;
  return error;
}

std::string RecordReader::Open(const std::string& path, std::string_view magic,
                               const std::string& what) {
  path_ = path;
  truncated_ = false;
  file_.reset(fopen(path.c_str(), "rb"));
  if (!file_) return "cannot open " + what + " " + path + ": " + std::strerror(errno);
  char read[kMagicSize];
  if (fread(read, 1, kMagicSize, file_.get()) != kMagicSize ||
      std::memcmp(read, magic.data(), kMagicSize - 1) != 0) {
    return path + " is not a PaxFlow " + what;
  }
  // The last byte of a magic is the format's version.
  if (read[kMagicSize - 1] != magic[kMagicSize - 1]) {
    return path + " is a PaxFlow " + what + " of format " + std::string(1, read[kMagicSize - 1]) +
           ", written by another version of PaxFlow; this one reads format " +
           std::string(1, magic[kMagicSize - 1]) +
           " only (start the cluster afresh, or run the version that wrote it)";
  }
  good_bytes_ = kMagicSize;
  return "";
}

bool RecordReader::Next(std::string* payload) {
  if (!file_ || truncated_) return false;
  uint32_t frame[2];
  const size_t got = fread(frame, 1, sizeof(frame), file_.get());
  if (got == 0) return false;
  if (got != sizeof(frame) || frame[0] > kMaxRecord) {
    truncated_ = true;
    return false;
  }
  payload->resize(frame[0]);
  if (fread(payload->data(), 1, frame[0], file_.get()) != frame[0] ||
      FrameCrc(frame[0], payload->data(), payload->size()) != frame[1]) {
    truncated_ = true;
    return false;
  }
  good_bytes_ += sizeof(frame) + frame[0];
  return true;
}

uint64_t RecordReader::inode() const {
  struct stat info {};
  if (!file_ || fstat(fileno(file_.get()), &info) != 0) return 0;
  return static_cast<uint64_t>(info.st_ino);
}

std::string SyncDirectory(const std::string& dir) {
  if (DirectorySyncHook()) DirectorySyncHook()(dir);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return "cannot open directory " + dir + ": " + std::strerror(errno);
  const int rc = fsync(fd);
  const int saved = errno;
  close(fd);
  if (rc != 0) return "cannot sync directory " + dir + ": " + std::strerror(saved);
  return "";
}

std::string SyncFile(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "cannot open " + path + ": " + std::strerror(errno);
  const int rc = fsync(fd);
  const int saved = errno;
  close(fd);
  if (rc != 0) return "cannot sync " + path + ": " + std::strerror(saved);
  return "";
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace paxflow
