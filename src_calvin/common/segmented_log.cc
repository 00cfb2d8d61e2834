#include "common/segmented_log.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace paxflow {
namespace {

// "<name>.<N>@<E>.<ext>": true, with N and E, if `file` is a closed segment.
bool ParseClosed(const std::string& file, const std::string& name, const std::string& ext,
                 uint64_t* number, Epoch* last) {
  const std::string prefix = name + ".", suffix = "." + ext;
  if (file.size() <= prefix.size() + suffix.size() || file.rfind(prefix, 0) != 0 ||
      file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return false;
  }
  const std::string middle =
      file.substr(prefix.size(), file.size() - prefix.size() - suffix.size());
  const size_t at = middle.find('@');
  if (at == std::string::npos || at == 0 || at + 1 == middle.size()) return false;
  const std::string n = middle.substr(0, at), e = middle.substr(at + 1);
  auto digits = [](const std::string& text) {
    return text.size() <= 19 && std::all_of(text.begin(), text.end(), ::isdigit);
  };
  if (!digits(n) || !digits(e)) return false;
  *number = std::strtoull(n.c_str(), nullptr, 10);
  *last = std::strtoull(e.c_str(), nullptr, 10);
  return true;
}

std::vector<std::string> DirectoryEntries(const std::string& dir) {
  std::vector<std::string> names;
  DIR* handle = opendir(dir.c_str());
  if (!handle) return names;
  while (dirent* entry = readdir(handle)) names.push_back(entry->d_name);
  closedir(handle);
  return names;
}

std::string ClosedName(const std::string& name, uint64_t number, Epoch last,
                       const std::string& ext) {
  char middle[64];
  snprintf(middle, sizeof(middle), ".%06llu@%llu.", static_cast<unsigned long long>(number),
           static_cast<unsigned long long>(last));
  return name + middle + ext;
}

}  // namespace

std::vector<LogSegment> ListSegments(const std::string& dir, const std::string& name,
                                     const std::string& ext) {
  std::vector<LogSegment> segments;
  bool active = false;
  for (const std::string& file : DirectoryEntries(dir)) {
    LogSegment segment;
    if (file == name + "." + ext) {
      active = true;
    } else if (ParseClosed(file, name, ext, &segment.number, &segment.last_epoch)) {
      segment.path = dir + "/" + file;
      segments.push_back(segment);
    }
  }
  std::sort(segments.begin(), segments.end(),
            [](const LogSegment& a, const LogSegment& b) { return a.number < b.number; });
  if (active) {
    LogSegment segment;
    segment.path = dir + "/" + name + "." + ext;
    segment.active = true;
    segments.push_back(segment);
  }
  return segments;
}

