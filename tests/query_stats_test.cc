// CH's query figures: a long txn's latency and the age of its snapshot when
// its result came back (node/query_stats.h), and their way through the
// summary's JSON (what paxflow-bench reads back).
#include <gtest/gtest.h>

#include "base/summary.h"
#include "node/query_stats.h"

namespace paxflow {
namespace {

TEST(QueryStatsTest, SnapshotAgeIsCountedFromItsEpochsCloseInEpochsAndMicros) {
  QueryStats stats;
  for (Epoch e = 1; e <= 12; ++e) stats.NoteClosed(e, 1000000 + 10000 * static_cast<int64_t>(e));
  // Read the snapshot of epoch 8 (closed at 1,080,000 us), submitted at
  // 1,050,000, back at 1,125,000 with epoch 12 closed last.
  stats.Record("ch-q1", 8, 1050000, 1125000);
  std::vector<ProcedureSummary> procedures(2);
  procedures[0].name = "ch-q1";
  procedures[1].name = "tpcc-new-order";
  stats.Fill(&procedures);
  EXPECT_EQ(procedures[0].latency_us.count(), 1u);
  EXPECT_NEAR(static_cast<double>(procedures[0].latency_us.max()), 75000, 75000 * 0.04);
  EXPECT_NEAR(static_cast<double>(procedures[0].age_us.max()), 45000, 45000 * 0.04);
  EXPECT_EQ(procedures[0].age_epochs.max(), 4u);
  EXPECT_EQ(procedures[1].latency_us.count(), 0u) << "short txns are not recorded";
  // An epoch whose close time was overwritten (the ring moved on) counts
  // its age in epochs only.
  stats.NoteClosed(8 + 4096, 2000000);
  stats.Record("ch-q1", 8, 1050000, 2100000);
  stats.Fill(&procedures);
  EXPECT_EQ(procedures[0].latency_us.count(), 2u);
  EXPECT_EQ(procedures[0].age_us.count(), 1u);
  EXPECT_EQ(procedures[0].age_epochs.count(), 2u);
}

TEST(QueryStatsTest, SummariesCarryQueryHistogramsThroughJsonAndCombineThem) {
  RunSummary node;
  node.seconds = 2;
  ProcedureSummary q3;
  q3.name = "ch-q3";
  q3.committed = 3;
  q3.latency_us.Record(40000);
  q3.age_us.Record(50000);
  q3.age_epochs.Record(5);
  node.procedures.push_back(q3);
  RunSummary back;
  ASSERT_EQ(RunSummary::FromJson(node.ToJson(), &back), "");
  ASSERT_EQ(back.procedures.size(), 1u);
  EXPECT_EQ(back.procedures[0].age_epochs.Quantile(0.5), 5u);
  EXPECT_EQ(back.procedures[0].latency_us.count(), 1u);
  const RunSummary total = RunSummary::Combine({back, back});
  EXPECT_EQ(total.procedures[0].age_us.count(), 2u);
  EXPECT_NE(back.ToText().find("ch-q3 latency"), std::string::npos) << back.ToText();
}

}  // namespace
}  // namespace paxflow
