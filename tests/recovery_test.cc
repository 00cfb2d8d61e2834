// The pieces of durability and recovery, one at a time: segmented logs
// (roll, reopen after a crash, drop), checkpoint files (round trip, torn
// and damaged ones refused), store scans at an epoch, the scheduler's
// snapshots for checkpoints (another thread scans while later epochs run;
// calvin mode pauses), restore plus replay equal to an uninterrupted run
// and to a serial execution, the merger's window, bounded transport
// queues, and summaries through protobuf's JSON mapping.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "applications/kv_procedures.h"
#include "backend/multi_version_store.h"
#include "backend/single_version_store.h"
#include "base/summary.h"
#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "common/hash.h"
#include "common/segmented_log.h"
#include "common/transport.h"
#include "node/peer_monitor.h"
#include "replay/replay.h"
#include "scheduler/epoch_merger.h"
#include "sequencer/input_log.h"
#include "tests/engine_harness.h"
#include "tests/result_log.h"
#include "tests/serial_reference.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::TempDir;

const LogFormat kTestFormat{"tst", "PAXFTST2", "test log"};

std::vector<std::string> ReadAll(const std::string& dir, const std::string& name,
                                 Epoch from = 0) {
  SegmentedLogReader reader;
  std::vector<std::string> records;
  if (!reader.Open(dir, name, kTestFormat, from).empty()) return records;
  std::string payload;
  while (reader.Next(&payload)) records.push_back(payload);
  return records;
}

Epoch EpochOfTestRecord(const std::string& payload) {
  return std::strtoull(payload.c_str(), nullptr, 10);
}

// ------------------------------------------------------------ segmented logs

TEST(SegmentedLogTest, RollsReopensAndDropsWholeSegments) {
  TempDir dir;
  {
    SegmentedLogWriter log;
    ASSERT_EQ(log.Create(dir.path(), "node-4", kTestFormat, "header"), "");
    for (Epoch e = 1; e <= 3; ++e) ASSERT_EQ(log.Append(e, std::to_string(e)), "");
    ASSERT_EQ(log.Roll(), "");
    ASSERT_EQ(log.Roll(), "");  // nothing since: no empty segment
    for (Epoch e = 4; e <= 6; ++e) ASSERT_EQ(log.Append(e, std::to_string(e)), "");
    ASSERT_EQ(log.Flush(true), "");
    EXPECT_EQ(log.last_epoch(), 6u);
    // Read while it is being written: the active segment counts too.
    EXPECT_EQ(ReadAll(dir.path(), "node-4"),
              (std::vector<std::string>{"1", "2", "3", "4", "5", "6"}));
    // Skipping what is all before epoch 4 leaves the closed segment out.
    EXPECT_EQ(ReadAll(dir.path(), "node-4", 4), (std::vector<std::string>{"4", "5", "6"}));
  }
  const std::vector<LogSegment> segments = ListSegments(dir.path(), "node-4", "tst");
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_EQ(segments[0].last_epoch, 3u);
  EXPECT_TRUE(segments[1].active);
  EXPECT_EQ(ListLogNames(dir.path(), "tst"), std::vector<std::string>{"node-4"});

  // A restart goes on with the same log: the segment left open is closed.
  SegmentedLogWriter again;
  Epoch last = 0;
  std::string last_record;
  ASSERT_EQ(again.Reopen(dir.path(), "node-4", kTestFormat, "header", EpochOfTestRecord, &last,
                         &last_record),
            "");
  EXPECT_EQ(last, 6u);
  EXPECT_EQ(last_record, "6");
  ASSERT_EQ(again.Append(7, "7"), "");
  ASSERT_EQ(again.Flush(false), "");
  EXPECT_EQ(ReadAll(dir.path(), "node-4"),
            (std::vector<std::string>{"1", "2", "3", "4", "5", "6", "7"}));
  EXPECT_EQ(again.DropThrough(5), 1u);  // epochs 1..3 go; 4..6 has 6 > 5
  EXPECT_EQ(again.DropThrough(6), 1u);
  EXPECT_EQ(ReadAll(dir.path(), "node-4"), std::vector<std::string>{"7"});
  // A fresh start removes every segment.
  SegmentedLogWriter fresh;
  ASSERT_EQ(fresh.Create(dir.path(), "node-4", kTestFormat, "header"), "");
  EXPECT_TRUE(ReadAll(dir.path(), "node-4").empty());
}

