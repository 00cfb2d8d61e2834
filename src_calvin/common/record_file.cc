#include "common/record_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/hash.h"

namespace paxflow {
namespace {
constexpr uint32_t kMaxRecord = 1u << 30;
constexpr size_t kMagicSize = 8;
}  // namespace

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
  const uint32_t frame[2] = {static_cast<uint32_t>(payload.size()),
                             Crc32c(payload.data(), payload.size())};
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
      std::memcmp(read, magic.data(), kMagicSize) != 0) {
    return path + " is not a PaxFlow " + what;
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
      Crc32c(payload->data(), payload->size()) != frame[1]) {
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
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return "cannot open directory " + dir + ": " + std::strerror(errno);
  const int rc = fsync(fd);
  const int saved = errno;
  close(fd);
  if (rc != 0) return "cannot sync directory " + dir + ": " + std::strerror(saved);
  return "";
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace paxflow
