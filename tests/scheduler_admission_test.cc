// The scheduler's admission bound (SchedulerOptions::max_unpublished_epochs,
// paxflow mode's --max_unpublished_epochs): epochs past the bound wait in
// the buffer and are admitted as publication moves, and the bound changes
// only when work runs, never what it does. One scheduler is driven step by
// step; its workers run only when the test says.
#include <gtest/gtest.h>

#include "applications/ycsb.h"
#include "backend/multi_version_store.h"
#include "partition/partition_setup.h"
#include "scheduler/scheduler.h"
#include "tests/result_log.h"

namespace paxflow {
namespace {

class NoPeers : public PeerSender {
 public:
  void SendRemoteReads(PartitionId, const RemoteReads&) override {}
  void SendLtxReadRequest(PartitionId, const LtxReadRequest&) override {}
  void SendLtxReadReply(PartitionId, const LtxReadReply&) override {}
};

constexpr Epoch kEpochs = 8;

class SchedulerAdmissionTest : public ::testing::Test {
 protected:
  // A scheduler admitting at most `bound` epochs past publication (0: no
  // bound), with epochs 1..kEpochs delivered: each one read-modify-writes
  // keys e and e+1, so every epoch waits for the one before it.
  void Start(uint32_t bound) {
    scheduler_.reset();
    results_ = std::make_unique<testing::ResultLog>();
    params_.records = 100;
    params_.value_size = 16;
    app_ = std::make_unique<YcsbApplication>(params_);
    store_ = std::make_unique<MultiVersionStore>(0, 1, 100, 16, GcOptions{});
    LoadPartition(*app_, 0, 1, store_.get());
    stats_ = std::make_unique<NodeStats>(4);
    SchedulerOptions options;
    options.mode = Mode::kPaxflow;
    options.sequencers = 1;
    options.workers = 1;
    options.max_unpublished_epochs = bound;
    scheduler_ = std::make_unique<Scheduler>(options, store_.get(), app_.get(), &peers_,
                                             stats_.get(), results_.get());
    for (Epoch e = 1; e <= kEpochs; ++e) {
      auto batch = std::make_unique<Batch>();
      batch->set_epoch(e);
      batch->set_sequencer(0);
      batch->set_partition(0);
      batch->set_has_rw(true);
      batch->set_final(e == kEpochs);
      Txn* txn = batch->add_txns();
      txn->set_id(MakeTxnId(e, 0, 0));
      txn->set_procedure(YcsbApplication::kReadModifyWrite);
      txn->set_txn_class(RW);
      txn->add_read_write_set(e);
      txn->add_read_write_set(e + 1);
      scheduler_->DeliverBatch(std::move(batch));
    }
  }
  // Runs everything to the end; returns the order txns finished in.
  std::vector<TxnId> Finish() {
    for (int i = 0; i < 100 && results_->order().size() < kEpochs; ++i) {
      scheduler_->Step();
      scheduler_->RunQueuedWork();
    }
    scheduler_->Step();
    return results_->order();
  }
  std::string Value(Key key) {
    std::string_view value;
    EXPECT_TRUE(store_->ReadLatest(0, key, &value));
    return std::string(value);
  }

  WorkloadParams params_;
  std::unique_ptr<YcsbApplication> app_;
  std::unique_ptr<MultiVersionStore> store_;
  std::unique_ptr<NodeStats> stats_;
  NoPeers peers_;
  std::unique_ptr<testing::ResultLog> results_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(SchedulerAdmissionTest, EpochsPastTheBoundWaitUntilPublicationMoves) {
  Start(/*bound=*/2);
  scheduler_->Step();
  // Nothing ran, so nothing is published: epochs 1 and 2 are admitted, the
  // rest wait in the buffer.
  EXPECT_EQ(scheduler_->Status().published_epoch, 0u);
  EXPECT_EQ(scheduler_->Status().admitted_epoch, 2u);
  EXPECT_EQ(scheduler_->Status().buffered_epochs, kEpochs - 2);
  // Epoch 1's txn runs and finishes: 1 is published, 3 comes in.
  scheduler_->RunQueuedWork();
  scheduler_->Step();
  EXPECT_EQ(scheduler_->Status().published_epoch, 1u);
  EXPECT_EQ(scheduler_->Status().admitted_epoch, 3u);
  EXPECT_EQ(Finish().size(), kEpochs);
  EXPECT_EQ(scheduler_->Status().admitted_epoch, kEpochs);
  EXPECT_EQ(scheduler_->Status().published_epoch, kEpochs);
}

TEST_F(SchedulerAdmissionTest, WithoutABoundEveryEpochIsAdmittedAtOnce) {
  Start(/*bound=*/0);
  scheduler_->Step();
  EXPECT_EQ(scheduler_->Status().published_epoch, 0u);
  EXPECT_EQ(scheduler_->Status().admitted_epoch, kEpochs);
}

TEST_F(SchedulerAdmissionTest, TheBoundChangesWhenTxnsRunNotWhatTheyDo) {
  Start(/*bound=*/1);
  const std::vector<TxnId> bounded_order = Finish();
  std::vector<std::string> bounded_values;
  for (Key key = 1; key <= kEpochs + 1; ++key) bounded_values.push_back(Value(key));

  Start(/*bound=*/0);
  EXPECT_EQ(Finish(), bounded_order);
  for (Key key = 1; key <= kEpochs + 1; ++key) {
    EXPECT_EQ(Value(key), bounded_values[key - 1]) << "key " << key;
  }
}

}  // namespace
}  // namespace paxflow