TEST(SegmentedLogTest, ReopenCutsATornTailAndWritersAfterAFailureStop) {
  TempDir dir;
  std::string active;
  {
    SegmentedLogWriter log;
    ASSERT_EQ(log.Create(dir.path(), "n", kTestFormat, "h"), "");
    for (Epoch e = 1; e <= 4; ++e) ASSERT_EQ(log.Append(e, std::string(100, 'a' + e)), "");
    ASSERT_EQ(log.Flush(false), "");
    active = log.active_path();
  }
  struct stat info {};
  ASSERT_EQ(stat(active.c_str(), &info), 0);
  ASSERT_EQ(truncate(active.c_str(), info.st_size - 30), 0);  // a crash mid-record
  SegmentedLogWriter log;
  Epoch last = 0;
  ASSERT_EQ(log.Reopen(dir.path(), "n", kTestFormat, "h",
                       [](const std::string& payload) { return Epoch(payload[0] - 'a'); },
                       &last),
            "");
  EXPECT_EQ(last, 3u);
  ASSERT_EQ(log.Append(5, std::string(100, 'f')), "");
  ASSERT_EQ(log.Flush(false), "");
  const std::vector<std::string> records = ReadAll(dir.path(), "n");
  ASSERT_EQ(records.size(), 4u);  // 1..3, then 5: the torn 4 is gone
  EXPECT_EQ(records[3][0], 'f');

  SegmentedLogWriter broken;
  const std::string error = broken.Create("/nonexistent-paxflow-dir", "n", kTestFormat, "h");
  EXPECT_NE(error.find("cannot create"), std::string::npos) << error;
  EXPECT_EQ(broken.Append(1, "x"), error) << "a failed log stays failed";
}

// ------------------------------------------------------------ stores

TEST(StoreScanTest, MultiVersionScanSeesItsSnapshotDespiteLaterWrites) {
  GcOptions gc;
  gc.policy = GcPolicy::kEpo;
  MultiVersionStore store(0, 1, 100, 16, gc);
  const size_t slot = store.RegisterThread();
  for (Key key = 0; key < 100; ++key) store.Load(key, "v0-" + std::to_string(key));
  store.SetSnapshotPins({3, 9});
  for (Epoch epoch : {2, 3, 5, 9}) {
    for (Key key = 0; key < 100; key += 3) {
      store.Write(slot, key, "v" + std::to_string(epoch) + "-" + std::to_string(key), epoch);
    }
  }
  std::map<Key, std::string> at3;
  store.Scan(slot, 3, [&](Key key, std::string_view value) { at3[key] = std::string(value); });
  ASSERT_EQ(at3.size(), 100u);
  EXPECT_EQ(at3[0], "v3-0");
  EXPECT_EQ(at3[1], "v0-1");
  uint64_t digest = 0;
  for (const auto& [key, value] : at3) digest += DigestTerm(key, value);
  EXPECT_EQ(store.Digest(slot, 3), digest);
  EXPECT_NE(store.Digest(slot, 9), digest);

  SingleVersionStore single(0, 1, 100, 16);
  for (Key key = 0; key < 100; ++key) single.Load(key, "x");
  single.Write(0, 7, "y", 1);
  single.Write(0, 1000, "sparse", 1);
  size_t visited = 0;
  single.Scan(0, 0, [&](Key key, std::string_view value) {
    ++visited;
    if (key == 7) {
      EXPECT_EQ(value, "y");
    }
  });
  EXPECT_EQ(visited, 101u);
}

// ------------------------------------------------------------ checkpoints

CheckpointHeader Header(NodeId node, Epoch epoch) {
  CheckpointHeader header;
  header.set_node_id(node);
  header.set_partition(0);
  header.set_partitions(1);
  header.set_epoch(epoch);
  header.set_last_rw_epoch(epoch - 1);
  header.set_lane_state("lanes");
  return header;
}

