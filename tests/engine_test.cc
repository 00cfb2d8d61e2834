// PaxFlow's contract checked on the in-process engine (no sockets, so this
// suite also runs under ThreadSanitizer): read-only txns see exactly the
// snapshot of their epoch's start, the state equals a serial execution, and
// calvin mode reaches the same state on the same input.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>

#include "backend/multi_version_store.h"
#include "tests/engine_harness.h"
#include "tests/result_log.h"
#include "tests/serial_reference.h"
#include "tests/test_basics.h"

namespace paxflow {
namespace {

using testing::EngineHarness;
using testing::ResultLog;
using testing::TempDir;

struct EngineCase {
  const char* preset;
  uint32_t partitions;
  GcPolicy gc;
};

class EngineTest : public ::testing::TestWithParam<EngineCase> {};

TEST_P(EngineTest, PaxflowMatchesSerialExecutionAndCalvin) {
  const EngineCase c = GetParam();
  TempDir logs;
  NodeParams params = testing::TestParams(c.preset, Mode::kPaxflow, 0);
  params.engine.gc = c.gc;
  params.engine.max_batch = 60;
  if (c.partitions > 1) params.workload.multi_partition_pct = 30;
  const Epoch epochs = 40;

  ResultLog results;
  uint64_t paxflow_digest = 0;
  uint64_t waited = 0;
  {
    EngineHarness paxflow(params, c.partitions, &results, logs.path());
    ASSERT_TRUE(paxflow.Run(epochs));
    paxflow_digest = paxflow.DatabaseDigest();
    for (PartitionId p = 0; p < c.partitions; ++p) {
      waited += paxflow.scheduler(p).Status().waited_ro;
    }
  }
  testing::SerialResult serial = testing::SerialExecute(logs.path(), params.workload);
  ASSERT_EQ(serial.error, "");
  ASSERT_EQ(serial.last_epoch, epochs);
  EXPECT_EQ(paxflow_digest, serial.digest);
  EXPECT_GT(waited, 0u) << "no read-only txn went through the waiting queue";
  EXPECT_EQ(results.invariant_failures(), 0);
  const auto read_only = results.read_only();
  EXPECT_EQ(read_only.size(), serial.ro_at_epoch_start.size());
  for (const auto& [id, result] : read_only) {
    ASSERT_EQ(result.read_version, serial.ReadVersionFor(TxnEpoch(id))) << TxnIdString(id);
    ASSERT_EQ(result.checksum, serial.ro_at_epoch_start.at(id)) << TxnIdString(id);
  }

  params.engine.mode = Mode::kCalvin;
  EngineHarness calvin(params, c.partitions, nullptr);
  ASSERT_TRUE(calvin.Run(epochs));
  EXPECT_EQ(calvin.DatabaseDigest(), paxflow_digest) << "calvin and paxflow diverge";
}

INSTANTIATE_TEST_SUITE_P(
    Workloads, EngineTest,
    ::testing::Values(EngineCase{"mixed", 1, GcPolicy::kEpo},
                      EngineCase{"mixed", 3, GcPolicy::kEpoRead},
                      EngineCase{"bank", 1, GcPolicy::kEpoRead},
                      EngineCase{"bank", 3, GcPolicy::kBackground},
                      EngineCase{"mixed", 2, GcPolicy::kBackground}),
    [](const ::testing::TestParamInfo<EngineCase>& info) {
      std::string name = std::string(info.param.preset) + "_" +
                         std::to_string(info.param.partitions) + "p_" +
                         GcPolicyName(info.param.gc);
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return name;
    });

// A digest asked for an old epoch that no snapshot pins any more is taken
// at the next pinned epoch (whose snapshot is whole) and says so; either
// way it is exactly the serial state at the epoch it reports.
TEST(EngineDigestTest, PaxflowDigestOfAnOldEpochIsExactAtTheEpochItReports) {
  TempDir logs;
  NodeParams params = testing::TestParams("mixed", Mode::kPaxflow, 0);
  params.engine.max_batch = 60;
  EngineHarness engine(params, 1, nullptr, logs.path());
  ASSERT_TRUE(engine.Run(30));
  testing::SerialResult serial = testing::SerialExecute(logs.path(), params.workload);
  ASSERT_EQ(serial.error, "");
  for (Epoch asked : {Epoch{3}, Epoch{30}}) {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    Epoch at = 0;
    uint64_t digest = 0;
    engine.scheduler(0).RequestDigest(asked, [&](Epoch epoch, uint64_t value) {
      std::lock_guard<std::mutex> lock(mu);
      at = epoch;
      digest = value;
      done = true;
      cv.notify_all();
    });
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done; }));
    EXPECT_GE(at, asked);
    // Epoch 3's snapshot is long unpinned: the clamp must have moved it.
    if (asked == 3) {
      EXPECT_GT(at, asked);
    }
    EXPECT_EQ(digest, serial.digest_after_epoch.at(at)) << "asked " << asked << ", got " << at;
  }
}

}  // namespace
}  // namespace paxflow
