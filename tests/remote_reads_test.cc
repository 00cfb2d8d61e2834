// The multi-partition read exchange under bad input: malformed reads, reads
// from a partition that reads nothing for the txn, and repeated reads are
// dropped and counted, whether they arrive before or after the txn's local
// part; the txn runs once the well-formed reads arrive. Two schedulers are
// driven step by step; the reads between them go through the test.
#include <gtest/gtest.h>

#include "applications/ycsb.h"
#include "backend/single_version_store.h"
#include "common/clock.h"
#include "partition/partition_setup.h"
#include "scheduler/scheduler.h"
#include "tests/result_log.h"

namespace paxflow {
namespace {

class CapturingPeers : public PeerSender {
 public:
  void SendRemoteReads(PartitionId to, const RemoteReads& reads) override {
    sent.emplace_back(to, reads);
  }
  void SendLtxReadRequest(PartitionId, const LtxReadRequest&) override {}
  void SendLtxReadReply(PartitionId, const LtxReadReply&) override {}
  std::vector<std::pair<PartitionId, RemoteReads>> sent;
};

class RemoteReadsTest : public ::testing::Test {
 protected:
  RemoteReadsTest() {
    params_.records = 100;
    params_.value_size = 16;
    app_ = std::make_unique<YcsbApplication>(params_);
    for (PartitionId p = 0; p < 2; ++p) {
      stores_.push_back(std::make_unique<SingleVersionStore>(p, 2, 100, 16));
      LoadPartition(*app_, p, 2, stores_.back().get());
      stats_.push_back(std::make_unique<NodeStats>(4));
      SchedulerOptions options;
      options.mode = Mode::kCalvin;
      options.partition = p;
      options.partitions = 2;
      options.sequencers = 1;
      options.workers = 1;
      schedulers_.push_back(std::make_unique<Scheduler>(options, stores_[p].get(), app_.get(),
                                                        &peers_, stats_[p].get(), &results_));
    }
    // One txn of epoch 1: partition 0 read-modify-writes key 0 and needs
    // partition 1's read of key 1.
    Batch batch;
    batch.set_epoch(1);
    batch.set_sequencer(0);
    batch.set_has_rw(true);
    batch.set_final(true);
    Txn* txn = batch.add_txns();
    txn->set_id(MakeTxnId(1, 0, 0));
    txn->set_procedure(YcsbApplication::kReadModifyWrite);
    txn->set_txn_class(RW);
    txn->add_read_set(1);
    txn->add_read_write_set(0);
    for (PartitionId p = 0; p < 2; ++p) {
      auto copy = std::make_unique<Batch>(batch);
      copy->set_partition(p);
      schedulers_[p]->DeliverBatch(std::move(copy));
    }
  }

  void Drain(PartitionId p) {
    for (int i = 0; i < 5; ++i) {
      schedulers_[p]->Step();
      schedulers_[p]->RunQueuedWork();
    }
  }
  // Partition 1 reads and sends; returns its message to partition 0.
  RemoteReads ReadsFromPartition1() {
    Drain(1);
    EXPECT_EQ(peers_.sent.size(), 1u);
    EXPECT_EQ(peers_.sent.at(0).first, 0u);
    return peers_.sent.at(0).second;
  }
  bool Ran() const { return !results_.order().empty(); }