TEST(CheckpointTest, RoundTripsBothStoresAndRefusesDamagedFiles) {
  TempDir dir;
  GcOptions gc;
  MultiVersionStore source(0, 1, 10000, 32, gc);
  const size_t slot = source.RegisterThread();
  for (Key key = 0; key < 10000; ++key) source.Load(key, "value-" + std::to_string(key * 7));
  source.Write(slot, 123456789, "sparse", 1);
  CheckpointStats written;
  ASSERT_EQ(WriteCheckpoint(dir.path(), Header(2, 5), &source, slot, &written), "");
  EXPECT_EQ(written.keys, 10001u);
  EXPECT_EQ(written.digest, source.Digest(slot, 5));
  EXPECT_EQ(written.path, CheckpointPath(dir.path(), 2, 5));
  EXPECT_EQ(ListCheckpoints(dir.path(), 2), std::vector<Epoch>{5});

  for (bool multi : {true, false}) {
    std::unique_ptr<Store> target;
    if (multi) {
      target = std::make_unique<MultiVersionStore>(0, 1, 10000, 32, gc);
    } else {
      target = std::make_unique<SingleVersionStore>(0, 1, 10000, 32);
    }
    const size_t target_slot = target->RegisterThread();
    CheckpointHeader header;
    CheckpointStats loaded;
    ASSERT_EQ(LoadCheckpoint(written.path, target.get(), target_slot, &header, &loaded), "");
    EXPECT_EQ(header.epoch(), 5u);
    EXPECT_EQ(header.last_rw_epoch(), 4u);
    EXPECT_EQ(header.lane_state(), "lanes");
    EXPECT_EQ(target->Digest(target_slot, 5), written.digest) << (multi ? "multi" : "single");
  }

  // A byte changed in the middle, then a file cut short: both refused.
  const std::string damaged = dir.path() + "/node-3@5.ckpt";
  std::string bytes = testing::ReadFile(written.path);
  bytes[bytes.size() / 2] ^= 0x40;
  std::ofstream(damaged, std::ios::binary) << bytes;
  GcOptions options;
  MultiVersionStore target(0, 1, 10000, 32, options);
  CheckpointHeader header;
  CheckpointStats stats;
  std::string error = LoadCheckpoint(damaged, &target, target.RegisterThread(), &header, &stats);
  EXPECT_NE(error.find("torn"), std::string::npos) << error;
  const std::string cut = dir.path() + "/node-4@5.ckpt";
  std::ofstream(cut, std::ios::binary) << testing::ReadFile(written.path).substr(0, 5000);
  MultiVersionStore other(0, 1, 10000, 32, options);
  error = LoadCheckpoint(cut, &other, other.RegisterThread(), &header, &stats);
  EXPECT_NE(error, "");

  // Leftovers of a crash while writing are not checkpoints, and go.
  std::ofstream(dir.path() + "/node-2@9.ckpt.tmp") << "half";
  EXPECT_EQ(ListCheckpoints(dir.path(), 2), std::vector<Epoch>{5});
  RemoveUnfinishedCheckpoints(dir.path(), 2);
  EXPECT_NE(access((dir.path() + "/node-2@9.ckpt.tmp").c_str(), F_OK), 0);
  ASSERT_EQ(WriteCheckpoint(dir.path(), Header(2, 8), &source, slot, &written), "");
  EXPECT_EQ(ListCheckpoints(dir.path(), 2), (std::vector<Epoch>{5, 8}));
  EXPECT_EQ(RemoveCheckpointsBefore(dir.path(), 2, 8), 1u);
  EXPECT_EQ(ListCheckpoints(dir.path(), 2), std::vector<Epoch>{8});
}

// ------------------------------------------------------- snapshot, restore

struct RestoreCase {
  Mode mode;
  uint32_t partitions;
  const char* preset;
};

class RestoreTest : public ::testing::TestWithParam<RestoreCase> {};

// A checkpoint taken mid-run, by another thread, while later epochs run
// (paxflow) or while the partition waits (calvin): it holds exactly the
// serial state after its epoch, and a replay that starts from it ends where
// the live run and a replay from the beginning end.
TEST_P(RestoreTest, CheckpointMidRunEqualsSerialStateAndReplayFromItAgrees) {
  const RestoreCase c = GetParam();
  TempDir logs;
  NodeParams params = testing::TestParams(c.preset, c.mode, 0);
  if (c.partitions > 1) params.workload.multi_partition_pct = 30;
  constexpr Epoch kEpochs = 60, kCheckpoint = 25;
  testing::ResultLog results;
  testing::EngineHarness engine(params, c.partitions, &results, logs.path());
  std::mutex writers_mu;
  std::vector<std::thread> writers;
  std::vector<std::promise<std::string>> outcomes(c.partitions);
  std::vector<std::future<std::string>> written;
  for (auto& outcome : outcomes) written.push_back(outcome.get_future());
  for (PartitionId p = 0; p < c.partitions; ++p) {
    engine.scheduler(p).RequestSnapshot(kCheckpoint, [&, p](const SnapshotInfo& info) {
      // Handed to a thread of its own, as a node does; the scheduler goes on.
      std::lock_guard<std::mutex> lock(writers_mu);
      writers.emplace_back([&, p, info] {
        std::string error = info.ok ? "" : "snapshot refused";
        if (error.empty()) {
          CheckpointHeader header = Header(p, info.epoch);
          header.set_partition(p);
          header.set_partitions(c.partitions);
          header.set_last_rw_epoch(info.last_rw_epoch);
          header.set_lane_state(info.lane_state);
          Store& store = engine.store(p);
          CheckpointStats stats;
          error = WriteCheckpoint(logs.path(), header, &store, store.RegisterThread(), &stats);
        }
        engine.scheduler(p).ReleaseSnapshot(kCheckpoint);
        outcomes[p].set_value(error);
      });
    });
  }
  ASSERT_TRUE(engine.Run(kEpochs));
  for (auto& result : written) EXPECT_EQ(result.get(), "");
  {
    std::lock_guard<std::mutex> lock(writers_mu);
    for (auto& writer : writers) writer.join();
  }
  const uint64_t live = engine.DatabaseDigest();

  testing::SerialResult serial = testing::SerialExecute(logs.path(), params.workload);
  ASSERT_EQ(serial.error, "");
  ASSERT_EQ(live, serial.digest);
  uint64_t checkpointed = 0;
  for (PartitionId p = 0; p < c.partitions; ++p) {
    CheckpointHeader header;
    ASSERT_EQ(ReadCheckpointHeader(CheckpointPath(logs.path(), p, kCheckpoint), &header), "");
    GcOptions gc;
    MultiVersionStore store(p, c.partitions, 0, 16, gc);
    CheckpointStats stats;
    ASSERT_EQ(LoadCheckpoint(CheckpointPath(logs.path(), p, kCheckpoint), &store,
                             store.RegisterThread(), &header, &stats),
              "");
    checkpointed += stats.digest;
  }
  EXPECT_EQ(checkpointed, serial.digest_after_epoch.at(kCheckpoint))
      << "the checkpoint is not the state after its epoch";

  ReplayResult from_checkpoint = ReplayLogs(logs.path(), 0, params);
  ASSERT_EQ(from_checkpoint.error, "");
  EXPECT_EQ(from_checkpoint.start_epoch, kCheckpoint);
  EXPECT_EQ(from_checkpoint.digest, live);
  for (PartitionId p = 0; p < c.partitions; ++p) {
    unlink(CheckpointPath(logs.path(), p, kCheckpoint).c_str());
  }
  ReplayResult from_start = ReplayLogs(logs.path(), 0, params);
  ASSERT_EQ(from_start.error, "");
  EXPECT_EQ(from_start.start_epoch, 0u);
  EXPECT_EQ(from_start.digest, live);
  EXPECT_GT(from_start.txns, from_checkpoint.txns);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RestoreTest,
    ::testing::Values(RestoreCase{Mode::kPaxflow, 1, "mixed"},
                      RestoreCase{Mode::kPaxflow, 3, "mixed"},
                      RestoreCase{Mode::kCalvin, 3, "bank"}),
    [](const ::testing::TestParamInfo<RestoreCase>& info) {
      return std::string(ModeName(info.param.mode)) + std::to_string(info.param.partitions) +
             info.param.preset;
    });

