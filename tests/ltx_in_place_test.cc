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

// In place, every LTX on an LTX thread (no locked runs).
LtxBenchOptions OnLtxThreads() {
  LtxBenchOptions options = InPlace();
  options.ltx_locked_run = false;
  return options;
}

bool SamePosition(const SerialPosition& a, const SerialPosition& b) { return a == b; }

// The log `sequence` makes, run with every LTX on an LTX thread, passes the
// serial oracle and reaches `locked`'s state at `epoch`.
template <typename Sequence>
void ExpectSameStateOnLtxThreads(LtxBench* locked, Epoch epoch, const Sequence& sequence) {
  LtxBench threads(OnLtxThreads());
  sequence(&threads);
  threads.Drain();
  EXPECT_EQ(threads.CheckSerialOrder(), "");
  EXPECT_EQ(threads.Digest(epoch), locked->Digest(epoch));
}

TEST(LtxInPlaceTest, AShortTxnInTheAreaWaitsForTheLocksAndRunsRightAfterTheInstall) {
  LtxBench bench(OnLtxThreads());
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

// Publication around LTXs in place (docs/ltx.md): the LTX's install holds
// epoch 2's publication until its procedure ran, but a snapshot read at 2 of
// a key no unfinished txn of epoch 2 or before locks goes at once.
TEST(LtxInPlaceTest, AReadOnlyTxnOutsideTheAreaGoesWhileTheLtxRunsAndOneInsideWaits) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "long"}}, {{5, 5}})})[0];
  bench.Drain(/*ltx_threads=*/false);
  // Epoch 2 holds the LTX's install (key 5) and a writer of key 9; epoch 3's
  // read-only txns read snapshot 2. Both epochs are admitted before any
  // worker ran: the read of key 9 first waits for the writer, then goes.
  const TxnId writer = bench.Sequence(2, {LtxBench::Rmw({9})})[0];
  const auto readers = bench.Sequence(3, {LtxBench::Read({9}), LtxBench::Read({5})});
  bench.scheduler(0).Step();
  Result result;
  EXPECT_FALSE(bench.Result(readers[0], &result)) << "read key 9 before its writer ran";
  bench.Drain(/*ltx_threads=*/false);  // the LTX has not run
  ASSERT_TRUE(bench.Result(writer, &result));
  EXPECT_LT(bench.Published(), 2u) << "epoch 2 published before the LTX in it installed";
  ASSERT_TRUE(bench.Result(readers[0], &result))
      << "a read of a key outside the running LTX's write area waited for it";
  EXPECT_TRUE(SamePosition(result.outcome.position, SerialPosition{3, 0, 0, 0}));
  EXPECT_FALSE(bench.Result(readers[1], &result))
      << "read key 5 before the LTX ordered before it wrote it";
  EXPECT_FALSE(bench.Result(ltx, &result));

  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(readers[1], &result));
  // The read of key 9 saw the writer's value, the read of key 5 the LTX's.
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxInPlaceTest, AKeyATxnQueuedBehindTheInstallWritesIsReadOnlyAfterIt) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::LongKv({}, {{5, "long"}}, {{5, 5}})})[0];
  bench.Drain(/*ltx_threads=*/false);
  // The short txn writes key 5 (in the area: it waits for the install) and
  // key 9 (outside): key 9's value at epoch 2 is the one it writes.
  const TxnId queued = bench.Sequence(2, {LtxBench::Rmw({5, 9})})[0];
  const TxnId reader = bench.Sequence(3, {LtxBench::Read({9})})[0];
  bench.Drain(/*ltx_threads=*/false);
  Result result;
  EXPECT_FALSE(bench.Result(queued, &result)) << "ran before the LTX it is ordered after";
  EXPECT_FALSE(bench.Result(reader, &result))
      << "read key 9 before the txn ordered before it (behind the LTX) wrote it";
  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  ASSERT_TRUE(bench.Result(queued, &result));
  ASSERT_TRUE(bench.Result(reader, &result));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxInPlaceTest, ScansOutsideTheAreaGoWhileTheLtxRunsAndScansOverItWait) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::LongKv({}, {{50, "long"}}, {{50, 50}})})[0];
  bench.Drain(/*ltx_threads=*/false);
  // Epoch 2 holds the LTX's install (key 50), a writer of key 3 and two
  // reports (LTXs in place) reading snapshot 2: one over [0, 20], one over
  // [40, 59]. Epoch 3 has two long scans at snapshot 2, over the same ranges.
  const auto ids = bench.Sequence(2, {LtxBench::Rmw({3}), LtxBench::Report(0, 20, 60, 63),
                                      LtxBench::Report(40, 59, 64, 67)});
  const auto scans = bench.Sequence(3, {LtxBench::Scan(0, 20), LtxBench::Scan(40, 59)});
  bench.Sequence(4, {});
  bench.DrainHolding(ltx);  // every LTX thread task runs but the first LTX's
  Result result;
  EXPECT_FALSE(bench.Result(ltx, &result));
  ASSERT_TRUE(bench.Result(ids[1], &result))
      << "a report over keys outside the running LTX's write area waited for it";
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(scans[0], &result))
      << "a long scan outside the running LTX's write area waited for it";
  EXPECT_FALSE(bench.Result(ids[2], &result)) << "a report read key 50 before the LTX wrote it";
  EXPECT_FALSE(bench.Result(scans[1], &result)) << "a scan read key 50 before the LTX wrote it";

  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  ASSERT_TRUE(bench.Result(ids[2], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(scans[1], &result));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// `ltx` wrote outside its area: it aborted for that, and `waiting`, a
// short txn on its area, still ran (the abort freed the install's locks).
void ExpectWriteAreaAbortFreedTheLocks(LtxBench* bench, TxnId ltx, TxnId waiting) {
  Result result;
  ASSERT_TRUE(bench->Result(ltx, &result));
  EXPECT_TRUE(result.outcome.aborted);
  EXPECT_NE(result.outcome.abort_reason.find("write-area"), std::string::npos)
      << result.outcome.abort_reason;
  ASSERT_TRUE(bench->Result(waiting, &result)) << "the aborted LTX kept its locks";
}

TEST(LtxInPlaceTest, AWriteOutsideTheAreaAbortsTheLtxAndFreesItsLocks) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::LongKv({}, {{7, "outside"}}, {{5, 5}})})[0];
  bench.Drain(/*ltx_threads=*/false);
  const TxnId waiting = bench.Sequence(2, {LtxBench::Rmw({5})})[0];
  bench.Drain();
  ExpectWriteAreaAbortFreedTheLocks(&bench, ltx, waiting);
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

