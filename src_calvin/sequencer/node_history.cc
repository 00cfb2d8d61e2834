#include "sequencer/node_history.h"

#include <dirent.h>

#include <algorithm>

#include "common/paths.h"
#include "sequencer/input_log.h"

namespace paxflow {
namespace {

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

LogExtent ReadLogExtent(const std::string& dir, const std::string& name, const LogFormat& format,
                        const SegmentedLogWriter::EpochOf& epoch_of) {
  LogExtent extent;
  const std::vector<LogSegment> segments = ListSegments(dir, name, format.ext);
  if (segments.empty()) return extent;
  extent.exists = true;
  // Closed segments hold records (an empty one is never closed), and their
  // names say their last epoch: only the newest of them and the active one
  // are read.
  Epoch from = 0;
  for (const LogSegment& segment : segments) {
    if (segment.active) continue;
    ++extent.records;
    from = std::max(from, segment.last_epoch);
    extent.last_epoch = std::max(extent.last_epoch, segment.last_epoch);
  }
  SegmentedLogReader reader;
  extent.error = reader.Open(dir, name, format, from);
  if (!extent.error.empty()) return extent;
  extent.header = reader.header();
  std::string payload;
  while (reader.Next(&payload)) {
    ++extent.records;
    extent.last_epoch = std::max(extent.last_epoch, epoch_of(payload));
    extent.last_record.swap(payload);
  }
  return extent;
}

std::vector<std::string> NodeFiles(const std::string& dir, NodeId id) {
  std::vector<std::string> files;
  const std::string name = NodeFileName(id);
  DIR* handle = opendir(dir.c_str());
  if (!handle) return files;
  while (dirent* entry = readdir(handle)) {
    std::string file = entry->d_name;
    if (file.rfind(name + ".", 0) != 0 && file.rfind(name + "@", 0) != 0) continue;
    std::string base = EndsWith(file, ".tmp") ? file.substr(0, file.size() - 4) : file;
    for (const char* ext : {".log", ".seq", ".reads", ".ckpt", ".recovery", ".finished"}) {
      if (EndsWith(base, ext)) {
        files.push_back(file);
        break;
      }
    }
  }
  closedir(handle);
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> HistoryOf(const std::vector<std::string>& files, const std::string& name,
                                   const LogExtent& input, const LogExtent& sequenced,
                                   const LogExtent& reads) {
  std::vector<std::string> history;
  for (const std::string& file : files) {
    const bool empty_log =
        (file == name + ".log" && input.records == 0 && input.error.empty()) ||
        (file == name + ".seq" && sequenced.records == 0 && sequenced.error.empty()) ||
        (file == name + ".reads" && reads.records == 0 && reads.error.empty());
    if (!empty_log) history.push_back(file);
  }
  return history;
}


std::vector<std::string> NodeHistoryFiles(const std::string& dir, NodeId node) {
  const std::string name = NodeFileName(node);
  const LogExtent input = ReadLogExtent(dir, name, kInputLogFormat, EpochOfInputRecord);
  const LogExtent sequenced = ReadLogExtent(dir, name, kSequencerLogFormat, EpochOfSequencerRecord);
  const LogExtent reads = ReadLogExtent(dir, name, kReadsLogFormat, EpochOfReadsRecord);
  return HistoryOf(NodeFiles(dir, node), name, input, sequenced, reads);
}

}  // namespace paxflow