// ------------------------------------------------------- step by step

std::unique_ptr<Batch> BatchOf(Epoch epoch, uint32_t sequencer, std::vector<Txn> txns) {
  auto batch = std::make_unique<Batch>();
  batch->set_epoch(epoch);
  batch->set_sequencer(sequencer);
  batch->set_has_rw(true);
  for (uint32_t i = 0; i < txns.size(); ++i) {
    txns[i].set_id(MakeTxnId(epoch, sequencer, i));
    *batch->add_txns() = txns[i];
  }
  return batch;
}

Txn Put(Key key, const std::string& value, TxnClass cls = RW) {
  Txn txn;
  txn.set_procedure(WithKvProcedures::kPut);
  txn.set_txn_class(cls);
  if (cls == RO) {
    txn.set_procedure(WithKvProcedures::kGet);
    txn.add_read_set(key);
    return txn;
  }
  txn.add_write_set(key);
  KvArgs args;
  args.add_values(value);
  txn.set_args(args.SerializeAsString());
  return txn;
}

class StepRecovery : public ::testing::TestWithParam<Mode> {
 protected:
  StepRecovery() {
    params_ = testing::TestParams("mixed", GetParam(), 0);
    app_ = MakeApplication(params_.workload);
    MakeScheduler(-1);
  }
  // A fresh store and scheduler (SchedulerOptions::answering_node).
  void MakeScheduler(int64_t answering_node) {
    scheduler_.reset();
    GcOptions gc;
    if (GetParam() == Mode::kCalvin) {
      store_ = std::make_unique<SingleVersionStore>(0, 1, 100, 24);
    } else {
      store_ = std::make_unique<MultiVersionStore>(0, 1, 100, 24, gc);
    }
    SchedulerOptions options;
    options.mode = GetParam();
    options.sequencers = 1;
    options.workers = 1;
    options.max_buffered_epochs = 4;
    options.answering_node = answering_node;
    stats_ = std::make_unique<NodeStats>(options.stats_slots());
    scheduler_ = std::make_unique<Scheduler>(options, store_.get(), app_.get(), nullptr,
                                             stats_.get(), &results_);
  }
  void Drain() {
    for (int i = 0; i < 10; ++i) {
      scheduler_->Step();
      scheduler_->RunQueuedWork();
    }
  }
  NodeParams params_;
  std::unique_ptr<Application> app_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<NodeStats> stats_;
  testing::ResultLog results_;
  std::unique_ptr<Scheduler> scheduler_;
};

