#include "sequencer/input_log.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>

#include "common/clock.h"
#include "common/record_file.h"
#include "common/single_writer.h"

namespace paxflow {

const LogFormat kInputLogFormat{"log", "PAXFLOG2", "input log"};
const LogFormat kSequencerLogFormat{"seq", "PAXFSEQ2", "sequencer log"};
const LogFormat kReadsLogFormat{"reads", "PAXFRDS2", "reads log"};

namespace {

// <dir>/<name>.log -> dir, name.
void SplitLogPath(const std::string& path, std::string* dir, std::string* name) {
  *dir = DirectoryOf(path);
  std::string file = path.substr(path.rfind('/') == std::string::npos ? 0 : path.rfind('/') + 1);
  const std::string suffix = "." + kInputLogFormat.ext;
  if (file.size() > suffix.size() &&
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0) {
    file.resize(file.size() - suffix.size());
  }
  *name = file;
}

}  // namespace

std::string NodeFileName(NodeId node) { return "node-" + std::to_string(node); }

std::string InputLogPath(const std::string& dir, NodeId node) {
  return dir + "/" + NodeFileName(node) + "." + kInputLogFormat.ext;
}

std::vector<std::string> ListInputLogs(const std::string& dir) {
  std::vector<std::string> paths;
  for (const std::string& name : ListLogNames(dir, kInputLogFormat.ext)) {
    if (name.rfind("node-", 0) != 0 || name.size() == 5 ||
        !std::all_of(name.begin() + 5, name.end(), ::isdigit)) {
      continue;
    }
    paths.push_back(dir + "/" + name + "." + kInputLogFormat.ext);
  }
  return paths;
}

Epoch EpochOfInputRecord(const std::string& payload) {
  // Field 1 of LogEpoch comes first: no need to parse the batches.
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(payload.data()),
                                            static_cast<int>(payload.size()));
  uint64_t epoch = 0;
  if (in.ReadTag() == 8 && in.ReadVarint64(&epoch)) return epoch;
  LogEpoch record;
  return record.ParseFromString(payload) ? record.epoch() : 0;
}

Epoch EpochOfSequencerRecord(const std::string& payload) {
  SequencedEpoch record;
  return record.ParseFromString(payload) ? record.epoch() : 0;
}

Epoch EpochOfReadsRecord(const std::string& payload) {
  SentReads record;
  return record.ParseFromString(payload) ? RunEpochOf(record.reads()) : 0;
}

std::string InputLogWriter::Open(const std::string& path, const LogHeader& header,
                                 bool fsync_each_epoch) {
  std::string dir, name;
  SplitLogPath(path, &dir, &name);
  fsync_ = fsync_each_epoch;
  log_.SetSyncDirectory(fsync_each_epoch);
  const std::string serialized = header.SerializeAsString();
  std::string error = log_.Create(dir, name, kInputLogFormat, serialized);
  if (!error.empty()) return error;
  open_ = true;
  bytes_ = 8 + serialized.size();
  return "";
}

std::string InputLogWriter::Reopen(const std::string& path, const LogHeader& header,
                                   bool fsync_each_epoch, Epoch* last_epoch) {
  std::string dir, name;
  SplitLogPath(path, &dir, &name);
  fsync_ = fsync_each_epoch;
  log_.SetSyncDirectory(fsync_each_epoch);
  const std::string serialized = header.SerializeAsString();
  std::string error =
      log_.Reopen(dir, name, kInputLogFormat, serialized, EpochOfInputRecord, last_epoch);
  if (!error.empty()) return error;
  open_ = true;
  bytes_ = 8 + serialized.size();
  return "";
}

std::string InputLogWriter::Append(const MergedEpoch& epoch) {
  if (!open_) return "the input log is not open";
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
  std::string error = log_.Append(epoch.epoch, buffer_);
  const int64_t flush_start = NowMicros();
  if (error.empty()) error = log_.Flush(fsync_);
  sync_us_.RecordElapsed(NowMicros() - flush_start);
  if (error.empty()) SingleWriterAdd(bytes_, 8 + buffer_.size());
  return error;
}

std::string InputLogReader::Open(const std::string& path, Epoch from_epoch) {
  path_ = path;
  garbled_ = false;
  std::string dir, name;
  SplitLogPath(path, &dir, &name);
  std::string error = reader_.Open(dir, name, kInputLogFormat, from_epoch);
  if (!error.empty()) return error;
  if (!header_.ParseFromString(reader_.header())) return path + ": unreadable log header";
  return "";
}

bool InputLogReader::Next(LogEpoch* epoch) {
  std::string payload;
  if (!reader_.Next(&payload)) return false;
  if (!epoch->ParseFromString(payload)) {
    garbled_ = true;
    return false;
  }
  return true;
}

}  // namespace paxflow
