#include "applications/workload.h"

#include <cmath>

#include "applications/bank.h"
#include "applications/bom.h"
#include "applications/kv_procedures.h"
#include "applications/tpcc.h"
#include "applications/ycsb.h"

namespace paxflow {
namespace {

std::string OutOfRange(const std::string& name, const std::string& value,
                       const std::string& range) {
  return "workload parameter " + name + "=" + value + " is out of range (" + range + ")";
}

bool IsFraction(double x) { return std::isfinite(x) && x >= 0.0 && x <= 1.0; }

}  // namespace

std::string WorkloadParams::Validate(uint32_t partitions) const {
  if (partitions == 0) return "a cluster needs at least one partition";
  if (application != "ycsb" && application != "bank" && application != "bom" &&
      application != "tpcc") {
    return "unknown application '" + application + "' (expected ycsb, bank, bom or tpcc)";
  }
  if (!IsFraction(ltx_fraction)) {
    return OutOfRange("ltx_fraction", std::to_string(ltx_fraction), "0..1");
  }
  if (long_kind != "update" && long_kind != "scan" && long_kind != "report") {
    return "unknown long_kind '" + long_kind + "' (expected update, scan or report)";
  }
  if (!(IsFraction(report_fraction) && report_fraction > 0)) {
    return OutOfRange("report_fraction", std::to_string(report_fraction), "above 0, at most 1");
  }
  if (ltx_ops < 1 || ltx_ops > 1000000) {
    return OutOfRange("ltx_ops", std::to_string(ltx_ops), "1..1000000");
  }
  if (scan_length < 1 || scan_length > 100000000) {
    return OutOfRange("scan_length", std::to_string(scan_length), "1..100000000");
  }
  if (application == "bank") {
    if (bank_accounts < 2 || bank_accounts > 1000000) {
      return OutOfRange("bank_accounts", std::to_string(bank_accounts), "2..1000000");
    }
    if (bank_initial_balance < 0) {
      return OutOfRange("bank_initial_balance", std::to_string(bank_initial_balance), ">= 0");
    }
    if (!IsFraction(audit_fraction)) {
      return OutOfRange("audit_fraction", std::to_string(audit_fraction), "0..1");
    }
    return "";
  }
  if (application == "tpcc") {
    // Partitions hold keys by key % partitions: a warehouse stays whole on
    // one partition only when the warehouses are a multiple of them.
    if (warehouses < 1 || warehouses > tpcc::kMaxWarehouses || warehouses % partitions != 0) {
      return "warehouses=" + std::to_string(warehouses) + " must be a multiple of the " +
             std::to_string(partitions) + " partitions, at most " +
             std::to_string(tpcc::kMaxWarehouses) +
             " (each partition holds whole warehouses; 0 means one per partition)";
    }
    if (ltx_fraction > 0) {
      return "the tpcc application makes no long txns by fraction (ltx_fraction=0; its analytic "
             "queries come from --ch_streams)";
    }
    if (ch_streams > 256) return OutOfRange("ch_streams", std::to_string(ch_streams), "0..256");
    return "";
  }
  if (tpcc_delivery_ltx && application != "tpcc") {
    return "tpcc_delivery_ltx: Delivery is TPC-C's (application tpcc, the tpcc or ch preset)";
  }
  if (ch_streams > 0) {
    return "ch_streams=" + std::to_string(ch_streams) +
           ": analytic streams run CH-benCHmark's queries on TPC-C's tables (application tpcc, "
           "the ch preset)";
  }
  if (application == "bom") {
    if (bom_levels < 2 || bom_levels > 8) {
      return OutOfRange("bom_levels", std::to_string(bom_levels), "2..8");
    }
    if (bom_fanout < 1 || bom_fanout > 64) {
      return OutOfRange("bom_fanout", std::to_string(bom_fanout), "1..64");
    }
    double parts = 0, level = 1;
    for (uint32_t l = 0; l < bom_levels; ++l, level *= bom_fanout) parts += level;
    if (parts > 1e6) {
      return "a bom tree of bom_levels=" + std::to_string(bom_levels) + " and bom_fanout=" +
             std::to_string(bom_fanout) + " has more than 1,000,000 parts";
    }
    // A tree lives on one partition: calvin mode's reconnaissance (OLLP)
    // reads it where its LTX is generated.
    if (bom_products < partitions || bom_products % partitions != 0) {
      return "bom_products=" + std::to_string(bom_products) +
             " must be a positive multiple of the " + std::to_string(partitions) +
             " partitions (each partition holds the same number of part trees)";
    }
    if (parts * static_cast<double>(bom_products) > 1e8) {
      return "bom_products=" + std::to_string(bom_products) + " trees of " +
             std::to_string(static_cast<uint64_t>(parts)) + " parts exceed 100,000,000 keys";
    }
    if (ops_per_rw_txn < 1 || ops_per_rw_txn > parts * static_cast<double>(bom_products / partitions)) {
      return OutOfRange("ops_per_rw_txn", std::to_string(ops_per_rw_txn),
                        "1..the parts of a partition");
    }
    return "";
  }
  if (records < 1) return OutOfRange("records", std::to_string(records), ">= 1");
  if (value_size < 1 || value_size > (1u << 20)) {
    return OutOfRange("value_size", std::to_string(value_size), "1..1048576");
  }
  if (!IsFraction(ro_fraction)) return OutOfRange("ro_fraction", std::to_string(ro_fraction), "0..1");
  if (!IsFraction(read_proportion)) {
    return OutOfRange("read_proportion", std::to_string(read_proportion), "0..1");
  }
  if (ops_per_ro_txn < 1 || ops_per_ro_txn > 10000) {
    return OutOfRange("ops_per_ro_txn", std::to_string(ops_per_ro_txn), "1..10000");
  }
  if (ops_per_rw_txn < 1 || ops_per_rw_txn > 10000) {
    return OutOfRange("ops_per_rw_txn", std::to_string(ops_per_rw_txn), "1..10000");
  }
  if (distribution != "hot" && distribution != "zipfian" && distribution != "uniform") {
    return "unknown distribution '" + distribution + "' (expected hot, zipfian or uniform)";
  }
  if (distribution == "zipfian" &&
      !(std::isfinite(zipfian_constant) && zipfian_constant > 0.0 && zipfian_constant < 1.0)) {
    return OutOfRange("zipfian_constant", std::to_string(zipfian_constant),
                      "strictly between 0 and 1");
  }
  if (!(std::isfinite(multi_partition_pct) && multi_partition_pct >= 0 &&
        multi_partition_pct <= 100)) {
    return OutOfRange("multi_partition_pct", std::to_string(multi_partition_pct), "0..100");
  }
  uint64_t per_partition = records / partitions;
  if (ltx_fraction > 0 && long_kind == "update" && ltx_ops > per_partition) {
    return "ltx_ops=" + std::to_string(ltx_ops) + " exceeds the " +
           std::to_string(per_partition) + " records of a partition";
  }
  if (report_range_writes > ops_per_rw_txn) {
    return OutOfRange("report_range_writes", std::to_string(report_range_writes),
                      "at most ops_per_rw_txn (" + std::to_string(ops_per_rw_txn) + ")");
  }
  if (report_range_writes > 0 && report_fraction * static_cast<double>(per_partition) <
                                     2.0 * report_range_writes) {
    return "report_range_writes=" + std::to_string(report_range_writes) +
           " needs a reported range of at least twice that many keys per partition "
           "(raise report_fraction or records)";
  }
  uint32_t max_ops = std::max(ops_per_ro_txn, ops_per_rw_txn);
  if (distribution == "hot") {
    if (hot_records < 1) return OutOfRange("hot_records", std::to_string(hot_records), ">= 1");
    if (per_partition < hot_records + max_ops) {
      return "records=" + std::to_string(records) + " leaves " + std::to_string(per_partition) +
             " records per partition, fewer than hot_records + ops per txn (" +
             std::to_string(hot_records + max_ops) + ")";
    }
  } else if (per_partition < 2 * uint64_t{max_ops}) {
    return "records=" + std::to_string(records) + " leaves " + std::to_string(per_partition) +
           " records per partition, fewer than twice the ops per txn (" +
           std::to_string(2 * max_ops) + ")";
  }
  return "";
}

const std::vector<WorkloadPreset>& WorkloadPresets() {
  static const std::vector<WorkloadPreset> kPresets = {
      {"ro",
       "PaxFlow paper: read-only, 100 reads/txn (1 of 10 hot records + 99 cold), 1M records",
       {{"application", "ycsb"}, {"records", "1000000"}, {"ltx_fraction", "0"}, {"ro_fraction", "1"},
        {"ops_per_ro_txn", "100"}, {"distribution", "hot"}, {"hot_records", "10"},
        {"max_batch", "2000"}}},
      {"ro-zipf",
       "read-only, 100 zipfian(0.99) reads/txn, 1M records",
       {{"application", "ycsb"}, {"records", "1000000"}, {"ltx_fraction", "0"}, {"ro_fraction", "1"},
        {"ops_per_ro_txn", "100"}, {"distribution", "zipfian"}, {"zipfian_constant", "0.99"},
        {"max_batch", "2000"}}},
      {"mixed",
       "90% read-only (100 reads) + 10% read-modify-write of 10 keys, 10 hot records",
       {{"application", "ycsb"}, {"records", "1000000"}, {"ltx_fraction", "0"}, {"ro_fraction", "0.9"},
        {"ops_per_ro_txn", "100"}, {"ops_per_rw_txn", "10"}, {"read_proportion", "0"},
        {"distribution", "hot"}, {"hot_records", "10"}, {"max_batch", "2000"}}},
      {"mixed50",
       "50% read-only (100 reads) + 50% read-modify-write of 10 keys, 10 hot records",
       {{"application", "ycsb"}, {"records", "1000000"}, {"ltx_fraction", "0"}, {"ro_fraction", "0.5"},
        {"ops_per_ro_txn", "100"}, {"ops_per_rw_txn", "10"}, {"read_proportion", "0"},
        {"distribution", "hot"}, {"hot_records", "10"}, {"max_batch", "2000"}}},
      {"rmw",
       "Calvin's microbenchmark: 10 read-modify-write keys, 1 of 10,000 hot records, batch 200",
       {{"application", "ycsb"}, {"records", "1000000"}, {"ltx_fraction", "0"}, {"ro_fraction", "0"},
        {"ops_per_rw_txn", "10"}, {"read_proportion", "0"}, {"distribution", "hot"},
        {"hot_records", "10000"}, {"max_batch", "200"}}},
      {"rmw-hot",
       "Calvin's microbenchmark under contention: as rmw with 10 hot records",
       {{"application", "ycsb"}, {"records", "1000000"}, {"ltx_fraction", "0"}, {"ro_fraction", "0"},
        {"ops_per_rw_txn", "10"}, {"read_proportion", "0"}, {"distribution", "hot"},
        {"hot_records", "10"}, {"max_batch", "200"}}},
      {"bank",
       "bank: transfers between 100 accounts and audits that read them all",
       {{"application", "bank"}, {"bank_accounts", "100"}, {"audit_fraction", "0.1"},
        {"ltx_fraction", "0"}, {"max_batch", "2000"}}},
      {"bank-ltx",
       "bank with long txns: 1% of txns move money around a ring of 20 accounts at once",
       {{"application", "bank"}, {"bank_accounts", "100"}, {"audit_fraction", "0.1"},
        {"ltx_fraction", "0.01"}, {"ltx_ops", "20"}, {"max_batch", "2000"}}},
      {"long",
       "Shirakami's WL1: 100,000 records, uniform keys; short txns of 10 ops (50% read, 50% "
       "update); 1 in 1,000 txns is long: ltx_ops ops (default 1,000), half updates, whose keys "
       "form its write area",
       {{"application", "ycsb"}, {"records", "100000"}, {"distribution", "uniform"},
        {"ro_fraction", "0"}, {"ops_per_rw_txn", "10"}, {"read_proportion", "0.5"},
        {"ltx_fraction", "0.001"}, {"long_kind", "update"}, {"ltx_ops", "1000"},
        {"max_batch", "2000"}}},
      {"long-scan",
       "Shirakami's WL2: 100,000 records; short txns insert 10 new keys; 1 in 1,000 txns is a "
       "long read-only scan of scan_length consecutive keys (default 10,000)",
       {{"application", "ycsb"}, {"records", "100000"}, {"distribution", "uniform"},
        {"ro_fraction", "0"}, {"ops_per_rw_txn", "10"}, {"read_proportion", "0"},
        {"ltx_fraction", "0.001"}, {"long_kind", "scan"}, {"scan_length", "10000"},
        {"max_batch", "2000"}}},
      {"report",
       "reports beside updates: 100,000 records, uniform keys; short txns of 10 ops (50% read, "
       "50% update), one of each one's updates in the period the reports read; 1 in 100 txns "
       "is a report LTX that reads that period (the first report_fraction of the keys, default "
       "10%) and writes 4 summary keys (its write area)",
       {{"application", "ycsb"}, {"records", "100000"}, {"distribution", "uniform"},
        {"ro_fraction", "0"}, {"ops_per_rw_txn", "10"}, {"read_proportion", "0.5"},
        {"ltx_fraction", "0.01"}, {"long_kind", "report"}, {"report_fraction", "0.1"},
        {"report_range_writes", "1"}, {"max_batch", "2000"}}},
      {"bom",
       "bill of materials: 100 products, each a part tree of 4 levels with 10 children per "
       "part (1,111 parts); short txns change 4 parts each (re-link a child pointer, or a "
       "leaf's cost); 1 in 1,000 txns is an LTX that walks a product's tree, each level's keys "
       "read from the one above, and writes its cost roll-up; batch cap 10,000 (at 2,000 "
       "paxflow mode sits at the cap)",
       {{"application", "bom"}, {"bom_products", "100"}, {"bom_fanout", "10"},
        {"bom_levels", "4"}, {"ro_fraction", "0"}, {"ops_per_rw_txn", "4"},
        {"ltx_fraction", "0.001"}, {"max_batch", "10000"}}},
      {"tpcc",
       "TPC-C: the five txns in the standard mix (45% New-Order, 43% Payment, 4% each "
       "Order-Status, Delivery, Stock-Level), --warehouses (default one per partition), "
       "1% remote New-Order lines, 15% remote Payments, no think time",
       {{"application", "tpcc"}, {"ltx_fraction", "0"}, {"ch_streams", "0"}, {"max_batch", "2000"}}},
      {"ch",
       "CH-benCHmark: the tpcc mix plus --ch_streams (default 1) closed-loop analytic streams, "
       "each running Q1, Q6, Q3 and Q5 in turn as long read-only scans of whole tables "
       "(order lines; orders, customers, stock for the joins) (paxflow: at a committed "
       "snapshot; calvin: read-locked)",
       {{"application", "tpcc"}, {"ltx_fraction", "0"}, {"ch_streams", "1"}, {"max_batch", "2000"}}},
  };
  return kPresets;
}

const WorkloadPreset* FindWorkloadPreset(const std::string& name) {
  for (const auto& preset : WorkloadPresets()) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::string WorkloadPresetNames() {
  std::string names;
  for (const auto& preset : WorkloadPresets()) {
    if (!names.empty()) names += ", ";
    names += preset.name;
  }
  return names;
}

std::unique_ptr<Application> MakeApplication(const WorkloadParams& params) {
  std::unique_ptr<Application> app;
  if (params.application == "bank") app = std::make_unique<BankApplication>(params);
  else if (params.application == "bom") app = std::make_unique<BomApplication>(params);
  else if (params.application == "tpcc") app = std::make_unique<TpccApplication>(params);
  else app = std::make_unique<YcsbApplication>(params);
  return std::make_unique<WithKvProcedures>(std::move(app));
}

}  // namespace paxflow
