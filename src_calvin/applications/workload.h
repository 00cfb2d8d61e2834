// The workload parameter set (YCSB's names where they exist) and the named
// presets. One struct, validated as a whole: an out-of-range value is an
// error, never a silent default.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "applications/application.h"

namespace paxflow {

struct WorkloadParams {
  std::string workload = "mixed";   // preset the values came from (informational)
  std::string application = "ycsb"; // ycsb | bank | bom | tpcc

  // YCSB
  uint64_t records = 1000000;        // YCSB recordcount
  uint32_t value_size = 100;         // YCSB fieldlength, bytes
  double ro_fraction = 0.9;          // share of read-only txns
  uint32_t ops_per_ro_txn = 100;
  uint32_t ops_per_rw_txn = 10;
  double read_proportion = 0.0;      // share of plain reads inside a RW txn (rest: read-modify-write)
  std::string distribution = "hot";  // hot | zipfian | uniform
  double zipfian_constant = 0.99;
  uint64_t hot_records = 10;         // per partition; each txn touches one per partition
  double multi_partition_pct = 0.0;  // share of txns spanning two partitions, percent

  // Long transactions (the LTX lane; Shirakami's WL1 and WL2)
  double ltx_fraction = 0.0;         // share of generated txns that are long
  // update: LTXs of ltx_ops ops (WL1); scan: long scans (WL2); report: LTXs
  // that read a range of report_fraction of the keys and write a few
  // summary keys (the report preset)
  std::string long_kind = "update";
  uint32_t ltx_ops = 1000;           // WL1: ops per LTX, half reads, half read-modify-writes
  uint64_t scan_length = 10000;      // WL2: consecutive keys per long scan
  // WL2's short txns insert ops_per_rw_txn new keys instead of updating.
  double report_fraction = 0.1;      // report: share of the records one report LTX reads
  // report: how many of each short read-write txn's updates land in the
  // range the reports read. Above 0, every report reads the same range
  // (the first report_fraction of the records: the current period, which
  // the short txns keep updating); at 0, each report reads a range placed
  // at random and short txns pick keys as they would without reports.
  uint32_t report_range_writes = 0;

  // Bank
  uint64_t bank_accounts = 100;
  int64_t bank_initial_balance = 1000;
  // bank-ltx: each generated LTX also declares a read of an account outside
  // its ring, so it keeps the record protocol (tests of that protocol).
  bool bank_ltx_read_outside = false;
  double audit_fraction = 0.1;       // share of audit (read-all) txns

  // Bill of materials (applications/bom.h): part trees of bom_levels levels,
  // each part with bom_fanout child pointers; short txns (ops_per_rw_txn
  // parts each) re-link parts and change costs, LTXs (ltx_fraction) walk a
  // product's tree and write its cost roll-up.
  uint64_t bom_products = 100;       // trees, over all partitions (a multiple of them)
  uint32_t bom_fanout = 10;
  uint32_t bom_levels = 4;

  // TPC-C (applications/tpcc.h): warehouses, a multiple of the partitions
  // (each warehouse's rows live on one partition). 0 on the command line
  // means one per partition; ResolveFlags sets the number.
  uint32_t warehouses = 0;
  // CH-benCHmark (the ch preset): closed-loop analytic streams beside the
  // TPC-C mix, over the cluster (stream s runs on partition s % partitions);
  // each issues Q1, Q6, Q3, Q5 in turn, the next when the last one's result
  // is in. paxflow-load's clients run them too (counted per process).
  uint32_t ch_streams = 0;
  // TPC-C: Delivery runs as an LTX (its areas planned by its
  // reconnaissance) instead of a short txn; the embedded generator's only.
  // Off by default: measured no faster (README, TPC-C).
  bool tpcc_delivery_ltx = false;

  // Empty when the set is usable on `partitions` partitions, else what is wrong.
  std::string Validate(uint32_t partitions) const;
};

// A named preset: flag settings applied below the config and the command line.
struct WorkloadPreset {
  std::string name;
  std::string description;
  std::vector<std::pair<std::string, std::string>> settings;
};
const std::vector<WorkloadPreset>& WorkloadPresets();
const WorkloadPreset* FindWorkloadPreset(const std::string& name);
std::string WorkloadPresetNames();  // "ro, mixed, ..."

std::unique_ptr<Application> MakeApplication(const WorkloadParams& params);

}  // namespace paxflow
