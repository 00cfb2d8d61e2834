// The outcomes a retried LTX is answered with (scheduler/ltx_outcomes.h):
// the table alone, step by step, then the LTX lane filling it on
// schedulers driven epoch by epoch (tests/ltx_harness.h): the retry of an
// unresolved LTX waits for its commit or abort, one of a resolved LTX is
// answered at once with what the log decided, and a partition restored
// from a checkpoint answers as the one that never stopped.
#include <gtest/gtest.h>

#include <optional>

#include "scheduler/ltx_outcomes.h"
#include "tests/ltx_harness.h"

namespace paxflow {
namespace {

using testing::LtxBench;
using testing::LtxBenchOptions;
using testing::LtxCheckpoint;
using testing::OnlyRecord;

// One retry's answer, once given.
struct Told {
  int answers = 0;
  LtxOutcomes::Known known = LtxOutcomes::Known::kForgotten;
  TxnOutcome outcome;
  LtxOutcomes::Answer Callback() {
    return [this](LtxOutcomes::Known k, const TxnOutcome& o) {
      ++answers;
      known = k;
      outcome = o;
    };
  }
};

// An LTX id of epoch `epoch` (the epoch sits in the id's high bits).
TxnId IdIn(Epoch epoch, uint64_t n) { return MakeTxnId(epoch, 0, n); }

TxnOutcome Committed(uint64_t checksum) {
  TxnOutcome outcome;
  outcome.checksum = checksum;
  return outcome;
}

TEST(LtxOutcomesTest, ARetryOfAnUnresolvedLtxWaitsForItsResolutionAndGetsIt) {
  LtxOutcomes table;
  const TxnId ltx = IdIn(3, 1);
  table.Began(ltx);
  table.EpochEnded(3);
  Told told;
  table.Ask(ltx, told.Callback());
  EXPECT_EQ(told.answers, 0) << "answered before the LTX resolved";
  EXPECT_EQ(table.waiting(), 1u);
  table.EpochEnded(4);
  EXPECT_EQ(told.answers, 0);
  table.Resolved(ltx, LtxAbortOutcome("failover: its origin no longer leads"));
  ASSERT_EQ(told.answers, 1);
  EXPECT_EQ(told.known, LtxOutcomes::Known::kResolved);
  EXPECT_TRUE(told.outcome.aborted);
  EXPECT_FALSE(told.outcome.committed) << "an aborted LTX must never read as applied";
  EXPECT_TRUE(told.outcome.retryable);
  EXPECT_EQ(told.outcome.abort_reason.rfind("failover", 0), 0u);
  EXPECT_EQ(table.waiting(), 0u);
  // The first resolution is the one: a later one changes nothing.
  table.Resolved(ltx, Committed(7));
  Told again;
  table.Ask(ltx, again.Callback());
  ASSERT_EQ(again.answers, 1);
  EXPECT_TRUE(again.outcome.aborted);
  EXPECT_EQ(told.answers, 1);
}

TEST(LtxOutcomesTest, ARetryAskedBeforeItsBeginEpochEndedWaitsAndAnUnknownLtxIsSaidToBe) {
  LtxOutcomes table;
  const TxnId known = IdIn(5, 1), unknown = IdIn(5, 2), later = IdIn(6, 1);
  Told a, b, c;
  // The consumer thread runs ahead of the scheduler: nothing is known yet.
  table.Ask(known, a.Callback());
  table.Ask(unknown, b.Callback());
  table.Ask(later, c.Callback());
  table.Began(known);
  table.EpochEnded(5);
  EXPECT_EQ(a.answers, 0) << "its LTX is unresolved";
  ASSERT_EQ(b.answers, 1) << "its epoch ended without it: the table cannot know it";
  EXPECT_EQ(b.known, LtxOutcomes::Known::kForgotten);
  EXPECT_EQ(c.answers, 0) << "its epoch has not ended";
  table.Resolved(known, Committed(9));
  ASSERT_EQ(a.answers, 1);
  EXPECT_EQ(a.known, LtxOutcomes::Known::kResolved);
  EXPECT_TRUE(a.outcome.committed);
  EXPECT_FALSE(a.outcome.aborted);
  EXPECT_EQ(a.outcome.checksum, 9u);
}

TEST(LtxOutcomesTest, TheOldestBeginsAreForgottenFirstWhateverTheOrderOfResolutions) {
  LtxOutcomes table(2);
  const TxnId first = IdIn(1, 1), second = IdIn(1, 2), third = IdIn(2, 1);
  table.Began(first);
  table.Began(second);
  table.EpochEnded(1);
  table.Resolved(second, Committed(2));  // resolved before the first one
  table.Resolved(first, Committed(1));
  table.Began(third);
  table.EpochEnded(2);
  EXPECT_EQ(table.size(), 2u);
  Told t1, t2;
  table.Ask(first, t1.Callback());
  table.Ask(second, t2.Callback());
  ASSERT_EQ(t1.answers, 1);
  EXPECT_EQ(t1.known, LtxOutcomes::Known::kForgotten) << "the oldest begin goes first";
  ASSERT_EQ(t2.answers, 1);
  EXPECT_EQ(t2.known, LtxOutcomes::Known::kResolved);
  EXPECT_EQ(t2.outcome.checksum, 2u);
}

TEST(LtxOutcomesTest, ASavedTableAnswersAsTheOriginalAndADamagedOneIsRefused) {
  LtxOutcomes table;
  const TxnId done = IdIn(2, 1), aborted = IdIn(2, 2), open = IdIn(3, 1);
  for (TxnId id : {done, aborted, open}) table.Began(id);
  TxnOutcome committed = Committed(42);
  committed.position = SerialPosition{3, 0, 0, done};
  table.Resolved(done, committed);
  table.Resolved(aborted, LtxAbortOutcome("procedure: declined"));
  table.EpochEnded(3);
  LtxLaneState state;
  state.set_ended_epoch(3);
  table.Save(&state);

  LtxOutcomes restored;
  ASSERT_EQ(restored.Load(state), "");
  Told a, b, c, d;
  restored.Ask(done, a.Callback());
  restored.Ask(aborted, b.Callback());
  restored.Ask(open, c.Callback());
  restored.Ask(IdIn(1, 9), d.Callback());
  ASSERT_EQ(a.answers, 1);
  EXPECT_TRUE(a.outcome.committed);
  EXPECT_EQ(a.outcome.checksum, 42u);
  EXPECT_TRUE(a.outcome.position == committed.position);
  ASSERT_EQ(b.answers, 1);
  EXPECT_TRUE(b.outcome.aborted);
  EXPECT_FALSE(b.outcome.retryable) << "a procedure's own abort is not retryable";
  EXPECT_EQ(c.answers, 0) << "unresolved at the checkpoint: the replay resolves it";
  restored.Resolved(open, Committed(1));
  EXPECT_EQ(c.answers, 1);
  ASSERT_EQ(d.answers, 1);
  EXPECT_EQ(d.known, LtxOutcomes::Known::kForgotten);

  LtxLaneState damaged = state;
  std::swap(*damaged.mutable_outcomes(0), *damaged.mutable_outcomes(1));
  LtxOutcomes refused;
  EXPECT_NE(refused.Load(damaged), "");
  LtxLaneState zero = state;
  zero.mutable_outcomes(0)->set_ltx(0);
  EXPECT_NE(refused.Load(zero), "");
}

// --- The lane fills the table, on every replica alike.

LtxBenchOptions TwoPartitions() {
  LtxBenchOptions options;
  options.partitions = 2;
  return options;
}

// An LTX under request id (client 77, seq `seq`), begun at partition 1.
Txn WithRequestId(Txn txn, uint64_t seq) {
  txn.set_client_id(77);
  txn.set_client_seq(seq);
  return txn;
}

TEST(LtxOutcomesLaneTest, AcrossPartitionsARetryWaitsForTheCommitRecordAndOnlyTheOriginKeepsIt) {
  LtxBench bench(TwoPartitions());
  const TxnId ltx = bench.Sequence(1, {WithRequestId(LtxBench::Long({1}, {4, 5}), 1)}, 1)[0];
  bench.Drain();
  const Txn commit = OnlyRecord(&bench, LTX_COMMIT);
  Told told;
  bench.scheduler(1).ltx_outcomes().Ask(ltx, told.Callback());
  bench.Sequence(2, {});
  bench.Drain();
  EXPECT_EQ(told.answers, 0) << "answered while its commit record was not in the log";
  bench.Sequence(3, {commit});
  bench.Drain();
  ASSERT_EQ(told.answers, 1);
  EXPECT_EQ(told.known, LtxOutcomes::Known::kResolved);
  EXPECT_TRUE(told.outcome.committed);
  EXPECT_FALSE(told.outcome.aborted);
  EXPECT_EQ(told.outcome.checksum, commit.ltx().checksum());
  // Partition 0 is no origin of it: it keeps nothing.
  EXPECT_EQ(bench.scheduler(0).ltx_outcomes().size(), 0u);
  EXPECT_EQ(bench.scheduler(1).ltx_outcomes().size(), 1u);
}

TEST(LtxOutcomesLaneTest, AnLtxLockedAtItsBeginIsToldItsOutcomeLikeAnyOther) {
  LtxBench bench(TwoPartitions());
  // It reads only its write area (docs/ltx.md, "Locked at its begin"):
  // one locked txn at its position, no commit record; its origin's worker
  // notes how it resolved.
  const TxnId ltx = bench.Sequence(1, {WithRequestId(LtxBench::Long({}, {4, 5}), 1)}, 1)[0];
  Told told;
  bench.scheduler(1).ltx_outcomes().Ask(ltx, told.Callback());
  bench.Drain();
  EXPECT_TRUE(bench.TakeRecords().empty()) << "it took the record protocol";
  ASSERT_EQ(told.answers, 1);
  EXPECT_EQ(told.known, LtxOutcomes::Known::kResolved);
  EXPECT_TRUE(told.outcome.committed);
  EXPECT_FALSE(told.outcome.aborted);
  EXPECT_EQ(bench.scheduler(0).ltx_outcomes().size(), 0u);
  EXPECT_EQ(bench.scheduler(1).ltx_outcomes().size(), 1u);
}

TEST(LtxOutcomesLaneTest, ARetryOfAnLtxTheLogTimedOutIsToldItsTimeoutNeverApplied) {
  LtxBenchOptions options;
  options.ltx_timeout = 3;
  LtxBench bench(options);
  // A read outside its area keeps it on the record protocol (an LTX that
  // reads only its area is locked at its begin and never times out).
  const TxnId ltx = bench.Sequence(1, {WithRequestId(LtxBench::Long({1}, {5}), 1)})[0];
  bench.Drain();
  const Txn commit = OnlyRecord(&bench, LTX_COMMIT);  // never sequenced in time
  Told waiting;
  bench.scheduler(0).ltx_outcomes().Ask(ltx, waiting.Callback());
  bench.Sequence(2, {});
  bench.Sequence(3, {});
  bench.Drain();
  EXPECT_EQ(waiting.answers, 0);
  bench.Sequence(4, {});  // epoch 1 + ltx_timeout: aborted here
  bench.Drain();
  ASSERT_EQ(waiting.answers, 1);
  EXPECT_TRUE(waiting.outcome.aborted);
  EXPECT_FALSE(waiting.outcome.committed);
  EXPECT_TRUE(waiting.outcome.retryable);
  EXPECT_EQ(waiting.outcome.abort_reason.rfind("timeout", 0), 0u)
      << waiting.outcome.abort_reason;
  bench.Sequence(5, {commit});  // too late: the first of commit and abort won
  bench.Drain();
  Told later;
  bench.scheduler(0).ltx_outcomes().Ask(ltx, later.Callback());
  ASSERT_EQ(later.answers, 1);
  EXPECT_TRUE(later.outcome.aborted) << "the late commit record changed the answer";
}

TEST(LtxOutcomesLaneTest, ABusyAbortAndAnLtxWithoutRequestIdAreTreatedAsTheLogSaysThem) {
  LtxBenchOptions options;
  options.max_active_ltx = 1;
  LtxBench bench(options);
  const std::vector<TxnId> ids =
      bench.Sequence(1, {LtxBench::Long({1}, {5}), WithRequestId(LtxBench::Long({1}, {7}), 1)});
  bench.Drain();
  Told busy;
  bench.scheduler(0).ltx_outcomes().Ask(ids[1], busy.Callback());
  ASSERT_EQ(busy.answers, 1);
  EXPECT_TRUE(busy.outcome.aborted);
  EXPECT_TRUE(busy.outcome.retryable);
  EXPECT_EQ(busy.outcome.abort_reason.rfind("busy", 0), 0u) << busy.outcome.abort_reason;
  // Without a request id nothing is kept: a retry of it cannot be asked.
  EXPECT_EQ(bench.scheduler(0).ltx_outcomes().size(), 1u);
}

TEST(LtxOutcomesLaneTest, InPlaceAnLtxWhoseProcedureAbortedIsToldSoNotApplied) {
  LtxBenchOptions options;
  options.ltx_in_place = true;
  LtxBench bench(options);
  // ltx-kv writing outside its write area: its procedure aborts.
  const TxnId ltx = bench.Sequence(
      1, {WithRequestId(LtxBench::LongKv({}, {{9, "x"}}, {{1, 2}}), 1)})[0];
  bench.Sequence(2, {});
  bench.Drain();
  Told told;
  bench.scheduler(0).ltx_outcomes().Ask(ltx, told.Callback());
  ASSERT_EQ(told.answers, 1);
  EXPECT_TRUE(told.outcome.aborted) << told.outcome.abort_reason;
  EXPECT_FALSE(told.outcome.committed);
  const TxnId good = bench.Sequence(3, {WithRequestId(LtxBench::LongKv({}, {{1, "y"}}, {{1, 2}}), 2)})[0];
  bench.Sequence(4, {});
  bench.Drain();
  Told fine;
  bench.scheduler(0).ltx_outcomes().Ask(good, fine.Callback());
  ASSERT_EQ(fine.answers, 1);
  EXPECT_TRUE(fine.outcome.committed);
  EXPECT_FALSE(fine.outcome.aborted);
}

TEST(LtxOutcomesLaneTest, InCalvinModeAnLtxIsToldItsOutcomeFromTheWorkerThatRanItLocked) {
  // Calvin mode runs every LTX as one locked txn at its begin position,
  // outside the lane's protocol; its origin still notes the begin and the
  // worker that ran it the outcome, so a retry after a failover is told
  // what happened rather than "unknown".
  LtxBenchOptions options = TwoPartitions();
  options.mode = Mode::kCalvin;
  LtxBench bench(options);
  // Across partitions, reading outside its area (paxflow mode would take
  // the record protocol): committed.
  const TxnId ltx = bench.Sequence(1, {WithRequestId(LtxBench::Long({1}, {4, 5}), 1)}, 1)[0];
  Told told;
  bench.scheduler(1).ltx_outcomes().Ask(ltx, told.Callback());
  bench.Drain();
  EXPECT_TRUE(bench.TakeRecords().empty()) << "calvin mode sequenced an LTX record";
  ASSERT_EQ(told.answers, 1);
  EXPECT_EQ(told.known, LtxOutcomes::Known::kResolved);
  EXPECT_TRUE(told.outcome.committed);
  EXPECT_FALSE(told.outcome.aborted);
  EXPECT_EQ(bench.scheduler(0).ltx_outcomes().size(), 0u) << "only its origin keeps it";
  // Its procedure writing outside its write area: aborted, never applied.
  const TxnId bad = bench.Sequence(
      2, {WithRequestId(LtxBench::LongKv({}, {{9, "x"}}, {{1, 2}}), 2)}, 1)[0];
  bench.Drain();
  Told refused;
  bench.scheduler(1).ltx_outcomes().Ask(bad, refused.Callback());
  ASSERT_EQ(refused.answers, 1);
  EXPECT_EQ(refused.known, LtxOutcomes::Known::kResolved);
  EXPECT_TRUE(refused.outcome.aborted) << refused.outcome.abort_reason;
  EXPECT_FALSE(refused.outcome.committed);
  // A long scan writes nothing: its retry runs again, and nothing is kept.
  bench.Sequence(3, {WithRequestId(LtxBench::Scan(0, 20), 3)}, 1);
  bench.Drain();
  EXPECT_EQ(bench.scheduler(1).ltx_outcomes().size(), 2u);
}

TEST(LtxOutcomesLaneTest, APartitionRestoredFromACheckpointAnswersAsTheOneThatNeverStopped) {
  // Live: one LTX committed before the checkpoint, one active at it whose
  // commit record comes after.
  auto run = [](LtxBench* bench, TxnId* before, TxnId* active, Txn* commit) {
    *before = bench->Sequence(1, {WithRequestId(LtxBench::Long({1}, {2}), 1)}, 1)[0];
    bench->Drain();
    bench->Sequence(2, {OnlyRecord(bench, LTX_COMMIT)});
    bench->Drain();
    *active = bench->Sequence(3, {WithRequestId(LtxBench::Long({1}, {4}), 2)}, 1)[0];
    bench->Drain();
    *commit = OnlyRecord(bench, LTX_COMMIT);
  };
  LtxBench live(TwoPartitions());
  TxnId before = 0, active = 0;
  Txn commit;
  run(&live, &before, &active, &commit);
  live.Sequence(4, {commit});
  live.Drain();

  LtxBench restarted(TwoPartitions());
  TxnId before2 = 0, active2 = 0;
  Txn commit2;
  run(&restarted, &before2, &active2, &commit2);
  const LtxCheckpoint checkpoint = restarted.Checkpoint(1);
  EXPECT_EQ(checkpoint.epoch, 3u);
  ASSERT_EQ(restarted.Restart(checkpoint, /*replay_through=*/4), "");
  Told waiting;
  restarted.scheduler(1).ltx_outcomes().Ask(active2, waiting.Callback());
  EXPECT_EQ(waiting.answers, 0) << "active at the checkpoint: the replay resolves it";
  restarted.Sequence(4, {commit2});
  restarted.Drain();
  ASSERT_EQ(waiting.answers, 1);

  for (TxnId id : {before, active}) {
    Told a, b;
    live.scheduler(1).ltx_outcomes().Ask(id, a.Callback());
    restarted.scheduler(1).ltx_outcomes().Ask(id, b.Callback());
    ASSERT_EQ(a.answers, 1);
    ASSERT_EQ(b.answers, 1) << "the restored partition does not know LTX " << TxnIdString(id);
    EXPECT_EQ(a.known, LtxOutcomes::Known::kResolved);
    EXPECT_EQ(b.known, a.known);
    EXPECT_EQ(b.outcome.committed, a.outcome.committed);
    EXPECT_EQ(b.outcome.aborted, a.outcome.aborted);
    EXPECT_EQ(b.outcome.checksum, a.outcome.checksum);
    EXPECT_TRUE(b.outcome.position == a.outcome.position);
  }
  EXPECT_EQ(before, before2);
  EXPECT_EQ(active, active2);
}

}  // namespace
}  // namespace paxflow
