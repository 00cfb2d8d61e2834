// LTXs locked at their begin (docs/ltx.md, "Locked at its begin"): where
// the record protocol runs, an LTX whose procedure reads only keys of its
// write area runs as one locked txn at its begin position, like a short
// txn there. One scenario per row of that section's table, on schedulers
// driven step by step (the test sequences every epoch and runs every
// thread's work), each ending with the serialization-order oracle.
#include <gtest/gtest.h>

#include "tests/ltx_harness.h"
#include "tests/serial_reference.h"

namespace paxflow {
namespace {

using testing::LtxBench;
using testing::LtxBenchOptions;
using Result = testing::ResultLog::Result;

// On 3 partitions key k lives on partition k % 3. Key 90 (partition 0) is
// read by the record-protocol LTXs below and touched by nothing else: a read
// outside its write area keeps an LTX on the record protocol.
constexpr Key kOutside = 90;

LtxBenchOptions ThreePartitions() {
  LtxBenchOptions options;
  options.partitions = 3;
  return options;
}

bool SamePosition(const Result& result, const SerialPosition& expected) {
  return result.outcome.position == expected;
}

// Sequences the lanes' records in the next epochs until none is left.
Epoch SequenceRecords(LtxBench* bench, Epoch epoch) {
  for (std::vector<Txn> records = bench->TakeRecords(); !records.empty();
       records = bench->TakeRecords()) {
    bench->Sequence(epoch++, std::move(records));
    bench->Drain();
  }
  return epoch;
}

TEST(LtxLockedBeginTest, RunsAtItsBeginPositionOnEveryPartitionWithNoRecord) {
  LtxBench bench(ThreePartitions());
  // A short txn before it and one after it in its epoch, on its keys.
  const auto ids = bench.Sequence(
      1, {LtxBench::Rmw({3}), LtxBench::Long({}, {3, 4, 5}), LtxBench::Rmw({4})}, /*origin=*/1);
  bench.Drain();
  EXPECT_TRUE(bench.TakeRecords().empty()) << "no commit, abort or guard record";
  Result result;
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result, SerialPosition{1, ids[1], 0, 0}))
      << "an LTX locked at its begin stands where its begin record is";
  ASSERT_TRUE(bench.Result(ids[2], &result));
  EXPECT_TRUE(SamePosition(result, SerialPosition{1, ids[2], 0, 0}));
  for (PartitionId p = 0; p < 3; ++p) {
    EXPECT_EQ(bench.scheduler(p).Status().active_ltx, 0u) << "partition " << p;
    EXPECT_EQ(bench.scheduler(p).Status().deferred, 0u) << "partition " << p;
  }
  // The first short txn's write is what the LTX read; the last one read
  // the LTX's write of key 4.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedBeginTest, AShortTxnOfALaterEpochWaitsForItsLocksAndIsNeverDeferred) {
  LtxBench bench(ThreePartitions());
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({}, {4, 5})}, /*origin=*/0)[0];
  const TxnId later = bench.Sequence(2, {LtxBench::Rmw({5, 6})}, /*origin=*/2)[0];
  // Admitted everywhere, nothing run yet: the later txn waits in the lock
  // manager behind the LTX, as behind any earlier txn.
  for (PartitionId p = 0; p < 3; ++p) bench.scheduler(p).Step();
  Result result;
  EXPECT_FALSE(bench.Result(later, &result));
  EXPECT_EQ(bench.scheduler(2).Status().deferred, 0u);
  EXPECT_GE(bench.scheduler(2).Status().pending, 1u) << "the later txn holds no lock yet";
  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(later, &result));
  EXPECT_EQ(result.outcome.deferrals, 0u);
  EXPECT_TRUE(SamePosition(result, SerialPosition{2, later, 0, 0}));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedBeginTest, AnActiveRecordLtxWhoseAreaMeetsItsAreaPutsItOnTheRecordProtocol) {
  LtxBench bench(ThreePartitions());
  const TxnId first = bench.Sequence(1, {LtxBench::Long({kOutside}, {5})})[0];
  bench.Drain(/*ltx_threads=*/false);  // the first LTX has not run: no record yet
  // Active from epoch 2 on, its area holds key 5: the second LTX, which
  // would read and write key 5, takes the record protocol and is ordered at
  // the start of epoch 3, after the first.
  const TxnId second = bench.Sequence(2, {LtxBench::Long({}, {4, 5})})[0];
  bench.Drain();
  const Epoch next = SequenceRecords(&bench, 3);
  EXPECT_GT(next, 3u) << "no commit record: the second LTX was locked at its begin";
  Result result;
  ASSERT_TRUE(bench.Result(first, &result));
  EXPECT_TRUE(SamePosition(result, SerialPosition{2, 0, 0, first}));
  ASSERT_TRUE(bench.Result(second, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result, SerialPosition{3, 0, 0, second}));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedBeginTest, AnActiveRecordLtxElsewhereLeavesItLockedAtItsBegin) {
  LtxBench bench(ThreePartitions());
  const TxnId record = bench.Sequence(1, {LtxBench::Long({kOutside}, {5})})[0];
  bench.Drain();
  const Txn commit = bench.TakeRecords().at(0);
  // Epoch 2: the record LTX defers a short txn on key 5; the LTX on keys
  // 3 and 4 (disjoint from its area) runs locked at its begin, at once.
  const auto ids = bench.Sequence(2, {LtxBench::Rmw({5}), LtxBench::Long({}, {3, 4})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_TRUE(SamePosition(result, SerialPosition{2, ids[1], 0, 0}));
  EXPECT_FALSE(bench.Result(ids[0], &result)) << "the record LTX no longer defers";
  const TxnId commit_id = bench.Sequence(3, {commit})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(record, &result));
  EXPECT_TRUE(SamePosition(result, SerialPosition{2, 0, 0, record}));
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_TRUE(SamePosition(result, SerialPosition{3, commit_id, 0, ids[0]}));
  EXPECT_EQ(result.outcome.deferrals, 1u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedBeginTest, ARecordLtxBegunBeforeItInItsEpochReadsItsWrites) {
  // The record LTX stands at the start of epoch 2, after every txn of
  // epoch 1, so it reads the locked LTX's write of key 4 though its begin
  // record came first: its read at snapshot 1 waits until key 4 settles.
  LtxBench bench(ThreePartitions());
  const auto ids = bench.Sequence(1, {LtxBench::Long({4}, {5}), LtxBench::Long({}, {4})});
  bench.Drain();
  SequenceRecords(&bench, 2);
  Result result;
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result, SerialPosition{2, 0, 0, ids[0]}));
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_TRUE(SamePosition(result, SerialPosition{1, ids[1], 0, 0}));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedBeginTest, ReadOnlyTxnsSeeItFromTheSnapshotOfItsEpochOn) {
  LtxBench bench(ThreePartitions());
  // The reader in epoch 1 reads snapshot 0: ordered before the LTX. The
  // reader in epoch 2 reads snapshot 1 (the LTX made epoch 1 a read-write
  // one): after it, with its writes.
  const auto first = bench.Sequence(1, {LtxBench::Read({4, 5}), LtxBench::Long({}, {4, 5})});
  const TxnId later = bench.Sequence(2, {LtxBench::Read({4, 5})})[0];
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(first[0], &result));
  EXPECT_EQ(result.read_version, 0u);
  ASSERT_TRUE(bench.Result(later, &result));
  EXPECT_EQ(result.read_version, 1u) << "the LTX's epoch does not count as read-write";
  for (PartitionId p = 0; p < 3; ++p) EXPECT_EQ(bench.scheduler(p).Status().parked, 0u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedBeginTest, AGuardDoesNotAbortItAndItDefersNothing) {
  // A guard stops new record LTXs on a starving txn's keys; an LTX locked
  // at its begin defers nobody, so the guard lets it run (it waits for the
  // starving txn's locks like any later txn once that one is released).
  LtxBenchOptions options = ThreePartitions();
  options.ltx_max_deferrals = 2;
  LtxBench bench(options);
  const testing::TwiceDeferred deferred = testing::DeferTwiceOnKey5(&bench);
  ASSERT_EQ(deferred.error, "");
  std::vector<Txn> guards = bench.TakeRecords();
  ASSERT_EQ(guards.size(), 1u);
  ASSERT_EQ(guards[0].ltx().kind(), LTX_GUARD);
  // The second record LTX is still active on key 5: an LTX on key 5 takes
  // the record protocol and meets the guard; one on keys 7 and 8 does not.
  const auto later =
      bench.Sequence(4, {guards[0], LtxBench::Long({}, {5}), LtxBench::Long({}, {7, 8})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(later[1], &result));
  EXPECT_EQ(result.outcome.abort_reason.rfind("guard:", 0), 0u) << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(later[2], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result, SerialPosition{4, later[2], 0, 0}));
  bench.Sequence(5, {deferred.second_commit});
  bench.Drain();
  ASSERT_TRUE(bench.Result(deferred.starving, &result));
  // After the record LTXs resolved, an LTX on key 5 is locked at its begin
  // even while the guard's txn is remembered.
  const TxnId after = bench.Sequence(6, {LtxBench::Long({}, {5})})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(after, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result, SerialPosition{6, after, 0, 0}));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedBeginTest, AReadOutsideWhatItDeclaredAbortsItAndFreesItsLocks) {
  // Its request declares no reads, yet its procedure reads key 3: as in
  // calvin mode it aborts (reason procedure) under its locks, writes
  // nothing, and the txn waiting for its lock runs.
  LtxBench bench(ThreePartitions());
  Txn undeclared = LtxBench::Long({3}, {4, 5});
  undeclared.mutable_ltx()->clear_read_area();
  const auto ids = bench.Sequence(1, {undeclared, LtxBench::Rmw({5})});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_NE(result.outcome.abort_reason.find("outside the areas it declared"), std::string::npos)
      << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_FALSE(result.outcome.aborted);
  EXPECT_TRUE(bench.TakeRecords().empty());
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedBeginTest, InPlaceItWaitsForAnEarlierInstallsLocksWithoutFallingBack) {
  // In place, an ltx-kv LTX begun in epoch 1 (it runs on an LTX thread)
  // has its install placed at the start of epoch 2, holding key 5's lock until its
  // procedure ran. An LTX on key 5 locked at its begin in epoch 2 waits for
  // that lock, as a short txn would, and reads the install's write.
  LtxBenchOptions options;
  options.ltx_in_place = true;
  LtxBench bench(options);
  const TxnId placed = bench.Sequence(1, {LtxBench::LongKv({3}, {{5, "x"}}, {{5, 5}})})[0];
  const auto ids = bench.Sequence(2, {LtxBench::Long({}, {5, 6}), LtxBench::Rmw({6})});
  bench.Drain(/*ltx_threads=*/false);
  Result result;
  EXPECT_FALSE(bench.Result(placed, &result)) << "its procedure has not run";
  EXPECT_FALSE(bench.Result(ids[0], &result)) << "ran before the earlier install wrote key 5";
  EXPECT_FALSE(bench.Result(ids[1], &result)) << "ran before the LTX ahead of it on key 6";
  bench.Drain();
  ASSERT_TRUE(bench.Result(placed, &result));
  EXPECT_TRUE(SamePosition(result, SerialPosition{2, 0, 0, placed}));
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result, SerialPosition{2, ids[0], 0, 0}));
  EXPECT_TRUE(bench.TakeRecords().empty());
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

}  // namespace
}  // namespace paxflow