// The read rule with three LTXs begun in one epoch (docs/ltx.md, "The read
// rule"): A, B and C begun in epoch 1 stand at (2, 0, 0, A) < B < C. C reads
// key 5, which A's and B's areas both cover: it takes the write of the
// newest of them that wrote key 5, or epoch 1's value if neither did, and
// only once both finished. The test picks which of A and B is held on its
// LTX thread while the other finishes, and checks the exact value C read.

constexpr Key kCovered = 5;

struct ThreeLtxs {
  TxnId a = 0, b = 0, c = 0;
};

// Epoch 1: A and B (areas covering key 5; what they write is the caller's),
// then C, which reads key 5 and writes key 7. Epoch 2 places them.
ThreeLtxs BeginThree(LtxBench* bench, Txn a, Txn b) {
  const auto ids = bench->Sequence(
      1, {std::move(a), std::move(b), LtxBench::LongKv({kCovered}, {{7, "c"}}, {{7, 7}})});
  bench->Sequence(2, {});
  return ThreeLtxs{ids[0], ids[1], ids[2]};
}

// Runs every LTX but `held` as far as it goes: the other of A and B
// finishes, and C's read of key 5 must still wait for `held`.
void FinishAllBut(LtxBench* bench, const ThreeLtxs& ltxs, TxnId held) {
  bench->DrainHolding(held);
  // Nothing but the held LTX's tasks is left for the LTX threads: the
  // other one ran its procedure to its end, and C is not reading.
  EXPECT_EQ(bench->scheduler(0).RunQueuedLtxWork(held), 0u);
  Result result;
  EXPECT_FALSE(bench->Result(ltxs.c, &result))
      << "C read key 5 while " << (held == ltxs.a ? "A" : "B") << ", pending for it, ran";
  EXPECT_FALSE(bench->Result(held, &result));
}

// Every LTX committed, and C's checksum is the one reading `value` for key
// 5 (and nothing else); A and B read nothing.
void ExpectCRead(LtxBench* bench, const ThreeLtxs& ltxs, const std::string& value) {
  Result result;
  for (TxnId id : {ltxs.a, ltxs.b}) {
    ASSERT_TRUE(bench->Result(id, &result));
    EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
    EXPECT_EQ(result.outcome.checksum, bench->ChecksumReading(result.txn, {}));
  }
  ASSERT_TRUE(bench->Result(ltxs.c, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result.outcome.position, SerialPosition{2, 0, 0, ltxs.c}));
  EXPECT_EQ(result.outcome.checksum, bench->ChecksumReading(result.txn, {{kCovered, value}}))
      << "C did not read \"" << value << "\" for key 5";
}

std::string ValueAtOne(LtxBench* bench, Key key) {
  std::string value;
  EXPECT_TRUE(bench->ValueAt(0, key, 1, &value));
  return value;
}

