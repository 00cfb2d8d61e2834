// Multi-process clusters: paxflow-cluster launching paxflow-node processes
// on 127.0.0.1, on ports picked free by the test.
#include <gtest/gtest.h>

#include <fstream>

#include "common/json.h"
#include "deployment/summary.h"
#include "tests/serial_reference.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::BinaryDir;
using testing::MakeConfig;
using testing::ReadFile;
using testing::RunProcess;
using testing::TempDir;

std::string WriteConfig(const TempDir& dir, const ClusterConfig& config) {
  const std::string path = dir.path() + "/cluster.conf";
  std::ofstream(path) << testing::ToText(config);
  return path;
}

TEST(ClusterTest, BankAuditsSeeTheRightTotalAndDigestMatchesSerial) {
  TempDir dir;
  ClusterConfig config = MakeConfig("bank", 3, 1, "tcp");
  const std::string config_path = WriteConfig(dir, config);
  std::string output;
  const int rc = RunProcess({BinaryDir() + "/paxflow-cluster", "--config=" + config_path,
                             "--workload=bank", "--mode=calvin", "--run_epochs=150",
                             "--epoch_ms=5", "--bank_accounts=90", "--audit_fraction=0.2",
                             "--progress_ms=0", "--logs=" + dir.path() + "/logs",
                             "--log_dir=" + dir.path() + "/input"},
                            &output);
  ASSERT_EQ(rc, 0) << output;
  RunSummary cluster;
  ASSERT_EQ(RunSummary::FromJson(ReadFile(dir.path() + "/logs/cluster.json"), &cluster), "");
  EXPECT_EQ(cluster.invariant_failures, 0u) << output;
  EXPECT_GT(cluster.kinds[kKindReadOnly].committed, 100u) << "too few audits ran";
  EXPECT_GT(cluster.kinds[kKindReadWrite].committed, 1000u) << "too few transfers ran";

  WorkloadParams bank;
  bank.workload = "bank";
  bank.application = "bank";
  bank.bank_accounts = 90;
  bank.audit_fraction = 0.2;
  testing::SerialResult serial = testing::SerialExecute(dir.path() + "/input", bank);
  ASSERT_EQ(serial.error, "");
  EXPECT_EQ(serial.txns, cluster.Committed());
  EXPECT_EQ(serial.digest, cluster.digest) << "cluster digest differs from serial execution";
}

}  // namespace
}  // namespace paxflow
