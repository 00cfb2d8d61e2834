// Unit tests for the epoch merger (scheduler/epoch_merger.h).
#include "scheduler/epoch_merger.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "txn.pb.h"

namespace paxflow {
namespace {

std::unique_ptr<Batch> MakeBatch(Epoch epoch, uint32_t sequencer, bool has_rw = false,
                                 int64_t close_time_us = 0, bool final = false,
                                 int txns = 0) {
  auto batch = std::make_unique<Batch>();
  batch->set_epoch(epoch);
  batch->set_sequencer(sequencer);
  batch->set_has_rw(has_rw);
  batch->set_close_time_us(close_time_us);
  batch->set_final(final);
  for (int i = 0; i < txns; ++i) {
    batch->add_txns()->set_id(MakeTxnId(epoch, sequencer, static_cast<uint32_t>(i)));
  }
  return batch;
}

TEST(EpochMergerTest, OutOfOrderBatchesAreReleasedInEpochThenSequencerOrder) {
  constexpr uint32_t kSequencers = 3;
  constexpr Epoch kEpochs = 20;
  std::vector<std::unique_ptr<Batch>> batches;
  for (Epoch e = 1; e <= kEpochs; ++e) {
    for (uint32_t s = 0; s < kSequencers; ++s) {
      batches.push_back(MakeBatch(e, s, false, 0, false, static_cast<int>(e % 3 + s)));
    }
  }
  std::mt19937 rng(3);
  std::shuffle(batches.begin(), batches.end(), rng);

  EpochMerger merger(kSequencers);
  std::vector<std::pair<Epoch, uint32_t>> released;
  for (auto& batch : batches) {
    ASSERT_EQ(merger.Add(std::move(batch)), "");
    while (auto merged = merger.TakeReady()) {
      ASSERT_EQ(merged->batches.size(), kSequencers);
      for (uint32_t s = 0; s < kSequencers; ++s) {
        ASSERT_NE(merged->batches[s], nullptr);
        EXPECT_EQ(merged->batches[s]->epoch(), merged->epoch);
        EXPECT_EQ(merged->batches[s]->sequencer(), s);
        released.emplace_back(merged->epoch, s);
      }
      EXPECT_FALSE(merged->last);  // nobody sent a final batch
    }
  }
  ASSERT_EQ(released.size(), kEpochs * kSequencers);
  EXPECT_TRUE(std::is_sorted(released.begin(), released.end()));
  EXPECT_EQ(released.front(), std::make_pair(Epoch{1}, 0u));
  EXPECT_EQ(merger.next_epoch(), kEpochs + 1);
  EXPECT_EQ(merger.buffered_epochs(), 0u);
  EXPECT_FALSE(merger.Finished());
}

// A stall report names the first epoch a batch is missing for, even when
// the epochs before it are complete and only wait to be admitted (held at
// max_unpublished_epochs).
TEST(EpochMergerTest, FirstIncompleteEpochLooksPastCompleteOnes) {
  EpochMerger merger(2);
  EXPECT_EQ(merger.FirstIncompleteEpoch(), 1u);
  EXPECT_EQ(merger.MissingFor(1), (std::vector<uint32_t>{0, 1}));
  for (Epoch e = 1; e <= 3; ++e) {
    ASSERT_EQ(merger.Add(MakeBatch(e, 0)), "");
    ASSERT_EQ(merger.Add(MakeBatch(e, 1)), "");
  }
  ASSERT_EQ(merger.Add(MakeBatch(4, 0)), "");  // sequencer 1 went silent after 3
  EXPECT_TRUE(merger.MissingForNextEpoch().empty());
  EXPECT_EQ(merger.FirstIncompleteEpoch(), 4u);
  EXPECT_EQ(merger.MissingFor(4), (std::vector<uint32_t>{1}));
  ASSERT_NE(merger.TakeReady(), nullptr);  // epoch 1 admitted; still 4
  EXPECT_EQ(merger.FirstIncompleteEpoch(), 4u);
}

TEST(EpochMergerTest, EpochWaitsForEverySequencer) {
  EpochMerger merger(3);
  EXPECT_EQ(merger.TakeReady(), nullptr);
  EXPECT_EQ(merger.MissingForNextEpoch(), (std::vector<uint32_t>{0, 1, 2}));

  ASSERT_EQ(merger.Add(MakeBatch(1, 2)), "");
  ASSERT_EQ(merger.Add(MakeBatch(2, 0)), "");
  ASSERT_EQ(merger.Add(MakeBatch(2, 1)), "");
  ASSERT_EQ(merger.Add(MakeBatch(2, 2)), "");
  // Epoch 2 is complete, but it must not overtake the incomplete epoch 1.
  EXPECT_EQ(merger.TakeReady(), nullptr);
  EXPECT_EQ(merger.MissingForNextEpoch(), (std::vector<uint32_t>{0, 1}));

  ASSERT_EQ(merger.Add(MakeBatch(1, 0)), "");
  EXPECT_EQ(merger.TakeReady(), nullptr);
  EXPECT_EQ(merger.MissingForNextEpoch(), (std::vector<uint32_t>{1}));

  ASSERT_EQ(merger.Add(MakeBatch(1, 1)), "");
  EXPECT_TRUE(merger.MissingForNextEpoch().empty());
  auto first = merger.TakeReady();
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->epoch, 1u);
  auto second = merger.TakeReady();
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->epoch, 2u);
  EXPECT_EQ(merger.TakeReady(), nullptr);
  EXPECT_EQ(merger.MissingForNextEpoch(), (std::vector<uint32_t>{0, 1, 2}));
}

