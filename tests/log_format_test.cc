// The durable file format (issue 15, point 6): record frames whose
// checksum an all-zero region does not pass, files of an older format
// refused with a clear error, checkpoints cut anywhere refused (never
// loaded as an empty partition), a reader that stops at a damaged closed
// segment and says where, and the directory fsyncs that make creates,
// renames and cuts durable (counted through a test hook).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>

#include "backend/multi_version_store.h"
#include "checkpoint/checkpoint.h"
#include "common/proto_json.h"
#include "common/record_file.h"
#include "common/segmented_log.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::ReadFile;
using testing::TempDir;

const LogFormat kFormat{"tst", "PAXFTST2", "test log"};

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::vector<std::string> ReadRecords(const std::string& path, bool* truncated) {
  RecordReader reader;
  std::vector<std::string> records;
  EXPECT_EQ(reader.Open(path, kFormat.magic, kFormat.what), "");
  std::string payload;
  while (reader.Next(&payload)) records.push_back(payload);
  *truncated = reader.truncated();
  return records;
}

// Where each record of a record file ends (after the magic).
std::vector<size_t> RecordEnds(const std::string& bytes) {
  std::vector<size_t> ends;
  size_t at = 8;
  while (at + 8 <= bytes.size()) {
    uint32_t length;
    std::memcpy(&length, bytes.data() + at, 4);
    at += 8 + length;
    if (at > bytes.size()) break;
    ends.push_back(at);
  }
  return ends;
}

TEST(RecordFormatTest, RecordsRoundTripEmptyOnesToo) {
  TempDir dir;
  const std::string path = dir.path() + "/a.tst";
  RecordWriter writer;
  ASSERT_EQ(writer.Create(path, kFormat.magic), "");
  for (const std::string& record : {std::string("header"), std::string(), std::string(1000, 'x')}) {
    ASSERT_EQ(writer.Append(record), "");
  }
  ASSERT_EQ(writer.Close(false), "");
  bool truncated = true;
  EXPECT_EQ(ReadRecords(path, &truncated),
            (std::vector<std::string>{"header", "", std::string(1000, 'x')}));
  EXPECT_FALSE(truncated);
}

// The crc32c of nothing is 0: a frame [length 0][crc 0] passed as an empty
// record, so a zero-filled tail read as a run of records.
TEST(RecordFormatTest, AZeroFilledTailIsTornNotRecords) {
  TempDir dir;
  const std::string path = dir.path() + "/a.tst";
  RecordWriter writer;
  ASSERT_EQ(writer.Create(path, kFormat.magic), "");
  ASSERT_EQ(writer.Append("header"), "");
  ASSERT_EQ(writer.Append("one"), "");
  ASSERT_EQ(writer.Close(false), "");
  const std::string whole = ReadFile(path);
  WriteBytes(path, whole + std::string(4096, '\0'));
  bool truncated = false;
  EXPECT_EQ(ReadRecords(path, &truncated), (std::vector<std::string>{"header", "one"}));
  EXPECT_TRUE(truncated);
  RecordReader reader;
  ASSERT_EQ(reader.Open(path, kFormat.magic, kFormat.what), "");
  std::string payload;
  while (reader.Next(&payload)) {
  }
  EXPECT_EQ(reader.good_bytes(), whole.size());  // a writer going on cuts the zeros
}

