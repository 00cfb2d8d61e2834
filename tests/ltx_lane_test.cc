// The LTX lane's rules, one scenario each, on schedulers driven step by
// step: the test sequences every epoch, decides in which epoch the LTX
// lane's records (commits, aborts, guards) land, and runs the LTX threads
// when it chooses. Every scenario ends with the serialization-order
// oracle: each committed txn, executed alone in the order of the positions
// the engine reported, reads what it reported, and the final state is the
// engine's.
#include <gtest/gtest.h>

#include "tests/ltx_harness.h"

namespace paxflow {
namespace {

using testing::LtxBench;
using testing::LtxBenchOptions;
using Result = testing::ResultLog::Result;

SerialPosition At(uint64_t epoch, uint64_t anchor, uint64_t chain, uint64_t txn) {
  return SerialPosition{epoch, anchor, chain, txn};
}

std::string Show(const SerialPosition& p) {
  return "(" + std::to_string(p.epoch) + ", " + TxnIdString(p.anchor) + ", " +
         std::to_string(p.chain) + ", " + TxnIdString(p.txn) + ")";
}

#define EXPECT_POSITION(result, expected) \
  EXPECT_TRUE((result).outcome.position == (expected)) \
      << "at " << Show((result).outcome.position) << ", expected " << Show(expected)

size_t ResultsOf(const LtxBench& bench, TxnId id) {
  size_t count = 0;
  for (const Result& r : bench.results().all()) count += r.txn.id() == id ? 1 : 0;
  return count;
}

// Sequences, in `epoch`, the one record the lanes made: the commit of `ltx`.
void SequenceCommitOf(LtxBench* bench, Epoch epoch, TxnId ltx);

Txn OnlyRecord(LtxBench* bench, LtxRecordKind kind) {
  std::vector<Txn> records = bench->TakeRecords();
  EXPECT_EQ(records.size(), 1u);
  if (records.empty()) return Txn();
  EXPECT_EQ(records[0].ltx().kind(), kind) << records[0].ShortDebugString();
  return records[0];
}

void SequenceCommitOf(LtxBench* bench, Epoch epoch, TxnId ltx) {
  const Txn commit = OnlyRecord(bench, LTX_COMMIT);
  EXPECT_EQ(commit.ltx().ltx_id(), ltx);
  bench->Sequence(epoch, {commit});
  bench->Drain();
}

TEST(LtxLaneTest, ShortTxnInTheWriteAreaIsDeferredAndRunsOnceRightAfterTheInstall) {
  LtxBench bench(LtxBenchOptions{});
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({1}, {5, 6})})[0];
  bench.Drain();
  const Txn commit = OnlyRecord(&bench, LTX_COMMIT);

