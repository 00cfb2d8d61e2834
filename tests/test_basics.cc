#include "tests/test_basics.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>

namespace paxflow::testing {

TempDir::TempDir() {
  char pattern[] = "/tmp/paxflow-test.XXXXXX";
  const char* made = mkdtemp(pattern);
  path_ = made ? made : "/tmp";
}

TempDir::~TempDir() {
  if (path_.rfind("/tmp/paxflow-test.", 0) != 0) return;
  // A failed test's files (node logs, input logs) are worth a look.
  if (std::getenv("PAXFLOW_KEEP_FAILED_TEST_DIRS") && ::testing::Test::HasFailure()) {
    fprintf(stderr, "kept %s (PAXFLOW_KEEP_FAILED_TEST_DIRS)\n", path_.c_str());
    return;
  }
  std::string command = "rm -rf '" + path_ + "'";
  if (std::system(command.c_str()) != 0) perror("rm");
}

NodeParams TestParams(const std::string& preset, Mode mode, uint64_t run_epochs) {
  NodeParams params;
  params.engine.mode = mode;
  params.engine.epoch_ms = 2;
  params.engine.max_batch = 200;
  params.engine.workers = 2;
  params.engine.max_inflight = 400;
  params.engine.run_epochs = run_epochs;
  params.engine.progress_ms = 0;
  params.engine.peer_wait_s = 20;
  WorkloadParams& w = params.workload;
  w.workload = preset;
  w.records = 3000;
  w.value_size = 24;
  w.hot_records = 5;
  w.ops_per_ro_txn = 20;
  w.ops_per_rw_txn = 6;
  if (preset == "bank" || preset == "bank-ltx") {
    w.application = "bank";
    w.bank_accounts = 60;
    w.audit_fraction = 0.2;
    if (preset == "bank-ltx") {
      w.ltx_fraction = 0.03;
      w.ltx_ops = 8;
    }
  } else if (preset == "long" || preset == "long-scan" || preset == "report") {
    // Long txns often, beside short ones: small updates or scans whose
    // areas cover enough keys that short txns are deferred and reads wait
    // every few epochs, or reports over 10% of the keys.
    w.distribution = "uniform";
    w.ro_fraction = 0.1;
    w.read_proportion = 0.5;
    w.ltx_fraction = 0.02;
    if (preset == "report") {
      w.long_kind = "report";
      w.report_fraction = 0.1;
    } else {
      w.ltx_ops = 60;
      w.long_kind = preset == "long" ? "update" : "scan";
      w.scan_length = 300;
    }
  } else if (preset == "bom") {
    // Small trees (1 + 3 + 9 parts), re-linked often: walks change under
    // the LTXs, and calvin mode's reconnaissance is now and then out of date.
    w.application = "bom";
    w.bom_products = 60;
    w.bom_fanout = 3;
    w.bom_levels = 3;
    w.ro_fraction = 0;
    w.ops_per_rw_txn = 2;
    w.ltx_fraction = 0.03;
  } else if (preset == "tpcc" || preset == "ch" || preset == "tpcc-dlvltx") {
    // TPC-C at its specified sizes; the test sets the warehouses (a
    // multiple of its partitions). ch: two analytic streams beside it.
    // tpcc-dlvltx: Delivery as an LTX (--tpcc_delivery_ltx).
    w.application = "tpcc";
    w.warehouses = 0;
    w.ch_streams = preset == "ch" ? 2 : 0;
    w.tpcc_delivery_ltx = preset == "tpcc-dlvltx";
  } else if (preset == "rmw") {
    w.ro_fraction = 0;
  } else if (preset == "ro") {
    w.ro_fraction = 1;
  } else {  // mixed
    w.ro_fraction = 0.5;
    w.read_proportion = 0.3;
  }
  return params;
}

std::string CaseName(std::initializer_list<std::string> parts) {
  std::string name;
  for (const std::string& part : parts) {
    if (!part.empty()) name += (name.empty() ? "" : "_") + part;
  }
  for (char& ch : name) {
    if (ch == '-') ch = '_';
  }
  return name;
}

}  // namespace paxflow::testing