// After a restore at epoch 4, execution resumes at 5; epochs the old
// incarnation sequenced (<= 6) skip their read-only txns (nobody waits for
// them) and count nothing in the stats; a later epoch runs as usual.
TEST_P(StepRecovery, RestoredSchedulerResumesAndSkipsWhatNobodyWaitsFor) {
  SnapshotInfo info;
  info.ok = true;
  info.epoch = 4;
  info.last_rw_epoch = 3;
  std::string error;
  ASSERT_TRUE(scheduler_->RestoreAt(info, &error)) << error;
  scheduler_->SetRecoveredThrough(6);
  scheduler_->DeliverBatch(BatchOf(3, 0, {Put(1, "stale")}));  // already in the checkpoint
  scheduler_->DeliverBatch(BatchOf(5, 0, {Put(1, "five"), Put(1, "", RO)}));
  scheduler_->DeliverBatch(BatchOf(7, 0, {Put(1, "", RO)}));
  Drain();
  EXPECT_EQ(scheduler_->Status().admitted_epoch, 5u);
  scheduler_->DeliverBatch(BatchOf(6, 0, {Put(2, "six")}));
  Drain();
  EXPECT_EQ(scheduler_->Status().published_epoch, 7u);
  EXPECT_EQ(scheduler_->Status().repeated_messages, 1u);  // epoch 3
  EXPECT_EQ(scheduler_->dropped_messages(), 0u);
  // Only epoch 7's read-only txn reported, and only it is counted.
  const auto read_only = results_.read_only();
  ASSERT_EQ(read_only.size(), 1u);
  EXPECT_EQ(TxnEpoch(read_only.begin()->first), 7u);
  EXPECT_EQ(stats_->CommittedAll(), 1u);
  std::string_view value;
  ASSERT_TRUE(store_->ReadLatest(0, 1, &value));
  EXPECT_EQ(value, "five");
}

// A replica answers only what its own sequencer cut (node 1 here): the
// read-only txn node 0 cut is skipped (its client waits at node 0, and it
// changes nothing), its own runs and answers, and every write runs.
TEST_P(StepRecovery, ReadOnlyTxnsRunOnlyWhereTheyWereSequenced) {
  MakeScheduler(/*answering_node=*/1);
  Txn write = Put(1, "one");
  write.set_origin_node(0);
  Txn others = Put(1, "", RO);
  others.set_origin_node(0);
  Txn own = Put(1, "", RO);
  own.set_origin_node(1);
  scheduler_->DeliverBatch(BatchOf(1, 0, {write, others, own}));
  scheduler_->DeliverBatch(BatchOf(2, 0, {Put(2, "two")}));
  Drain();
  EXPECT_EQ(scheduler_->Status().published_epoch, 2u);
  const auto read_only = results_.read_only();
  ASSERT_EQ(read_only.size(), 1u);
  EXPECT_EQ(read_only.begin()->first, MakeTxnId(1, 0, 2));
  EXPECT_EQ(stats_->CommittedAll(), 3u);  // the two writes and its own read
  std::string_view value;
  ASSERT_TRUE(store_->ReadLatest(0, 1, &value));
  EXPECT_EQ(value, "one");
}

// Calvin mode holds a snapshot by pausing: nothing after its epoch is
// admitted until it is released. Paxflow mode goes on, the snapshot pinned.
TEST_P(StepRecovery, SnapshotsPauseCalvinAndPinPaxflow) {
  std::vector<SnapshotInfo> ready;
  scheduler_->RequestSnapshot(1, [&](const SnapshotInfo& info) { ready.push_back(info); });
  scheduler_->DeliverBatch(BatchOf(1, 0, {Put(1, "one")}));
  scheduler_->DeliverBatch(BatchOf(2, 0, {Put(1, "two")}));
  Drain();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_TRUE(ready[0].ok);
  EXPECT_EQ(ready[0].last_rw_epoch, 1u);
  const bool calvin = GetParam() == Mode::kCalvin;
  EXPECT_EQ(scheduler_->Status().admitted_epoch, calvin ? 1u : 2u);
  std::map<Key, std::string> seen;
  store_->Scan(0, 1, [&](Key key, std::string_view v) { seen[key] = std::string(v); });
  EXPECT_EQ(seen[1], "one");
  scheduler_->ReleaseSnapshot(1);
  Drain();
  EXPECT_EQ(scheduler_->Status().admitted_epoch, 2u);
  // Asked for after its epoch ran: refused, not served wrong.
  scheduler_->RequestSnapshot(2, [&](const SnapshotInfo& info) { ready.push_back(info); });
  Drain();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_FALSE(ready[1].ok);
}

// A sequencer that ended its run before a checkpoint's epoch is remembered
// with it: restored, the partition does not wait for its later batches.
TEST_P(StepRecovery, FinishedSequencersAreKeptAcrossARestore) {
  std::vector<SnapshotInfo> ready;
  scheduler_->RequestSnapshot(2, [&](const SnapshotInfo& info) { ready.push_back(info); });
  scheduler_->DeliverBatch(BatchOf(1, 0, {Put(1, "one")}));
  auto last = BatchOf(2, 0, {Put(1, "two")});
  last->set_final(true);
  scheduler_->DeliverBatch(std::move(last));
  Drain();
  ASSERT_EQ(ready.size(), 1u);
  const std::vector<std::pair<uint32_t, Epoch>> expected = {{0, 2}};
  EXPECT_EQ(ready[0].finished_sequencers, expected);
  scheduler_->ReleaseSnapshot(2);
  Drain();
  EXPECT_TRUE(scheduler_->finished());

  GcOptions gc;
  MultiVersionStore store(0, 1, 100, 24, gc);
  SchedulerOptions options;
  options.mode = GetParam();
  options.workers = 1;
  NodeStats stats(options.stats_slots());
  Scheduler restored(options, &store, app_.get(), nullptr, &stats, &results_);
  std::string error;
  ASSERT_TRUE(restored.RestoreAt(ready[0], &error)) << error;
  restored.Step();
  EXPECT_TRUE(restored.finished()) << "it waits for a sequencer that had ended its run";
}