  WorkloadParams params_;
  std::unique_ptr<YcsbApplication> app_;
  std::vector<std::unique_ptr<SingleVersionStore>> stores_;
  std::vector<std::unique_ptr<NodeStats>> stats_;
  CapturingPeers peers_;
  testing::ResultLog results_;
  std::vector<std::unique_ptr<Scheduler>> schedulers_;
};

TEST_F(RemoteReadsTest, MalformedReadsAfterTheLocalPartAreDropped) {
  const RemoteReads good = ReadsFromPartition1();
  Drain(0);  // parks, waiting for partition 1
  RemoteReads bad = good;
  bad.add_position(99);
  bad.add_value("x");
  bad.add_found(true);
  schedulers_[0]->DeliverRemoteReads(RemoteReads(bad));
  Drain(0);
  EXPECT_FALSE(Ran());
  EXPECT_EQ(schedulers_[0]->dropped_messages(), 1u);
  schedulers_[0]->DeliverRemoteReads(RemoteReads(good));
  Drain(0);
  EXPECT_TRUE(Ran());
  EXPECT_EQ(schedulers_[0]->Status().published_epoch, 1u);
  schedulers_[0]->DeliverRemoteReads(RemoteReads(good));  // once more: the txn ran
  Drain(0);
  EXPECT_EQ(results_.order().size(), 1u);
  EXPECT_EQ(schedulers_[0]->dropped_messages(), 2u);
}

TEST_F(RemoteReadsTest, MalformedReadsBeforeTheLocalPartAreDropped) {
  const RemoteReads good = ReadsFromPartition1();
  RemoteReads bad = good;
  bad.add_position(99);
  bad.add_value("x");
  bad.add_found(true);
  RemoteReads stranger = good;
  stranger.set_from_partition(0);  // partition 0 reads nothing remote for itself
  RemoteReads mismatched = good;
  mismatched.add_found(true);
  schedulers_[0]->DeliverRemoteReads(RemoteReads(bad));
  schedulers_[0]->DeliverRemoteReads(RemoteReads(stranger));
  schedulers_[0]->DeliverRemoteReads(RemoteReads(mismatched));
  Drain(0);
  EXPECT_FALSE(Ran()) << "ran on reads that do not fit the txn";
  EXPECT_GE(schedulers_[0]->dropped_messages(), 2u);
  schedulers_[0]->DeliverRemoteReads(RemoteReads(good));
  Drain(0);
  EXPECT_TRUE(Ran());
  EXPECT_EQ(schedulers_[0]->Status().published_epoch, 1u);
}

// Both partitions drive to the end: the write landed once, with the read.
TEST_F(RemoteReadsTest, WellFormedReadsRunTheTxnOnce) {
  const RemoteReads good = ReadsFromPartition1();
  schedulers_[0]->DeliverRemoteReads(RemoteReads(good));
  Drain(0);
  ASSERT_TRUE(Ran());
  EXPECT_EQ(schedulers_[0]->dropped_messages(), 0u);
  EXPECT_TRUE(schedulers_[0]->finished());
  EXPECT_TRUE(schedulers_[1]->finished());
}

// A txn parked for a partition's reads is reported overdue once it has
// waited the given time, then again only after as long again; reads sent
// again (a lost message asked for twice) and the original are harmless
// together: the txn runs once and nothing counts as a bad message.
TEST_F(RemoteReadsTest, OverdueReadsAreReportedAndRepeatsAreHarmless) {
  const RemoteReads good = ReadsFromPartition1();
  const int64_t parked = NowMicros();
  Drain(0);  // parks, waiting for partition 1
  const int64_t wait = 1000000;
  EXPECT_TRUE(schedulers_[0]->OverdueRemoteReads(parked, wait, 10).empty()) << "too early";
  EXPECT_TRUE(schedulers_[1]->OverdueRemoteReads(NowMicros() + 2 * wait, wait, 10).empty())
      << "partition 1 waits for nothing";
  const int64_t later = NowMicros() + wait;
  std::vector<OverdueReads> overdue = schedulers_[0]->OverdueRemoteReads(later, wait, 10);
  ASSERT_EQ(overdue.size(), 1u);
  EXPECT_EQ(overdue[0].from, 1u);
  EXPECT_EQ(overdue[0].first_epoch, 1u);
  EXPECT_EQ(overdue[0].last_epoch, 1u);
  ASSERT_EQ(overdue[0].txns.size(), 1u);
  EXPECT_EQ(overdue[0].txns[0], good.txn_id());
  EXPECT_TRUE(schedulers_[0]->OverdueRemoteReads(later + wait / 2, wait, 10).empty())
      << "asked again before the retry time";
  EXPECT_EQ(schedulers_[0]->OverdueRemoteReads(later + wait, wait, 10).size(), 1u);

  RemoteReads again = good;
  again.set_resent(true);
  schedulers_[0]->DeliverRemoteReads(RemoteReads(again));  // the answer to the request
  schedulers_[0]->DeliverRemoteReads(RemoteReads(again));  // ... to the next one
  Drain(0);
  ASSERT_TRUE(Ran());
  EXPECT_TRUE(schedulers_[0]->OverdueRemoteReads(later + 10 * wait, wait, 10).empty());
  schedulers_[0]->DeliverRemoteReads(RemoteReads(again));  // a third, after the txn ran
  Drain(0);
  EXPECT_EQ(results_.order().size(), 1u);
  EXPECT_EQ(schedulers_[0]->dropped_messages(), 0u) << "a repeat counted as a bad message";
  EXPECT_EQ(schedulers_[0]->repeated_messages(), 2u);
  EXPECT_TRUE(schedulers_[0]->finished());
}

}  // namespace
}  // namespace paxflow