std::vector<std::string> ListLogNames(const std::string& dir, const std::string& ext) {
  std::vector<std::string> names;
  const std::string suffix = "." + ext;
  for (const std::string& file : DirectoryEntries(dir)) {
    if (file.size() <= suffix.size() ||
        file.compare(file.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    std::string name = file.substr(0, file.size() - suffix.size());
    // A closed segment: "<name>.<N>@<E>"; take its log's name.
    const size_t at = name.rfind('@');
    if (at != std::string::npos) {
      const size_t dot = name.rfind('.', at);
      uint64_t number;
      Epoch last;
      if (dot == std::string::npos ||
          !ParseClosed(file, name.substr(0, dot), ext, &number, &last)) {
        continue;
      }
      name = name.substr(0, dot);
    }
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// ------------------------------------------------------------------ writer

SegmentedLogWriter::~SegmentedLogWriter() { Close(false); }

std::string SegmentedLogWriter::Fail(std::string error) {
  if (error_.empty()) error_ = std::move(error);
  return error_;
}

std::string SegmentedLogWriter::SyncDir() {
  return sync_directory_ ? SyncDirectory(dir_) : "";
}

std::string SegmentedLogWriter::StartSegment() {
  std::string error = active_.Create(dir_ + "/" + name_ + "." + format_.ext, format_.magic);
  if (error.empty()) error = active_.Append(header_);
  if (error.empty()) error = active_.Flush(sync_directory_);
  // The new file's name must survive a power loss as its records do.
  if (error.empty()) error = SyncDir();
  active_records_ = 0;
  active_max_epoch_ = 0;
  return error.empty() ? "" : Fail(error);
}

std::string SegmentedLogWriter::CloseActive() {
  const std::string path = active_.path();
  std::string error = active_.Close(/*sync=*/true);
  if (!error.empty()) return Fail(error);
  if (active_records_ == 0) {
    unlink(path.c_str());
    return "";
  }
  const std::string closed = dir_ + "/" + ClosedName(name_, next_number_++, active_max_epoch_,
                                                     format_.ext);
  if (rename(path.c_str(), closed.c_str()) != 0) {
    return Fail("cannot rename " + path + " to " + closed + ": " + std::strerror(errno));
  }
  error = SyncDir();
  return error.empty() ? "" : Fail(error);
}

void SegmentedLogWriter::Reset(const std::string& dir, const std::string& name,
                               const LogFormat& format, const std::string& header) {
  dir_ = dir;
  name_ = name;
  format_ = format;
  header_ = header;
  error_.clear();
  next_number_ = 1;
  last_epoch_ = 0;
}

std::string SegmentedLogWriter::Create(const std::string& dir, const std::string& name,
                                       const LogFormat& format, const std::string& header) {
  std::lock_guard<std::mutex> lock(mu_);
  Reset(dir, name, format, header);
  for (const LogSegment& segment : ListSegments(dir, name, format.ext)) {
    if (unlink(segment.path.c_str()) != 0 && errno != ENOENT) {
      return Fail("cannot remove " + segment.path + ": " + std::strerror(errno));
    }
  }
  return StartSegment();  // syncs the directory (the removals too)
}

std::string SegmentedLogWriter::Reopen(const std::string& dir, const std::string& name,
                                       const LogFormat& format, const std::string& header,
                                       const EpochOf& epoch_of, Epoch* last_epoch,
                                       std::string* last_record) {
  std::lock_guard<std::mutex> lock(mu_);
  Reset(dir, name, format, header);
  std::string newest_closed;
  std::string last;
  for (const LogSegment& segment : ListSegments(dir, name, format.ext)) {
    if (!segment.active) {
      next_number_ = std::max(next_number_, segment.number + 1);
      last_epoch_ = std::max(last_epoch_, segment.last_epoch);
      newest_closed = segment.path;
      continue;
    }
    // The segment a crash left open: keep its whole records, close it.
    RecordReader reader;
    std::string error = reader.Open(segment.path, format.magic, format.what);
    std::string payload;
    Epoch max_epoch = 0;
    uint64_t records = 0;
    const bool has_header = error.empty() && reader.Next(&payload);
    while (has_header && reader.Next(&payload)) {
      max_epoch = std::max(max_epoch, epoch_of(payload));
      ++records;
      last.swap(payload);
    }
    if (records == 0) {
      unlink(segment.path.c_str());
      continue;
    }
    if (truncate(segment.path.c_str(), static_cast<off_t>(reader.good_bytes())) != 0) {
      return Fail("cannot cut the torn end of " + segment.path + ": " + std::strerror(errno));
    }
    if (sync_directory_) {
      // The cut must be durable before records are appended after it.
      error = SyncFile(segment.path);
      if (!error.empty()) return Fail(error);
    }
    const std::string closed = dir + "/" + ClosedName(name, next_number_++, max_epoch, format.ext);
    if (rename(segment.path.c_str(), closed.c_str()) != 0) {
      return Fail("cannot rename " + segment.path + " to " + closed + ": " +
                  std::strerror(errno));
    }
    last_epoch_ = std::max(last_epoch_, max_epoch);
  }
  // (The renames and removals are synced with the new segment's creation.)
  if (last_record) {
    if (last.empty() && !newest_closed.empty()) {
      // Nothing since the last roll: the last record closes the newest segment.
      RecordReader reader;
      std::string payload;
      if (reader.Open(newest_closed, format.magic, format.what).empty() && reader.Next(&payload)) {
        while (reader.Next(&payload)) last.swap(payload);
      }
    }
    *last_record = std::move(last);
  }
  *last_epoch = last_epoch_;
  return StartSegment();
}

std::string SegmentedLogWriter::Append(Epoch epoch, std::string_view payload) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) return error_;
  std::string error = active_.Append(payload);
  if (!error.empty()) return Fail(error);
  ++active_records_;
  active_max_epoch_ = std::max(active_max_epoch_, epoch);
  last_epoch_ = std::max(last_epoch_, epoch);
  return "";
}

std::string SegmentedLogWriter::Flush(bool sync) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) return error_;
  std::string error = active_.Flush(sync);
  return error.empty() ? "" : Fail(error);
}