// Batches far ahead are refused (their senders send them again when due),
// repeats are harmless: neither counts as garbage.
TEST_P(StepRecovery, BatchesBeyondTheWindowAreRefusedNotCounted) {
  scheduler_->DeliverBatch(BatchOf(9, 0, {Put(1, "nine")}));  // window is 4
  scheduler_->DeliverBatch(BatchOf(1, 0, {Put(1, "one")}));
  Drain();
  EXPECT_EQ(scheduler_->Status().admitted_epoch, 1u);
  EXPECT_EQ(scheduler_->Status().next_epoch, 2u);
  EXPECT_EQ(scheduler_->Status().missing_sequencers, std::vector<uint32_t>{0});
  EXPECT_EQ(scheduler_->Status().repeated_messages, 1u);
  EXPECT_EQ(scheduler_->dropped_messages(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Modes, StepRecovery, ::testing::Values(Mode::kCalvin, Mode::kPaxflow),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(ModeName(info.param));
                         });

// ------------------------------------------------------------ transport

// Node `self` of nodes 0 and 1 on 127.0.0.1 at `ports`; Stop drops what
// is unsent.
TransportOptions LoopbackOptions(NodeId self, const std::vector<uint32_t>& ports) {
  TransportOptions options;
  options.self = self;
  options.bind_endpoint = "tcp://127.0.0.1:" + std::to_string(ports[self]);
  options.peers = {{0, "tcp://127.0.0.1:" + std::to_string(ports[0]), ""},
                   {1, "tcp://127.0.0.1:" + std::to_string(ports[1]), ""}};
  options.linger_ms = 0;
  return options;
}

// A peer that never answers costs a bounded queue; what does not fit is
// dropped and counted, and Send never blocks.
TEST(TransportTest, ADeadPeerCostsABoundedQueue) {
  TransportOptions options = LoopbackOptions(0, testing::FreePorts(2));
  options.zmq_queue = 10;
  options.max_queued_bytes = 64 * 1024;
  Transport transport(options);
  ASSERT_EQ(transport.Start(), "");
  const std::string payload(1000, 'x');
  const int64_t start = NowMicros();
  int accepted = 0;
  for (int i = 0; i < 1000; ++i) accepted += transport.Send(1, BATCH, payload) ? 1 : 0;
  EXPECT_LT(NowMicros() - start, 2000000) << "sends to a dead peer blocked";
  const Transport::PeerQueue queue = transport.Queue(1);
  EXPECT_LE(queue.queued_bytes, options.max_queued_bytes);
  EXPECT_GT(queue.dropped, 800u);
  EXPECT_EQ(static_cast<uint64_t>(accepted) + queue.dropped, 1000u);
  EXPECT_EQ(transport.LastHeard(1).at_us, 0);
  transport.Stop(false);
}

// While the receiver thread is in a handler (calvin mode parses a scan's
// 10 MB of rows in one) no peer can be heard: that time is not a peer's
// silence. Time with the receiver free still is.
TEST(TransportTest, TimeInAHandlerIsNotAPeersSilence) {
  // Declared before the transports, which use them until they stop.
  std::mutex mu;
  std::condition_variable changed;
  int heartbeats = 0;
  bool in_handler = false, release = false;
  auto let_go = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      release = true;
    }
    changed.notify_all();
  };
  const std::vector<uint32_t> ports = testing::FreePorts(2);
  Transport receiver(LoopbackOptions(0, ports)), sender(LoopbackOptions(1, ports));
  // A failed assertion returns with the handler maybe held: let it go
  // before the transports stop, or the receiver's Stop would wait forever.
  struct LetGo {
    std::function<void()> fn;
    ~LetGo() { fn(); }
  } let_go_on_exit{let_go};
  receiver.Subscribe(HEARTBEAT, [&](NodeId, std::string&&) {
    std::lock_guard<std::mutex> lock(mu);
    ++heartbeats;
    changed.notify_all();
  });
  receiver.Subscribe(BATCH, [&](NodeId, std::string&&) {
    std::unique_lock<std::mutex> lock(mu);
    in_handler = true;
    changed.notify_all();
    changed.wait(lock, [&] { return release; });
  });
  ASSERT_EQ(receiver.Start(), "");
  ASSERT_EQ(sender.Start(), "");
  auto wait_for = [&](const std::function<bool()>& done) {
    std::unique_lock<std::mutex> lock(mu);
    return changed.wait_for(lock, std::chrono::seconds(30), done);
  };
  const ClusterConfig config = testing::MakeConfig("deaf", 2, 1, "inproc");  // nodes 0 and 1
  constexpr int64_t kSilence = 1000000;
  PeerMonitor monitor(config, 0, &receiver, kSilence, nullptr);
  constexpr int64_t kTenSeconds = 10000000;

  ASSERT_TRUE(sender.Send(0, HEARTBEAT, "alive"));
  ASSERT_TRUE(wait_for([&] { return heartbeats == 1; }));
  ASSERT_GT(receiver.LastHeard(1).at_us, 0);
  ASSERT_TRUE(sender.Send(0, BATCH, "slow to handle"));
  ASSERT_TRUE(wait_for([&] { return in_handler; }));
  // Ten seconds on with the receiver in the handler all along: the peer's
  // silence is only the receiver's time between the two messages.
  int64_t later = NowMicros() + kTenSeconds;
  EXPECT_GE(receiver.DeafUs(later), kTenSeconds);
  EXPECT_LT(monitor.SilentForUs(1, later), kSilence);
  EXPECT_FALSE(monitor.Silent(1, later));

  let_go();
  ASSERT_TRUE(sender.Send(0, HEARTBEAT, "still alive"));
  // The slow handler returned before this one came.
  ASSERT_TRUE(wait_for([&] { return heartbeats == 2; }));
  // Its hand-off ends as its handler returns; then the receiver is free
  // (nothing else is sent to it) and deaf time stops growing.
  const int64_t deadline = NowMicros() + kTenSeconds;
  while (receiver.DeafUs(NowMicros() + kTenSeconds) != receiver.DeafUs(NowMicros())) {
    ASSERT_LT(NowMicros(), deadline) << "the receiver never left the heartbeat's handler";
    std::this_thread::yield();
  }
  // Ten free seconds are silence.
  later = NowMicros() + kTenSeconds;
  EXPECT_GE(monitor.SilentForUs(1, later), kTenSeconds - kSilence);
  EXPECT_TRUE(monitor.Silent(1, later));
  sender.Stop(false);
  receiver.Stop(false);
}

