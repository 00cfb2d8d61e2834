// Several sequencers per node (--sequencers_per_node): cluster-wide ids,
// origins, the shared window of generated txns, parameter bounds.
#include <gtest/gtest.h>

#include <memory>
#include <mutex>
#include <vector>

#include "applications/workload.h"
#include "base/params.h"
#include "common/stats.h"
#include "sequencer/generator_source.h"
#include "sequencer/sequencer.h"

namespace paxflow {
namespace {

// Hands out txns reading the given keys, one per Fill slot.
class FixedSource : public TxnSource {
 public:
  explicit FixedSource(std::vector<std::vector<Key>> txns) : txns_(std::move(txns)) {}
  size_t Fill(size_t max, int64_t now_us, Batch* batch) override {
    size_t count = 0;
    while (count < max && next_ < txns_.size()) {
      Txn* txn = batch->add_txns();
      for (Key key : txns_[next_++]) txn->add_read_set(key);
      txn->set_submit_time_us(now_us);
      ++count;
    }
    return count;
  }

 private:
  std::vector<std::vector<Key>> txns_;
  size_t next_ = 0;
};

TEST(SequencerTest, SecondSequencerOfANodeOrdersUnderItsOwnIdWithTheNodesOrigin) {
  // Partition 1 of 3, two sequencers per node: this is sequencer 3.
  FixedSource source({{1, 4}, {2}, {1}});
  SequencerOptions options;
  options.sequencer_id = SequencerId(1, 1, 2);
  options.partition = 1;
  options.partitions = 3;
  options.node = 7;
  Sequencer sequencer(options, {&source});
  ASSERT_EQ(options.sequencer_id, 3u);
  auto batches = sequencer.CloseEpoch(5, 100, false);
  ASSERT_EQ(batches.size(), 3u);
  for (PartitionId p = 0; p < 3; ++p) {
    EXPECT_EQ(batches[p]->sequencer(), 3u);
    EXPECT_EQ(batches[p]->epoch(), 5u);
  }
  // Every txn goes to its origin (partition 1) and the partitions it reads.
  ASSERT_EQ(batches[1]->txns_size(), 3);
  ASSERT_EQ(batches[2]->txns_size(), 1);
  EXPECT_EQ(batches[0]->txns_size(), 0);
  for (int i = 0; i < 3; ++i) {
    const Txn& txn = batches[1]->txns(i);
    EXPECT_EQ(TxnSequencer(txn.id()), 3u);
    EXPECT_EQ(TxnEpoch(txn.id()), 5u);
    EXPECT_EQ(TxnPosition(txn.id()), static_cast<uint32_t>(i));
    EXPECT_EQ(txn.origin_partition(), 1u);
    EXPECT_EQ(txn.origin_node(), 7u);
  }
}

// What the summary's admission line reports: epochs that took new txns,
// and those whose batch reached max_batch (the cap bounded the load).
TEST(SequencerTest, CountsEpochsWhoseBatchReachedTheCap) {
  FixedSource source({{1}, {2}, {3}, {4}, {5}});
  SequencerOptions options;
  options.max_batch = 2;
  Sequencer sequencer(options, {&source});
  sequencer.CloseEpoch(1, 100, false);  // 2 txns: full
  sequencer.CloseEpoch(2, 200, false);  // 2: full
  sequencer.CloseEpoch(3, 300, false);  // 1: not full
  sequencer.CloseEpoch(4, 400, false, /*take_new=*/false);  // records only: not counted
  EXPECT_EQ(sequencer.epochs_taking_new(), 3u);
  EXPECT_EQ(sequencer.epochs_at_batch_cap(), 2u);
}

TEST(InflightWindowTest, SequencersShareTheNodesWindow) {
  uint64_t completed = 0;
  InflightWindow window(100, [&] { return completed; });
  EXPECT_EQ(window.Claim(60), 60u);
  EXPECT_EQ(window.Claim(60), 40u) << "the second sequencer gets what is left";
  EXPECT_EQ(window.Claim(10), 0u);
  completed = 30;
  EXPECT_EQ(window.Claim(50), 30u);
  InflightWindow unbounded(0, nullptr);
  EXPECT_EQ(unbounded.Claim(1u << 20), 1u << 20);
}

// Every `every`-th txn it makes is an LTX; each txn's procedure is its
// number, so the order they were drawn in shows.
class EveryNthLtxGenerator : public TxnGenerator {
 public:
  explicit EveryNthLtxGenerator(uint32_t every) : every_(every) {}
  void Next(Txn* txn) override {
    ++drawn_;
    txn->set_procedure(drawn_);
    if (drawn_ % every_ == 0) {
      txn->set_txn_class(LTX);
      txn->mutable_ltx()->set_kind(LTX_BEGIN);
    }
  }

