#include "checkpoint/checkpoint.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "common/clock.h"
#include "common/hash.h"
#include "common/record_file.h"

namespace paxflow {
namespace {

constexpr char kMagic[] = "PAXFCKP2";
constexpr size_t kChunkKeys = 4096;
constexpr uint64_t kEndMarker = 0x50584643'4b454e44ULL;  // "PXFCKEND"
const char* const kWhat = "checkpoint";

std::string Prefix(NodeId node) { return "node-" + std::to_string(node) + "@"; }

// Files of `node` in `dir` ending in `suffix`, with the epoch in their name.
std::vector<std::pair<Epoch, std::string>> Files(const std::string& dir, NodeId node,
                                                 const std::string& suffix) {
  std::vector<std::pair<Epoch, std::string>> files;
  DIR* handle = opendir(dir.c_str());
  if (!handle) return files;
  const std::string prefix = Prefix(node);
  while (dirent* entry = readdir(handle)) {
    const std::string name = entry->d_name;
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    const std::string number =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (number.empty() || number.size() > 19 ||
        !std::all_of(number.begin(), number.end(), ::isdigit)) {
      continue;
    }
    files.emplace_back(std::strtoull(number.c_str(), nullptr, 10), dir + "/" + name);
  }
  closedir(handle);
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string CheckpointPath(const std::string& dir, NodeId node, Epoch epoch) {
  return dir + "/" + Prefix(node) + std::to_string(epoch) + ".ckpt";
}

std::string WriteCheckpoint(const std::string& dir, const CheckpointHeader& header, Store* store,
                            size_t slot, CheckpointStats* stats,
                            const std::function<void()>& midway) {
  const int64_t start = NowMicros();
  const std::string path = CheckpointPath(dir, header.node_id(), header.epoch());
  const std::string temporary = path + ".tmp";
  RecordWriter writer;
  std::string error = writer.Create(temporary, std::string_view(kMagic, 8));
  if (error.empty()) error = writer.Append(header.SerializeAsString());
  CheckpointChunk chunk;
  std::string buffer;
  uint64_t keys = 0, digest = 0, chunks = 0;
  bool midway_done = !midway;
  auto write_chunk = [&] {
    if (!error.empty() || chunk.key_size() == 0) return;
    chunk.SerializeToString(&buffer);
    error = writer.Append(buffer);
    chunk.Clear();
    ++chunks;
    if (error.empty() && !midway_done) {
      error = writer.Flush(false);
      midway_done = true;
      midway();
    }
  };
  store->Scan(slot, header.epoch(), [&](Key key, std::string_view value) {
    if (!error.empty()) return;
    chunk.add_key(key);
    chunk.add_value(value.data(), value.size());
    ++keys;
    digest += DigestTerm(key, value);
    if (static_cast<size_t>(chunk.key_size()) == kChunkKeys) write_chunk();
  });
  write_chunk();
  if (error.empty()) {
    CheckpointTrailer trailer;
    trailer.set_keys(keys);
    trailer.set_digest(digest);
    trailer.set_chunks(chunks);
    trailer.set_end_marker(kEndMarker);
    error = writer.Append(trailer.SerializeAsString());
  }
  if (error.empty()) error = writer.Close(/*sync=*/true);
  if (error.empty() && rename(temporary.c_str(), path.c_str()) != 0) {
    error = "cannot rename " + temporary + " to " + path + ": " + std::strerror(errno);
  }
  if (error.empty()) error = SyncDirectory(dir);
  if (!error.empty()) {
    writer.Close(false);
    unlink(temporary.c_str());
    return error;
  }
  stats->path = path;
  stats->keys = keys;
  stats->bytes = writer.bytes();
  stats->digest = digest;
  stats->seconds = (NowMicros() - start) / 1e6;
  return "";
}

namespace {

// Opens a checkpoint file and reads its header; the chunks follow.
std::string OpenCheckpoint(const std::string& path, RecordReader* reader,
                           CheckpointHeader* header) {
  std::string error = reader->Open(path, std::string_view(kMagic, 8), kWhat);
  if (!error.empty()) return error;
  std::string payload;
  if (!reader->Next(&payload) || !header->ParseFromString(payload)) {
    return path + ": unreadable checkpoint header";
  }
  return "";
}

}  // namespace

std::string CheckCheckpoint(const std::string& path, CheckpointHeader* header) {
  CheckpointStats stats;
  return LoadCheckpoint(path, nullptr, 0, header, &stats);
}

std::string ReadCheckpointHeader(const std::string& path, CheckpointHeader* header) {
  RecordReader reader;
  return OpenCheckpoint(path, &reader, header);
}

std::string LoadCheckpoint(const std::string& path, Store* store, size_t slot,
                           CheckpointHeader* header, CheckpointStats* stats) {
  const int64_t start = NowMicros();
  RecordReader reader;
  std::string error = OpenCheckpoint(path, &reader, header);
  if (!error.empty()) return error;
  std::string payload;
  // Every record but the last is a chunk; the last is the trailer.
  CheckpointChunk chunk;
  uint64_t keys = 0, digest = 0, chunks = 0;
  std::string last;
  bool have_last = false;
  while (reader.Next(&payload)) {
    if (have_last) {
      if (!chunk.ParseFromString(last) || chunk.key_size() != chunk.value_size()) {
        return path + ": garbled record";
      }
      for (int i = 0; i < chunk.key_size(); ++i) {
        if (store) store->Load(chunk.key(i), chunk.value(i));
        digest += DigestTerm(chunk.key(i), chunk.value(i));
      }
      keys += static_cast<uint64_t>(chunk.key_size());
      ++chunks;
    }
    last.swap(payload);
    have_last = true;
  }
  CheckpointTrailer trailer;
  if (reader.truncated() || !have_last || !trailer.ParseFromString(last) ||
      trailer.end_marker() != kEndMarker) {
    return path + ": torn or without its trailer (cut short, or the writer was interrupted)";
  }
  if (trailer.chunks() != chunks || trailer.keys() != keys || trailer.digest() != digest) {
    return path + ": holds " + std::to_string(keys) + " keys in " + std::to_string(chunks) +
           " chunks with digest " + std::to_string(digest) + ", its trailer says " +
           std::to_string(trailer.keys()) + " keys in " + std::to_string(trailer.chunks()) +
           " chunks, digest " + std::to_string(trailer.digest());
  }
  (void)slot;
  stats->path = path;
  stats->keys = keys;
  stats->digest = digest;
  stats->seconds = (NowMicros() - start) / 1e6;
  return "";
}

std::vector<Epoch> ListCheckpoints(const std::string& dir, NodeId node) {
  std::vector<Epoch> epochs;
  for (const auto& [epoch, path] : Files(dir, node, ".ckpt")) epochs.push_back(epoch);
  return epochs;
}

size_t RemoveCheckpointsBefore(const std::string& dir, NodeId node, Epoch epoch) {
  size_t removed = 0;
  for (const auto& [at, path] : Files(dir, node, ".ckpt")) {
    if (at < epoch && unlink(path.c_str()) == 0) ++removed;
  }
  return removed;
}

void RemoveUnfinishedCheckpoints(const std::string& dir, NodeId node) {
  for (const auto& [at, path] : Files(dir, node, ".ckpt.tmp")) unlink(path.c_str());
}

void RemoveAllCheckpoints(const std::string& dir, NodeId node) {
  RemoveUnfinishedCheckpoints(dir, node);
  for (const auto& [at, path] : Files(dir, node, ".ckpt")) unlink(path.c_str());
}

}  // namespace paxflow