// ------------------------------------------------------------ summaries

TEST(SummaryJsonTest, RoundTripsThroughProtobufJson) {
  RunSummary summary;
  summary.node = 3;
  summary.partition = 1;
  summary.replica = 1;
  summary.mode = "calvin";
  summary.workload = "bank";
  summary.seconds = 2.5;
  summary.kinds[kKindReadWrite].committed = 10;
  summary.kinds[kKindReadWrite].declined = 2;
  for (uint64_t v : {5, 50, 500}) summary.kinds[kKindReadWrite].latency_us.Record(v);
  summary.visibility_us.Record(42);
  summary.invariant_failures = 1;
  summary.digest_epoch = 77;
  summary.digest = 0xfedcba9876543210ull;
  summary.epoch_digests = {{5, 0x1234}};
  const std::string json = summary.ToJson();
  EXPECT_NE(json.find("\"invariant_failures\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"digest\":\"0xfedcba9876543210\""), std::string::npos) << json;
  RunSummary back;
  ASSERT_EQ(RunSummary::FromJson(json, &back), "");
  EXPECT_EQ(back.ToJson(), json);
  EXPECT_EQ(back.kinds[kKindReadWrite].latency_us.max(), 500u);
  EXPECT_EQ(back.digest, summary.digest);
  EXPECT_NE(RunSummary::FromJson("{\"digest\": 12", &back), "");
  EXPECT_NE(RunSummary::FromJson("{\"digest\": \"0xnothex\"}", &back), "");
}

// Whether a limit on new txns bounded a run: its summary says which, so a
// comparison made at a cap is not read as one of the engines.
TEST(SummaryJsonTest, SaysWhichAdmissionLimitBoundedTheRun) {
  RunSummary summary;
  summary.seconds = 1;
  summary.kinds[kKindReadWrite].committed = 200000;
  summary.admission.epochs = 100;
  summary.admission.window_ceiling = 400000;
  EXPECT_EQ(summary.admission.Bound(summary.Throughput()), "") << "half the window's ceiling";
  EXPECT_EQ(summary.ToText().find("bounded by admission"), std::string::npos);
  summary.admission.at_batch_cap = 99;
  EXPECT_EQ(summary.admission.Bound(summary.Throughput()),
            "batch full (max_batch) in 99.0% of epochs");
  EXPECT_NE(summary.ToText().find("bounded by admission: batch full (max_batch) in 99.0%"),
            std::string::npos) << summary.ToText();
  summary.admission.at_batch_cap = 10;
  summary.admission.ltx_window_full = 60;
  EXPECT_EQ(summary.admission.Bound(summary.Throughput()),
            "LTX window full (max_inflight_ltx or max_active_ltx's share) in 60.0% of epochs");
  // Fills held while the LTX threads were behind are the lane's own pace:
  // the text says so, and they bound nothing.
  summary.admission.ltx_lane_behind = 55;
  EXPECT_EQ(summary.admission.Bound(summary.Throughput()), "");
  EXPECT_NE(summary.ToText().find("(LTX threads behind, max_ltx_backlog, in 55.0%)"),
            std::string::npos) << summary.ToText();
  RunSummary behind;
  ASSERT_EQ(RunSummary::FromJson(summary.ToJson(), &behind), "");
  EXPECT_EQ(behind.admission.ltx_lane_behind, 55u);
  summary.admission.ltx_lane_behind = 0;
  summary.admission.ltx_window_full = 0;
  summary.kinds[kKindReadWrite].committed = 380000;
  EXPECT_EQ(summary.admission.Bound(summary.Throughput()),
            "at 95.0% of the window's ceiling (max_inflight per epoch)");
  // It survives the node's JSON, and a cluster's total adds the nodes'.
  RunSummary back;
  ASSERT_EQ(RunSummary::FromJson(summary.ToJson(), &back), "");
  EXPECT_EQ(back.admission.epochs, 100u);
  EXPECT_EQ(back.admission.at_batch_cap, 10u);
  EXPECT_EQ(back.admission.window_ceiling, 400000);
  const RunSummary total = RunSummary::Combine({back, back});
  EXPECT_EQ(total.admission.epochs, 200u);
  EXPECT_EQ(total.admission.window_ceiling, 800000);
  EXPECT_EQ(total.admission.Bound(total.Throughput()),
            "at 95.0% of the window's ceiling (max_inflight per epoch)");
}

