// Unit tests for the input log (sequencer/input_log.h): write, read back, torn and corrupt
// tails, foreign files, directory listing.
#include "sequencer/input_log.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/types.h"

namespace paxflow {
namespace {

// A fresh directory under /tmp, removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/paxflow-input-log-test-XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made) path_ = made;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

LogHeader MakeHeader() {
  LogHeader header;
  header.set_node_id(3);
  header.set_partition(1);
  header.set_replica(0);
  header.set_partitions(2);
  header.set_sequencers(3);
  Param* param = header.add_param();
  param->set_name("records");
  param->set_value("1000");
  return header;
}

std::unique_ptr<Batch> MakeBatch(Epoch epoch, uint32_t sequencer, int txns) {
  auto batch = std::make_unique<Batch>();
  batch->set_epoch(epoch);
  batch->set_sequencer(sequencer);
  batch->set_partition(1);
  batch->set_has_rw(txns % 2 == 1);
  batch->set_close_time_us(1000 * static_cast<int64_t>(epoch) + sequencer);
  for (int i = 0; i < txns; ++i) {
    Txn* txn = batch->add_txns();
    txn->set_id(MakeTxnId(epoch, sequencer, static_cast<uint32_t>(i)));
    txn->set_procedure(2);
    txn->set_txn_class(i % 2 ? RW : RO);
    txn->add_read_set(epoch * 100 + i);
    if (i % 2) txn->add_read_write_set(epoch * 100 + i + 1);
    txn->set_args(std::string("args\0with nul", 13));
  }
  return batch;
}

// Epochs 1..n over three sequencers; sequencer 2 stops after epoch 2 (a null slot after).
std::vector<MergedEpoch> MakeEpochs(int n) {
  std::vector<MergedEpoch> epochs;
  for (int e = 1; e <= n; ++e) {
    MergedEpoch merged;
    merged.epoch = e;
    for (uint32_t s = 0; s < 3; ++s) {
      if (s == 2 && e > 2) {
        merged.batches.push_back(nullptr);
      } else {
        merged.batches.push_back(MakeBatch(e, s, (e + static_cast<int>(s)) % 4));
      }
    }
    epochs.push_back(std::move(merged));
  }
  return epochs;
}

// What a reader must give back for `merged`: its non-null batches, in sequencer order.
LogEpoch Expected(const MergedEpoch& merged) {
  LogEpoch expected;
  expected.set_epoch(merged.epoch);
  for (const auto& batch : merged.batches) {
    if (batch) *expected.add_batch() = *batch;
  }
  return expected;
}

std::string WriteLog(const std::string& path, const std::vector<MergedEpoch>& epochs) {
  InputLogWriter writer;
  const std::string error = writer.Open(path, MakeHeader(), /*fsync_each_epoch=*/false);
  if (!error.empty()) return error;
  for (const MergedEpoch& epoch : epochs) writer.Append(epoch);
  return "";
}

long FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<long>(st.st_size) : -1;
}

std::vector<LogEpoch> ReadAll(InputLogReader* reader) {
  std::vector<LogEpoch> epochs;
  LogEpoch epoch;
  while (reader->Next(&epoch)) {
    epochs.push_back(epoch);
    epoch.Clear();
  }
  return epochs;
}

TEST(InputLogTest, WrittenEpochsReadBackIdentical) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string path = InputLogPath(dir.path(), 3);
  const std::vector<MergedEpoch> epochs = MakeEpochs(6);
  {
    InputLogWriter writer;
    ASSERT_EQ(writer.Open(path, MakeHeader(), /*fsync_each_epoch=*/true), "");
    for (const MergedEpoch& epoch : epochs) writer.Append(epoch);
    EXPECT_EQ(static_cast<long>(writer.bytes_written()) + 8, FileSize(path));
  }

