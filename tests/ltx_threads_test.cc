// The LTX lane with all its threads (scheduler, workers, LTX threads) in
// one process without sockets, so that ThreadSanitizer watches it too: the
// long workloads, records fed back into the next epochs, and the
// serialization-order oracle over every committed txn.
#include <gtest/gtest.h>

#include "tests/engine_harness.h"
#include "tests/result_log.h"
#include "tests/serial_reference.h"
#include "tests/test_basics.h"

namespace paxflow {
namespace {

struct ThreadsCase {
  Mode mode;
  uint32_t partitions;
  const char* preset;
};

class LtxThreadsTest : public ::testing::TestWithParam<ThreadsCase> {};

TEST_P(LtxThreadsTest, CommittedTxnsMatchASerialExecutionInTheirOrder) {
  const ThreadsCase c = GetParam();
  NodeParams params = testing::TestParams(c.preset, c.mode, 0);
  params.engine.max_batch = 60;
  params.engine.ltx_timeout = 200;
  if (c.partitions > 1) params.workload.multi_partition_pct = 30;
  testing::ResultLog results;
  testing::TempDir logs;
  testing::EngineHarness engine(params, c.partitions, &results, logs.path());
  ASSERT_TRUE(engine.RunLive(60));
  std::string error;
  const std::map<TxnId, bool> submitted = testing::SubmittedTxns(logs.path(), 0, &error);
  ASSERT_EQ(error, "");
  testing::OrderResult order =
      testing::ExecuteInPositionOrder(params.workload, c.partitions, results.all(), &submitted);
  ASSERT_EQ(order.error, "");
  EXPECT_EQ(order.digest, engine.DatabaseDigest());
  EXPECT_GT(order.long_txns, 2u) << "no long txn committed";
  EXPECT_EQ(results.invariant_failures(), 0);
  for (PartitionId p = 0; p < c.partitions; ++p) {
    EXPECT_EQ(engine.scheduler(p).Status().active_ltx, 0u) << "an LTX never resolved";
    EXPECT_EQ(engine.scheduler(p).Status().deferred, 0u) << "a deferred txn never ran";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, LtxThreadsTest,
    ::testing::Values(ThreadsCase{Mode::kPaxflow, 1, "long"},
                      ThreadsCase{Mode::kPaxflow, 3, "long-scan"},
                      ThreadsCase{Mode::kPaxflow, 3, "bank-ltx"},
                      ThreadsCase{Mode::kCalvin, 2, "long"}),
    [](const ::testing::TestParamInfo<ThreadsCase>& info) {
      return testing::CaseName({ModeName(info.param.mode),
                                std::to_string(info.param.partitions) + "p", info.param.preset});
    });

}  // namespace
}  // namespace paxflow