// Starvation both ways: the most deferrals of one short txn, and the share
// of LTXs aborted by guards, told apart from busy aborts (and calvin mode's
// OLLP restarts), in the text and through the JSON the launcher combines.
TEST(SummaryJsonTest, StarvationBothWaysAndOllpRestartsAreReported) {
  RunSummary summary;
  summary.mode = "paxflow";
  summary.workload = "long";
  summary.seconds = 1;
  // Restarts are no aborts (an OLLP restart runs again): 3 aborted, 1 restart.
  summary.kinds[kKindLong].committed = 97;
  summary.kinds[kKindLong].aborted = 3;
  summary.ltx.aborts[kAbortGuard] = 1;
  summary.ltx.aborts[kAbortBusy] = 2;
  summary.ltx.aborts[kAbortRecon] = 1;
  summary.ltx.max_deferrals = 7;
  const std::string text = summary.ToText();
  EXPECT_NE(text.find("starvation: most deferrals of one short txn 7; LTXs aborted by guards 1 "
                      "of 100 (1.00%)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("long txns: 97 committed, 3 aborted (busy 2, guard 1)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("run again): 1\n"), std::string::npos) << text;
  RunSummary back;
  ASSERT_EQ(RunSummary::FromJson(summary.ToJson(), &back), "");
  EXPECT_EQ(back.ltx.aborts[kAbortGuard], 1u);
  EXPECT_EQ(back.ltx.aborts[kAbortRecon], 1u);
  EXPECT_EQ(back.ltx.max_deferrals, 7u);
  EXPECT_DOUBLE_EQ(RunSummary::Combine({back, back}).ltx.GuardAbortShare(200), 0.01);
}

// An LTX's life by stage, and how many LTXs read early: in the text, and
// kept through the JSON the launcher combines (a stage histogram lost on
// the way would silently drop out of the cluster's summary).
TEST(SummaryJsonTest, LtxLifeStagesAndEarlyReadsRoundTrip) {
  RunSummary summary;
  summary.mode = "paxflow";
  summary.workload = "long";
  summary.seconds = 1;
  summary.kinds[kKindLong].committed = 2;
  summary.ltx.early_reads = 1;
  summary.ltx.held_installs = 1;
  for (int stage = 0; stage < kLtxStages; ++stage) {
    summary.ltx.stage_us[stage].Record(1000 * static_cast<uint64_t>(stage + 1));
  }
  const std::string text = summary.ToText();
  EXPECT_NE(text.find("LTX life at its origin (ms, p50/p99): sequencing "), std::string::npos)
      << text;
  EXPECT_NE(text.find("read waiting for its snapshot "), std::string::npos) << text;
  EXPECT_NE(text.find("read an unresolved LTX's writes early: 1"), std::string::npos) << text;
  RunSummary back;
  ASSERT_EQ(RunSummary::FromJson(summary.ToJson(), &back), "");
  EXPECT_EQ(back.ltx.early_reads, 1u);
  for (int stage = 0; stage < kLtxStages; ++stage) {
    EXPECT_EQ(back.ltx.stage_us[stage].count(), 1u) << LtxStageName(stage);
    EXPECT_EQ(back.ltx.stage_us[stage].max(), summary.ltx.stage_us[stage].max())
        << LtxStageName(stage);
  }
  const RunSummary both = RunSummary::Combine({back, back});
  EXPECT_EQ(both.ltx.stage_us[kLtxRun].count(), 2u);
  EXPECT_EQ(both.ltx.early_reads, 2u);
  EXPECT_NE(RunSummary::FromJson(
                "{\"ltx\": {\"stageUs\": {\"no such stage\": \"0;0;0;\"}}}", &back),
            "");
}

}  // namespace
}  // namespace paxflow