TEST(LtxInPlaceTest, AThirdLtxReadsTheOlderWriterWhenTheNewerCoveringLtxDidNotWriteTheKey) {
  LtxBench bench(OnLtxThreads());
  // A writes key 5; B's area covers keys 5 and 6, it writes key 6 only.
  const ThreeLtxs ltxs =
      BeginThree(&bench, LtxBench::LongKv({}, {{kCovered, "a"}}, {{kCovered, kCovered}}),
                 LtxBench::LongKv({}, {{6, "b"}}, {{kCovered, 6}}));
  const std::string at_one = ValueAtOne(&bench, kCovered);
  FinishAllBut(&bench, ltxs, ltxs.a);  // B finishes before A
  bench.Drain();
  ExpectCRead(&bench, ltxs, "a");
  Result c;
  ASSERT_TRUE(bench.Result(ltxs.c, &c));
  EXPECT_NE(c.outcome.checksum, bench.ChecksumReading(c.txn, {{kCovered, at_one}}))
      << "C read epoch 1's value of key 5, past A's write";
  std::string value;
  ASSERT_TRUE(bench.ValueAt(0, kCovered, 2, &value));
  EXPECT_EQ(value, "a");
  ASSERT_TRUE(bench.ValueAt(0, 6, 2, &value));
  EXPECT_EQ(value, "b");
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxInPlaceTest, AThirdLtxReadsTheSnapshotWhenNeitherCoveringLtxWroteTheKey) {
  // A's area covers keys 5 and 6, B's keys 5 and 8; they write keys 6 and 8.
  // Held A, then held B: either way C waits for both.
  for (int held = 0; held < 2; ++held) {
    SCOPED_TRACE(held == 0 ? "A held" : "B held");
    LtxBench bench(OnLtxThreads());
    const ThreeLtxs ltxs =
        BeginThree(&bench, LtxBench::LongKv({}, {{6, "a"}}, {{kCovered, 6}}),
                   LtxBench::LongKv({}, {{8, "b"}}, {{kCovered, kCovered}, {8, 8}}));
    const std::string at_one = ValueAtOne(&bench, kCovered);
    FinishAllBut(&bench, ltxs, held == 0 ? ltxs.a : ltxs.b);
    bench.Drain();
    ExpectCRead(&bench, ltxs, at_one);
    EXPECT_EQ(bench.CheckSerialOrder(), "");
  }
}