std::string SegmentedLogWriter::Roll() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!error_.empty()) return error_;
  if (active_records_ == 0) return "";
  std::string error = CloseActive();
  if (!error.empty()) return error;
  return StartSegment();
}

size_t SegmentedLogWriter::DropThrough(Epoch epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t dropped = 0;
  for (const LogSegment& segment : ListSegments(dir_, name_, format_.ext)) {
    if (segment.active || segment.last_epoch > epoch) continue;
    if (unlink(segment.path.c_str()) == 0) ++dropped;
  }
  if (dropped > 0) SyncDir();  // a removal lost in a power loss is harmless: no error
  return dropped;
}

std::string SegmentedLogWriter::Close(bool sync) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!active_.is_open()) return error_;
  std::string error = active_.Close(sync);
  return error.empty() ? error_ : Fail(error);
}

std::string SegmentedLogWriter::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

Epoch SegmentedLogWriter::last_epoch() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_epoch_;
}

std::string SegmentedLogWriter::active_path() const {
  std::lock_guard<std::mutex> lock(mu_);
  return active_.path();
}

// ------------------------------------------------------------------ reader

std::string SegmentedLogReader::Open(const std::string& dir, const std::string& name,
                                     const LogFormat& format, Epoch from_epoch) {
  dir_ = dir;
  name_ = name;
  format_ = format;
  from_epoch_ = from_epoch;
  read_.clear();
  truncated_ = false;
  header_.clear();
  damage_.clear();
  const std::vector<LogSegment> segments = ListSegments(dir, name, format.ext);
  if (segments.empty()) {
    return "cannot open " + format.what + " " + dir + "/" + name + "." + format.ext +
           ": no such log";
  }
  // The first segment read says what the log is (and whether it is one at
  // all): every segment has the same header, and one before `from_epoch`
  // (not read, maybe damaged) is not in the way.
  const LogSegment* first = &segments.back();
  for (const LogSegment& segment : segments) {
    if (segment.active || segment.last_epoch >= from_epoch) {
      first = &segment;
      break;
    }
  }
  std::string error = reader_.Open(first->path, format.magic, format.what);
  if (!error.empty()) return error;
  if (!reader_.Next(&header_)) return first->path + ": unreadable log header";
  reading_ = false;
  return "";
}

bool SegmentedLogReader::Damaged(const LogSegment& segment, const std::string& what) {
  truncated_ = true;
  // The active segment may be torn (a crash, or a writer mid-record).
  if (segment.active || !stop_at_damage_) return false;
  damage_ = what;
  damaged_segment_ = segment;
  return true;
}

bool SegmentedLogReader::OpenNextSegment(std::string* header) {
  for (const LogSegment& segment : ListSegments(dir_, name_, format_.ext)) {
    if (!segment.active && segment.last_epoch < from_epoch_) continue;
    const std::string error = reader_.Open(segment.path, format_.magic, format_.what);
    if (!error.empty()) {
      // Read already, then removed (a roll renamed it; DropThrough): nothing lost.
      if (access(segment.path.c_str(), F_OK) != 0) continue;
      if (Damaged(segment, error)) return false;
      continue;
    }
    if (!read_.insert(reader_.inode()).second) continue;  // read already (renamed since)
    if (!reader_.Next(header)) {
      if (Damaged(segment, segment.path + ": unreadable segment header")) return false;
      continue;
    }
    current_ = segment;
    return true;
  }
  return false;
}

bool SegmentedLogReader::Next(std::string* payload) {
  std::string header;
  while (true) {
    if (!damage_.empty()) return false;
    if (reading_ && reader_.Next(payload)) return true;
    if (reading_ && reader_.truncated()) {
      reading_ = false;
      if (Damaged(current_, current_.path + ": a damaged record after byte " +
                                std::to_string(reader_.good_bytes()))) {
        return false;
      }
    }
    reading_ = OpenNextSegment(&header);
    if (!reading_) return false;
  }
}

}  // namespace paxflow
