#include "sequencer/input_log.h"

#include <dirent.h>
#include <glog/logging.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/hash.h"

namespace paxflow {
namespace {
constexpr char kMagic[8] = {'P', 'A', 'X', 'F', 'L', 'O', 'G', '1'};
constexpr uint32_t kMaxRecord = 1u << 30;
}  // namespace

std::string InputLogPath(const std::string& dir, NodeId node) {
  return dir + "/node-" + std::to_string(node) + ".log";
}

std::vector<std::string> ListInputLogs(const std::string& dir) {
  std::vector<std::string> paths;
  DIR* handle = opendir(dir.c_str());
  if (!handle) return paths;
  while (dirent* entry = readdir(handle)) {
    std::string name = entry->d_name;
    if (name.size() > 4 && name.rfind("node-", 0) == 0 &&
        name.compare(name.size() - 4, 4, ".log") == 0) {
      paths.push_back(dir + "/" + name);
    }
  }
  closedir(handle);
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::string InputLogWriter::Open(const std::string& path, const LogHeader& header,
                                 bool fsync_each_epoch) {
  path_ = path;
  fsync_ = fsync_each_epoch;
  file_ = fopen(path.c_str(), "wb");
  if (!file_) return "cannot create input log " + path + ": " + std::strerror(errno);
  if (fwrite(kMagic, 1, sizeof(kMagic), file_) != sizeof(kMagic)) {
    return "cannot write input log " + path + ": " + std::strerror(errno);
  }
  WriteRecord(header.SerializeAsString());
  fflush(file_);
  return "";
}

InputLogWriter::~InputLogWriter() {
  if (file_) fclose(file_);
}

void InputLogWriter::WriteRecord(const std::string& payload) {
  uint32_t frame[2] = {static_cast<uint32_t>(payload.size()),
                       Crc32c(payload.data(), payload.size())};
  if (fwrite(frame, 1, sizeof(frame), file_) != sizeof(frame) ||
      fwrite(payload.data(), 1, payload.size(), file_) != payload.size()) {
    LOG_EVERY_N(ERROR, 1000) << "input log " << path_ << ": write failed: " << std::strerror(errno);
  }
  bytes_ += sizeof(frame) + payload.size();
}

void InputLogWriter::Append(const MergedEpoch& epoch) {
  if (!file_) return;
  // Encodes a LogEpoch straight from the batches, without copying them into one.
  buffer_.clear();
  {
    google::protobuf::io::StringOutputStream stream(&buffer_);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.WriteTag(8);  // field 1, varint
    out.WriteVarint64(epoch.epoch);
    for (const auto& batch : epoch.batches) {
      if (!batch) continue;
      out.WriteTag((2 << 3) | 2);  // field 2, length-delimited
      out.WriteVarint32(static_cast<uint32_t>(batch->ByteSizeLong()));
      batch->SerializeWithCachedSizes(&out);
    }
  }
  WriteRecord(buffer_);
  fflush(file_);
  if (fsync_) fdatasync(fileno(file_));
}

std::string InputLogReader::Open(const std::string& path) {
  path_ = path;
  file_.reset(fopen(path.c_str(), "rb"));
  if (!file_) return "cannot open input log " + path + ": " + std::strerror(errno);
  char magic[sizeof(kMagic)];
  if (fread(magic, 1, sizeof(magic), file_.get()) != sizeof(magic) ||
      std::memcmp(magic, kMagic, sizeof(kMagic)) != 0) {
    return path + " is not a PaxFlow input log";
  }
  std::string payload;
  if (!ReadRecord(&payload) || !header_.ParseFromString(payload)) {
    return path + ": unreadable log header";
  }
  return "";
}

bool InputLogReader::ReadRecord(std::string* payload) {
  uint32_t frame[2];
  size_t got = fread(frame, 1, sizeof(frame), file_.get());
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
  return true;
}

bool InputLogReader::Next(LogEpoch* epoch) {
  std::string payload;
  if (!ReadRecord(&payload)) return false;
  if (!epoch->ParseFromString(payload)) {
    truncated_ = true;
    return false;
  }
  return true;
}

}  // namespace paxflow