TEST(LtxInPlaceTest, AThirdLtxReadsTheNewerOfTwoWritersEvenIfItFinishedFirst) {
  LtxBench bench(OnLtxThreads());
  const ThreeLtxs ltxs =
      BeginThree(&bench, LtxBench::LongKv({}, {{kCovered, "a"}}, {{kCovered, kCovered}}),
                 LtxBench::LongKv({}, {{kCovered, "b"}}, {{kCovered, kCovered}}));
  FinishAllBut(&bench, ltxs, ltxs.a);  // B finishes before A
  bench.Drain();
  ExpectCRead(&bench, ltxs, "b");
  std::string value;
  ASSERT_TRUE(bench.ValueAt(0, kCovered, 2, &value));
  EXPECT_EQ(value, "b") << "A's install came after B's";
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// Locked runs (docs/ltx.md, "Locked run"): an LTX in place whose procedure
// reads only its write area and its declared reads (ycsb-ltx) runs on a
// worker once its install holds its area's locks. One test per row of that
// table, each ending with the serial oracle.

TEST(LtxLockedRunTest, ItRunsOnAWorkerOnceItsInstallHoldsItsLocksWithNoLtxThread) {
  LtxBench bench(InPlace());
  const TxnId ltx = bench.Sequence(1, {LtxBench::Long({1}, {5, 6})})[0];
  bench.Drain(/*ltx_threads=*/false);
  EXPECT_EQ(bench.scheduler(0).RunQueuedLtxWork(), 0u) << "it was started on an LTX thread";
  const auto short_ids = bench.Sequence(2, {LtxBench::Rmw({5}), LtxBench::Rmw({9})});
  bench.Drain(/*ltx_threads=*/false);
  Result result;
  ASSERT_TRUE(bench.Result(ltx, &result)) << "it waited for an LTX thread";
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_TRUE(SamePosition(result.outcome.position, SerialPosition{2, 0, 0, ltx}));
  ASSERT_TRUE(bench.Result(short_ids[0], &result)) << "the short txn behind its install";
  EXPECT_TRUE(SamePosition(result.outcome.position, SerialPosition{2, short_ids[0], 0, 0}));
  EXPECT_EQ(bench.stats(0).ltx().locked_runs.load(), 1u);
  EXPECT_EQ(bench.stats(0).ltx().locked_runs_given_back.load(), 0u);
  EXPECT_TRUE(bench.TakeRecords().empty());
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// Epoch 1: the LTX (reads key 3, read-modify-writes key 5), then T0 on key 5
// and T1 on key 3, both ordered before the LTX. Epoch 2: W writes key 3,
// which the LTX only reads. The LTX waits for T0 (its install's lock) and
// for T1 (key 3 settles at its snapshot); W waits for T1 only.
void EarlierWritersScenario(LtxBench* bench, TxnId* ltx, TxnId* writer) {
  const auto ids =
      bench->Sequence(1, {LtxBench::Long({3}, {5}), LtxBench::Rmw({5}), LtxBench::Rmw({3})});
  *ltx = ids[0];
  *writer = bench->Sequence(2, {LtxBench::Rmw({3})})[0];
}

TEST(LtxLockedRunTest, ItReadsItsAreaAfterEveryEarlierWriterAndItsOtherReadsAtItsSnapshot) {
  LtxBench bench(InPlace());
  TxnId ltx = 0, writer = 0;
  EarlierWritersScenario(&bench, &ltx, &writer);
  Scheduler& scheduler = bench.scheduler(0);
  scheduler.Step();  // admits both epochs: the install waits for T0's lock
  scheduler.RunQueuedWork();  // T0 and T1
  Result result;
  EXPECT_FALSE(bench.Result(ltx, &result)) << "it ran before T0 and T1, ordered before it";
  EXPECT_FALSE(bench.Result(writer, &result)) << "W ran before T1";
  scheduler.Step();  // T0 and T1 release: the install holds its locks, key 3 settled
  scheduler.RunQueuedWork();
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(writer, &result));
  EXPECT_EQ(scheduler.RunQueuedLtxWork(), 0u);
  bench.Drain();  // publishes epoch 2
  // It read T0's key 5 and T1's key 3, not W's (its checksum says so).
  EXPECT_EQ(bench.CheckSerialOrder(), "");

  // The same log on LTX threads reaches the same state.
  ExpectSameStateOnLtxThreads(&bench, 2, [&](LtxBench* threads) {
    EarlierWritersScenario(threads, &ltx, &writer);
  });
}

TEST(LtxLockedRunTest, AWriterOfAKeyItOnlyReadsIsNotBlockedByIt) {
  LtxBench bench(InPlace());
  // The LTX's install waits for T0 (key 5); W (epoch 2) writes key 3, which
  // the LTX only reads.
  const auto ids = bench.Sequence(1, {LtxBench::Long({3}, {5}), LtxBench::Rmw({5})});
  const TxnId writer = bench.Sequence(2, {LtxBench::Rmw({3})})[0];
  Scheduler& scheduler = bench.scheduler(0);
  scheduler.Step();
  scheduler.RunQueuedWork();  // T0 and W
  Result result;
  EXPECT_FALSE(bench.Result(ids[0], &result));
  ASSERT_TRUE(bench.Result(writer, &result)) << "a writer of a key the LTX only reads waited";
  bench.Drain(/*ltx_threads=*/false);
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(bench.CheckSerialOrder(), "");  // the LTX read key 3 before W wrote it
}

TEST(LtxLockedRunTest, ALaterLtxOfItsEpochReadingItsAreaWaitsForItsRunAndTakesItsWrites) {
  LtxBench bench(InPlace());
  // B writes key 5; C, begun after it in the same epoch, reads key 5
  // (declared, outside C's area) and writes key 7.
  const auto ids = bench.Sequence(1, {LtxBench::Long({}, {5}), LtxBench::Long({5}, {7})});
  bench.Sequence(2, {});
  Scheduler& scheduler = bench.scheduler(0);
  scheduler.Step();  // both placed, both hold their locks; B goes
  scheduler.RunQueuedWork();
  Result result;
  ASSERT_TRUE(bench.Result(ids[0], &result));
  EXPECT_FALSE(bench.Result(ids[1], &result)) << "C read key 5 before B, ordered before it, ran";
  scheduler.Step();  // B's run is done: C takes its write of key 5
  scheduler.RunQueuedWork();
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(scheduler.RunQueuedLtxWork(), 0u);
  bench.Drain();  // publishes epoch 2
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// Epoch 1: T0 and T1 on key 3, A writes key 5, B (begun after A) reads
// keys 3 and 5 and writes key 7. Epoch 2: T on key 5. A's locks go with its
// writes in the store, so T overwrites key 5 while B still waits for key 3
// to settle; B then reads key 5 as A wrote it, from A's record, not T's.
void ReleaseBeforeRecordScenario(LtxBench* bench, TxnId* b, TxnId* t) {
  const auto ids = bench->Sequence(1, {LtxBench::Rmw({3}), LtxBench::Rmw({3}),
                                       LtxBench::Long({}, {5}), LtxBench::Long({3, 5}, {7})});
  *b = ids[3];
  *t = bench->Sequence(2, {LtxBench::Rmw({5})})[0];
}

TEST(LtxLockedRunTest, AShortTxnAfterItOverwritesItsKeyBeforeALaterLtxOfItsEpochReadsIt) {
  LtxBench bench(InPlace());
  TxnId b = 0, t = 0;
  ReleaseBeforeRecordScenario(&bench, &b, &t);
  Scheduler& scheduler = bench.scheduler(0);
  scheduler.Step();  // admits both epochs: A runs locked, T0 runs; T1 and T wait
  scheduler.RunQueuedWork();
  scheduler.Step();  // A's and T0's locks go: T and T1 run; B waits for key 3
  scheduler.RunQueuedWork();
  Result result;
  ASSERT_TRUE(bench.Result(t, &result)) << "T waited for more than A's writes";
  EXPECT_FALSE(bench.Result(b, &result)) << "B read key 3 before T1, ordered before it, ran";
  scheduler.Step();  // T1's lock goes: key 3 settled, B runs
  scheduler.RunQueuedWork();
  ASSERT_TRUE(bench.Result(b, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  bench.Drain();
  // B's checksum says it read A's key 5, not T's.
  EXPECT_EQ(bench.CheckSerialOrder(), "");

  ExpectSameStateOnLtxThreads(&bench, 2, [&](LtxBench* threads) {
    ReleaseBeforeRecordScenario(threads, &b, &t);
  });
}

// The read rule with three LTXs (above), now run locked: A (reads key 1,
// writes key 5) and C (reads key 5, writes key 7) are ycsb-ltx LTXs; B is
// the caller's, its area covering key 5, which it does not write.
ThreeLtxs BeginThreeLocked(LtxBench* bench, Txn b) {
  const auto ids = bench->Sequence(
      1, {LtxBench::Long({1}, {kCovered}), std::move(b), LtxBench::Long({kCovered}, {7})});
  bench->Sequence(2, {});
  return ThreeLtxs{ids[0], ids[1], ids[2]};
}

// C read A's write of key 5 (and key 7 at epoch 1), A and B their keys at
// epoch 1; every LTX committed.
void ExpectCReadA(LtxBench* bench, const ThreeLtxs& ltxs) {
  std::string from_a;
  ASSERT_TRUE(bench->ValueAt(0, kCovered, 2, &from_a));
  ASSERT_NE(from_a, ValueAtOne(bench, kCovered));
  Result result;
  for (TxnId id : {ltxs.a, ltxs.b}) {
    ASSERT_TRUE(bench->Result(id, &result));
    EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  }
  ASSERT_TRUE(bench->Result(ltxs.a, &result));
  EXPECT_EQ(result.outcome.checksum,
            bench->ChecksumReading(result.txn, {{1, ValueAtOne(bench, 1)},
                                                {kCovered, ValueAtOne(bench, kCovered)}}));
  // B reads (at most) keys 2 and 6, at epoch 1: no LTX pending for it
  // covers them.
  ASSERT_TRUE(bench->Result(ltxs.b, &result));
  EXPECT_EQ(result.outcome.checksum,
            bench->ChecksumReading(result.txn,
                                   {{2, ValueAtOne(bench, 2)}, {6, ValueAtOne(bench, 6)}}));
  ASSERT_TRUE(bench->Result(ltxs.c, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(result.outcome.checksum,
            bench->ChecksumReading(result.txn, {{kCovered, from_a}, {7, ValueAtOne(bench, 7)}}))
      << "C did not read A's write of key 5";
}

TEST(LtxLockedRunTest, AThirdLtxReadsTheOlderWriterWhenTheNewerCoveringLtxDidNotWriteTheKey) {
  LtxBench bench(InPlace());
  // B reads key 2 and writes key 6; its area covers key 5 as well.
  Txn b = LtxBench::Long({2}, {6});
  KeyRange* covered = b.mutable_ltx()->add_write_area();
  covered->set_lo(kCovered);
  covered->set_hi(kCovered);
  const ThreeLtxs ltxs = BeginThreeLocked(&bench, b);
  Scheduler& scheduler = bench.scheduler(0);
  scheduler.Step();  // all placed: A runs; B's install waits for A's lock on key 5
  scheduler.RunQueuedWork();
  Result result;
  ASSERT_TRUE(bench.Result(ltxs.a, &result));
  EXPECT_FALSE(bench.Result(ltxs.b, &result)) << "B's install got key 5 before A's freed it";
  EXPECT_FALSE(bench.Result(ltxs.c, &result)) << "C read key 5 before A, pending for it, ran";
  scheduler.Step();  // A's run is done: B runs; C still waits for B, which covers key 5
  scheduler.RunQueuedWork();
  ASSERT_TRUE(bench.Result(ltxs.b, &result));
  EXPECT_FALSE(bench.Result(ltxs.c, &result)) << "C read key 5 before B, pending for it, ran";
  scheduler.Step();  // B's run is done: C takes A's write
  scheduler.RunQueuedWork();
  ASSERT_TRUE(bench.Result(ltxs.c, &result));
  EXPECT_EQ(scheduler.RunQueuedLtxWork(), 0u);
  EXPECT_EQ(bench.stats(0).ltx().locked_runs.load(), 3u);
  bench.Drain();  // publishes epoch 2
  ExpectCReadA(&bench, ltxs);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedRunTest, AThirdLtxWaitsForTheOlderWriterAfterTheNewerCoveringLtxFinished) {
  LtxBench bench(InPlace());
  // B runs on an LTX thread (ltx-kv): its area covers keys 5 and 6, it
  // writes key 6 only, and its procedure finishes before A's locked run.
  const ThreeLtxs ltxs =
      BeginThreeLocked(&bench, LtxBench::LongKv({}, {{6, "b"}}, {{kCovered, 6}}));
  Scheduler& scheduler = bench.scheduler(0);
  scheduler.Step();  // all placed: A's run is queued on the worker, B's procedure on its thread
  size_t ran = 0;
  while (const size_t tasks = scheduler.RunQueuedLtxWork()) {
    ran += tasks;
    scheduler.Step();
  }
  EXPECT_GT(ran, 0u) << "B's procedure did not run on an LTX thread";
  Result result;
  EXPECT_FALSE(bench.Result(ltxs.a, &result));
  EXPECT_FALSE(bench.Result(ltxs.c, &result))
      << "C read key 5 once B finished, while A, pending for it, had not run";
  scheduler.RunQueuedWork();  // A's run
  ASSERT_TRUE(bench.Result(ltxs.a, &result));
  bench.Drain();
  ExpectCReadA(&bench, ltxs);
  std::string value;
  ASSERT_TRUE(bench.ValueAt(0, 6, 2, &value));
  EXPECT_EQ(value, "b");
  EXPECT_EQ(bench.stats(0).ltx().locked_runs.load(), 2u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedRunTest, AnUndeclaredReadGivesTheRunBackToAnLtxThreadAndTheLocksStayHeld) {
  LtxBench bench(InPlace());
  // It declares key 4 (outside its area: a locked run, not locked at its
  // begin) but reads key 3 as well.
  Txn undeclared = LtxBench::Long({3, 4}, {5});
  undeclared.mutable_ltx()->clear_read_area();
  KeyRange* declared = undeclared.mutable_ltx()->add_read_area();
  declared->set_lo(4);
  declared->set_hi(4);
  const TxnId ltx = bench.Sequence(1, {undeclared})[0];
  const TxnId waiting = bench.Sequence(2, {LtxBench::Rmw({5})})[0];
  bench.Drain(/*ltx_threads=*/false);
  Result result;
  EXPECT_FALSE(bench.Result(ltx, &result)) << "it ran without reading key 3 at its snapshot";
  EXPECT_FALSE(bench.Result(waiting, &result)) << "the given-back run's install lost its locks";
  EXPECT_EQ(bench.stats(0).ltx().locked_runs_given_back.load(), 1u);
  bench.Drain();
  ASSERT_TRUE(bench.Result(ltx, &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  ASSERT_TRUE(bench.Result(waiting, &result));
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

// A locked run's record carries its writes only for the LTXs begun after
// it in its epoch, the only readers that take them from there (docs/ltx.md,
// "Release, then record"); any other reader finds them in the store. Epoch
// 1: A alone. Epoch 2: B, then C, which reads B's key 5. Epoch 3: D, which
// reads key 5 too, from the store, after B's install.
void RecordsScenario(LtxBench* bench, TxnId* c, TxnId* d) {
  bench->Sequence(1, {LtxBench::Long({1}, {2})});
  const auto ids = bench->Sequence(2, {LtxBench::Long({1}, {kCovered}), LtxBench::Long({kCovered}, {7})});
  *c = ids[1];
  *d = bench->Sequence(3, {LtxBench::Long({kCovered}, {8})})[0];
  bench->Sequence(4, {});
}

TEST(LtxLockedRunTest, ItsRecordKeepsItsWritesOnlyForALaterLtxOfItsEpoch) {
  LtxBench bench(InPlace());
  TxnId c = 0, d = 0;
  RecordsScenario(&bench, &c, &d);
  // The values before any of it ran (later, their versions may be collected).
  const std::map<Key, std::string> before = {{kCovered, ValueAtOne(&bench, kCovered)},
                                             {7, ValueAtOne(&bench, 7)},
                                             {8, ValueAtOne(&bench, 8)}};
  bench.Drain();
  EXPECT_EQ(bench.stats(0).ltx().locked_runs.load(), 4u);
  EXPECT_EQ(bench.stats(0).ltx().locked_runs_given_back.load(), 0u);
  EXPECT_EQ(bench.stats(0).ltx().locked_runs_writes_kept.load(), 1u) << "only B's is read";
  std::string from_b;
  ASSERT_TRUE(bench.ValueAt(0, kCovered, 3, &from_b));
  ASSERT_NE(from_b, before.at(kCovered));
  Result result;
  for (TxnId id : {c, d}) {
    ASSERT_TRUE(bench.Result(id, &result));
    EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
    const Key own = id == c ? 7 : 8;
    EXPECT_EQ(result.outcome.checksum,
              bench.ChecksumReading(result.txn, {{kCovered, from_b}, {own, before.at(own)}}))
        << (id == c ? "C" : "D") << " did not read B's write of key 5";
  }
  EXPECT_EQ(bench.CheckSerialOrder(), "");

  ExpectSameStateOnLtxThreads(&bench, 4, [&](LtxBench* threads) {
    RecordsScenario(threads, &c, &d);
  });
}

// A checkpoint keeps a locked run that installed before it as installed,
// with its commit record; one whose record kept no writes restores too.
TEST(LtxLockedRunTest, ALockedRunInstalledBeforeTheCheckpointRestoresWithItsOutcomeOnly) {
  auto scenario = [](LtxBench* bench) {
    bench->Sequence(1, {LtxBench::Long({1}, {5, 6})});
    bench->Sequence(2, {LtxBench::Rmw({5})});
    bench->Drain();  // installed at epoch 2: the checkpoint is at epoch 2
  };
  LtxBench live(InPlace());
  scenario(&live);
  live.Sequence(3, {LtxBench::Rmw({5, 6}), LtxBench::Long({5}, {7})});
  live.Sequence(4, {});
  live.Drain();
  ASSERT_EQ(live.CheckSerialOrder(), "");

  LtxBench restarted(InPlace());
  scenario(&restarted);
  EXPECT_EQ(restarted.stats(0).ltx().locked_runs.load(), 1u);
  EXPECT_EQ(restarted.stats(0).ltx().locked_runs_writes_kept.load(), 0u);
  const LtxCheckpoint checkpoint = restarted.Checkpoint(0);
  EXPECT_EQ(checkpoint.epoch, 2u);
  ASSERT_EQ(restarted.Restart(checkpoint), "");
  restarted.Sequence(3, {LtxBench::Rmw({5, 6}), LtxBench::Long({5}, {7})});
  restarted.Sequence(4, {});
  restarted.Drain();
  EXPECT_TRUE(restarted.TakeRecords().empty());
  EXPECT_EQ(restarted.Digest(4), live.Digest(4));
}

// A later LTX of its epoch whose own locked run is given back (it reads a
// key it did not declare, in A's area) reads on an LTX thread, A pending
// for it: it still takes A's write from A's record.
TEST(LtxLockedRunTest, ALaterLtxOfItsEpochGivenBackToAThreadStillTakesItsWrites) {
  LtxBench bench(InPlace());
  Txn undeclared = LtxBench::Long({3, kCovered}, {7});
  undeclared.mutable_ltx()->clear_read_area();
  KeyRange* declared = undeclared.mutable_ltx()->add_read_area();
  declared->set_lo(3);
  declared->set_hi(3);
  const auto ids = bench.Sequence(1, {LtxBench::Long({1}, {kCovered}), undeclared});
  bench.Sequence(2, {});
  const std::map<Key, std::string> before = {
      {3, ValueAtOne(&bench, 3)}, {kCovered, ValueAtOne(&bench, kCovered)}, {7, ValueAtOne(&bench, 7)}};
  bench.Drain();
  EXPECT_EQ(bench.stats(0).ltx().locked_runs_given_back.load(), 1u);
  EXPECT_EQ(bench.stats(0).ltx().locked_runs_writes_kept.load(), 1u);
  std::string from_a;
  ASSERT_TRUE(bench.ValueAt(0, kCovered, 2, &from_a));
  ASSERT_NE(from_a, before.at(kCovered));
  Result result;
  ASSERT_TRUE(bench.Result(ids[1], &result));
  EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
  EXPECT_EQ(result.outcome.checksum,
            bench.ChecksumReading(result.txn,
                                  {{3, before.at(3)}, {kCovered, from_a}, {7, before.at(7)}}))
      << "it did not read A's write of key 5";
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}

TEST(LtxLockedRunTest, AWriteOutsideItsAreaAbortsItAndFreesItsLocks) {
  LtxBench bench(InPlace());
  // It read-modify-writes keys 5 and 6; its write area is key 5 only (key
  // 6 is declared as a read).
  Txn outside = LtxBench::Long({}, {5, 6});
  outside.mutable_ltx()->clear_write_area();
  KeyRange* area = outside.mutable_ltx()->add_write_area();
  area->set_lo(5);
  area->set_hi(5);
  area = outside.mutable_ltx()->add_read_area();
  area->set_lo(6);
  area->set_hi(6);
  const TxnId ltx = bench.Sequence(1, {outside})[0];
  const TxnId waiting = bench.Sequence(2, {LtxBench::Rmw({5})})[0];
  bench.Drain(/*ltx_threads=*/false);
  ExpectWriteAreaAbortFreedTheLocks(&bench, ltx, waiting);
  EXPECT_EQ(bench.stats(0).ltx().locked_runs.load(), 1u);
  EXPECT_EQ(bench.CheckSerialOrder(), "");
}


// Paxflow admits epochs only max_unpublished_epochs past publication
// (design.md, "Admission"). A locked run holding publication (placed at the
// epoch after the last published, its procedure not run) lets the epochs
// behind it in up to the wider bound, so the short txns not behind its
// locks run meanwhile, even beside an LTX on a thread (a report, begun in
// the same epoch) that alone would keep the bound narrow. An LTX in place
// on an LTX thread does not: its snapshot pins versions for as long as it
// runs, and so would every LTX admitted behind it (bom's roll-ups at a
// window of 16,000: 1.4-1.6x calvin's with the exception, 1.95-2.2x
// without).
TEST(LtxInPlaceTest, ALockedRunHoldingPublicationLetsAdmissionRunOnAnLtxOnAThreadDoesNot) {
  struct Case {
    const char* name;
    bool locked_run;
    bool report_beside;
  };
  for (const Case& c : {Case{"locked run", true, false},
                        Case{"locked run beside a report on an LTX thread", true, true},
                        Case{"on an LTX thread", false, false}}) {
    SCOPED_TRACE(c.name);
    LtxBench bench(c.locked_run ? InPlace() : OnLtxThreads());
    std::vector<Txn> begins = {LtxBench::Long({3}, {5})};
    if (c.report_beside) begins.push_back(LtxBench::Report(20, 30, 60, 61));
    const std::vector<TxnId> ltxs = bench.Sequence(1, begins);
    std::vector<TxnId> shorts;
    for (Epoch epoch = 2; epoch <= 12; ++epoch) {
      shorts.push_back(bench.Sequence(epoch, {LtxBench::Rmw({40 + epoch})})[0]);
    }
    // Nothing runs: epoch 1 (the begins alone) is published, and the LTXs,
    // placed at 2, hold publication.
    bench.scheduler(0).Step();
    bench.scheduler(0).Step();
    EXPECT_EQ(bench.Published(), 1u);
    EXPECT_EQ(bench.AdmittedEpochs(0).size(),
              c.locked_run ? 12u : 1u + EngineParams().max_unpublished_epochs);
    bench.Drain();
    Result result;
    for (TxnId ltx : ltxs) {
      ASSERT_TRUE(bench.Result(ltx, &result)) << ltx;
      EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
    }
    for (TxnId id : shorts) EXPECT_TRUE(bench.Result(id, &result)) << id;
    EXPECT_EQ(bench.stats(0).ltx().locked_runs.load(), c.locked_run ? 1u : 0u);
    EXPECT_EQ(bench.Published(), 12u);
    EXPECT_EQ(bench.CheckSerialOrder(), "");
  }
}

// An LTX unresolved whose snapshot has not settled (epoch 1's txns have
// not run): an LTX that reads it round by round on an LTX thread keeps
// admission at the bound, and it goes on as they finish. A locked run,
// which reads only what settles at its begin epoch, lets admission run on
// though it does not hold publication yet (placed at 2, behind epoch 1's
// txn); so does no LTX at all: a lost message's retry then holds up only
// its own epoch.
TEST(LtxInPlaceTest, AnLtxReadingItsSnapshotOnAThreadKeepsAdmissionAtTheBound) {
  for (const bool locked_run : {false, true}) {
    SCOPED_TRACE(locked_run ? "locked run" : "on an LTX thread");
    LtxBench bench(locked_run ? InPlace() : OnLtxThreads());
    const TxnId ltx = bench.Sequence(1, {LtxBench::Rmw({41}), LtxBench::Long({3}, {5})})[1];
    for (Epoch epoch = 2; epoch <= 12; ++epoch) bench.Sequence(epoch, {LtxBench::Rmw({40 + epoch})});
    bench.scheduler(0).Step();  // admitted, none ran
    EXPECT_EQ(bench.Published(), 0u);
    EXPECT_EQ(bench.AdmittedEpochs(0).size(),
              locked_run ? 12u : EngineParams().max_unpublished_epochs);
    bench.Drain();
    EXPECT_EQ(bench.AdmittedEpochs(0).size(), 12u);
    Result result;
    ASSERT_TRUE(bench.Result(ltx, &result));
    EXPECT_FALSE(result.outcome.aborted) << result.outcome.abort_reason;
    EXPECT_EQ(bench.stats(0).ltx().locked_runs.load(), locked_run ? 1u : 0u);
    EXPECT_EQ(bench.CheckSerialOrder(), "");
  }

  LtxBench plain(OnLtxThreads());
  for (Epoch epoch = 1; epoch <= 12; ++epoch) plain.Sequence(epoch, {LtxBench::Rmw({40 + epoch})});
  plain.scheduler(0).Step();
  EXPECT_EQ(plain.Published(), 0u);
  EXPECT_EQ(plain.AdmittedEpochs(0).size(), 12u);
}
}  // namespace
}  // namespace paxflow