  InputLogReader reader;
  ASSERT_EQ(reader.Open(path), "");
  EXPECT_EQ(reader.path(), path);
  EXPECT_EQ(reader.header().SerializeAsString(), MakeHeader().SerializeAsString());
  const std::vector<LogEpoch> read = ReadAll(&reader);
  ASSERT_EQ(read.size(), epochs.size());
  for (size_t i = 0; i < epochs.size(); ++i) {
    EXPECT_EQ(read[i].SerializeAsString(), Expected(epochs[i]).SerializeAsString())
        << "epoch " << epochs[i].epoch;
  }
  // The stopped sequencer's slot is simply absent; the others keep their identity.
  ASSERT_EQ(read[0].batch_size(), 3);
  ASSERT_EQ(read[5].batch_size(), 2);
  EXPECT_EQ(read[5].batch(1).sequencer(), 1u);
  EXPECT_EQ(read[5].batch(1).txns(0).args(), std::string("args\0with nul", 13));
  EXPECT_FALSE(reader.truncated());
  LogEpoch extra;
  EXPECT_FALSE(reader.Next(&extra));  // stays at the end
  EXPECT_FALSE(reader.truncated());
}

TEST(InputLogTest, EmptyEpochAndHeaderOnlyLogs) {
  TempDir dir;
  const std::string path = dir.path() + "/node-0.log";
  {
    std::vector<MergedEpoch> epochs(1);
    epochs[0].epoch = 9;
    epochs[0].batches.resize(2);  // both sequencers stopped: a record with no batch
    ASSERT_EQ(WriteLog(path, epochs), "");
  }
  InputLogReader reader;
  ASSERT_EQ(reader.Open(path), "");
  std::vector<LogEpoch> read = ReadAll(&reader);
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].epoch(), 9u);
  EXPECT_EQ(read[0].batch_size(), 0);
  EXPECT_FALSE(reader.truncated());

  const std::string header_only = dir.path() + "/node-1.log";
  ASSERT_EQ(WriteLog(header_only, {}), "");
  InputLogReader empty_reader;
  ASSERT_EQ(empty_reader.Open(header_only), "");
  EXPECT_TRUE(ReadAll(&empty_reader).empty());
  EXPECT_FALSE(empty_reader.truncated());
}

TEST(InputLogTest, TornTailEndsTheLogAtTheLastWholeEpoch) {
  TempDir dir;
  const std::string path = dir.path() + "/node-0.log";
  const std::vector<MergedEpoch> epochs = MakeEpochs(5);
  // Where the last record starts: the size of the same log without it.
  const std::string shorter = dir.path() + "/shorter.log";
  ASSERT_EQ(WriteLog(shorter, MakeEpochs(4)), "");
  const long last_start = FileSize(shorter);
  ASSERT_EQ(WriteLog(path, epochs), "");
  const long full = FileSize(path);
  ASSERT_GT(full, last_start + 8 + 3);

  // A crash mid-payload (a few bytes short), then mid-frame (5 of the 8 header bytes).
  for (long keep : {full - 3, last_start + 5}) {
    ASSERT_EQ(WriteLog(path, epochs), "");
    ASSERT_EQ(truncate(path.c_str(), keep), 0);
    InputLogReader reader;
    ASSERT_EQ(reader.Open(path), "");
    const std::vector<LogEpoch> read = ReadAll(&reader);
    ASSERT_EQ(read.size(), 4u) << "kept " << keep << " of " << full << " bytes";
    for (size_t i = 0; i < read.size(); ++i) {
      EXPECT_EQ(read[i].SerializeAsString(), Expected(epochs[i]).SerializeAsString());
    }
    EXPECT_TRUE(reader.truncated()) << "kept " << keep << " of " << full << " bytes";
  }

  // Cut exactly at a record boundary: a clean end, not a torn one.
  ASSERT_EQ(WriteLog(path, epochs), "");
  ASSERT_EQ(truncate(path.c_str(), last_start), 0);
  InputLogReader reader;
  ASSERT_EQ(reader.Open(path), "");
  EXPECT_EQ(ReadAll(&reader).size(), 4u);
  EXPECT_FALSE(reader.truncated());
}