  const auto short_ids = bench.Sequence(2, {LtxBench::Rmw({5}), LtxBench::Rmw({9})});
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(short_ids[0], &result)) << "ran inside an active LTX's write area";
  EXPECT_EQ(bench.scheduler(0).Status().deferred, 1u);
  ASSERT_TRUE(bench.Result(short_ids[1], &result)) << "outside every write area: runs at once";
  EXPECT_POSITION(result, At(2, short_ids[1], 0, 0));
  EXPECT_EQ(result.outcome.deferrals, 0u);

  const TxnId commit_id = bench.Sequence(3, {commit})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(short_ids[0], &result));
  EXPECT_POSITION(result, At(3, commit_id, 0, short_ids[0]));
  EXPECT_EQ(result.outcome.deferrals, 1u);
  EXPECT_EQ(ResultsOf(bench, short_ids[0]), 1u) << "one reply, later";
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_POSITION(result, At(2, 0, 0, ltx));
  EXPECT_EQ(bench.scheduler(0).Status().deferred, 0u);
  // The deferred txn read key 5 after the LTX wrote it: the oracle
  // executes it after the LTX and compares what it read.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, WriterOfAKeyTheLtxOnlyReadsRunsAtOnceAndTheLtxReadsTheOldValue) {
  LtxBench bench(LtxBenchOptions{});
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({3}, {5})})[0];
  bench.Drain(/*ltx_threads=*/false);  // the LTX has read nothing yet
  const TxnId writer = bench.Sequence(2, {LtxBench::Rmw({3})})[0];
  bench.Drain(/*ltx_threads=*/false);
  Result result;
  ASSERT_TRUE(bench.Result(writer, &result)) << "a writer of a read-only key waited for the LTX";
  EXPECT_POSITION(result, At(2, writer, 0, 0));
  bench.Drain();  // now the LTX reads key 3 at its snapshot, epoch 1
  const TxnId commit = bench.Sequence(3, {OnlyRecord(&bench, LTX_COMMIT)})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted);
  EXPECT_POSITION(result, At(2, 0, 0, ltx));  // before the writer: it read the old value
  (void)commit;
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, AnLtxIsActiveFromTheEpochAfterItsBegin) {
  // A short txn after the begin record, in the same epoch, is ordered
  // before the LTX (which is serialized at the start of the next epoch):
  // it runs at once, and the LTX reads what it wrote.
  LtxBench bench(LtxBenchOptions{});
  const auto ids = bench.Sequence(1, {LtxBench::Long({}, {5}), LtxBench::Rmw({5})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_POSITION(result, At(1, ids[1], 0, 0));
  EXPECT_EQ(result.outcome.deferrals, 0u);
  bench.Sequence(2, {OnlyRecord(&bench, LTX_COMMIT)});
  bench.Drain();
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_POSITION(result, At(2, 0, 0, ids[0]));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, AWriteOutsideTheWriteAreaAbortsTheLtxAndReleasesWhatItDeferred) {
  LtxBench bench(LtxBenchOptions{});
  const TxnId ltx =
      bench.Sequence(1, {LtxBench::LongKv({}, {{7, "inside"}, {8, "outside"}}, {{7, 7}})})[0];
  bench.Drain();
  const Txn abort = OnlyRecord(&bench, LTX_ABORT);
  EXPECT_NE(abort.ltx().reason().find("write-area"), std::string::npos) << abort.ltx().reason();
  const TxnId deferred = bench.Sequence(2, {LtxBench::Rmw({7})})[0];
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(deferred, &result));
  const TxnId abort_id = bench.Sequence(3, {abort})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_FALSE(result.outcome.retryable);
  EXPECT_NE(result.outcome.abort_reason.find("key 8, outside its write area"), std::string::npos)
      << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(deferred, &result));
  EXPECT_POSITION(result, At(3, abort_id, 0, deferred));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, ALaterLtxReadingAnEarlierOnesAreaWaitsAndReadsItsInstalledVersion) {
  LtxBench bench(LtxBenchOptions{});
  const TxnId first = bench.Sequence(1, {LtxBench::Long({}, {5})})[0];
  const TxnId second = bench.Sequence(2, {LtxBench::Long({5}, {20})})[0];
  bench.Drain();
  // The second read key 5, in the first's area: it waits for it to resolve.
  EXPECT_EQ(bench.scheduler(0).Status().parked, 1u);
  SequenceCommitOf(&bench, 3, first);
  SequenceCommitOf(&bench, 4, second);
  Result result;
  ASSERT_TRUE(bench.Result(second, &result));
  EXPECT_FALSE(result.outcome.aborted);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, WithThreeLtxsAndTheMiddleOneAbortedTheLastReadsTheFirstOnesVersion) {
  LtxBench bench(LtxBenchOptions{});
  const TxnId first = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "first"}}, {{5, 5}})})[0];
  const TxnId middle =
      bench.Sequence(2, {LtxBench::LongKv({}, {{5, "middle"}, {40, "x"}}, {{5, 6}})})[0];
  const TxnId last = bench.Sequence(3, {LtxBench::Long({5}, {30})})[0];
  bench.Drain();
  std::vector<Txn> records = bench.TakeRecords();
  ASSERT_EQ(records.size(), 2u) << "the last one must wait for both";
  bench.Sequence(4, records);  // the first commits, the middle aborts (key 40)
  bench.Drain();
  const Txn last_commit = OnlyRecord(&bench, LTX_COMMIT);
  bench.Sequence(5, {last_commit});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(middle, &result));
  EXPECT_TRUE(result.outcome.aborted);
  ASSERT_TRUE(bench.Result(first, &result));
  EXPECT_FALSE(result.outcome.aborted);
  ASSERT_TRUE(bench.Result(last, &result));
  EXPECT_FALSE(result.outcome.aborted);
  // Serially the last LTX runs after the first (the middle one is not in
  // the order) and reads "first" for key 5: its checksum says it did.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, OverlappingWriteAreasInstallInBeginOrderWhenTheLaterCommitComesFirst) {
  LtxBench bench(LtxBenchOptions{});
  const auto ids = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "older"}}, {{5, 5}}),
                                      LtxBench::LongKv({}, {{5, "newer"}, {6, "b"}}, {{5, 6}})});
  bench.Drain();
  std::vector<Txn> records = bench.TakeRecords();
  ASSERT_EQ(records.size(), 2u);
  const Txn older = records[0].ltx().ltx_id() == ids[0] ? records[0] : records[1];
  const Txn newer = records[0].ltx().ltx_id() == ids[0] ? records[1] : records[0];
  const TxnId reader_before = bench.Sequence(2, {LtxBench::Rmw({77})})[0];
  bench.Drain();
  (void)reader_before;
  bench.Sequence(3, {newer});  // held: the older LTX overlaps and is unresolved
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(ids[1], &result)) << "installed before an older overlapping LTX";
  const TxnId older_id = bench.Sequence(4, {older})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(ids[0], &result));
  ASSERT_TRUE(bench.Result(ids[1], &result));
  // A reader after both sees the newer LTX's value: it installed second.
  const TxnId reader = bench.Sequence(5, {LtxBench::Read({5, 6})})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(reader, &result));
  (void)older_id;
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, TheLogAbortsAnLtxAtItsTimeoutAndRefusesALaterCommit) {
  LtxBenchOptions options;
  options.ltx_timeout = 3;
  LtxBench bench(options);
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({}, {5})})[0];
  bench.Drain();
  const Txn commit = OnlyRecord(&bench, LTX_COMMIT);
  const TxnId deferred = bench.Sequence(2, {LtxBench::Rmw({5})})[0];
  bench.Sequence(3, {});
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(ltx, &result));
  bench.Sequence(4, {});  // epoch 1 + ltx_timeout: aborted here, first thing
  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_NE(result.outcome.abort_reason.find("timeout"), std::string::npos);
  ASSERT_TRUE(bench.Result(deferred, &result)) << "the timeout released the deferred txn";
  EXPECT_POSITION(result, At(4, 0, 1, deferred));
  bench.Sequence(5, {commit});  // too late: the first of commit and abort won
  bench.Drain();
  EXPECT_EQ(ResultsOf(bench, ltx), 1u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, AGuardStopsNewLtxsOnAStarvingTxnsKeysUntilItRan) {
  LtxBenchOptions options;
  options.ltx_max_deferrals = 2;
  LtxBench bench(options);
  bench.Sequence(1, {LtxBench::LongKv({}, {{5, "a"}}, {{5, 5}})});
  const auto ids = bench.Sequence(2, {LtxBench::Rmw({5}),
                                      LtxBench::LongKv({}, {{5, "b"}}, {{5, 5}})});
  const TxnId starving = ids[0];
  bench.Drain();
  std::vector<Txn> commits = bench.TakeRecords();
  ASSERT_EQ(commits.size(), 2u);
  const Txn first = commits[0].ltx().ltx_id() < commits[1].ltx().ltx_id() ? commits[0] : commits[1];
  const Txn second = commits[0].ltx().ltx_id() < commits[1].ltx().ltx_id() ? commits[1] : commits[0];
  bench.Sequence(3, {first});  // releases the txn, which the second LTX defers again
  bench.Drain();
  const Txn guard = OnlyRecord(&bench, LTX_GUARD);
  EXPECT_EQ(guard.ltx().guarded_txn(), starving);
  const auto later = bench.Sequence(4, {guard, LtxBench::LongKv({}, {{5, "c"}}, {{5, 5}})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(later[1], &result));
  EXPECT_TRUE(result.outcome.aborted) << "an LTX began on guarded keys";
  EXPECT_NE(result.outcome.abort_reason.find("busy"), std::string::npos);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_FALSE(bench.Result(starving, &result));
  bench.Sequence(5, {second});
  bench.Drain();
  ASSERT_TRUE(bench.Result(starving, &result));
  EXPECT_EQ(result.outcome.deferrals, 2u);
  // The guard ended with the LTXs begun before it: a new LTX may begin.
  const TxnId after = bench.Sequence(6, {LtxBench::LongKv({}, {{5, "d"}}, {{5, 5}})})[0];
  bench.Drain();
  bench.Sequence(7, bench.TakeRecords());
  bench.Drain();
  ASSERT_TRUE(bench.Result(after, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, ReadOnlyTxnNeverSeesAShortTxnOrderedAfterAnLtxWithoutTheLtx) {
  // The read-only anomaly: the LTX (area {5}) is ordered before a short
  // writer of key 3; a read of 3 and 5 that sees the writer must see the LTX.
  LtxBench bench(LtxBenchOptions{});
  bench.Sequence(1, {LtxBench::Long({3}, {5})});
  bench.Drain(/*ltx_threads=*/false);
  const TxnId writer = bench.Sequence(2, {LtxBench::Rmw({3})})[0];
  const TxnId reader = bench.Sequence(3, {LtxBench::Read({3, 5})})[0];
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(writer, &result));
  EXPECT_FALSE(bench.Result(reader, &result)) << "read key 5 before the pending LTX resolved";
  EXPECT_EQ(bench.scheduler(0).Status().parked, 1u);
  bench.Sequence(4, {OnlyRecord(&bench, LTX_COMMIT)});
  bench.Drain();
  ASSERT_TRUE(bench.Result(reader, &result));
  EXPECT_EQ(result.read_version, 2u);
  EXPECT_POSITION(result, At(3, 0, 0, 0));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, ReadOnlyTxnsOutsidePendingAreasRunAtOnceAndInsideWaitForTheLtx) {
  LtxBench bench(LtxBenchOptions{});
  bench.Sequence(1, {LtxBench::Long({}, {5})});
  bench.Sequence(2, {LtxBench::Rmw({9})});
  const auto readers = bench.Sequence(3, {LtxBench::Read({7, 8}), LtxBench::Read({5, 7})});
  bench.Drain(/*ltx_threads=*/false);
  Result result;
  ASSERT_TRUE(bench.Result(readers[0], &result)) << "disjoint from every area, yet it waited";
  EXPECT_EQ(result.read_version, 2u);
  EXPECT_FALSE(bench.Result(readers[1], &result));
  bench.Drain();
  bench.Sequence(4, {OnlyRecord(&bench, LTX_COMMIT)});
  bench.Drain();
  ASSERT_TRUE(bench.Result(readers[1], &result));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, EveryParticipantOfAMultiPartitionReadOnlyTxnWaitsAlike) {
  LtxBenchOptions options;
  options.partitions = 3;
  LtxBench bench(options);
  bench.Sequence(1, {LtxBench::Long({}, {4})});  // key 4 lives on partition 1
  bench.Sequence(2, {LtxBench::Rmw({9})});
  const TxnId reader = bench.Sequence(3, {LtxBench::Read({3, 4, 5})})[0];
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(reader, &result));
  for (PartitionId p = 0; p < 3; ++p) {
    EXPECT_EQ(bench.scheduler(p).Status().parked, 1u) << "partition " << p;
  }
  bench.Sequence(4, {OnlyRecord(&bench, LTX_COMMIT)});
  bench.Drain();
  ASSERT_TRUE(bench.Result(reader, &result));
  for (PartitionId p = 0; p < 3; ++p) EXPECT_EQ(bench.scheduler(p).Status().parked, 0u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, MultiPartitionLtxReadsFromEveryParticipantAndInstallsEverywhere) {
  LtxBenchOptions options;
  options.partitions = 3;
  LtxBench bench(options);
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({10, 11}, {3, 4, 5})}, /*origin=*/1)[0];
  bench.Drain();
  const TxnId deferred = bench.Sequence(2, {LtxBench::Rmw({5, 12})}, /*origin=*/0)[0];
  bench.Drain();
  bench.Sequence(3, {OnlyRecord(&bench, LTX_COMMIT)});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(deferred, &result));
  EXPECT_EQ(result.outcome.deferrals, 1u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, ABeginBeyondMaxActiveLtxAbortsAtOnceAsBusy) {
  LtxBenchOptions options;
  options.max_active_ltx = 1;
  LtxBench bench(options);
  const auto ids = bench.Sequence(1, {LtxBench::Long({}, {5}), LtxBench::Long({}, {6})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_NE(result.outcome.abort_reason.find("max_active_ltx=1"), std::string::npos);
  bench.Sequence(2, bench.TakeRecords());
  bench.Drain();
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_FALSE(result.outcome.aborted);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, ALongScanOverAPendingAreaWaitsAndTakesTheKeysTheCommitInserts) {
  LtxBench bench(LtxBenchOptions{});
  bench.Sequence(1, {LtxBench::LongKv({}, {{150, "inserted"}, {5, "rewritten"}},
                                      {{5, 5}, {150, 150}})});
  bench.Sequence(2, {LtxBench::Rmw({9})});
  const TxnId scan = bench.Sequence(3, {LtxBench::Scan(0, 200)})[0];
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(scan, &result)) << "scanned over a pending LTX's area";
  bench.Sequence(4, {OnlyRecord(&bench, LTX_COMMIT)});
  bench.Drain();
  ASSERT_TRUE(bench.Result(scan, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(result.outcome.detail, "scanned 101 keys");
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, AnLtxScanOverAnEarlierLtxsAreaWaitsAndTakesItsInserts) {
  LtxBenchOptions options;
  options.partitions = 2;
  LtxBench bench(options);
  const TxnId first = bench.Sequence(1, {LtxBench::LongKv({}, {{150, "new"}, {6, "six"}},
                                                          {{6, 6}, {150, 150}})})[0];
  Txn scanning = LtxBench::LongKv({3}, {{9, "nine"}}, {{9, 9}});
  KeyRange* range = scanning.mutable_ltx()->add_read_area();
  range->set_lo(0);
  range->set_hi(199);
  const TxnId second = bench.Sequence(2, {scanning}, /*origin=*/1)[0];
  bench.Drain();
  // The first commits at once; the second's scan waits for it on both
  // partitions (key 6 on partition 0, key 150 too), its point read does not.
  for (PartitionId p = 0; p < 2; ++p) {
    EXPECT_EQ(bench.scheduler(p).Status().parked, 1u) << "partition " << p;
  }
  SequenceCommitOf(&bench, 3, first);
  SequenceCommitOf(&bench, 4, second);
  Result result;
  ASSERT_TRUE(bench.Result(second, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, ReadersSeeAnLtxsDeletesAndInsertsInBothModes) {
  for (Mode mode : {Mode::kPaxflow, Mode::kCalvin}) {
    LtxBenchOptions options;
    options.mode = mode;
    LtxBench bench(options);
    bench.Sequence(1, {LtxBench::LongKv({}, {{5, ""}, {150, "inserted"}}, {{5, 5}, {150, 150}})});
    bench.Sequence(2, {LtxBench::Rmw({9})});
    const auto readers = bench.Sequence(3, {LtxBench::Scan(0, 200), LtxBench::Read({5, 150})});
    bench.Drain();
    bench.Sequence(4, bench.TakeRecords());
    bench.Drain();
    Result result;
    ASSERT_TRUE(bench.Result(readers[0], &result)) << ModeName(mode);
    EXPECT_EQ(result.outcome.detail, "scanned 100 keys") << ModeName(mode);  // -5, +150
    EXPECT_EQ(bench.CheckSerialOrder(), "") << ModeName(mode);
  }
}

TEST(LtxLaneTest, CalvinModeRunsAnLtxAsOneLockedTxnAtItsBeginPosition) {
  LtxBenchOptions options;
  options.mode = Mode::kCalvin;
  LtxBench bench(options);
  const auto ids = bench.Sequence(
      1, {LtxBench::Rmw({5}), LtxBench::Long({1}, {5, 6}), LtxBench::Rmw({5}),
          LtxBench::Read({5, 6})});
  bench.Drain();
  EXPECT_TRUE(bench.TakeRecords().empty()) << "calvin mode sequences no LTX records";
  Result result;
  for (TxnId id : ids) {
    ASSERT_TRUE(bench.Result(id, &result)) << TxnIdString(id);
    EXPECT_POSITION(result, At(1, id, 0, 0));
  }
  // An LTX that reads outside its declared areas cannot run under locks.
  Txn undeclared = LtxBench::Long({2}, {7});
  undeclared.mutable_ltx()->clear_read_area();
  const TxnId bad = bench.Sequence(2, {undeclared})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(bad, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_NE(result.outcome.abort_reason.find("outside the areas it declared"), std::string::npos);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

class LtxGcTest : public ::testing::TestWithParam<GcPolicy> {};

// An LTX reads its snapshot long after short txns overwrote the keys it
// reads (here 300 epochs; at 10 ms epochs, three seconds): the versions
// at its snapshot must survive every policy's pruning meanwhile, and once
// it commits nothing it pinned stays behind.
TEST_P(LtxGcTest, VersionsAnActiveLtxCanReadAreKeptAndFreedAfterItCommits) {
  LtxBenchOptions options;
  options.gc = GetParam();
  LtxBench bench(options);
  const uint64_t loaded = bench.store(0).Metrics().live_versions;
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({1, 2, 3}, {50})})[0];
  bench.Drain(/*ltx_threads=*/false);
  uint64_t most = 0;
  auto churn = [&](Epoch from, Epoch to) {
    for (Epoch e = from; e < to; ++e) {
      bench.Sequence(e, {LtxBench::Rmw({1, 2, 3}), LtxBench::Read({1, 2, 3, 4})});
      bench.Drain(/*ltx_threads=*/false);
      most = std::max(most, bench.store(0).Metrics().live_versions);
    }
  };
  churn(2, 302);
  EXPECT_LT(most, loaded + 40) << "versions piled up while the LTX was active";
  bench.Drain();  // the LTX reads keys 1..3 at epoch 1, 300 epochs later
  bench.Sequence(302, {OnlyRecord(&bench, LTX_COMMIT)});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted);
  EXPECT_EQ(bench.CheckSerialOrder(), "") << "the LTX did not read its snapshot";
  most = 0;
  churn(303, 340);
  EXPECT_LT(bench.store(0).Metrics().live_versions, loaded + 12)
      << "versions the LTX pinned stayed after it committed";
}

INSTANTIATE_TEST_SUITE_P(Policies, LtxGcTest,
                         // Background GC only prunes below the oldest snapshot:
                         // under a long reader it keeps everything by design.
                         ::testing::Values(GcPolicy::kEpo, GcPolicy::kEpoRead),
                         [](const ::testing::TestParamInfo<GcPolicy>& info) {
                           std::string name = GcPolicyName(info.param);
                           for (char& ch : name) {
                             if (ch == '-') ch = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace paxflow