 private:
  const uint32_t every_;
  uint32_t drawn_ = 0;
};

std::vector<uint32_t> LtxProcedures(const Batch& batch) {
  std::vector<uint32_t> ltxs;
  for (const Txn& txn : batch.txns()) {
    if (txn.txn_class() == LTX) ltxs.push_back(txn.procedure());
  }
  return ltxs;
}

// A generator behind a window of `limit` txns and one of `ltx_limit` LTXs;
// `done` and `ltx_done` are how many of them finished.
struct WindowedGenerator {
  WindowedGenerator(uint64_t limit, uint64_t ltx_limit, uint32_t ltx_every)
      : window(limit, [this] { return done; }),
        ltx_window(ltx_limit, [this] { return ltx_done; }, [this] { return lane_behind; }),
        source(std::make_unique<EveryNthLtxGenerator>(ltx_every), &window, nullptr, &ltx_window) {}
  uint64_t done = 0, ltx_done = 0;
  bool lane_behind = false;  // the LTX threads' queue is past its limit
  InflightWindow window, ltx_window;
  GeneratorSource source;
};

TEST(GeneratorSourceTest, LtxsBeyondTheLtxWindowWaitInOrderAndTheMixStays) {
  WindowedGenerator g(1000, 2, 3);
  GeneratorSource& source = g.source;
  Batch first;
  ASSERT_EQ(source.Fill(12, 1, &first), 12u);
  // LTXs 3 and 6 go; 9 and 12 are held, and short txns fill the batch.
  EXPECT_EQ(LtxProcedures(first), (std::vector<uint32_t>{3, 6}));
  EXPECT_EQ(first.txns(11).procedure(), 14u);
  Batch still_full;
  ASSERT_EQ(source.Fill(2, 2, &still_full), 2u);
  EXPECT_TRUE(LtxProcedures(still_full).empty()) << "no room: held LTXs wait";
  // Two LTXs finish: the two held longest go first, with the time they
  // were drawn (their latency counts the hold).
  g.ltx_done = 2;
  Batch next;
  ASSERT_EQ(source.Fill(3, 3, &next), 3u);
  EXPECT_EQ(LtxProcedures(next), (std::vector<uint32_t>{9, 12}));
  EXPECT_EQ(next.txns(0).submit_time_us(), 1);
  EXPECT_NE(next.txns(2).txn_class(), LTX) << "15 and 18 wait their turn";
  EXPECT_EQ(next.txns(2).procedure(), 19u);
}

// An LTX sequenced while the LTX threads are behind would wait in their
// queue and then read an old snapshot: the window holds it back, whatever
// room it has, and short txns go on; the fill that stops is counted as the
// lane's pace, not the window's limit.
TEST(GeneratorSourceTest, WhileTheLtxThreadsAreBehindLtxsAreHeldDespiteRoom) {
  WindowedGenerator g(1000, 100, 3);
  GeneratorSource& source = g.source;
  g.lane_behind = true;
  Batch behind;
  ASSERT_EQ(source.Fill(12, 1, &behind), 12u);
  EXPECT_TRUE(LtxProcedures(behind).empty()) << "room for 100 LTXs, but the lane is behind";
  EXPECT_EQ(behind.txns(11).procedure(), 17u) << "short txns go on: 3, 6, 9, 12, 15 are held";
  EXPECT_EQ(source.ltx_window_full(), 0u);
  Batch stopped;
  EXPECT_EQ(source.Fill(100, 2, &stopped), 20u) << "it stops with kMaxHeld held";
  EXPECT_EQ(source.ltx_window_full(), 1u);
  EXPECT_EQ(source.ltx_lane_behind(), 1u) << "stopped by the lane's pace, not by the window";
  g.lane_behind = false;
  Batch caught_up;
  ASSERT_EQ(source.Fill(3, 3, &caught_up), 3u);
  EXPECT_EQ(LtxProcedures(caught_up), (std::vector<uint32_t>{3, 6, 9})) << "oldest held first";
  EXPECT_EQ(caught_up.txns(0).submit_time_us(), 1) << "a held LTX keeps the time it was drawn";
}

TEST(GeneratorSourceTest, WithOnlyLtxsAndNoRoomTheGeneratorStopsAndGivesBackItsClaims) {
  WindowedGenerator g(100, 1, 1);
  GeneratorSource& source = g.source;
  Batch batch;
  EXPECT_EQ(source.Fill(50, 1, &batch), 1u) << "one LTX, then kMaxHeld held, then it stops";
  EXPECT_EQ(batch.txns_size(), 1);
  EXPECT_EQ(g.window.Claim(1000), 99u) << "the claims it did not fill are room again";
  EXPECT_EQ(source.ltx_window_full(), 1u) << "the LTX window cut this fill short";
  EXPECT_EQ(source.ltx_lane_behind(), 0u) << "at the window's limit, the lane not behind";
  g.ltx_done = 1;
  Batch next;
  g.done = 99;
  EXPECT_EQ(source.Fill(1, 2, &next), 1u);
  ASSERT_EQ(LtxProcedures(next), (std::vector<uint32_t>{2}));
}

// In paxflow mode an LTX locked at its begin runs as a short txn does and
// never counts against max_active_ltx: it takes room only in the window of
// all LTXs (max_inflight_ltx), while the LTX lane's take room in the share
// window too. A lane LTX held for the share must not hold back locked ones
// drawn after it, nor keep the room it claimed in the other window.
TEST(GeneratorSourceTest, LtxsLockedAtTheirBeginTakeNoRoomInTheShareWindow) {
  InflightWindow window(1000, [] { return 0; });
  InflightWindow ltx_window(100, [] { return 0; });
  // The lane's LTXs here: the even-numbered ones (6, 12, 18, ...).
  InflightWindow share_window(1, nullptr, nullptr,
                              [](const Txn& txn) { return txn.procedure() % 2 == 0; });
  GeneratorSource source(std::make_unique<EveryNthLtxGenerator>(3), &window, nullptr,
                         &ltx_window, &share_window);
  Batch first;
  ASSERT_EQ(source.Fill(14, 1, &first), 14u);
  EXPECT_EQ(LtxProcedures(first), (std::vector<uint32_t>{3, 6, 9, 15}))
      << "12 waits for the share; 9 and 15, locked at their begin, go past it";
  share_window.Finished();
  Batch next;
  ASSERT_EQ(source.Fill(3, 2, &next), 3u);
  EXPECT_EQ(LtxProcedures(next), (std::vector<uint32_t>{12})) << "the oldest held, once room";
  EXPECT_EQ(next.txns(0).submit_time_us(), 1);
  EXPECT_EQ(ltx_window.Claim(1000), 95u)
      << "five LTXs went; the claims of those held for the share were given back";
}

// An LTX whose reconnaissance went stale runs again as the same LTX: the
// node's LTX window (fed by what reporters count as done) must hold it as
// one LTX in flight through its restart, and free its room once, when the
// attempt that resolves is counted. A leak would stall the generator; a
// double count would let in more LTXs than max_active_ltx admits.
TEST(GeneratorSourceTest, AnOllpRestartStaysOneLtxInTheWindow) {
  NodeStats stats(1);
  WorkerStats& reporter = stats.worker(0);
  InflightWindow window(100, [&] { return stats.GeneratedDone(); });
  InflightWindow ltx_window(1, [&] { return stats.LongDone(); });
  ResubmitQueue resubmit;
  GeneratorSource source(std::make_unique<EveryNthLtxGenerator>(1), &window, &resubmit,
                         &ltx_window);
  Batch first;
  ASSERT_EQ(source.Fill(1, 1, &first), 1u);
  ASSERT_EQ(LtxProcedures(first), (std::vector<uint32_t>{1}));
  // Its locked run finds the walk changed: a restart, reported as the
  // reporters do, and handed back to the generator.
  EXPECT_TRUE(reporter.RecordResult(kKindLong, true, "recon: read key 7, not reconnoitered", 10,
                                    /*generated=*/true));
  EXPECT_EQ(stats.Committed(kKindLong) + stats.Aborted(kKindLong), 0u);
  resubmit.Push(first.txns(0));
  Batch again;
  ASSERT_EQ(source.Fill(1, 2, &again), 1u);
  EXPECT_EQ(LtxProcedures(again), (std::vector<uint32_t>{1})) << "the same LTX, resubmitted";
  EXPECT_EQ(ltx_window.Claim(1), 0u) << "still one LTX in flight: no room";
  // The attempt that resolves frees the room, once.
  EXPECT_FALSE(reporter.RecordResult(kKindLong, false, "", 20, /*generated=*/true));
  EXPECT_EQ(stats.LongDone(), 1u);
  EXPECT_EQ(ltx_window.Claim(5), 1u);
  EXPECT_EQ(stats.Latency(kKindLong).count(), 1u) << "one latency sample: the attempt that resolved";
}

TEST(SequencersPerNodeTest, BoundedByTheIdSpace) {
  NodeParams params;
  EXPECT_EQ(params.Validate(1), "");
  params.engine.sequencers_per_node = 0;
  EXPECT_NE(params.Validate(1).find("sequencers_per_node=0"), std::string::npos);
  params.engine.sequencers_per_node = kMaxSequencers / 2;
  EXPECT_EQ(params.Validate(2), "");
  EXPECT_NE(params.Validate(3).find("out of range"), std::string::npos);
  // A cluster parameter: nodes that disagree refuse to run together.
  NodeParams other = params;
  other.engine.sequencers_per_node = 1;
  EXPECT_NE(other.Fingerprint(), params.Fingerprint());
}

// --fault_pause_sequencer=ID:EPOCH holds node ID's sequencer only; a
// malformed value is refused naming the form.
TEST(SequencerPauseTest, NamesOneNodeAndAnEpoch) {
  NodeParams params;
  EXPECT_EQ(params.engine.SequencerPauseAfter(0), 0u);
  params.engine.fault_pause_sequencer = "2:150";
  EXPECT_EQ(params.Validate(1), "");
  EXPECT_EQ(params.engine.SequencerPauseAfter(2), 150u);
  EXPECT_EQ(params.engine.SequencerPauseAfter(0), 0u);
  for (const char* bad :
       {"150", "2:", ":150", "2:0", "2:1:3", "a:150", "-1:150", "4294967298:150"}) {
    params.engine.fault_pause_sequencer = bad;
    EXPECT_NE(params.Validate(1).find("is not NODE_ID:EPOCH"), std::string::npos) << bad;
    EXPECT_EQ(params.engine.SequencerPauseAfter(2), 0u) << bad;
  }
  // Not a cluster parameter: only the node named is affected.
  NodeParams other;
  EXPECT_EQ(other.Fingerprint(), params.Fingerprint());
}

// --fault_deaf_to_hellos=NODE:FROM:FILE makes node NODE deaf to node FROM
// only (the file's path may hold colons); a malformed value is refused
// naming the form.
TEST(SequencerPauseTest, DeafToHellosNamesTwoNodesAndAFile) {
  NodeParams params;
  EXPECT_EQ(params.engine.HellosIgnoredWhile(3, 0), "");
  params.engine.fault_deaf_to_hellos = "3:0:/tmp/a:b";
  EXPECT_EQ(params.Validate(1), "");
  EXPECT_EQ(params.engine.HellosIgnoredWhile(3, 0), "/tmp/a:b");
  EXPECT_EQ(params.engine.HellosIgnoredWhile(0, 3), "");
  EXPECT_EQ(params.engine.HellosIgnoredWhile(3, 1), "");
  for (const char* bad : {"3", "3:0", "3:0:", ":0:/f", "3::/f", "a:0:/f", "3:-1:/f", "3:3:/f",
                          "4294967296:0:/f", "3:4294967299:/f", "00000000003:0:/f"}) {
    params.engine.fault_deaf_to_hellos = bad;
    EXPECT_NE(params.Validate(1).find("is not NODE_ID:FROM_ID:FILE"), std::string::npos) << bad;
    EXPECT_EQ(params.engine.HellosIgnoredWhile(3, 0), "") << bad;
  }
  NodeParams other;
  EXPECT_EQ(other.Fingerprint(), params.Fingerprint());
}

}  // namespace
}  // namespace paxflow

