// Determinism, our strongest oracle: the same input log gives the same
// state digest with any number of workers, in replays and on replicas, and
// that digest equals a plain serial execution of the log.
#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "applications/ycsb.h"
#include "backend/single_version_store.h"
#include "node/node.h"
#include "replay/replay.h"
#include "scheduler/scheduler.h"
#include "sequencer/input_log.h"
#include "tests/result_log.h"
#include "tests/serial_reference.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::InProcessCluster;
using testing::MakeConfig;
using testing::ResultLog;
using testing::SerialExecute;
using testing::TempDir;
using testing::TestParams;

struct Topology {
  Mode mode;
  uint32_t partitions;
  const char* preset;
  uint32_t sequencers_per_node = 1;
};

class DeterminismTest : public ::testing::TestWithParam<Topology> {};

TEST_P(DeterminismTest, RunReplaysAndSerialExecutionAgree) {
  const Topology topology = GetParam();
  TempDir logs;
  // TPC-C's txns are bigger (a New-Order holds ~10 lines): more epochs,
  // for enough of them on a loaded machine (938 in 80 epochs once in CI).
  const bool tpcc = std::string(topology.preset) == "tpcc";
  NodeParams params = TestParams(topology.preset, topology.mode, /*run_epochs=*/tpcc ? 160 : 80);
  params.engine.log_dir = logs.path();
  params.engine.sequencers_per_node = topology.sequencers_per_node;
  if (topology.partitions > 1) params.workload.multi_partition_pct = 30;
  if (params.workload.application == "tpcc") params.workload.warehouses = topology.partitions;
  ResultLog results;
  InProcessCluster cluster(MakeConfig("det", topology.partitions, 1, "inproc"), params, &results);
  ASSERT_EQ(cluster.Start(), "");
  ASSERT_TRUE(cluster.WaitFinished(120000));
  const uint64_t live = cluster.DatabaseDigest();
  // Every sequencer of every node fed the order, and the logs say how many.
  std::set<uint32_t> sequencers;
  for (TxnId id : results.order()) sequencers.insert(TxnSequencer(id));
  EXPECT_EQ(sequencers.size(), topology.partitions * topology.sequencers_per_node);
  InputLogReader log;
  ASSERT_EQ(log.Open(InputLogPath(logs.path(), 0)), "");
  EXPECT_EQ(log.header().sequencers(), topology.partitions * topology.sequencers_per_node);

  testing::SerialResult serial = SerialExecute(logs.path(), params.workload);
  ASSERT_EQ(serial.error, "");
  ASSERT_GT(serial.txns, 1000u) << "too little work to prove anything";
  EXPECT_EQ(live, serial.digest) << "live run differs from serial execution of its log";
  EXPECT_EQ(results.invariant_failures(), 0);
  for (uint32_t p = 0; p < topology.partitions; ++p) {
    // The application's consistency conditions (TPC-C's) on the final state.
    EXPECT_EQ(cluster.node(p).Summary().consistency, "") << "partition " << p;
  }
  // Calvin: under locks a read-only txn sees the state at its position.
  // PaxFlow: it is serialized at the start of its epoch, reading the
  // snapshot of the newest earlier epoch with read-write work.
  const auto read_only = results.read_only();
  ASSERT_EQ(read_only.size(), serial.ro_at_position.size());
  for (const auto& [id, result] : read_only) {
    if (topology.mode == Mode::kCalvin) {
      ASSERT_EQ(result.checksum, serial.ro_at_position.at(id)) << "txn " << TxnIdString(id);
    } else {
      ASSERT_EQ(result.checksum, serial.ro_at_epoch_start.at(id)) << "txn " << TxnIdString(id);
      ASSERT_EQ(result.read_version, serial.ReadVersionFor(TxnEpoch(id)));
    }
  }
  for (uint32_t workers : {1u, 2u, 4u}) {
    NodeParams replay_params = params;
    replay_params.engine.workers = workers;
    ReplayResult replay = ReplayLogs(logs.path(), 0, replay_params);
    ASSERT_EQ(replay.error, "");
    EXPECT_EQ(replay.digest, live) << workers << " worker(s)";
    EXPECT_EQ(replay.txns, serial.txns) << workers << " worker(s)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Topologies, DeterminismTest,
    ::testing::Values(Topology{Mode::kCalvin, 1, "mixed"}, Topology{Mode::kCalvin, 3, "mixed"},
                      Topology{Mode::kCalvin, 3, "bank"}, Topology{Mode::kCalvin, 1, "rmw"},
                      Topology{Mode::kPaxflow, 1, "mixed"}, Topology{Mode::kPaxflow, 3, "mixed"},
                      Topology{Mode::kPaxflow, 1, "bank"}, Topology{Mode::kPaxflow, 3, "bank"},
                      // Several sequencers per node (--sequencers_per_node).
                      Topology{Mode::kPaxflow, 1, "mixed", 3}, Topology{Mode::kCalvin, 3, "mixed", 2},
                      Topology{Mode::kPaxflow, 3, "bank", 2},
                      // TPC-C: dependent txns planned by OLLP (restarts
                      // resubmitted), remote New-Order lines and Payments
                      // on 3 partitions. (Both modes pass on both; one
                      // each keeps make test short.)
                      Topology{Mode::kCalvin, 1, "tpcc"}, Topology{Mode::kPaxflow, 3, "tpcc"}),
    [](const ::testing::TestParamInfo<Topology>& info) {
      return std::string(ModeName(info.param.mode)) + "_" +
             std::to_string(info.param.partitions) + "p_" + info.param.preset +
             (info.param.sequencers_per_node > 1
                  ? "_" + std::to_string(info.param.sequencers_per_node) + "seq"
                  : "");
    });

TEST(DeterminismTest, ReplicasReachTheSameDigest) {
  NodeParams params = TestParams("mixed", Mode::kPaxflow, 60);
  params.workload.multi_partition_pct = 25;
  InProcessCluster cluster(MakeConfig("replicas", 2, 2, "inproc"), params);
  ASSERT_EQ(cluster.Start(), "");
  ASSERT_TRUE(cluster.WaitFinished(120000));
  // Node id = replica * partitions + partition.
  EXPECT_EQ(cluster.node(0).FinalDigest(), cluster.node(2).FinalDigest());
  EXPECT_EQ(cluster.node(1).FinalDigest(), cluster.node(3).FinalDigest());
  EXPECT_NE(cluster.node(0).FinalDigest(), cluster.node(1).FinalDigest());
  EXPECT_GT(cluster.node(0).Summary().Committed(), 0u);
}

// One partition, two replicas, LTXs in place: each replica runs every LTX
// itself (no commit record carries its writes) and reaches the same state.
TEST(DeterminismTest, ReplicasRunningLtxsInPlaceReachTheSameDigest) {
  NodeParams params = TestParams("long", Mode::kPaxflow, 120);
  ASSERT_TRUE(params.engine.ltx_in_place);
  InProcessCluster cluster(MakeConfig("replicas-ltx", 1, 2, "inproc"), params);
  ASSERT_EQ(cluster.Start(), "");
  ASSERT_TRUE(cluster.WaitFinished(120000));
  EXPECT_EQ(cluster.node(0).FinalDigest(), cluster.node(1).FinalDigest());
  EXPECT_GT(cluster.node(0).Summary().kinds[kKindLong].committed, 3u) << "no LTX committed";
  EXPECT_EQ(cluster.node(0).Summary().ltx.deferrals, 0u);
}

class DigestTest : public ::testing::TestWithParam<Mode> {};

TEST_P(DigestTest, DigestAtRequestedEpochsMatchesSerial) {
  TempDir logs;
  NodeParams params = TestParams("mixed", GetParam(), 50);
  params.engine.log_dir = logs.path();
  params.engine.digest_epochs = {10, 25, 40};
  InProcessCluster cluster(MakeConfig("digests", 1, 1, "inproc"), params);
  ASSERT_EQ(cluster.Start(), "");
  ASSERT_TRUE(cluster.WaitFinished(120000));
  testing::SerialResult serial = SerialExecute(logs.path(), params.workload);
  ASSERT_EQ(serial.error, "");
  const RunSummary summary = cluster.node(0).Summary();
  ASSERT_EQ(summary.epoch_digests.size(), 3u);
  for (const auto& [epoch, digest] : summary.epoch_digests) {
    EXPECT_EQ(digest, serial.digest_after_epoch.at(epoch)) << "epoch " << epoch;
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, DigestTest, ::testing::Values(Mode::kCalvin, Mode::kPaxflow),
                         [](const ::testing::TestParamInfo<Mode>& info) {
                           return std::string(ModeName(info.param));
                         });

// Drives a scheduler by hand: batches of three sequencers arrive out of
// order, every txn read-modify-writes the same key, so the order of their
// results is the execution order.
class StepScheduler : public ::testing::Test {
 protected:
  StepScheduler() {
    params_.records = 100;
    params_.value_size = 16;
    app_ = std::make_unique<YcsbApplication>(params_);
    store_ = std::make_unique<SingleVersionStore>(0, 1, 100, 16);
    std::string value;
    for (Key key = 0; key < 100; ++key) {
      YcsbApplication::InitialValue(key, 16, &value);
      store_->Load(key, value);
    }
    stats_ = std::make_unique<NodeStats>(4);
    SchedulerOptions options;
    options.mode = Mode::kCalvin;
    options.sequencers = 3;
    options.workers = 1;
    scheduler_ = std::make_unique<Scheduler>(options, store_.get(), app_.get(), nullptr,
                                             stats_.get(), &results_);
  }

  std::unique_ptr<Batch> MakeBatch(Epoch epoch, uint32_t sequencer, int txns) {
    auto batch = std::make_unique<Batch>();
    batch->set_epoch(epoch);
    batch->set_sequencer(sequencer);
    batch->set_has_rw(true);
    for (int i = 0; i < txns; ++i) {
      Txn* txn = batch->add_txns();
      txn->set_id(MakeTxnId(epoch, sequencer, static_cast<uint32_t>(i)));
      txn->set_procedure(YcsbApplication::kReadModifyWrite);
      txn->set_txn_class(RW);
      txn->add_read_write_set(7);
    }
    return batch;
  }

  void Drain() {
    for (int i = 0; i < 100; ++i) {
      scheduler_->Step();
      scheduler_->RunQueuedWork();
    }
  }

  WorkloadParams params_;
  std::unique_ptr<YcsbApplication> app_;
  std::unique_ptr<SingleVersionStore> store_;
  std::unique_ptr<NodeStats> stats_;
  ResultLog results_;
  std::unique_ptr<Scheduler> scheduler_;
};

TEST_F(StepScheduler, OutOfOrderBatchesRunInGlobalOrder) {
  scheduler_->DeliverBatch(MakeBatch(2, 1, 3));
  scheduler_->DeliverBatch(MakeBatch(1, 2, 2));
  scheduler_->DeliverBatch(MakeBatch(2, 0, 2));
  scheduler_->DeliverBatch(MakeBatch(1, 0, 3));
  Drain();
  EXPECT_TRUE(results_.order().empty()) << "epoch 1 ran without sequencer 1's batch";
  scheduler_->DeliverBatch(MakeBatch(2, 2, 1));
  scheduler_->DeliverBatch(MakeBatch(1, 1, 2));
  Drain();
  const std::vector<TxnId> order = results_.order();
  ASSERT_EQ(order.size(), 13u);
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
  EXPECT_EQ(scheduler_->Status().published_epoch, 2u);
}

TEST_F(StepScheduler, DuplicateAndStaleBatchesAreDropped) {
  scheduler_->DeliverBatch(MakeBatch(1, 0, 1));
  scheduler_->DeliverBatch(MakeBatch(1, 0, 1));  // duplicate
  scheduler_->DeliverBatch(MakeBatch(1, 1, 1));
  scheduler_->DeliverBatch(MakeBatch(1, 2, 1));
  Drain();
  scheduler_->DeliverBatch(MakeBatch(1, 2, 1));  // stale: epoch 1 already ran
  Drain();
  EXPECT_EQ(results_.order().size(), 3u);
  // Sent again (a peer catching up, a restarted sequencer): harmless, so
  // counted apart from garbage.
  EXPECT_EQ(scheduler_->Status().repeated_messages, 2u);
  EXPECT_EQ(scheduler_->dropped_messages(), 0u);
}

}  // namespace
}  // namespace paxflow
