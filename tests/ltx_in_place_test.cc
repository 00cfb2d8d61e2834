// The LTX lane in place (one partition, `ltx_in_place`): an LTX begun in
// epoch N takes its write area's locks at the start of N+1 and installs
// there once its procedure finished; no commit record, no deferral. One
// scenario per rule of docs/ltx.md ("In place"), on a scheduler driven step
// by step (the test decides when the LTX threads run), each ending with the
// serialization-order oracle.
#include <gtest/gtest.h>

#include "tests/ltx_harness.h"

namespace paxflow {
namespace {

using testing::LtxBench;
using testing::LtxBenchOptions;
using testing::LtxCheckpoint;
using Result = testing::ResultLog::Result;

LtxBenchOptions InPlace() {
  LtxBenchOptions options;
  options.ltx_in_place = true;
  return options;
}

bool SamePosition(const SerialPosition& a, const SerialPosition& b) { return a == b; }

TEST(LtxInPlaceTest, AShortTxnInTheAreaWaitsForTheLocksAndRunsRightAfterTheInstall) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({1}, {5, 6})})[0];
  bench.Drain(/*ltx_threads=*/false);
  const auto short_ids = bench.Sequence(2, {LtxBench::Rmw({5}), LtxBench::Rmw({9})});
  bench.Drain(/*ltx_threads=*/false);  // the LTX has not run yet
  Result result;
  EXPECT_FALSE(bench.Result(short_ids[0], &result)) << "ran before the LTX it is ordered after";
  EXPECT_EQ(bench.scheduler(0).Status().deferred, 0u) << "in place, nothing is deferred";
  ASSERT_TRUE(bench.Result(short_ids[1], &result)) << "outside the write area: runs at once";

  bench.Drain();
  EXPECT_TRUE(bench.TakeRecords().empty()) << "in place, no commit record goes to the log";
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result.outcome.position, SerialPosition{2, 0, 0, ltx}));
  ASSERT_TRUE(bench.Result(short_ids[0], &result));
  EXPECT_TRUE(SamePosition(result.outcome.position, SerialPosition{2, short_ids[0], 0, 0}));
  EXPECT_EQ(result.outcome.deferrals, 0u);
  // The short txn read key 5 after the LTX wrote it.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxInPlaceTest, AWriterOfAKeyTheLtxOnlyReadsRunsAtOnceAndTheLtxReadsTheOldValue) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({3}, {5})})[0];
  bench.Drain(/*ltx_threads=*/false);
  const TxnId writer = bench.Sequence(2, {LtxBench::Rmw({3})})[0];
  bench.Drain(/*ltx_threads=*/false);
  Result result;
  ASSERT_TRUE(bench.Result(writer, &result)) << "a writer of a key the LTX only reads waited";
  bench.Drain();  // the LTX reads key 3 at its snapshot, epoch 1
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted);
  EXPECT_EQ(bench.CheckSerialOrder(), "");  // the LTX before the writer
}

TEST(LtxInPlaceTest, LtxsOfOneEpochInstallInBeginOrderAndTheLaterReadsTheEarliersWrites) {
  LtxBench bench(InPlace());
  // The second reads key 5 (the first's area) and writes it too.
  const auto ids = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "first"}}, {{5, 5}}),
                                      LtxBench::Long({5}, {5, 20})});
  bench.Sequence(2, {});  // their serialization point: the start of epoch 2
  bench.Drain();
  EXPECT_TRUE(bench.TakeRecords().empty());
  Result first, second;
  ASSERT_TRUE(bench.Result(ids[0], &first));
  ASSERT_TRUE(bench.Result(ids[1], &second));
  EXPECT_FALSE(first.outcome.aborted);
  EXPECT_FALSE(second.outcome.aborted) << second.outcome.abort_reason;
  // Serially the second runs after the first: it read "first" for key 5
  // (its checksum says so) and its own write of key 5 is the one left.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxInPlaceTest, ALaterEpochsLtxReadsTheEarlierInstall) {
  LtxBench bench(InPlace());
  bench.Sequence(1, {LtxBench::LongKv({}, {{5, "first"}}, {{5, 5}})});
  bench.Drain(/*ltx_threads=*/false);
  const TxnId second = bench.Sequence(2, {LtxBench::Long({5}, {20})})[0];
  bench.Sequence(3, {});
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(second, &result));
  EXPECT_FALSE(result.outcome.aborted);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxInPlaceTest, AReadOnlyTxnNeverWaitsAndReadsBeforeOrAfterTheLtxAsItsSnapshotSays) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "long"}}, {{5, 5}})})[0];
  bench.Drain(/*ltx_threads=*/false);
  const TxnId before = bench.Sequence(2, {LtxBench::Read({5})})[0];
  bench.Drain(/*ltx_threads=*/false);
  Result result;
  ASSERT_TRUE(bench.Result(before, &result)) << "an RO with a snapshot before the LTX waited";
  EXPECT_EQ(bench.scheduler(0).Status().parked, 0u);
  bench.Drain();
  const TxnId after = bench.Sequence(3, {LtxBench::Read({5})})[0];
  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  ASSERT_TRUE(bench.Result(after, &result));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxInPlaceTest, AWriteOutsideTheAreaAbortsTheLtxAndFreesItsLocks) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::LongKv({}, {{7, "outside"}}, {{5, 5}})})[0];
  bench.Drain(/*ltx_threads=*/false);
  const TxnId waiting = bench.Sequence(2, {LtxBench::Rmw({5})})[0];
  bench.Drain();
  Result result;
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_NE(result.outcome.abort_reason.find("write-area"), std::string::npos)
      << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(waiting, &result)) << "the aborted LTX kept its locks";
  EXPECT_TRUE(bench.TakeRecords().empty()) << "in place, an abort goes through no record";
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxInPlaceTest, AnLtxBegunInTheCheckpointEpochRunsAgainAfterTheRestart) {
  auto scenario = [](LtxBench* bench) {
    bench->Sequence(1, {LtxBench::Rmw({5})});
    bench->Drain();
    bench->Sequence(2, {LtxBench::Long({1}, {5, 6})});
    bench->Drain(/*ltx_threads=*/false);  // begun, not run: the checkpoint is at epoch 2
  };
  LtxBench live(InPlace());
  scenario(&live);
  live.Sequence(3, {LtxBench::Rmw({5, 6})});
  live.Drain();
  live.Sequence(4, {LtxBench::Rmw({6})});
  live.Drain();
  ASSERT_EQ(live.CheckSerialOrder(), "");

  LtxBench restarted(InPlace());
  scenario(&restarted);
  const LtxCheckpoint checkpoint = restarted.Checkpoint(0);
  EXPECT_EQ(checkpoint.epoch, 2u);
  // Epoch 3 is sequenced and admitted, the LTX still unrun, when the
  // partition stops; replayed, it reports nothing.
  restarted.Sequence(3, {LtxBench::Rmw({5, 6})});
  restarted.Drain(/*ltx_threads=*/false);
  ASSERT_EQ(restarted.Restart(checkpoint, /*replay_through=*/3), "");
  restarted.Redeliver(0, 3, 3);
  restarted.Drain();
  restarted.Sequence(4, {LtxBench::Rmw({6})});
  restarted.Drain();
  EXPECT_TRUE(restarted.TakeRecords().empty()) << "the restart aborted an LTX in place";
  EXPECT_EQ(restarted.Digest(4), live.Digest(4));
}

}  // namespace
}  // namespace paxflow
