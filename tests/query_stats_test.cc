// CH's query figures: a long txn's latency and the age of its snapshot when
// its result came back (node/query_stats.h), short txns' latency by
// procedure, their way through the summary's JSON (what paxflow-bench reads
// back) and paxflow-bench's CH plots.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "base/summary.h"
#include "node/query_stats.h"
#include "report/report_plots.h"
#include "tests/test_util.h"

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
  EXPECT_EQ(procedures[1].latency_us.count(), 0u) << "nothing recorded for it yet";
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

// Short txns (TPC-C's five) get their latency by procedure, no snapshot
// age; the summary prints and writes their percentiles; paxflow-bench's
// plots get one CDF panel per CH query for latency and for freshness.
TEST(QueryStatsTest, ShortTxnsGetLatencyPercentilesAndQueriesTheirOwnPlots) {
  QueryStats stats;
  for (Epoch e = 1; e <= 12; ++e) stats.NoteClosed(e, 1000000 + 10000 * static_cast<int64_t>(e));
  for (int64_t ms = 1; ms <= 100; ++ms) stats.RecordLatency("tpcc-payment", 0, ms * 1000);
  stats.Record("ch-q1", 8, 1050000, 1125000);
  stats.Record("ch-q6", 9, 1050000, 1135000);
  RunSummary run;
  run.seconds = 1;
  for (const char* name : {"tpcc-payment", "ch-q1", "ch-q6"}) {
    ProcedureSummary p;
    p.name = name;
    p.committed = 1;
    run.procedures.push_back(p);
  }
  stats.Fill(&run.procedures);
  const ProcedureSummary& payment = run.procedures[0];
  EXPECT_EQ(payment.latency_us.count(), 100u);
  EXPECT_EQ(payment.age_epochs.count(), 0u);
  EXPECT_NEAR(static_cast<double>(payment.latency_us.Quantile(0.95)), 95000, 95000 * 0.04);
  const SummaryFile file = run.ToFile();
  EXPECT_NEAR(static_cast<double>(file.procedures(0).latency_p99_us()), 99000, 99000 * 0.04);
  EXPECT_TRUE(file.procedures(0).age_epochs().empty());
  EXPECT_FALSE(file.procedures(1).age_epochs().empty());
  EXPECT_NE(run.ToText().find("tpcc-payment latency (ms) p50 "), std::string::npos) << run.ToText();
  EXPECT_NE(run.ToText().find("p95 "), std::string::npos);

  testing::TempDir dir;
  std::vector<BenchRow> rows = {{"ch", "calvin", run, 0}, {"ch", "paxflow", run, 0}};
  const PlotOutcome plots = WritePlots(rows, dir.path());  // gnuplot may be missing: data stays
  for (const char* name : {"ch_latency_cdf.dat", "ch_freshness_cdf.dat"}) {
    std::ifstream in(dir.path() + "/" + name);
    std::stringstream text;
    text << in.rdbuf();
    for (const char* query : {"ch-q1", "ch-q6"}) {
      for (const char* mode : {"calvin", "paxflow"}) {
        EXPECT_NE(text.str().find(std::string(query) + " " + (name[3] == 'l' ? "latency" : "freshness") +
                                  ", workload ch, mode " + mode),
                  std::string::npos)
            << name << ":\n" << text.str();
      }
    }
    EXPECT_EQ(text.str().find("tpcc-payment"), std::string::npos) << "a short txn in " << name;
  }
  if (plots.error.empty()) {
    EXPECT_NE(std::find(plots.pngs.begin(), plots.pngs.end(), dir.path() + "/ch_freshness.png"),
              plots.pngs.end());
  }
}

// Workers record short txns' latencies at once, each into its own shard
// as a rule: the summary has every sample of every thread, merged.
TEST(QueryStatsTest, LatenciesRecordedFromManyThreadsAreAllInTheSummary) {
  QueryStats stats;
  constexpr int kThreads = 6, kSamples = 1000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&stats, t] {
      for (int i = 0; i < kSamples; ++i) {
        stats.RecordLatency("bom-update", 0, 1000 * (1 + t));
        if (i % 100 == 0) stats.Record("bom-rollup", 0, 0, 5000);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  std::vector<ProcedureSummary> procedures(3);
  procedures[0].name = "bom-update";
  procedures[1].name = "bom-rollup";
  procedures[2].name = "never-recorded";
  stats.Fill(&procedures);
  EXPECT_EQ(procedures[0].latency_us.count(), static_cast<uint64_t>(kThreads * kSamples));
  EXPECT_NEAR(static_cast<double>(procedures[0].latency_us.Quantile(1.0)), 1000.0 * kThreads,
              1000.0 * kThreads * 0.04);
  EXPECT_EQ(procedures[1].latency_us.count(), static_cast<uint64_t>(kThreads * kSamples / 100));
  EXPECT_EQ(procedures[1].age_epochs.count(), static_cast<uint64_t>(kThreads * kSamples / 100));
  EXPECT_EQ(procedures[2].latency_us.count(), 0u);
}

}  // namespace
}  // namespace paxflow