namespace paxflow {
namespace {

// The epoch a run ends in still takes new txns; they may begin LTXs that the
// drain cannot know of yet (it reads the epochs before), so with a drain
// that epoch is never the final one, even when the drain says nothing is
// owed. (Before: the final epoch could begin LTXs no later epoch placed.)
// One txn each time it is asked, for ever.
class EndlessSource : public TxnSource {
 public:
  size_t Fill(size_t max, int64_t now_us, Batch* batch) override {
    if (max == 0) return 0;
    Txn* txn = batch->add_txns();
    txn->add_read_set(1);
    txn->set_submit_time_us(now_us);
    return 1;
  }
};

TEST(SequencerRunnerTest, TheEpochThatTakesTheLastTxnsIsNeverFinalWithADrain) {
  for (const bool with_drain : {false, true}) {
    SCOPED_TRACE(with_drain ? "with a drain" : "without a drain");
    EndlessSource source;
    SequencerOptions options;
    options.sequencer_id = 0;
    options.partition = 0;
    options.partitions = 1;
    Sequencer sequencer(options, {&source});
    std::mutex mu;
    std::vector<std::pair<Epoch, bool>> delivered;  // (epoch, final)
    std::vector<size_t> txns_per_epoch;
    SequencerRunner runner(&sequencer, /*epoch_ms=*/1, /*run_epochs=*/3,
                           [&](PartitionId, std::unique_ptr<Batch> batch) {
                             std::lock_guard<std::mutex> lock(mu);
                             delivered.emplace_back(batch->epoch(), batch->final());
                             txns_per_epoch.push_back(static_cast<size_t>(batch->txns_size()));
                           });
    int drain_calls = 0;
    if (with_drain) {
      runner.SetDrain([&] {
        ++drain_calls;
        return false;  // nothing owed
      });
    }
    runner.Start();
    runner.Join();
    std::lock_guard<std::mutex> lock(mu);
    ASSERT_FALSE(delivered.empty());
    EXPECT_TRUE(delivered.back().second) << "the last batch is final";
    EXPECT_GT(txns_per_epoch[2], 0u) << "epoch 3, the run's last, took new txns";
    if (with_drain) {
      ASSERT_EQ(delivered.size(), 4u);
      EXPECT_EQ(delivered.back().first, 4u) << "one epoch after the last that took txns";
      EXPECT_EQ(txns_per_epoch.back(), 0u) << "and it takes none";
      EXPECT_EQ(drain_calls, 1);
    } else {
      ASSERT_EQ(delivered.size(), 3u);
      EXPECT_EQ(delivered.back().first, 3u);
    }
  }
}

}  // namespace
}  // namespace paxflow
