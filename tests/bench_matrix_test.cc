// The benchmark matrix (report/bench_matrix.h): the runs it makes, the
// median of repeated runs, the Markdown table and the README section it
// rewrites.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "applications/workload.h"
#include "base/flags.h"
#include "report/bench_matrix.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

BenchRow Row(const std::string& label, const std::string& mode, uint64_t committed,
             uint64_t rss_mib) {
  BenchRow row;
  row.label = label;
  row.mode = mode;
  row.summary.seconds = 1;
  row.summary.kinds[kKindReadOnly].committed = committed;
  row.summary.peak_rss_bytes = rss_mib << 20;
  return row;
}

TEST(BenchMatrixTest, EveryPresetRunsCappedAndUncappedWithNodeFlagsOnly) {
  const std::vector<std::string> runs = MatrixRuns();
  std::set<std::string> presets;
  for (const std::string& run : runs) {
    const size_t colon = run.find(':');
    const std::string preset = run.substr(0, colon);
    ASSERT_NE(FindWorkloadPreset(preset), nullptr) << run;
    presets.insert(preset);
    // Every override names a node flag.
    const std::vector<std::string>& node_flags = NodeFlagNames();
    std::stringstream overrides(colon == std::string::npos ? "" : run.substr(colon + 1));
    std::string item;
    while (std::getline(overrides, item, ':')) {
      EXPECT_NE(std::find(node_flags.begin(), node_flags.end(), item.substr(0, item.find('='))),
                node_flags.end())
          << run;
    }
  }
  EXPECT_EQ(presets.size(), WorkloadPresets().size());
  for (const WorkloadPreset& preset : WorkloadPresets()) {
    EXPECT_NE(std::find(runs.begin(), runs.end(), preset.name + ":" + kUncappedOverrides),
              runs.end())
        << preset.name;
  }
}

TEST(BenchMatrixTest, MedianRunIsOneRealRun) {
  std::vector<BenchRow> tries = {Row("ro", "paxflow", 300, 10), Row("ro", "paxflow", 100, 20),
                                 Row("ro", "paxflow", 200, 30)};
  BenchRow median = MedianRun(tries);
  EXPECT_EQ(median.summary.Committed(), 200u);
  EXPECT_EQ(median.summary.peak_rss_bytes, uint64_t{30} << 20);
  tries.pop_back();
  EXPECT_EQ(MedianRun(tries).summary.Committed(), 100u) << "lower middle of an even count";
  tries[0].code = 1;
  EXPECT_EQ(MedianRun(tries).code, 1) << "a failed run is never hidden";
}

TEST(BenchMatrixTest, MarkdownTablePairsTheModes) {
  const std::string table =
      MarkdownTable({Row("ro", "calvin", 1000, 150), Row("ro", "paxflow", 5500, 170),
                     Row("rmw", "calvin", 2000, 140), Row("rmw", "paxflow", 2000, 160)},
                    "Measured here.");
  EXPECT_EQ(table.rfind("Measured here.\n", 0), 0u) << table;
  EXPECT_NE(table.find("| `ro` | 1,000 | 5,500 | 5.50x | 150 | 170 |"), std::string::npos)
      << table;
  EXPECT_NE(table.find("| `rmw` | 2,000 | 2,000 | 1.00x | 140 | 160 |"), std::string::npos)
      << table;
  EXPECT_LT(table.find("`ro`"), table.find("`rmw`")) << "workloads keep their order";
}

TEST(BenchMatrixTest, ReplacesOnlyTheMarkedSection) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/README.md";
  std::ofstream(path) << "# Title\n\n<!-- bench:begin -->\nold table\n<!-- bench:end -->\nafter\n";
  ASSERT_EQ(ReplaceMarkedSection(path, "new table\n"), "");
  EXPECT_EQ(ReadFile(path),
            "# Title\n\n<!-- bench:begin -->\nnew table\n<!-- bench:end -->\nafter\n");
  const std::string unmarked = dir.path() + "/other.md";
  std::ofstream(unmarked) << "no markers\n";
  EXPECT_NE(ReplaceMarkedSection(unmarked, "x").find("no section"), std::string::npos);
  EXPECT_EQ(ReadFile(unmarked), "no markers\n");
  EXPECT_NE(ReplaceMarkedSection(dir.path() + "/missing.md", "x"), "");
}

TEST(BenchMatrixTest, MachineDescriptionNamesTheCpus) {
  EXPECT_NE(MachineDescription().find("vCPUs"), std::string::npos) << MachineDescription();
}

}  // namespace
}  // namespace paxflow