TEST(EpochMergerTest, FirstEpochIsConfigurable) {
  EpochMerger merger(1, 5);
  EXPECT_EQ(merger.next_epoch(), 5u);
  EXPECT_NE(merger.Add(MakeBatch(4, 0)), "");
  ASSERT_EQ(merger.Add(MakeBatch(5, 0)), "");
  auto merged = merger.TakeReady();
  ASSERT_NE(merged, nullptr);
  EXPECT_EQ(merged->epoch, 5u);
}

TEST(EpochMergerTest, RejectsDuplicateStaleAndUnknownBatches) {
  EpochMerger merger(2);
  ASSERT_EQ(merger.Add(MakeBatch(1, 0, false, 0, false, 2)), "");
  const std::string duplicate = merger.Add(MakeBatch(1, 0, true, 0, false, 5));
  EXPECT_NE(duplicate.find("duplicate"), std::string::npos) << duplicate;

  ASSERT_EQ(merger.Add(MakeBatch(1, 1)), "");
  auto merged = merger.TakeReady();
  ASSERT_NE(merged, nullptr);
  // The rejected duplicate did not replace the first batch.
  EXPECT_EQ(merged->batches[0]->txns_size(), 2);
  EXPECT_FALSE(merged->has_rw);

  const std::string stale = merger.Add(MakeBatch(1, 1));
  EXPECT_NE(stale, "");
  EXPECT_NE(stale.find("epoch 1"), std::string::npos) << stale;
  EXPECT_NE(stale.find("already"), std::string::npos) << stale;
  EXPECT_EQ(merger.buffered_epochs(), 0u);

  const std::string unknown = merger.Add(MakeBatch(2, 2));
  EXPECT_NE(unknown.find("no such sequencer"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("sequencer 2"), std::string::npos) << unknown;
  EXPECT_EQ(merger.MissingForNextEpoch(), (std::vector<uint32_t>{0, 1}));
}

TEST(EpochMergerTest, FinalBatchMakesLaterEpochsEmptyForThatSequencer) {
  EpochMerger merger(2);
  ASSERT_EQ(merger.Add(MakeBatch(1, 0)), "");
  ASSERT_EQ(merger.Add(MakeBatch(1, 1, false, 0, /*final=*/true)), "");
  EXPECT_FALSE(merger.Finished());

  auto e1 = merger.TakeReady();
  ASSERT_NE(e1, nullptr);
  EXPECT_EQ(e1->epoch, 1u);
  EXPECT_FALSE(e1->last);
  ASSERT_NE(e1->batches[1], nullptr);
  EXPECT_TRUE(e1->batches[1]->final());

  // Sequencer 1 stopped: epoch 2 needs only sequencer 0.
  EXPECT_EQ(merger.MissingForNextEpoch(), (std::vector<uint32_t>{0}));
  const std::string after_final = merger.Add(MakeBatch(2, 1));
  EXPECT_NE(after_final.find("finished at epoch 1"), std::string::npos) << after_final;

  ASSERT_EQ(merger.Add(MakeBatch(2, 0, true, 10)), "");
  auto e2 = merger.TakeReady();
  ASSERT_NE(e2, nullptr);
  EXPECT_EQ(e2->epoch, 2u);
  ASSERT_EQ(e2->batches.size(), 2u);
  EXPECT_NE(e2->batches[0], nullptr);
  EXPECT_EQ(e2->batches[1], nullptr);
  EXPECT_TRUE(e2->has_rw);
  EXPECT_FALSE(e2->last);
  EXPECT_FALSE(merger.Finished());

  ASSERT_EQ(merger.Add(MakeBatch(3, 0, false, 0, /*final=*/true)), "");
  EXPECT_FALSE(merger.Finished());  // epoch 3 not taken yet
  auto e3 = merger.TakeReady();
  ASSERT_NE(e3, nullptr);
  EXPECT_EQ(e3->epoch, 3u);
  EXPECT_TRUE(e3->last);
  EXPECT_TRUE(merger.Finished());
  EXPECT_EQ(merger.TakeReady(), nullptr);
  EXPECT_TRUE(merger.MissingForNextEpoch().empty());
  EXPECT_NE(merger.Add(MakeBatch(4, 0)), "");
}

TEST(EpochMergerTest, EpochsPastEveryFinalButTheLastAreEmptyNotAwaited) {
  EpochMerger merger(3);
  // Sequencer 2 stops at 1, sequencer 0 at 2, sequencer 1 goes on to 4.
  ASSERT_EQ(merger.Add(MakeBatch(1, 2, false, 0, true)), "");
  ASSERT_EQ(merger.Add(MakeBatch(1, 0)), "");
  ASSERT_EQ(merger.Add(MakeBatch(2, 0, false, 0, true)), "");
  for (Epoch e = 1; e <= 3; ++e) ASSERT_EQ(merger.Add(MakeBatch(e, 1)), "") << e;
  ASSERT_EQ(merger.Add(MakeBatch(4, 1, false, 0, true)), "");

  std::vector<std::vector<bool>> present;
  std::vector<bool> last;
  while (auto merged = merger.TakeReady()) {
    std::vector<bool> row;
    for (const auto& batch : merged->batches) row.push_back(batch != nullptr);
    present.push_back(row);
    last.push_back(merged->last);
  }
  ASSERT_EQ(present.size(), 4u);
  EXPECT_EQ(present[0], (std::vector<bool>{true, true, true}));
  EXPECT_EQ(present[1], (std::vector<bool>{true, true, false}));
  EXPECT_EQ(present[2], (std::vector<bool>{false, true, false}));
  EXPECT_EQ(present[3], (std::vector<bool>{false, true, false}));
  EXPECT_EQ(last, (std::vector<bool>{false, false, false, true}));
  EXPECT_TRUE(merger.Finished());
}

TEST(EpochMergerTest, FinalBatchContradictedByALaterBatchIsRejected) {
  EpochMerger merger(2);
  ASSERT_EQ(merger.Add(MakeBatch(3, 0)), "");
  const std::string error = merger.Add(MakeBatch(2, 0, false, 0, /*final=*/true));
  EXPECT_NE(error.find("final"), std::string::npos) << error;
  // The rejected final must not count: sequencer 0 is still expected for epoch 1.
  EXPECT_EQ(merger.MissingForNextEpoch(), (std::vector<uint32_t>{0, 1}));
  ASSERT_EQ(merger.Add(MakeBatch(1, 1, false, 0, true)), "");
  ASSERT_EQ(merger.Add(MakeBatch(1, 0)), "");
  ASSERT_NE(merger.TakeReady(), nullptr);
  EXPECT_EQ(merger.TakeReady(), nullptr);  // epoch 2 still awaits sequencer 0
  EXPECT_FALSE(merger.Finished());
}

TEST(EpochMergerTest, AllSequencersFinalAtOnceFinishesAfterThatEpoch) {
  EpochMerger merger(2);
  ASSERT_EQ(merger.Add(MakeBatch(1, 1, false, 0, true)), "");
  ASSERT_EQ(merger.Add(MakeBatch(1, 0, false, 0, true)), "");
  EXPECT_FALSE(merger.Finished());
  auto merged = merger.TakeReady();
  ASSERT_NE(merged, nullptr);
  EXPECT_TRUE(merged->last);
  EXPECT_TRUE(merger.Finished());
  EXPECT_EQ(merger.TakeReady(), nullptr);
}

TEST(EpochMergerTest, HasRwIsTheOrAndCloseTimeTheMaxOfTheBatches) {
  EpochMerger merger(3);
  ASSERT_EQ(merger.Add(MakeBatch(1, 0, false, 500)), "");
  ASSERT_EQ(merger.Add(MakeBatch(1, 1, false, 900)), "");
  ASSERT_EQ(merger.Add(MakeBatch(1, 2, false, 700)), "");
  ASSERT_EQ(merger.Add(MakeBatch(2, 0, false, 1000)), "");
  ASSERT_EQ(merger.Add(MakeBatch(2, 1, true, 1200)), "");
  ASSERT_EQ(merger.Add(MakeBatch(2, 2, false, 1100)), "");

  auto e1 = merger.TakeReady();
  ASSERT_NE(e1, nullptr);
  EXPECT_FALSE(e1->has_rw);
  EXPECT_EQ(e1->close_time_us, 900);
  auto e2 = merger.TakeReady();
  ASSERT_NE(e2, nullptr);
  EXPECT_TRUE(e2->has_rw);
  EXPECT_EQ(e2->close_time_us, 1200);
}

}  // namespace
}  // namespace paxflow