TEST(RecordFormatTest, AZeroFilledFileIsNotALog) {
  TempDir dir;
  const std::string path = dir.path() + "/a.tst";
  WriteBytes(path, std::string(4096, '\0'));
  RecordReader reader;
  const std::string error = reader.Open(path, kFormat.magic, kFormat.what);
  EXPECT_NE(error.find("is not a PaxFlow test log"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;

  // A zero-filled segment among a log's segments: not read as records.
  ASSERT_EQ(::unlink(path.c_str()), 0);
  {
    SegmentedLogWriter log;
    ASSERT_EQ(log.Create(dir.path(), "z", kFormat, "header"), "");
    ASSERT_EQ(log.Append(1, "1"), "");
    ASSERT_EQ(log.Roll(), "");
    ASSERT_EQ(log.Append(2, "2"), "");
    ASSERT_EQ(log.Close(false), "");
  }
  const std::vector<LogSegment> segments = ListSegments(dir.path(), "z", kFormat.ext);
  ASSERT_EQ(segments.size(), 2u);
  WriteBytes(segments[0].path, std::string(ReadFile(segments[0].path).size(), '\0'));
  SegmentedLogReader reader_of_log;
  ASSERT_NE(reader_of_log.Open(dir.path(), "z", kFormat), "");  // the first names the log
  SegmentedLogReader stopping;
  // From epoch 2 on (the first segment skipped), then the damaged one is
  // in the way when read from the start.
  ASSERT_EQ(stopping.Open(dir.path(), "z", kFormat, 2), "");
  std::string payload;
  ASSERT_TRUE(stopping.Next(&payload));
  EXPECT_EQ(payload, "2");
}

TEST(RecordFormatTest, AnOlderFormatIsRefusedSayingSo) {
  TempDir dir;
  const std::string path = dir.path() + "/old.tst";
  WriteBytes(path, std::string("PAXFTST1") + std::string(16, '\0'));
  RecordReader reader;
  const std::string error = reader.Open(path, kFormat.magic, kFormat.what);
  EXPECT_NE(error.find("of format 1"), std::string::npos) << error;
  EXPECT_NE(error.find("another version of PaxFlow"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
}

// ------------------------------------------------------------ damaged segments

// Three closed segments (epochs 1-3, 4-6, 7-9) and the active one (10).
void WriteThreeSegments(const std::string& dir) {
  SegmentedLogWriter log;
  ASSERT_EQ(log.Create(dir, "d", kFormat, "header"), "");
  for (Epoch epoch = 1; epoch <= 10; ++epoch) {
    ASSERT_EQ(log.Append(epoch, std::to_string(epoch) + std::string(100, '.')), "");
    if (epoch % 3 == 0) {
      ASSERT_EQ(log.Roll(), "");
    }
  }
  ASSERT_EQ(log.Close(false), "");
}

TEST(DamagedSegmentTest, ReaderStopsAtADamagedClosedSegmentAndSaysWhere) {
  TempDir dir;
  WriteThreeSegments(dir.path());
  const std::vector<LogSegment> segments = ListSegments(dir.path(), "d", kFormat.ext);
  ASSERT_EQ(segments.size(), 4u);
  // A byte in the middle of the second segment (its second record).
  std::string bytes = ReadFile(segments[1].path);
  bytes[bytes.size() / 2] ^= 0x20;
  WriteBytes(segments[1].path, bytes);

  SegmentedLogReader reader;
  reader.StopAtDamage();
  ASSERT_EQ(reader.Open(dir.path(), "d", kFormat), "");
  std::vector<Epoch> read;
  std::string payload;
  while (reader.Next(&payload)) read.push_back(std::stoull(payload));
  EXPECT_EQ(read, (std::vector<Epoch>{1, 2, 3, 4}));
  ASSERT_TRUE(reader.damaged());
  EXPECT_NE(reader.damage().find(segments[1].path), std::string::npos) << reader.damage();
  EXPECT_EQ(reader.damaged_segment().last_epoch, 6u);
  EXPECT_FALSE(reader.Next(&payload));  // stays stopped
  reader.Resume();
  read.clear();
  while (reader.Next(&payload)) read.push_back(std::stoull(payload));
  EXPECT_EQ(read, (std::vector<Epoch>{7, 8, 9, 10}));

  // Without StopAtDamage, as before: the damaged part is passed over.
  SegmentedLogReader plain;
  ASSERT_EQ(plain.Open(dir.path(), "d", kFormat), "");
  size_t count = 0;
  while (plain.Next(&payload)) ++count;
  EXPECT_EQ(count, 8u);
  EXPECT_TRUE(plain.truncated());
}

TEST(DamagedSegmentTest, ATornActiveSegmentIsNoDamage) {
  TempDir dir;
  WriteThreeSegments(dir.path());
  const std::vector<LogSegment> segments = ListSegments(dir.path(), "d", kFormat.ext);
  ASSERT_TRUE(segments.back().active);
  const std::string bytes = ReadFile(segments.back().path);
  WriteBytes(segments.back().path, bytes.substr(0, bytes.size() - 5));
  SegmentedLogReader reader;
  reader.StopAtDamage();
  ASSERT_EQ(reader.Open(dir.path(), "d", kFormat), "");
  std::string payload;
  size_t count = 0;
  while (reader.Next(&payload)) ++count;
  EXPECT_EQ(count, 9u);
  EXPECT_FALSE(reader.damaged());
  EXPECT_TRUE(reader.truncated());
}

// ------------------------------------------------------------ checkpoints

CheckpointHeader Header(Epoch epoch) {
  CheckpointHeader header;
  header.set_node_id(1);
  header.set_partitions(1);
  header.set_epoch(epoch);
  return header;
}

TEST(CheckpointFormatTest, ACheckpointCutAnywhereIsRefusedNamingTheFile) {
  TempDir dir;
  GcOptions gc;
  MultiVersionStore source(0, 1, 10000, 32, gc);
  const size_t slot = source.RegisterThread();
  for (Key key = 0; key < 10000; ++key) source.Load(key, "value-" + std::to_string(key));
  CheckpointStats written;
  ASSERT_EQ(WriteCheckpoint(dir.path(), Header(5), &source, slot, &written), "");
  const std::string whole = ReadFile(written.path);
  const std::vector<size_t> ends = RecordEnds(whole);
  // Header, three chunks of up to 4096 keys, trailer.
  ASSERT_EQ(ends.size(), 5u);
  ASSERT_EQ(ends.back(), whole.size());

  // The whole file round-trips.
  {
    MultiVersionStore target(0, 1, 10000, 32, gc);
    CheckpointHeader header;
    CheckpointStats loaded;
    ASSERT_EQ(LoadCheckpoint(written.path, &target, target.RegisterThread(), &header, &loaded), "");
    EXPECT_EQ(loaded.keys, 10000u);
    EXPECT_EQ(loaded.digest, written.digest);
    EXPECT_EQ(CheckCheckpoint(written.path, &header), "");
  }
  const std::map<std::string, size_t> cuts = {
      {"after the magic", 8},
      {"mid-header", ends[0] - 3},
      {"after the header", ends[0]},
      {"mid-chunk", ends[0] + (ends[1] - ends[0]) / 2},
      {"after the first chunk", ends[1]},
      {"after the last chunk", ends[3]},
      {"mid-trailer", ends[4] - 2},
  };
  for (const auto& [where, size] : cuts) {
    const std::string cut = dir.path() + "/node-1@7.ckpt";
    WriteBytes(cut, whole.substr(0, size));
    MultiVersionStore target(0, 1, 10000, 32, gc);
    CheckpointHeader header;
    CheckpointStats loaded;
    const std::string error =
        LoadCheckpoint(cut, &target, target.RegisterThread(), &header, &loaded);
    EXPECT_NE(error, "") << "cut " << where << " loaded, with " << loaded.keys << " keys";
    EXPECT_NE(error.find(cut), std::string::npos) << where << ": " << error;
    EXPECT_NE(CheckCheckpoint(cut, &header), "") << where;
  }
  // Zeros where the trailer was: torn, not a trailer.
  const std::string zeroed = dir.path() + "/node-1@8.ckpt";
  WriteBytes(zeroed, whole.substr(0, ends[3]) + std::string(64, '\0'));
  CheckpointHeader header;
  EXPECT_NE(CheckCheckpoint(zeroed, &header), "");
}

// ------------------------------------------------------------ directory fsyncs

class DirectorySyncTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetDirectorySyncHookForTesting([this](const std::string& dir) { synced_.push_back(dir); });
  }
  void TearDown() override { SetDirectorySyncHookForTesting(nullptr); }
  size_t Count(const std::string& dir) const {
    return std::count(synced_.begin(), synced_.end(), dir);
  }
  std::vector<std::string> synced_;
};

TEST_F(DirectorySyncTest, SegmentCreateRenameAndCutAreSyncedWithFsyncOn) {
  TempDir dir;
  {
    SegmentedLogWriter log;
    log.SetSyncDirectory(true);
    ASSERT_EQ(log.Create(dir.path(), "s", kFormat, "header"), "");
    const size_t created = Count(dir.path());
    EXPECT_GE(created, 1u) << "segment create";
    ASSERT_EQ(log.Append(1, "1"), "");
    ASSERT_EQ(log.Roll(), "");  // rename, then a new segment
    const size_t rolled = Count(dir.path());
    EXPECT_GE(rolled, created + 2) << "segment rename and create";
    ASSERT_EQ(log.Append(2, "2"), "");
    ASSERT_EQ(log.Flush(false), "");
    EXPECT_EQ(log.DropThrough(1), 1u);
    EXPECT_GT(Count(dir.path()), rolled) << "segment removal";
  }
  // A torn tail cut and the segment closed at a restart.
  const std::string active = dir.path() + "/s." + kFormat.ext;
  std::ofstream(active, std::ios::binary | std::ios::app) << "torn";
  const size_t before = Count(dir.path());
  SegmentedLogWriter log;
  log.SetSyncDirectory(true);
  Epoch last = 0;
  ASSERT_EQ(log.Reopen(dir.path(), "s", kFormat, "header",
                       [](const std::string& p) { return std::stoull(p); }, &last),
            "");
  EXPECT_EQ(last, 2u);
  EXPECT_GT(Count(dir.path()), before) << "cut and rename at reopen";
}

TEST_F(DirectorySyncTest, NoneWithFsyncOffButCheckpointAndStateFilesAlways) {
  TempDir dir;
  {
    SegmentedLogWriter log;
    ASSERT_EQ(log.Create(dir.path(), "s", kFormat, "header"), "");
    ASSERT_EQ(log.Append(1, "1"), "");
    ASSERT_EQ(log.Roll(), "");
    ASSERT_EQ(log.Close(false), "");
  }
  EXPECT_EQ(Count(dir.path()), 0u);
  // Files that make state authoritative: synced whatever --log_fsync says.
  GcOptions gc;
  MultiVersionStore source(0, 1, 100, 32, gc);
  const size_t slot = source.RegisterThread();
  source.Load(1, "one");
  CheckpointStats written;
  ASSERT_EQ(WriteCheckpoint(dir.path(), Header(3), &source, slot, &written), "");
  EXPECT_EQ(Count(dir.path()), 1u) << "checkpoint rename";
  ASSERT_EQ(WriteFileAtomically(dir.path() + "/node-1.recovery", "state", /*sync=*/true), "");
  EXPECT_EQ(Count(dir.path()), 2u) << ".recovery rename";
  EXPECT_EQ(ReadFile(dir.path() + "/node-1.recovery"), "state");
}

}  // namespace
}  // namespace paxflow