TEST(InputLogTest, CorruptByteInLastRecordIsDetected) {
  TempDir dir;
  const std::string path = dir.path() + "/node-0.log";
  const std::vector<MergedEpoch> epochs = MakeEpochs(5);
  ASSERT_EQ(WriteLog(path, epochs), "");
  const long size = FileSize(path);
  {
    // Flip a byte near the end: inside the last payload, so only the crc can notice.
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.is_open());
    file.seekg(size - 4);
    char byte = 0;
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    file.seekp(size - 4);
    file.write(&byte, 1);
  }
  EXPECT_EQ(FileSize(path), size);
  InputLogReader reader;
  ASSERT_EQ(reader.Open(path), "");
  const std::vector<LogEpoch> read = ReadAll(&reader);
  ASSERT_EQ(read.size(), 4u);
  EXPECT_EQ(read.back().SerializeAsString(), Expected(epochs[3]).SerializeAsString());
  EXPECT_TRUE(reader.truncated());
}

TEST(InputLogTest, ForeignFilesAreRejected) {
  TempDir dir;
  const std::string text = dir.path() + "/node-0.log";
  {
    std::ofstream out(text);
    out << "this is not an input log\n";
  }
  InputLogReader reader;
  const std::string error = reader.Open(text);
  EXPECT_NE(error.find("not a PaxFlow input log"), std::string::npos) << error;
  EXPECT_NE(error.find(text), std::string::npos) << error;

  const std::string empty = dir.path() + "/node-1.log";
  { std::ofstream out(empty); }
  InputLogReader empty_reader;
  EXPECT_NE(empty_reader.Open(empty).find("not a PaxFlow input log"), std::string::npos);

  // The right magic but no header record after it.
  const std::string magic_only = dir.path() + "/node-2.log";
  {
    std::ofstream out(magic_only, std::ios::binary);
    out << "PAXFLOG2";
  }
  InputLogReader magic_reader;
  const std::string header_error = magic_reader.Open(magic_only);
  EXPECT_NE(header_error.find("header"), std::string::npos) << header_error;

  InputLogReader missing_reader;
  const std::string missing = missing_reader.Open(dir.path() + "/node-9.log");
  EXPECT_NE(missing.find("cannot open"), std::string::npos) << missing;
}

TEST(InputLogTest, WriterReportsAnUncreatableFile) {
  InputLogWriter writer;
  const std::string error =
      writer.Open("/nonexistent-dir-for-paxflow-test/node-0.log", MakeHeader(), false);
  EXPECT_NE(error.find("cannot create"), std::string::npos) << error;
  // Appending to a writer that failed to open must be harmless.
  std::vector<MergedEpoch> epochs = MakeEpochs(1);
  writer.Append(epochs[0]);
  EXPECT_EQ(writer.bytes_written(), 0u);
}

TEST(InputLogTest, ListInputLogsFindsNodeLogsSorted) {
  TempDir dir;
  EXPECT_EQ(InputLogPath(dir.path(), 7), dir.path() + "/node-7.log");
  for (NodeId node : {2u, 0u, 1u}) ASSERT_EQ(WriteLog(InputLogPath(dir.path(), node), {}), "");
  for (const char* other : {"summary.json", "node-3.txt", "other.log", "node-4.log.tmp"}) {
    std::ofstream out(dir.path() + "/" + other);
    out << "x";
  }
  const std::vector<std::string> expected = {dir.path() + "/node-0.log",
                                             dir.path() + "/node-1.log",
                                             dir.path() + "/node-2.log"};
  EXPECT_EQ(ListInputLogs(dir.path()), expected);
  EXPECT_TRUE(ListInputLogs(dir.path() + "/does-not-exist").empty());
}

}  // namespace
}  // namespace paxflow
