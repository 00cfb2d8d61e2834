// The LTX lane's rules, one scenario each, on schedulers driven step by
// step: the test sequences every epoch, decides in which epoch the LTX
// lane's records (commits, aborts, guards) land, and runs the LTX threads
// when it chooses. Every scenario ends with the serialization-order
// oracle: each committed txn, executed alone in the order of the positions
// the engine reported, reads what it reported, and the final state is the
// engine's.
#include <gtest/gtest.h>

#include "tests/ltx_harness.h"
#include "tests/serial_reference.h"

namespace paxflow {
namespace {

using testing::LtxBench;
using testing::LtxBenchOptions;
using testing::LtxCheckpoint;
using testing::OnlyRecord;
using Result = testing::ResultLog::Result;

// An LTX that reads only keys of its write area is locked at its begin
// (docs/ltx.md, "Locked at its begin") and never meets the record protocol;
// the scenarios of that protocol give such an LTX one read outside its
// area: this key, which no scenario touches otherwise (on partition 0 of 3).
constexpr Key kOutside = 90;

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

// The node's generator holds new LTXs back while the LTX threads are
// behind (--max_ltx_backlog): the scheduler says how many tasks wait for
// them, and the count falls as they run.
TEST(LtxLaneTest, TheSchedulerCountsTheTasksWaitingForAnLtxThread) {
  LtxBench bench(LtxBenchOptions{});
  Scheduler& scheduler = bench.scheduler(0);
  EXPECT_EQ(scheduler.ltx_backlog(), 0u);
  bench.Sequence(1, {LtxBench::Long({3}, {5}), LtxBench::Long({4}, {6})});
  bench.Drain(/*ltx_threads=*/false);
  EXPECT_EQ(scheduler.ltx_backlog(), 2u) << "each LTX's first round waits for a thread";
  EXPECT_EQ(scheduler.RunQueuedLtxWork(), 2u);
  EXPECT_EQ(scheduler.ltx_backlog(), 0u);
  bench.Drain(/*ltx_threads=*/false);
  EXPECT_EQ(scheduler.ltx_backlog(), 2u) << "the reads they asked for wait to be served";
  bench.Drain();
  EXPECT_EQ(scheduler.ltx_backlog(), 0u);
  EXPECT_EQ(bench.TakeRecords().size(), 2u) << "both finished";
}

TEST(LtxLaneTest, AnLtxIsActiveFromTheEpochAfterItsBegin) {
  // A short txn after the begin record, in the same epoch, is ordered
  // before the LTX (which is serialized at the start of the next epoch):
  // it runs at once, and the LTX reads what it wrote.
  LtxBench bench(LtxBenchOptions{});
  const auto ids = bench.Sequence(1, {LtxBench::Long({kOutside}, {5}), LtxBench::Rmw({5})});
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

// The commit records `records` hold: (the one of `first`, the one of `second`).
std::pair<Txn, Txn> CommitsOf(const std::vector<Txn>& records, TxnId first, TxnId second) {
  std::pair<Txn, Txn> out;
  for (const Txn& record : records) {
    EXPECT_EQ(record.ltx().kind(), LTX_COMMIT) << record.ShortDebugString();
    if (record.ltx().ltx_id() == first) out.first = record;
    if (record.ltx().ltx_id() == second) out.second = record;
  }
  EXPECT_EQ(out.first.ltx().ltx_id(), first);
  EXPECT_EQ(out.second.ltx().ltx_id(), second);
  return out;
}

TEST(LtxLaneTest, ALaterLtxReadsAFinishedEarlierOnesWritesEarlyAndInstallsOnlyAfterIt) {
  LtxBench bench(LtxBenchOptions{});
  const TxnId first = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "first"}}, {{5, 5}})})[0];
  const TxnId second = bench.Sequence(2, {LtxBench::Long({5}, {20})})[0];
  bench.Drain();
  // The second read key 5, in the first's area. The first finished (its
  // commit record made, not in the log yet): the second read its write at
  // once, finished too, and names it in its commit record.
  EXPECT_EQ(bench.scheduler(0).Status().parked, 0u);
  const auto [first_commit, second_commit] = CommitsOf(bench.TakeRecords(), first, second);
  ASSERT_EQ(second_commit.ltx().read_from_size(), 1);
  EXPECT_EQ(second_commit.ltx().read_from(0), first);
  EXPECT_EQ(first_commit.ltx().read_from_size(), 0);
  // Its commit reaches the log first: held until the first's install.
  bench.Sequence(3, {second_commit});
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(second, &result)) << "installed before the LTX it read from";
  bench.Sequence(4, {first_commit});
  bench.Drain();
  ASSERT_TRUE(bench.Result(first, &result));
  EXPECT_FALSE(result.outcome.aborted);
  ASSERT_TRUE(bench.Result(second, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  // Serially the second runs after the first and reads "first" for key 5:
  // its checksum says it did.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, AnLtxThatReadEarlyFromAnLtxTheLogThenAbortsIsAbortedTooAndReleasesItsDeferred) {
  LtxBenchOptions options;
  options.ltx_timeout = 3;
  LtxBench bench(options);
  const TxnId first = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "first"}}, {{5, 5}})})[0];
  const TxnId second = bench.Sequence(2, {LtxBench::Long({5}, {20})})[0];
  bench.Drain();
  const auto [first_commit, second_commit] = CommitsOf(bench.TakeRecords(), first, second);
  ASSERT_EQ(second_commit.ltx().read_from_size(), 1);
  // The second's commit is held (the first is unresolved); a short txn on
  // its area is deferred.
  const TxnId deferred = bench.Sequence(3, {second_commit, LtxBench::Rmw({20})})[1];
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(second, &result));
  EXPECT_FALSE(bench.Result(deferred, &result));
  // Epoch 1 + ltx_timeout: the log aborts the first, first thing. The
  // second read a value no committed txn wrote: it is aborted too.
  bench.Sequence(4, {});
  bench.Drain();
  ASSERT_TRUE(bench.Result(first, &result));
  EXPECT_NE(result.outcome.abort_reason.find("timeout"), std::string::npos);
  ASSERT_TRUE(bench.Result(second, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_NE(result.outcome.abort_reason.find("cascade"), std::string::npos)
      << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(deferred, &result)) << "the cascade released the deferred txn";
  EXPECT_FALSE(result.outcome.aborted);
  bench.Sequence(5, {first_commit});  // too late: the log aborted it first
  bench.Drain();
  EXPECT_EQ(ResultsOf(bench, first), 1u);
  EXPECT_EQ(ResultsOf(bench, second), 1u);
  // Neither LTX is in the order; the short txn read key 20 as it was.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
  // A read-only txn afterwards sees neither LTX's writes.
  const TxnId reader = bench.Sequence(6, {LtxBench::Read({5, 20})})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(reader, &result));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLaneTest, AReadOnlyTxnStillWaitsForTheResolutionOfAFinishedLtx) {
  LtxBench bench(LtxBenchOptions{});
  const TxnId ltx = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "ltx"}}, {{5, 5}})})[0];
  bench.Drain();
  const Txn commit = OnlyRecord(&bench, LTX_COMMIT);
  // Snapshot 2 or later: the LTX (begun in 1) is pending for it, finished
  // but unresolved; its writes are not the reader's to take yet.
  bench.Sequence(2, {LtxBench::Rmw({77})});
  const TxnId reader = bench.Sequence(3, {LtxBench::Read({5})})[0];
  bench.Drain();
  Result result;
  EXPECT_FALSE(bench.Result(reader, &result)) << "it read a finished LTX's write early";
  EXPECT_EQ(bench.scheduler(0).Status().parked, 1u);
  bench.Sequence(4, {commit});
  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  ASSERT_TRUE(bench.Result(reader, &result));
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
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({kOutside}, {5})})[0];
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
  const testing::TwiceDeferred deferred = testing::DeferTwiceOnKey5(&bench);
  ASSERT_EQ(deferred.error, "");
  const TxnId starving = deferred.starving;
  const Txn& second = deferred.second_commit;
  const Txn guard = OnlyRecord(&bench, LTX_GUARD);
  EXPECT_EQ(guard.ltx().guarded_txn(), starving);
  const auto later = bench.Sequence(4, {guard, LtxBench::LongKv({}, {{5, "c"}}, {{5, 5}})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(later[1], &result));
  EXPECT_TRUE(result.outcome.aborted) << "an LTX began on guarded keys";
  // A guard's abort is told apart from max_active_ltx's busy one: it is
  // what starvation protection costs the long side.
  EXPECT_EQ(result.outcome.abort_reason.rfind("guard:", 0), 0u) << result.outcome.abort_reason;
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
  bench.Sequence(1, {LtxBench::Long({kOutside}, {5})});
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
  bench.Sequence(1, {LtxBench::Long({kOutside}, {4})});  // key 4 lives on partition 1
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
  const auto ids = bench.Sequence(1, {LtxBench::Long({kOutside}, {5}), LtxBench::Long({kOutside}, {6})});
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

// A long scan's timeout counts epochs admitted after its snapshot was
// published at its origin, not from its own admission: on a loaded cluster
// admission runs ahead of execution by the whole queue (CH on 3
// partitions: hundreds of epochs), and a scan cannot read before the txns
// ahead of its snapshot ran. Here 3 partitions admit ltx_timeout * 3
// epochs before any txn runs; the scan still answers. Held on its LTX
// thread while more epochs come, it fails.
TEST(LtxLaneTest, ALongScansTimeoutStartsWhenItsSnapshotIsPublishedNotAtItsAdmission) {
  LtxBenchOptions options;
  options.partitions = 3;
  options.ltx_timeout = 5;
  // Every epoch admitted long before the scan's snapshot is published.
  options.bound_admission = false;
  LtxBench bench(options);
  Epoch epoch = 1;
  bench.Sequence(epoch++, {LtxBench::Rmw({3, 4, 5})});
  const TxnId scan = bench.Sequence(epoch++, {LtxBench::Scan(0, 99)})[0];
  for (; epoch <= 3 * options.ltx_timeout; ++epoch) {
    bench.Sequence(epoch, {LtxBench::Rmw({epoch % 10, epoch % 10 + 10})});
  }
  for (PartitionId p = 0; p < options.partitions; ++p) bench.scheduler(p).Step();  // admitted, none ran
  EXPECT_EQ(bench.Published(), 0u);
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(scan, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(result.outcome.detail, "scanned 100 keys");

  // The clock still runs once the snapshot is readable: a scan held on its
  // LTX thread while ltx_timeout more epochs are published fails, retryably.
  const TxnId held = bench.Sequence(epoch++, {LtxBench::Scan(0, 99)})[0];
  for (Epoch last = epoch + options.ltx_timeout + 1; epoch <= last; ++epoch) {
    bench.Sequence(epoch, {LtxBench::Rmw({epoch % 10})});
    bench.DrainHolding(held);
  }
  EXPECT_FALSE(bench.Result(held, &result));
  // Until that failure is reported, the origin still owes it: a run that
  // ends once nothing is owed (the sequencer's last epoch) would otherwise
  // end with the scan's client never answered.
  EXPECT_TRUE(bench.scheduler(0).OwesLtxWork(epoch - 1)) << "a timed-out scan owed no reply";
  bench.Drain();  // the failure is reported from its LTX thread too
  EXPECT_FALSE(bench.scheduler(0).OwesLtxWork(epoch - 1));
  ASSERT_TRUE(bench.Result(held, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_NE(result.outcome.abort_reason.find("epochs of its snapshot being published"),
            std::string::npos)
      << result.outcome.abort_reason;
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
  // The first finishes at once. Its writes are known at its origin
  // (partition 0): the second's scan reads key 6 there early. Partition 1
  // (key 150) learns them only from the log: the scan waits there.
  EXPECT_EQ(bench.scheduler(0).Status().parked, 0u);
  EXPECT_EQ(bench.scheduler(1).Status().parked, 1u);
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

// Calvin mode refuses an LTX whose areas hold more keys than it may lock;
// the abort is reported like every LTX abort: counted by its reason, once
// as an aborted long txn, with a latency sample, and out of the generator's
// window. The txn behind it runs.
TEST(LtxLaneTest, CalvinModeAbortsAnLtxTooLargeToLockAndReportsItLikeEveryAbort) {
  LtxBenchOptions options;
  options.mode = Mode::kCalvin;
  options.max_locked_ltx_keys = 2;
  LtxBench bench(options);
  const auto ids = bench.Sequence(1, {LtxBench::Long({1}, {5, 6}), LtxBench::Rmw({5})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_NE(result.outcome.abort_reason.find("too many to lock"), std::string::npos)
      << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_FALSE(result.outcome.aborted);
  const NodeStats& stats = bench.stats(0);
  EXPECT_EQ(stats.ltx().aborts[kAbortProcedure].load(), 1u);
  EXPECT_EQ(stats.Aborted(kKindLong), 1u);
  EXPECT_EQ(stats.Committed(kKindLong), 0u);
  EXPECT_EQ(stats.Latency(kKindLong).count(), 1u) << "the abort is a latency sample";
  EXPECT_EQ(stats.GeneratedDone(), 2u) << "both txns left the generator's window";
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// ------------------------------------------------------------ restarts
//
// A partition restarts from a checkpoint taken at an epoch boundary: a
// fresh store with the old one's state at that epoch, a fresh scheduler,
// and the LTX lane's saved state. The same log is fed to a bench that never
// stopped; where no abort was needed the two end at the same digest.

std::vector<Txn> RecordsOfKind(const std::vector<Txn>& records, LtxRecordKind kind) {
  std::vector<Txn> out;
  for (const Txn& record : records) {
    if (record.ltx().kind() == kind) out.push_back(record);
  }
  return out;
}

// Two partitions (even keys on 0, odd on 1). LTX `ltx` (origin 1) writes
// 4 and 5; at the checkpoint (epoch 3) it has run but its commit record is
// not sequenced; a short txn on key 5 is deferred; an RO of keys 4 and 9
// (origin 0) is parked at snapshot 2, and key 9 was written again in epoch
// 3, after that snapshot.
struct ActiveLtxScenario {
  TxnId ltx = 0, deferred = 0, read_only = 0;
  Txn commit;
  explicit ActiveLtxScenario(LtxBench* bench) {
    ltx = bench->Sequence(1, {LtxBench::Long({1}, {4, 5})}, /*origin=*/1)[0];
    bench->Drain();
    deferred = bench->Sequence(2, {LtxBench::Rmw({5}), LtxBench::Rmw({9})}, /*origin=*/0)[0];
    bench->Drain();
    read_only = bench->Sequence(3, {LtxBench::Read({4, 9}), LtxBench::Rmw({9})}, /*origin=*/0)[0];
    bench->Drain();
    commit = OnlyRecord(bench, LTX_COMMIT);
  }
};

LtxBenchOptions TwoPartitions() {
  LtxBenchOptions options;
  options.partitions = 2;
  return options;
}

TEST(LtxRestartTest, AnActiveLtxsCommitInTheLogIsReplayedAndEndsAsIfNeverStopped) {
  LtxBench live(TwoPartitions());
  ActiveLtxScenario scenario(&live);
  Result parked;
  EXPECT_FALSE(live.Result(scenario.read_only, &parked)) << "the RO did not wait for the LTX";
  EXPECT_EQ(live.scheduler(1).Status().deferred, 1u);
  EXPECT_EQ(live.scheduler(1).Status().parked, 1u);
  live.Sequence(4, {scenario.commit});
  live.Drain();
  live.Sequence(5, {LtxBench::Rmw({4, 5})}, 0);
  live.Drain();
  ASSERT_EQ(live.CheckSerialOrder(), "");
  Result live_ro;
  ASSERT_TRUE(live.Result(scenario.read_only, &live_ro));

  LtxBench restarted(TwoPartitions());
  ActiveLtxScenario again(&restarted);
  const LtxCheckpoint checkpoint = restarted.Checkpoint(1);
  EXPECT_EQ(checkpoint.epoch, 3u);
  EXPECT_TRUE(checkpoint.lane_state_ready);
  // The commit record was sequenced (epoch 4) before partition 1 stopped:
  // it replays epoch 4 from its log.
  ASSERT_EQ(restarted.Restart(checkpoint, /*replay_through=*/4), "");
  restarted.Sequence(4, {again.commit});
  restarted.Drain();
  EXPECT_EQ(restarted.TakeRecords().size(), 0u) << "a replayed epoch sequenced a record";
  restarted.Sequence(5, {LtxBench::Rmw({4, 5})}, 0);
  restarted.Drain();
  EXPECT_EQ(restarted.TakeRecords().size(), 0u) << "a resolved LTX was aborted after the replay";
  EXPECT_EQ(restarted.Digest(5), live.Digest(5));
  Result result;
  ASSERT_TRUE(restarted.Result(again.read_only, &result));
  EXPECT_EQ(result.outcome.checksum, live_ro.outcome.checksum)
      << "the parked RO read other values than in the run that never stopped";
  ASSERT_TRUE(restarted.Result(again.deferred, &result));
  EXPECT_EQ(ResultsOf(restarted, again.deferred), 1u);
  EXPECT_EQ(result.outcome.deferrals, 1u);
  EXPECT_FALSE(restarted.Result(again.ltx, &result)) << "a replayed install reported a result";
  EXPECT_EQ(restarted.scheduler(1).Status().deferred, 0u);
  EXPECT_EQ(restarted.scheduler(1).Status().parked, 0u);
}

TEST(LtxRestartTest, AnActiveLtxWithoutACommitRecordIsAbortedByItsRestartedOrigin) {
  LtxBench bench(TwoPartitions());
  ActiveLtxScenario scenario(&bench);
  const LtxCheckpoint checkpoint = bench.Checkpoint(1);
  // Partition 1 stops with the commit record not sequenced: it is lost.
  ASSERT_EQ(bench.Restart(checkpoint), "");
  bench.Sequence(4, {});
  bench.Drain();
  const std::vector<Txn> records = bench.TakeRecords();
  ASSERT_EQ(records.size(), 1u);
  const Txn abort = records[0];
  EXPECT_EQ(abort.ltx().kind(), LTX_ABORT);
  EXPECT_EQ(abort.ltx().ltx_id(), scenario.ltx);
  EXPECT_EQ(abort.ltx().reason().rfind("restart: ", 0), 0u) << abort.ltx().reason();
  Result result;
  EXPECT_FALSE(bench.Result(scenario.deferred, &result)) << "released before the abort";
  bench.Sequence(5, {abort});
  bench.Drain();
  ASSERT_TRUE(bench.Result(scenario.ltx, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_NE(result.outcome.abort_reason.find("restarted"), std::string::npos)
      << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(scenario.deferred, &result)) << "the abort did not release it";
  EXPECT_EQ(ResultsOf(bench, scenario.deferred), 1u);
  EXPECT_EQ(result.outcome.deferrals, 1u);
  ASSERT_TRUE(bench.Result(scenario.read_only, &result)) << "the RO's origin never got its reads";
  // The RO read key 9 at its snapshot (2), not the checkpoint's value: the
  // oracle replays it at its position and compares.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
  EXPECT_EQ(bench.scheduler(1).Status().deferred, 0u);
  EXPECT_EQ(bench.scheduler(1).Status().parked, 0u);
}

TEST(LtxRestartTest, ACommitSequencedBeforeTheRestartAbortWinsAndALaterAbortIsIgnored) {
  LtxBench live(TwoPartitions());
  ActiveLtxScenario scenario(&live);
  live.Sequence(4, {scenario.commit});
  live.Drain();
  live.Sequence(5, {LtxBench::Rmw({4, 5})}, 0);
  live.Drain();

  LtxBench bench(TwoPartitions());
  ActiveLtxScenario again(&bench);
  const LtxCheckpoint checkpoint = bench.Checkpoint(1);
  ASSERT_EQ(bench.Restart(checkpoint), "");
  // The old process's commit record comes in the first epoch after the
  // restart; the restarted origin's abort comes after it.
  bench.Sequence(4, {again.commit});
  bench.Drain();
  const std::vector<Txn> aborts = RecordsOfKind(bench.TakeRecords(), LTX_ABORT);
  ASSERT_EQ(aborts.size(), 1u);
  // (The short txn first: it writes values made from its id.)
  bench.Sequence(5, {LtxBench::Rmw({4, 5}), aborts[0]}, 0);
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(again.ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(ResultsOf(bench, again.ltx), 1u);
  EXPECT_EQ(bench.Digest(5), live.Digest(5));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// LTX 2's commit is sequenced first and held behind LTX 1 (overlapping
// areas); the checkpoint comes between.
TEST(LtxRestartTest, AHeldInstallSurvivesTheRestartAndIsFreedByTheAbortOfTheEarlierLtx) {
  auto scenario = [](LtxBench* bench, std::vector<TxnId>* ids) {
    *ids = bench->Sequence(1, {LtxBench::LongKv({}, {{5, "a"}}, {{5, 6}}),
                               LtxBench::LongKv({}, {{6, "b"}}, {{5, 6}})});
    bench->Drain();
    std::vector<Txn> commits = bench->TakeRecords();
    EXPECT_EQ(commits.size(), 2u);
    if (commits.size() != 2) return Txn();
    if (commits[0].ltx().ltx_id() != (*ids)[0]) std::swap(commits[0], commits[1]);
    bench->Sequence(2, {commits[1]});
    bench->Drain();
    Result result;
    EXPECT_FALSE(bench->Result((*ids)[1], &result)) << "installed ahead of the earlier LTX";
    return commits[0];
  };
  LtxBench live(LtxBenchOptions{});
  std::vector<TxnId> ids;
  const Txn first = scenario(&live, &ids);
  live.Sequence(3, {first});
  live.Drain();

  // Its first commit record survives (in the log, epoch 3): same end.
  LtxBench replayed(LtxBenchOptions{});
  const Txn first_again = scenario(&replayed, &ids);
  ASSERT_EQ(replayed.Restart(replayed.Checkpoint(0), /*replay_through=*/3), "");
  replayed.Sequence(3, {first_again});
  replayed.Drain();
  replayed.Sequence(4, {});
  replayed.Drain();
  EXPECT_EQ(replayed.TakeRecords().size(), 0u);
  EXPECT_EQ(replayed.Digest(4), live.Digest(3));

  // It is lost: the restarted origin aborts LTX 1 (not LTX 2, which has
  // its commit record) and LTX 2 installs right after.
  LtxBench bench(LtxBenchOptions{});
  scenario(&bench, &ids);
  ASSERT_EQ(bench.Restart(bench.Checkpoint(0)), "");
  bench.Sequence(3, {});
  bench.Drain();
  const std::vector<Txn> records = bench.TakeRecords();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].ltx().kind(), LTX_ABORT);
  EXPECT_EQ(records[0].ltx().ltx_id(), ids[0]);
  const TxnId abort = bench.Sequence(4, records)[0];
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(bench.store(0).Metrics().live_versions > 0, true);
  (void)abort;
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// The guard scenario: a txn deferred twice has a guard in force at the
// checkpoint; after the restart the guard still turns new LTXs on its keys
// away, and ends as it would have.
TEST(LtxRestartTest, AGuardInForceAtTheCheckpointStillHoldsAfterTheRestart) {
  LtxBenchOptions options;
  options.ltx_max_deferrals = 2;
  struct Run {
    TxnId starving = 0, second_ltx = 0;
    Txn second;
  };
  auto scenario = [](LtxBench* bench) {
    Run run;
    bench->Sequence(1, {LtxBench::LongKv({}, {{5, "a"}}, {{5, 5}})});
    const auto ids = bench->Sequence(2, {LtxBench::Rmw({5}),
                                         LtxBench::LongKv({}, {{5, "b"}}, {{5, 5}})});
    run.starving = ids[0];
    run.second_ltx = ids[1];
    bench->Drain();
    std::vector<Txn> commits = bench->TakeRecords();
    EXPECT_EQ(commits.size(), 2u);
    if (commits.size() != 2) return run;
    if (commits[0].ltx().ltx_id() != ids[1]) std::swap(commits[0], commits[1]);
    run.second = commits[0];
    bench->Sequence(3, {commits[1]});  // the first LTX: the txn is deferred again
    bench->Drain();
    bench->Sequence(4, {OnlyRecord(bench, LTX_GUARD)});
    bench->Drain();
    return run;
  };
  auto after = [](LtxBench* bench, const Run& run, std::vector<Txn> extra) {
    // A new LTX on the guarded key aborts (guard).
    const TxnId busy = bench->Sequence(5, {LtxBench::LongKv({}, {{5, "c"}}, {{5, 5}})})[0];
    bench->Drain();
    Result result;
    EXPECT_TRUE(bench->Result(busy, &result) && result.outcome.aborted &&
                result.outcome.abort_reason.rfind("guard", 0) == 0)
        << "the guard did not hold";
    bench->Sequence(6, {run.second});
    bench->Drain();
    EXPECT_TRUE(bench->Result(run.starving, &result));
    EXPECT_EQ(result.outcome.deferrals, 2u);
    EXPECT_EQ(ResultsOf(*bench, run.starving), 1u);
    extra.push_back(LtxBench::LongKv({}, {{5, "d"}}, {{5, 5}}));
    const TxnId later = bench->Sequence(7, extra).back();
    bench->Drain();
    bench->Sequence(8, bench->TakeRecords());
    bench->Drain();
    EXPECT_TRUE(bench->Result(later, &result) && !result.outcome.aborted)
        << "the guard outlived the LTXs begun before it";
  };
  LtxBench live(options);
  after(&live, scenario(&live), {});

  LtxBench bench(options);
  const Run run = scenario(&bench);
  ASSERT_EQ(bench.Restart(bench.Checkpoint(0)), "");
  // The second LTX's commit record (submitted before the restart) comes
  // before the abort the restarted origin submits, in epoch 6; the abort
  // comes in epoch 7 and is ignored. No guard is sequenced again: the
  // checkpoint knew it was in the log.
  bench.Sequence(5, {LtxBench::LongKv({}, {{5, "c"}}, {{5, 5}})});
  bench.Drain();
  std::vector<Txn> records = bench.TakeRecords();
  EXPECT_EQ(RecordsOfKind(records, LTX_GUARD).size(), 0u);
  const std::vector<Txn> aborts = RecordsOfKind(records, LTX_ABORT);
  ASSERT_EQ(aborts.size(), 1u);
  EXPECT_EQ(aborts[0].ltx().ltx_id(), run.second_ltx);
  // Epoch 5 ran: go on from 6 as the live bench did, with the late abort.
  Result result;
  bench.Sequence(6, {run.second});
  bench.Drain();
  ASSERT_TRUE(bench.Result(run.starving, &result));
  EXPECT_EQ(result.outcome.deferrals, 2u);
  EXPECT_EQ(ResultsOf(bench, run.starving), 1u);
  const TxnId later =
      bench.Sequence(7, {aborts[0], LtxBench::LongKv({}, {{5, "d"}}, {{5, 5}})}).back();
  bench.Drain();
  bench.Sequence(8, bench.TakeRecords());
  bench.Drain();
  ASSERT_TRUE(bench.Result(later, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(bench.Digest(8), live.Digest(8));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// Three partitions: LTX 2 (origin 0) reads key 4, which LTX 1's area
// covers, so partition 1 parks that read. Partition 1 restarts: the read it
// owed is answered with a retryable error when it takes its first epoch,
// and LTX 2 aborts at its origin with a reason naming the restart (the
// request the origin sends again on hearing of the restart parks again and
// changes nothing).
TEST(LtxRestartTest, ReadsAParticipantOwedAreAnsweredWithARetryableErrorAfterItRestarts) {
  LtxBenchOptions options;
  options.partitions = 3;
  auto scenario = [](LtxBench* bench) {
    const auto ids = bench->Sequence(1, {LtxBench::Long({kOutside}, {4}), LtxBench::Long({4}, {5})},
                                     /*origin=*/0);
    bench->Drain();
    EXPECT_EQ(bench->scheduler(1).Status().parked, 1u) << "partition 1 did not park the read";
    return ids;
  };
  LtxBench live(options);
  const auto live_ids = scenario(&live);
  live.Sequence(2, {OnlyRecord(&live, LTX_COMMIT)});
  live.Drain();
  live.Sequence(3, {OnlyRecord(&live, LTX_COMMIT)});
  live.Drain();
  Result result;
  ASSERT_TRUE(live.Result(live_ids[1], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;

  LtxBench bench(options);
  const auto ids = scenario(&bench);
  const Txn first_commit = OnlyRecord(&bench, LTX_COMMIT);
  ASSERT_EQ(bench.Restart(bench.Checkpoint(1)), "");
  bench.Drain();
  EXPECT_EQ(bench.TakeRecords().size(), 0u);
  bench.Sequence(2, {first_commit});
  bench.Drain();
  // The origin (partition 0, alive) got the error and aborts LTX 2.
  const std::vector<Txn> records = bench.TakeRecords();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].ltx().kind(), LTX_ABORT);
  EXPECT_EQ(records[0].ltx().ltx_id(), ids[1]);
  bench.Sequence(3, {records[0]});
  bench.Drain();
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_EQ(result.outcome.abort_reason.rfind("restart: partition 1: it restarted", 0), 0u)
      << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(bench.TakeRecords().size(), 0u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// The step harness restarts a partition the way a node does: the scheduler
// is set at the checkpoint by Scheduler::RestoreAt (merger, publish epoch,
// RO snapshot, lane state), not brought there by epochs fed to it again;
// the first epoch it admits is the one after the checkpoint.
TEST(LtxRestartTest, TheStepRestartGoesThroughRestoreAtNotThroughEpochsFedAgain) {
  LtxBench bench(TwoPartitions());
  ActiveLtxScenario scenario(&bench);
  const LtxCheckpoint checkpoint = bench.Checkpoint(1);
  ASSERT_EQ(checkpoint.epoch, 3u);
  EXPECT_EQ(bench.AdmittedEpochs(1), (std::vector<Epoch>{1, 2, 3}));
  ASSERT_EQ(bench.Restart(checkpoint), "");
  EXPECT_TRUE(bench.AdmittedEpochs(1).empty()) << "the restarted scheduler was fed epochs again";
  const SchedulerStatus status = bench.scheduler(1).Status();
  EXPECT_EQ(status.admitted_epoch, 3u);
  EXPECT_EQ(status.published_epoch, 3u);
  EXPECT_EQ(status.next_epoch, 4u);
  EXPECT_EQ(status.read_only_snapshot, checkpoint.read_only_snapshot);
  EXPECT_EQ(status.deferred, 1u);
  EXPECT_EQ(status.parked, 1u);
  bench.Sequence(4, {scenario.commit});
  bench.Drain();
  EXPECT_EQ(bench.AdmittedEpochs(1), (std::vector<Epoch>{4}));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// The origin (partition 0) asks partition 1 for LTX reads after partition
// 1's checkpoint; the request is still in partition 1's inbox when it
// crashes. Once partition 0 hears of the restart it asks again, and the
// restarted partition serves the read (the LTX's snapshot is the
// checkpoint's epoch, which it holds): the LTX commits instead of hanging
// until its timeout with its write area blocking short txns.
TEST(LtxRestartTest, AReadRequestLostInAParticipantsCrashIsAskedAgainAndServed) {
  LtxBench bench(TwoPartitions());
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({1, 3}, {4})}, /*origin=*/0)[0];
  bench.Drain(/*ltx_threads=*/false);
  const LtxCheckpoint checkpoint = bench.Checkpoint(1);
  ASSERT_EQ(checkpoint.epoch, 1u);
  // The LTX's first round: requests to partition 1 (keys 1, 3) and itself.
  ASSERT_GT(bench.scheduler(0).RunQueuedLtxWork(), 0u);
  ASSERT_EQ(bench.Restart(checkpoint), "");  // the request in its inbox is lost
  bench.Drain();
  const Txn commit = OnlyRecord(&bench, LTX_COMMIT);
  EXPECT_EQ(commit.ltx().ltx_id(), ltx) << "the LTX never got its reads";
  bench.Sequence(2, {commit, LtxBench::Rmw({4})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(bench.TakeRecords().size(), 0u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// The same request lost for an LTX whose snapshot is older than the
// checkpoint: asked again, the restarted partition refuses it retryably
// and the LTX aborts at once (`restart`), not at its timeout.
TEST(LtxRestartTest, AReadRequestLostForAnOlderSnapshotIsRefusedRetryably) {
  LtxBenchOptions options = TwoPartitions();
  options.ltx_timeout = 100000;
  LtxBench bench(options);
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({1}, {4})}, /*origin=*/0)[0];
  bench.Drain(/*ltx_threads=*/false);
  bench.Sequence(2, {LtxBench::Rmw({3})}, /*origin=*/1);
  bench.Drain(/*ltx_threads=*/false);
  const LtxCheckpoint checkpoint = bench.Checkpoint(1);
  ASSERT_EQ(checkpoint.epoch, 2u);
  ASSERT_GT(bench.scheduler(0).RunQueuedLtxWork(), 0u);
  ASSERT_EQ(bench.Restart(checkpoint), "");
  bench.Drain();
  const Txn abort = OnlyRecord(&bench, LTX_ABORT);
  EXPECT_EQ(abort.ltx().ltx_id(), ltx);
  EXPECT_EQ(abort.ltx().reason().rfind("restart: partition 1: it restarted", 0), 0u)
      << abort.ltx().reason();
  bench.Sequence(3, {abort});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// A request that had reached the participant's inbox when its checkpoint
// was taken is in the lane's saved state: the restarted partition takes it
// up by itself, even if the origin never hears of the restart.
TEST(LtxRestartTest, ARequestInTheInboxAtTheCheckpointIsTakenUpAfterTheRestart) {
  LtxBench bench(TwoPartitions());
  bench.set_announce_restarts(false);
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({1}, {4})}, /*origin=*/0)[0];
  bench.Drain(/*ltx_threads=*/false);
  ASSERT_GT(bench.scheduler(0).RunQueuedLtxWork(), 0u);  // the request waits in 1's inbox
  const LtxCheckpoint checkpoint = bench.Checkpoint(1);
  ASSERT_EQ(bench.Restart(checkpoint), "");
  bench.Sequence(2, {});
  bench.Drain();
  const Txn commit = OnlyRecord(&bench, LTX_COMMIT);
  EXPECT_EQ(commit.ltx().ltx_id(), ltx) << "the request in the inbox was lost";
  bench.Sequence(3, {commit});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// A partition restarted with no checkpoint (killed before the first one,
// or checkpoint_every=0) replays its log from the initial state without
// acting: no LTX procedure runs again, no result is reported again, no
// guard or commit record is sequenced again. After the replay it aborts
// the LTX that began there and has no commit record in the log.
TEST(LtxRestartTest, AReplayWithoutACheckpointNeverActs) {
  LtxBenchOptions options;
  options.ltx_max_deferrals = 1;
  struct Run {
    TxnId first = 0, starving = 0, second = 0;
  };
  auto scenario = [](LtxBench* bench) {
    Run run;
    run.first = bench->Sequence(1, {LtxBench::LongKv({}, {{5, "a"}}, {{5, 5}})})[0];
    bench->Drain();
    const Txn commit = OnlyRecord(bench, LTX_COMMIT);
    const auto ids =
        bench->Sequence(2, {LtxBench::Rmw({5}), LtxBench::LongKv({}, {{7, "b"}}, {{7, 7}})});
    run.starving = ids[0];
    run.second = ids[1];
    bench->Drain();
    const std::vector<Txn> records = bench->TakeRecords();
    EXPECT_EQ(RecordsOfKind(records, LTX_GUARD).size(), 1u);
    EXPECT_EQ(RecordsOfKind(records, LTX_COMMIT).size(), 1u);  // the second LTX's, not sequenced
    bench->Sequence(3, {commit, RecordsOfKind(records, LTX_GUARD)[0]});
    bench->Drain();
    return run;
  };
  LtxBench bench(options);
  const Run run = scenario(&bench);
  Result result;
  ASSERT_TRUE(bench.Result(run.first, &result));
  ASSERT_TRUE(bench.Result(run.starving, &result));
  const uint64_t digest = bench.Digest(3);

  bench.RestartWithoutCheckpoint(0, /*replay_through=*/3);
  bench.Redeliver(0, 1, 3);
  bench.Drain();
  EXPECT_EQ(bench.TakeRecords().size(), 0u) << "the replay ran procedures or sequenced guards";
  EXPECT_EQ(bench.Digest(3), digest);
  EXPECT_EQ(ResultsOf(bench, run.first), 1u);
  EXPECT_EQ(ResultsOf(bench, run.starving), 1u);
  EXPECT_FALSE(bench.Result(run.second, &result));

  bench.Sequence(4, {});
  bench.Drain();
  const Txn abort = OnlyRecord(&bench, LTX_ABORT);
  EXPECT_EQ(abort.ltx().ltx_id(), run.second);
  EXPECT_NE(abort.ltx().reason().find("restarted (with no checkpoint)"), std::string::npos)
      << abort.ltx().reason();
  bench.Sequence(5, {abort});
  bench.Drain();
  ASSERT_TRUE(bench.Result(run.second, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_TRUE(result.outcome.retryable);
  EXPECT_EQ(bench.TakeRecords().size(), 0u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// The oracle counts replies: a txn with two results, or none, is an error
// even when the state and every read are right.
TEST(LtxRestartTest, TheOracleRequiresExactlyOneResultPerTxn) {
  LtxBench bench(LtxBenchOptions{});
  const auto ids = bench.Sequence(1, {LtxBench::Rmw({1}), LtxBench::Read({2})});
  bench.Drain();
  ASSERT_EQ(bench.CheckSerialOrder(), "");
  std::vector<testing::ResultLog::Result> results = bench.results().all();
  ASSERT_EQ(results.size(), 2u);
  std::map<TxnId, bool> submitted = {{ids[0], true}, {ids[1], true}};
  auto check = [&](std::vector<testing::ResultLog::Result> r,
                   const std::map<TxnId, bool>& s) {
    return testing::ExecuteInPositionOrder(bench.workload(), 1, std::move(r), &s).error;
  };
  EXPECT_EQ(check(results, submitted), "");
  auto twice = results;
  twice.push_back(results[1]);
  EXPECT_NE(check(twice, submitted).find("got 2 results"), std::string::npos);
  auto none = results;
  none.pop_back();
  EXPECT_NE(check(none, submitted).find("got no result"), std::string::npos);
  submitted[ids[1]] = false;  // its client went with a crashed origin
  EXPECT_EQ(check(none, submitted), "");
  submitted.erase(ids[1]);
  EXPECT_NE(check(results, submitted).find("never submitted"), std::string::npos);
}

TEST(LtxRestartTest, AGarbledOrForeignStateIsRefusedWithAClearError) {
  LtxBench bench(TwoPartitions());
  ActiveLtxScenario scenario(&bench);
  const LtxCheckpoint checkpoint = bench.Checkpoint(1);
  ASSERT_FALSE(checkpoint.lane_state.empty());
  auto refused = [&](const std::string& state, const std::string& why) {
    LtxBench fresh(TwoPartitions());
    LtxCheckpoint copy = checkpoint;
    const std::string error = fresh.Restart(copy, 0, &state);
    EXPECT_NE(error.find("refused"), std::string::npos) << "accepted: " << why;
    EXPECT_NE(error.find("partition 1"), std::string::npos) << error;
    return error;
  };
  refused(checkpoint.lane_state.substr(0, checkpoint.lane_state.size() / 2), "truncated");
  refused(checkpoint.lane_state.substr(0, checkpoint.lane_state.size() - 1), "one byte short");
  std::string flipped = checkpoint.lane_state;
  flipped[flipped.size() / 2] ^= 0x5a;
  refused(flipped, "a flipped byte");
  refused("not a state at all", "garbage");
  // (An empty one is a checkpoint without a lane state, calvin mode's:
  // Scheduler::RestoreAt takes it as none.)
  // Another partition's state.
  LtxBench fresh(TwoPartitions());
  LtxCheckpoint other = checkpoint;
  other.partition = 0;
  const std::string error = fresh.Restart(other);
  EXPECT_NE(error.find("saved by partition 1 of 2"), std::string::npos) << error;
  // And the real one is taken.
  LtxBench good(TwoPartitions());
  EXPECT_EQ(good.Restart(checkpoint), "");
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
