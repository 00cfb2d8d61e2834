// The request-id window of replicated input (node/request_dedup.h): a pure
// function of the records it is fed, in order; no threads, no clock.
#include "node/request_dedup.h"

#include <gtest/gtest.h>

#include "backend/multi_version_store.h"
#include "checkpoint/checkpoint.h"
#include "common/types.h"
#include "test_util.h"

namespace paxflow {
namespace {

using Verdict = RequestDedup::Verdict;

Txn ClientTxn(uint64_t id, uint64_t client, uint64_t seq, uint32_t attempt = 0) {
  Txn txn;
  txn.set_id(id);
  txn.set_txn_class(RW);
  txn.set_client_request_id(1);
  txn.set_client_id(client);
  txn.set_client_seq(seq);
  txn.set_attempt(attempt);
  txn.add_read_write_set(seq);  // it writes: only writers are deduplicated
  return txn;
}

TEST(RequestDedupTest, ARequestIdRunsOnceAndItsRetryNamesTheOriginal) {
  RequestDedup dedup;
  uint64_t original = 0;
  EXPECT_EQ(dedup.Decide(7, 1, 0, 100, &original), Verdict::kNew);
  EXPECT_EQ(dedup.Decide(7, 2, 0, 101, &original), Verdict::kNew);
  EXPECT_EQ(dedup.Decide(8, 1, 0, 102, &original), Verdict::kNew);  // another client
  EXPECT_EQ(dedup.Decide(7, 1, 0, 200, &original), Verdict::kDuplicate);
  EXPECT_EQ(original, 100u);
  EXPECT_EQ(dedup.Decide(8, 1, 0, 201, &original), Verdict::kDuplicate);
  EXPECT_EQ(original, 102u);
  // Out of order within the window is fine.
  EXPECT_EQ(dedup.Decide(7, 5, 0, 202, &original), Verdict::kNew);
  EXPECT_EQ(dedup.Decide(7, 3, 0, 203, &original), Verdict::kNew);
  EXPECT_EQ(dedup.Decide(7, 3, 0, 204, &original), Verdict::kDuplicate);
  EXPECT_EQ(original, 203u);
}

TEST(RequestDedupTest, SeqsBelowTheWindowAreTooOldAndMemoryStaysBounded) {
  RequestDedup dedup({/*window=*/16, /*clients=*/4});
  uint64_t original = 0;
  for (uint64_t seq = 1; seq <= 1000; ++seq) {
    ASSERT_EQ(dedup.Decide(1, seq, 0, seq, &original), Verdict::kNew);
    EXPECT_LT(dedup.remembered(), 2u * 16);
  }
  // Within the window: remembered; at or below highest - window: too old,
  // whether it ran or not.
  EXPECT_EQ(dedup.Decide(1, 1000 - 15, 0, 9, &original), Verdict::kDuplicate);
  EXPECT_EQ(dedup.Decide(1, 1000 - 16, 0, 9, &original), Verdict::kTooOld);
  EXPECT_EQ(dedup.Decide(1, 3, 0, 9, &original), Verdict::kTooOld);
}

TEST(RequestDedupTest, TheClientSeenLeastRecentlyIsForgottenFirst) {
  RequestDedup dedup({/*window=*/16, /*clients=*/3});
  uint64_t original = 0;
  EXPECT_EQ(dedup.Decide(1, 1, 0, 10, &original), Verdict::kNew);
  EXPECT_EQ(dedup.Decide(2, 1, 0, 11, &original), Verdict::kNew);
  EXPECT_EQ(dedup.Decide(3, 1, 0, 12, &original), Verdict::kNew);
  EXPECT_EQ(dedup.Decide(1, 2, 0, 13, &original), Verdict::kNew);  // 1 seen again: 2 is oldest
  EXPECT_EQ(dedup.Decide(4, 1, 0, 14, &original), Verdict::kNew);  // forgets 2
  EXPECT_EQ(dedup.clients(), 3u);
  EXPECT_EQ(dedup.Decide(1, 1, 0, 15, &original), Verdict::kDuplicate);
  EXPECT_EQ(dedup.Decide(3, 1, 0, 16, &original), Verdict::kDuplicate);
  // Client 2 was forgotten: its retry is not recognised (documented).
  EXPECT_EQ(dedup.Decide(2, 1, 0, 17, &original), Verdict::kNew);
}

TEST(RequestDedupTest, AnOllpRestartReplacesTheAttemptThatGaveUp) {
  RequestDedup dedup;
  uint64_t original = 0;
  EXPECT_EQ(dedup.Decide(5, 1, 0, 100, &original), Verdict::kNew);
  EXPECT_EQ(dedup.Decide(5, 1, 1, 150, &original), Verdict::kNew);  // planned again
  EXPECT_EQ(dedup.Decide(5, 1, 0, 200, &original), Verdict::kDuplicate);  // a client retry
  EXPECT_EQ(original, 150u);
}

// A record as Node cuts it: one batch per partition; txn 2 is a
// multi-partition txn (in both batches).
SequencedEpoch Record(Epoch epoch, const std::vector<std::vector<Txn>>& batches) {
  SequencedEpoch record;
  record.set_epoch(epoch);
  for (size_t p = 0; p < batches.size(); ++p) {
    Batch* batch = record.add_batches();
    batch->set_epoch(epoch);
    batch->set_partition(static_cast<uint32_t>(p));
    for (const Txn& txn : batches[p]) *batch->add_txns() = txn;
  }
  return record;
}

TEST(RequestDedupTest, FilterDropsARetryFromEveryBatchOnceAndAlikeOnEveryMember) {
  Txn generated;
  generated.set_id(50);
  generated.set_txn_class(RW);
  const std::vector<SequencedEpoch> log = {
      Record(1, {{ClientTxn(10, 9, 1), generated, ClientTxn(11, 9, 2)}, {ClientTxn(11, 9, 2)}}),
      // Epoch 2: the retries of (9,1) and (9,2), the latter on both
      // partitions, a new (9,3), and (9,3) again in the same record.
      Record(2, {{ClientTxn(20, 9, 1), ClientTxn(21, 9, 2), ClientTxn(22, 9, 3),
                  ClientTxn(23, 9, 3)},
                 {ClientTxn(21, 9, 2), ClientTxn(22, 9, 3)}}),
  };
  // Two members fed the same log decide the same.
  RequestDedup first, second;
  std::vector<std::string> filtered[2];
  std::vector<RequestDedup::Dropped> dropped;
  for (int member = 0; member < 2; ++member) {
    RequestDedup& dedup = member == 0 ? first : second;
    for (SequencedEpoch record : log) {
      dropped.clear();
      dedup.Filter(&record, &dropped);
      filtered[member].push_back(record.SerializeAsString());
      if (record.epoch() == 1) {
        EXPECT_TRUE(dropped.empty());
        EXPECT_EQ(record.batches(0).txns_size(), 3);
        EXPECT_EQ(record.batches(1).txns_size(), 1);
      } else {
        ASSERT_EQ(dropped.size(), 3u);  // 20, 21 (once, though in two batches), 23
        EXPECT_EQ(dropped[0].txn.id(), 20u);
        EXPECT_EQ(dropped[0].original, 10u);
        EXPECT_EQ(dropped[1].txn.id(), 21u);
        EXPECT_EQ(dropped[1].original, 11u);
        EXPECT_EQ(dropped[2].txn.id(), 23u);
        EXPECT_EQ(dropped[2].original, 22u);
        ASSERT_EQ(record.batches(0).txns_size(), 1);
        EXPECT_EQ(record.batches(0).txns(0).id(), 22u);
        ASSERT_EQ(record.batches(1).txns_size(), 1);
        EXPECT_EQ(record.batches(1).txns(0).id(), 22u);
      }
    }
  }
  EXPECT_EQ(filtered[0], filtered[1]);
}

// A request that writes nothing (an audit) retried after a lost answer
// runs again, and leaves the window as it was: the client gets its reads.
TEST(RequestDedupTest, ARetriedReadOnlyRequestRunsAgainAndIsNotRemembered) {
  Txn audit = ClientTxn(30, 7, 1);
  audit.clear_read_write_set();
  audit.add_read_set(5);
  Txn retry = audit;
  retry.set_id(31);
  RequestDedup dedup;
  std::vector<RequestDedup::Dropped> dropped;
  SequencedEpoch first = Record(1, {{audit}});
  SequencedEpoch again = Record(2, {{retry}});
  EXPECT_EQ(dedup.Filter(&first, &dropped), 0u);
  EXPECT_EQ(dedup.Filter(&again, &dropped), 0u);
  EXPECT_TRUE(dropped.empty());
  ASSERT_EQ(again.batches(0).txns_size(), 1);
  EXPECT_EQ(again.batches(0).txns(0).id(), 31u);
  EXPECT_EQ(dedup.remembered(), 0u);
  // A writer with the same client id is still deduplicated.
  SequencedEpoch write = Record(3, {{ClientTxn(32, 7, 2)}});
  SequencedEpoch rewrite = Record(4, {{ClientTxn(33, 7, 2)}});
  EXPECT_EQ(dedup.Filter(&write, &dropped), 0u);
  EXPECT_EQ(dedup.Filter(&rewrite, &dropped), 1u);
}

// An LTX record as the lane and the client port make them: a begin (with
// the request id of its LtxRequest, and a write area), a long scan, or the
// lane's commit of LTX `ltx_id` (no request id).
Txn LtxTxn(uint64_t id, LtxRecordKind kind, uint64_t client, uint64_t seq, uint64_t ltx_id = 0) {
  Txn txn;
  txn.set_id(id);
  txn.set_txn_class(LTX);
  txn.set_client_request_id(client ? 1 : 0);
  txn.set_client_id(client);
  txn.set_client_seq(seq);
  txn.mutable_ltx()->set_kind(kind);
  txn.mutable_ltx()->set_ltx_id(ltx_id);
  if (kind == LTX_BEGIN) {
    txn.add_read_write_set(1);
    KeyRange* area = txn.mutable_ltx()->add_write_area();
    area->set_lo(1);
    area->set_hi(1);
  }
  return txn;
}

// A retried LTX that writes does not begin again: its begin record is
// dropped from every partition's batch (begins go to all) and names the
// first; a retried long scan runs again; the lane's records pass; LTXs and
// txns share a client's sequence numbers. Two members decide alike.
TEST(RequestDedupTest, ARetriedLtxDoesNotBeginAgainAndAScanRunsAgain) {
  const std::vector<SequencedEpoch> log = {
      Record(1, {{LtxTxn(10, LTX_BEGIN, 9, 1), LtxTxn(11, LTX_SCAN, 9, 2)},
                 {LtxTxn(10, LTX_BEGIN, 9, 1), LtxTxn(11, LTX_SCAN, 9, 2)}}),
      // The retries of both, the first LTX's commit, a txn of the same
      // client under the LTX's seq (a duplicate too) and under a new one.
      Record(2, {{LtxTxn(20, LTX_BEGIN, 9, 1), LtxTxn(21, LTX_SCAN, 9, 2),
                  LtxTxn(22, LTX_COMMIT, 0, 0, 10), ClientTxn(23, 9, 1), ClientTxn(24, 9, 3)},
                 {LtxTxn(20, LTX_BEGIN, 9, 1), LtxTxn(21, LTX_SCAN, 9, 2)}}),
  };
  std::vector<std::string> filtered[2];
  for (int member = 0; member < 2; ++member) {
    RequestDedup dedup;
    for (SequencedEpoch record : log) {
      std::vector<RequestDedup::Dropped> dropped;
      dedup.Filter(&record, &dropped);
      filtered[member].push_back(record.SerializeAsString());
      if (record.epoch() == 1) {
        EXPECT_TRUE(dropped.empty());
        continue;
      }
      ASSERT_EQ(dropped.size(), 2u);
      EXPECT_EQ(dropped[0].txn.id(), 20u);  // once, though in both batches
      EXPECT_EQ(dropped[0].verdict, Verdict::kDuplicate);
      EXPECT_EQ(dropped[0].original, 10u);
      EXPECT_EQ(dropped[1].txn.id(), 23u);
      EXPECT_EQ(dropped[1].original, 10u);
      std::vector<uint64_t> kept;
      for (const Txn& txn : record.batches(0).txns()) kept.push_back(txn.id());
      EXPECT_EQ(kept, (std::vector<uint64_t>{21, 22, 24}));
      ASSERT_EQ(record.batches(1).txns_size(), 1);
      EXPECT_EQ(record.batches(1).txns(0).id(), 21u);
    }
    EXPECT_EQ(dedup.remembered(), 2u);  // (9,1) the LTX, (9,3) the txn; no scan
  }
  EXPECT_EQ(filtered[0], filtered[1]);
}

// What a restarted member does: the window saved with a checkpoint
// (written to a real checkpoint file and read back), then the records of
// its sequencer log after it, which hold only what ran (already filtered),
// then live records. It must filter on exactly as a member that never
// stopped. The retry in epoch 2 makes the difference: were a dropped txn
// to refresh its client's recency, the member that never stopped would
// evict client 2 at epoch 3 and the restarted one client 1.
TEST(RequestDedupTest, AWindowSavedWithACheckpointAndReplayedFiltersAsALiveOne) {
  const RequestDedup::Limits limits{/*window=*/16, /*clients=*/2};
  const std::vector<SequencedEpoch> log = {
      Record(1, {{ClientTxn(10, 1, 1), ClientTxn(11, 2, 1)}}),
      Record(2, {{ClientTxn(20, 1, 1)}}),  // a retry: dropped
      Record(3, {{ClientTxn(30, 3, 1)}}),  // a third client: one is forgotten
      Record(4, {{ClientTxn(41, 2, 1), ClientTxn(42, 3, 1)}}),
      Record(5, {{ClientTxn(50, 1, 1)}}),
  };
  RequestDedup live(limits);
  std::vector<std::string> live_filtered;
  std::vector<RequestDedup::Dropped> dropped;
  RequestWindow saved;
  for (SequencedEpoch record : log) {
    live.Filter(&record, &dropped);
    live_filtered.push_back(record.SerializeAsString());
    if (record.epoch() == 1) {
      live.Save(&saved);
      saved.set_epoch(1);
    }
  }
  // Client 1 (whose txn ran least recently: its retry changed nothing) was
  // forgotten: the retries of 2 and 3 in epoch 4 are dropped, that of 1 in
  // epoch 5 runs.
  SequencedEpoch fourth, fifth;
  ASSERT_TRUE(fourth.ParseFromString(live_filtered[3]));
  EXPECT_EQ(fourth.batches(0).txns_size(), 0);
  ASSERT_TRUE(fifth.ParseFromString(live_filtered[4]));
  EXPECT_EQ(fifth.batches(0).txns_size(), 1);

  // Through a checkpoint file.
  testing::TempDir dir;
  GcOptions gc;
  MultiVersionStore store(0, 1, 16, 8, gc);
  const size_t slot = store.RegisterThread();
  CheckpointHeader header;
  header.set_node_id(1);
  header.set_partitions(1);
  header.set_epoch(1);
  *header.mutable_request_window() = saved;
  CheckpointStats written;
  ASSERT_EQ(WriteCheckpoint(dir.path(), header, &store, slot, &written), "");
  CheckpointHeader read;
  ASSERT_EQ(ReadCheckpointHeader(written.path, &read), "");
  EXPECT_EQ(read.request_window().epoch(), 1u);

  RequestDedup restarted(limits);
  ASSERT_EQ(restarted.Load(read.request_window()), "");
  RequestWindow again;
  restarted.Save(&again);
  again.set_epoch(1);
  EXPECT_EQ(again.client_size(), saved.client_size());
  EXPECT_EQ(restarted.remembered(), 2u);
  for (size_t i = 1; i < log.size(); ++i) {
    SequencedEpoch record;
    if (i < 2) {
      // Epoch 2 from its sequencer log: the filtered record (the retry is
      // not in it); nothing more is dropped.
      ASSERT_TRUE(record.ParseFromString(live_filtered[i]));
      EXPECT_EQ(restarted.Filter(&record, &dropped), 0u);
    } else {
      record = log[i];  // live, from the consensus log
      restarted.Filter(&record, &dropped);
    }
    EXPECT_EQ(record.SerializeAsString(), live_filtered[i]) << "epoch " << record.epoch();
  }

  // A damaged window is refused, and leaves an empty one.
  RequestWindow damaged = saved;
  damaged.mutable_client(0)->add_seq(99);
  EXPECT_NE(restarted.Load(damaged), "");
  EXPECT_EQ(restarted.clients(), 0u);
}

}  // namespace
}  // namespace paxflow
