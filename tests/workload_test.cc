// Unit tests for src_calvin/applications: parameter validation, presets, the YCSB and bank
// generators and procedures.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "applications/application.h"
#include "applications/bank.h"
#include "applications/bom.h"
#include "applications/long_run.h"
#include "common/hash.h"
#include "common/key_area.h"
#include "applications/workload.h"
#include "applications/ycsb.h"

namespace paxflow {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// ---------------------------------------------------------------- Validate

TEST(WorkloadParamsTest, DefaultsAreValid) {
  WorkloadParams params;
  EXPECT_EQ(params.Validate(1), "");
  EXPECT_EQ(params.Validate(8), "");
  params.application = "bank";
  EXPECT_EQ(params.Validate(1), "");
}

TEST(WorkloadParamsTest, OutOfRangeValuesNameTheParameter) {
  struct Case {
    const char* what;
    void (*mutate)(WorkloadParams*);
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"ro_fraction", [](WorkloadParams* p) { p->ro_fraction = 1.5; }, "ro_fraction=1.5"},
      {"report_range_writes above the ops",
       [](WorkloadParams* p) { p->report_range_writes = p->ops_per_rw_txn + 1; },
       "report_range_writes"},
      {"report_range_writes in a tiny range",
       [](WorkloadParams* p) {
         p->report_range_writes = 2;
         p->report_fraction = 1e-9;
       },
       "report_range_writes=2"},
      {"ro_fraction nan", [](WorkloadParams* p) { p->ro_fraction = std::nan(""); },
       "ro_fraction"},
      {"read_proportion", [](WorkloadParams* p) { p->read_proportion = -0.1; },
       "read_proportion"},
      {"zipfian_constant",
       [](WorkloadParams* p) {
         p->distribution = "zipfian";
         p->zipfian_constant = 1.0;
       },
       "zipfian_constant"},
      {"zipfian_constant zero",
       [](WorkloadParams* p) {
         p->distribution = "zipfian";
         p->zipfian_constant = 0.0;
       },
       "zipfian_constant"},
      {"distribution", [](WorkloadParams* p) { p->distribution = "pareto"; },
       "unknown distribution 'pareto'"},
      {"records", [](WorkloadParams* p) { p->records = 0; }, "records"},
      {"value_size", [](WorkloadParams* p) { p->value_size = 0; }, "value_size"},
      {"ops_per_ro_txn", [](WorkloadParams* p) { p->ops_per_ro_txn = 0; }, "ops_per_ro_txn"},
      {"ops_per_rw_txn", [](WorkloadParams* p) { p->ops_per_rw_txn = 20000; },
       "ops_per_rw_txn"},
      {"hot_records", [](WorkloadParams* p) { p->hot_records = 0; }, "hot_records"},
      {"multi_partition_pct", [](WorkloadParams* p) { p->multi_partition_pct = 101; },
       "multi_partition_pct"},
      {"too few records",
       [](WorkloadParams* p) {
         p->records = 100;
         p->hot_records = 10;
         p->ops_per_ro_txn = 100;
       },
       "hot_records"},
      {"too few records, uniform",
       [](WorkloadParams* p) {
         p->records = 150;
         p->distribution = "uniform";
         p->ops_per_ro_txn = 100;
       },
       "records=150"},
      {"bank_accounts",
       [](WorkloadParams* p) {
         p->application = "bank";
         p->bank_accounts = 1;
       },
       "bank_accounts=1"},
      {"bank_initial_balance",
       [](WorkloadParams* p) {
         p->application = "bank";
         p->bank_initial_balance = -5;
       },
       "bank_initial_balance"},
      {"audit_fraction",
       [](WorkloadParams* p) {
         p->application = "bank";
         p->audit_fraction = 2;
       },
       "audit_fraction"},
      {"ch_streams",
       [](WorkloadParams* p) {
         p->application = "tpcc";
         p->warehouses = 1;
         p->ch_streams = 257;
       },
       "ch_streams"},
      {"ch_streams without tpcc", [](WorkloadParams* p) { p->ch_streams = 1; },
       "application tpcc"},
      {"tpcc_delivery_ltx without tpcc", [](WorkloadParams* p) { p->tpcc_delivery_ltx = true; },
       "Delivery is TPC-C's"},
      {"application", [](WorkloadParams* p) { p->application = "tpch"; },
       "unknown application 'tpch'"},
      {"warehouses",
       [](WorkloadParams* p) {
         p->application = "tpcc";
         p->warehouses = 0;  // ResolveFlags turns the flag's 0 into the partitions
       },
       "warehouses=0"},
  };
  for (const Case& c : cases) {
    WorkloadParams params;
    c.mutate(&params);
    const std::string error = params.Validate(1);
    EXPECT_TRUE(Contains(error, c.expected)) << c.what << ": '" << error << "'";
  }
}

TEST(WorkloadParamsTest, RecordsAreCheckedPerPartition) {
  WorkloadParams params;
  params.records = 1100;
  params.hot_records = 10;
  params.ops_per_ro_txn = 100;
  params.ops_per_rw_txn = 10;
  EXPECT_EQ(params.Validate(1), "");
  // 1100 / 10 = 110 records per partition: exactly hot_records + ops.
  EXPECT_EQ(params.Validate(10), "");
  const std::string error = params.Validate(11);
  EXPECT_TRUE(Contains(error, "records=1100")) << error;
  EXPECT_TRUE(Contains(error, "100 records per partition")) << error;
}

// Applies a preset's settings the way flags would, refusing any name that is not a workload
// parameter (max_batch is an engine flag and is the one allowed exception).
std::string ApplyPreset(const WorkloadPreset& preset, WorkloadParams* params) {
  for (const auto& [name, value] : preset.settings) {
    if (name == "application") params->application = value;
    else if (name == "records") params->records = std::stoull(value);
    else if (name == "value_size") params->value_size = std::stoul(value);
    else if (name == "ro_fraction") params->ro_fraction = std::stod(value);
    else if (name == "ops_per_ro_txn") params->ops_per_ro_txn = std::stoul(value);
    else if (name == "ops_per_rw_txn") params->ops_per_rw_txn = std::stoul(value);
    else if (name == "read_proportion") params->read_proportion = std::stod(value);
    else if (name == "distribution") params->distribution = value;
    else if (name == "zipfian_constant") params->zipfian_constant = std::stod(value);
    else if (name == "hot_records") params->hot_records = std::stoull(value);
    else if (name == "multi_partition_pct") params->multi_partition_pct = std::stod(value);
    else if (name == "bank_accounts") params->bank_accounts = std::stoull(value);
    else if (name == "bank_initial_balance") params->bank_initial_balance = std::stoll(value);
    else if (name == "audit_fraction") params->audit_fraction = std::stod(value);
    else if (name == "ltx_fraction") params->ltx_fraction = std::stod(value);
    else if (name == "long_kind") params->long_kind = value;
    else if (name == "ltx_ops") params->ltx_ops = std::stoul(value);
    else if (name == "scan_length") params->scan_length = std::stoull(value);
    else if (name == "report_fraction") params->report_fraction = std::stod(value);
    else if (name == "report_range_writes") params->report_range_writes = std::stoul(value);
    else if (name == "bom_products") params->bom_products = std::stoull(value);
    else if (name == "bom_fanout") params->bom_fanout = std::stoul(value);
    else if (name == "bom_levels") params->bom_levels = std::stoul(value);
    else if (name == "ch_streams") params->ch_streams = std::stoul(value);
    else if (name == "max_batch") continue;
    else return "unknown setting '" + name + "'";
  }
  return "";
}

TEST(WorkloadPresetsTest, EveryPresetIsFindableAndValid) {
  const auto& presets = WorkloadPresets();
  ASSERT_FALSE(presets.empty());
  std::set<std::string> names;
  for (const WorkloadPreset& preset : presets) {
    EXPECT_FALSE(preset.name.empty());
    EXPECT_FALSE(preset.description.empty()) << preset.name;
    EXPECT_TRUE(names.insert(preset.name).second) << "duplicate preset " << preset.name;
    EXPECT_EQ(FindWorkloadPreset(preset.name), &preset);
    EXPECT_TRUE(Contains(WorkloadPresetNames(), preset.name));
    WorkloadParams params;
    ASSERT_EQ(ApplyPreset(preset, &params), "") << preset.name;
    // TPC-C's warehouses default to the partitions (ResolveFlags).
    if (params.application == "tpcc") params.warehouses = 1;
    EXPECT_EQ(params.Validate(1), "") << preset.name;
    if (params.application == "tpcc") params.warehouses = 4;
    EXPECT_EQ(params.Validate(4), "") << preset.name;
  }
  // The default preset named by WorkloadParams exists.
  EXPECT_NE(FindWorkloadPreset(WorkloadParams().workload), nullptr);
  EXPECT_EQ(FindWorkloadPreset("no-such-preset"), nullptr);
  EXPECT_EQ(FindWorkloadPreset(""), nullptr);
}

// ---------------------------------------------------------------- YCSB generator

WorkloadParams SmallYcsb() {
  WorkloadParams params;
  params.records = 40000;
  params.ops_per_ro_txn = 20;
  params.ops_per_rw_txn = 8;
  params.ro_fraction = 0.5;
  params.hot_records = 10;
  params.distribution = "hot";
  return params;
}

struct TxnKeys {
  std::vector<Key> all;
  std::map<PartitionId, std::vector<Key>> by_partition;
};

TxnKeys KeysOf(const Txn& txn, uint32_t partitions) {
  TxnKeys keys;
  for (Key k : txn.read_set()) keys.all.push_back(k);
  for (Key k : txn.write_set()) keys.all.push_back(k);
  for (Key k : txn.read_write_set()) keys.all.push_back(k);
  for (Key k : keys.all) keys.by_partition[k % partitions].push_back(k);
  return keys;
}

TEST(YcsbGeneratorTest, TxnsHaveTheRightShapeAndDistinctLocalKeys) {
  WorkloadParams params = SmallYcsb();
  params.read_proportion = 0.3;
  ASSERT_EQ(params.Validate(4), "");
  auto app = MakeApplication(params);
  ASSERT_STREQ(app->name(), "ycsb");
  constexpr uint32_t kPartitions = 4;
  for (PartitionId partition = 0; partition < kPartitions; ++partition) {
    auto generator = app->NewGenerator(partition, kPartitions, 17 + partition);
    int read_only = 0, plain_reads_in_rw = 0;
    for (int i = 0; i < 1000; ++i) {
      Txn txn;
      generator->Next(&txn);
      const TxnKeys keys = KeysOf(txn, kPartitions);
      EXPECT_EQ(txn.write_set_size(), 0);
      if (txn.procedure() == YcsbApplication::kReadOnly) {
        ++read_only;
        EXPECT_EQ(txn.read_set_size(), static_cast<int>(params.ops_per_ro_txn));
        EXPECT_EQ(txn.read_write_set_size(), 0);
      } else {
        ASSERT_EQ(txn.procedure(), YcsbApplication::kReadModifyWrite);
        EXPECT_EQ(keys.all.size(), params.ops_per_rw_txn);
        plain_reads_in_rw += txn.read_set_size();
      }
      const std::set<Key> distinct(keys.all.begin(), keys.all.end());
      EXPECT_EQ(distinct.size(), keys.all.size()) << "repeated key in txn " << i;
      for (Key k : keys.all) EXPECT_LT(k, params.records);
      // No multi-partition share asked for: everything is local.
      ASSERT_EQ(keys.by_partition.size(), 1u);
      EXPECT_EQ(keys.by_partition.begin()->first, partition);
    }
    EXPECT_NEAR(read_only, 500, 80) << partition;
    // read_proportion 0.3 of ~500 RW txns x 8 keys.
    EXPECT_NEAR(plain_reads_in_rw, 0.3 * 500 * 8, 200) << partition;
  }
}

TEST(YcsbGeneratorTest, HotDistributionTouchesExactlyOneHotKeyPerPartition) {
  WorkloadParams params = SmallYcsb();
  params.multi_partition_pct = 50;
  constexpr uint32_t kPartitions = 3;
  ASSERT_EQ(params.Validate(kPartitions), "");
  auto app = MakeApplication(params);
  auto generator = app->NewGenerator(1, kPartitions, 5);
  std::set<Key> hot_seen;
  for (int i = 0; i < 2000; ++i) {
    Txn txn;
    generator->Next(&txn);
    const TxnKeys keys = KeysOf(txn, kPartitions);
    for (const auto& [partition, partition_keys] : keys.by_partition) {
      int hot = 0;
      for (Key k : partition_keys) {
        if (k / kPartitions < params.hot_records) {
          ++hot;
          hot_seen.insert(k);
        }
      }
      EXPECT_EQ(hot, 1) << "txn " << i << " partition " << partition;
    }
  }
  // Every hot record of the partitions touched is used sooner or later.
  EXPECT_EQ(hot_seen.size(), 3 * params.hot_records);
}

TEST(YcsbGeneratorTest, MultiPartitionShareAndSplit) {
  WorkloadParams params = SmallYcsb();
  params.multi_partition_pct = 30;
  constexpr uint32_t kPartitions = 4;
  constexpr int kTxns = 5000;
  ASSERT_EQ(params.Validate(kPartitions), "");
  auto app = MakeApplication(params);
  const PartitionId home = 2;
  auto generator = app->NewGenerator(home, kPartitions, 1234);
  int multi = 0;
  std::set<PartitionId> others;
  for (int i = 0; i < kTxns; ++i) {
    Txn txn;
    generator->Next(&txn);
    const TxnKeys keys = KeysOf(txn, kPartitions);
    const std::set<Key> distinct(keys.all.begin(), keys.all.end());
    ASSERT_EQ(distinct.size(), keys.all.size());
    ASSERT_TRUE(keys.by_partition.count(home)) << "txn " << i << " skips its home partition";
    ASSERT_LE(keys.by_partition.size(), 2u);
    if (keys.by_partition.size() == 1) continue;
    ++multi;
    const size_t ops = keys.all.size();
    // The home partition gets the larger half.
    EXPECT_EQ(keys.by_partition.at(home).size(), ops - ops / 2);
    for (const auto& entry : keys.by_partition) {
      if (entry.first != home) {
        others.insert(entry.first);
        EXPECT_EQ(entry.second.size(), ops / 2);
      }
    }
  }
  EXPECT_NEAR(static_cast<double>(multi) / kTxns, 0.30, 0.05);
  EXPECT_EQ(others, (std::set<PartitionId>{0, 1, 3}));
}

TEST(YcsbGeneratorTest, SinglePartitionNeverGoesMulti) {
  WorkloadParams params = SmallYcsb();
  params.multi_partition_pct = 100;
  auto app = MakeApplication(params);
  auto generator = app->NewGenerator(0, 1, 9);
  for (int i = 0; i < 200; ++i) {
    Txn txn;
    generator->Next(&txn);
    for (Key k : KeysOf(txn, 1).all) EXPECT_LT(k, params.records);
  }
}

TEST(YcsbGeneratorTest, SameSeedSameStream) {
  WorkloadParams params = SmallYcsb();
  params.multi_partition_pct = 20;
  params.read_proportion = 0.5;
  auto app = MakeApplication(params);
  auto a = app->NewGenerator(1, 2, 77);
  auto b = app->NewGenerator(1, 2, 77);
  auto c = app->NewGenerator(1, 2, 78);
  int differs_from_other_seed = 0;
  for (int i = 0; i < 500; ++i) {
    Txn ta, tb, tc;
    a->Next(&ta);
    b->Next(&tb);
    c->Next(&tc);
    ASSERT_EQ(ta.SerializeAsString(), tb.SerializeAsString()) << "txn " << i;
    differs_from_other_seed += ta.SerializeAsString() != tc.SerializeAsString();
  }
  EXPECT_GT(differs_from_other_seed, 450);
}

TEST(YcsbGeneratorTest, ZipfianAndUniformStayInPartitionWithDistinctKeys) {
  constexpr uint32_t kPartitions = 3;
  for (const char* distribution : {"zipfian", "uniform"}) {
    WorkloadParams params = SmallYcsb();
    params.records = 30001;  // partitions of unequal size
    params.distribution = distribution;
    params.zipfian_constant = 0.99;
    params.ro_fraction = 1.0;
    ASSERT_EQ(params.Validate(kPartitions), "") << distribution;
    auto app = MakeApplication(params);
    std::map<Key, int> count;
    for (PartitionId partition = 0; partition < kPartitions; ++partition) {
      auto generator = app->NewGenerator(partition, kPartitions, 3);
      for (int i = 0; i < 500; ++i) {
        Txn txn;
        generator->Next(&txn);
        const TxnKeys keys = KeysOf(txn, kPartitions);
        ASSERT_EQ(keys.all.size(), params.ops_per_ro_txn);
        EXPECT_EQ(std::set<Key>(keys.all.begin(), keys.all.end()).size(), keys.all.size());
        ASSERT_EQ(keys.by_partition.size(), 1u);
        EXPECT_EQ(keys.by_partition.begin()->first, partition);
        for (Key k : keys.all) {
          EXPECT_LT(k, params.records);
          ++count[k];
        }
      }
    }
    if (std::string(distribution) == "zipfian") {
      // Rank 0 of each partition is the most popular key there.
      for (PartitionId p = 0; p < kPartitions; ++p) {
        int best = 0;
        Key best_key = 0;
        for (const auto& [k, n] : count) {
          if (k % kPartitions == p && n > best) {
            best = n;
            best_key = k;
          }
        }
        EXPECT_EQ(best_key, p) << "partition " << p;
      }
    } else {
      // 30,000 draws over ~30,000 keys: no key should be anywhere near as popular as a hot one.
      int best = 0;
      for (const auto& entry : count) best = std::max(best, entry.second);
      EXPECT_LT(best, 15);
    }
  }
}

TEST(YcsbApplicationTest, ReadModifyWriteRewritesEachKeyDeterministically) {
  WorkloadParams params = SmallYcsb();
  params.value_size = 100;
  auto app = MakeApplication(params);
  Txn txn;
  txn.set_id(MakeTxnId(3, 0, 1));
  txn.set_procedure(YcsbApplication::kReadModifyWrite);
  txn.add_read_set(5);
  txn.add_read_write_set(7);
  txn.add_read_write_set(9);
  ReadValues reads;
  reads.Reset(3);
  std::string v5, v7, v9;
  YcsbApplication::InitialValue(5, 100, &v5);
  YcsbApplication::InitialValue(7, 100, &v7);
  YcsbApplication::InitialValue(9, 100, &v9);
  reads.Set(0, v5);
  reads.Set(1, v7);
  reads.Set(2, v9);

  WriteSet writes;
  TxnOutcome outcome;
  app->Execute(txn, reads, &writes, &outcome);
  EXPECT_TRUE(outcome.committed);
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes.key(0), 7u);
  EXPECT_EQ(writes.key(1), 9u);
  EXPECT_EQ(writes.value(0).size(), 100u);
  EXPECT_NE(writes.value(0), v7);
  // Only the first word is restamped; the rest of the record is kept.
  EXPECT_EQ(writes.value(1).substr(8), std::string_view(v9).substr(8));

  // Same input, same output; another txn id, another value (order matters for the state).
  WriteSet again;
  TxnOutcome outcome_again;
  app->Execute(txn, reads, &again, &outcome_again);
  EXPECT_EQ(again.value(0), writes.value(0));
  EXPECT_EQ(outcome_again.checksum, outcome.checksum);
  txn.set_id(MakeTxnId(3, 0, 2));
  WriteSet other;
  TxnOutcome other_outcome;
  app->Execute(txn, reads, &other, &other_outcome);
  EXPECT_NE(other.value(0), writes.value(0));
  // The checksum names what was read, not who read it.
  EXPECT_EQ(other_outcome.checksum, outcome.checksum);
  reads.Set(0, v7);
  TxnOutcome changed_read;
  WriteSet ignored;
  app->Execute(txn, reads, &ignored, &changed_read);
  EXPECT_NE(changed_read.checksum, outcome.checksum);
}

// ---------------------------------------------------------------- Bank

WorkloadParams SmallBank() {
  WorkloadParams params;
  params.application = "bank";
  params.bank_accounts = 10;
  params.bank_initial_balance = 1000;
  params.audit_fraction = 0.2;
  return params;
}

Txn Transfer(Key from, Key to, int64_t amount) {
  Txn txn;
  txn.set_procedure(BankApplication::kTransfer);
  txn.add_read_write_set(from);
  txn.add_read_write_set(to);
  txn.set_args(BankApplication::EncodeBalance(amount));
  return txn;
}

TEST(BankTest, TransferMovesMoneyAndConservesTheTotal) {
  auto app = MakeApplication(SmallBank());
  ASSERT_STREQ(app->name(), "bank");
  ReadValues reads;
  reads.Reset(2);
  reads.Set(0, BankApplication::EncodeBalance(300));
  reads.Set(1, BankApplication::EncodeBalance(50));
  WriteSet writes;
  TxnOutcome outcome;
  app->Execute(Transfer(4, 6, 120), reads, &writes, &outcome);
  EXPECT_TRUE(outcome.committed);
  ASSERT_EQ(writes.size(), 2u);
  EXPECT_EQ(writes.key(0), 4u);
  EXPECT_EQ(BankApplication::DecodeBalance(writes.value(0)), 180);
  EXPECT_EQ(writes.key(1), 6u);
  EXPECT_EQ(BankApplication::DecodeBalance(writes.value(1)), 170);
}

TEST(BankTest, InsufficientFundsCommitsNothing) {
  auto app = MakeApplication(SmallBank());
  ReadValues reads;
  reads.Reset(2);
  reads.Set(0, BankApplication::EncodeBalance(30));
  reads.Set(1, BankApplication::EncodeBalance(50));
  WriteSet writes;
  TxnOutcome outcome;
  app->Execute(Transfer(1, 2, 31), reads, &writes, &outcome);
  EXPECT_FALSE(outcome.committed);
  EXPECT_EQ(writes.size(), 0u);

  // Exactly the balance is allowed.
  WriteSet exact;
  TxnOutcome exact_outcome;
  app->Execute(Transfer(1, 2, 30), reads, &exact, &exact_outcome);
  EXPECT_TRUE(exact_outcome.committed);
  ASSERT_EQ(exact.size(), 2u);
  EXPECT_EQ(BankApplication::DecodeBalance(exact.value(0)), 0);
}

TEST(BankTest, AuditFlagsAWrongTotal) {
  const WorkloadParams params = SmallBank();
  auto app = MakeApplication(params);
  Txn audit;
  audit.set_procedure(BankApplication::kAudit);
  for (Key k = 0; k < params.bank_accounts; ++k) audit.add_read_set(k);
  ReadValues reads;
  reads.Reset(params.bank_accounts);
  for (size_t i = 0; i < params.bank_accounts; ++i) {
    reads.Set(i, BankApplication::EncodeBalance(i == 3 ? 1500 : i == 7 ? 500 : 1000));
  }
  TxnOutcome ok;
  WriteSet writes;
  app->Execute(audit, reads, &writes, &ok);
  EXPECT_TRUE(ok.invariant_ok) << ok.detail;
  EXPECT_EQ(writes.size(), 0u);

  reads.Set(7, BankApplication::EncodeBalance(499));
  TxnOutcome torn;
  app->Execute(audit, reads, &writes, &torn);
  EXPECT_FALSE(torn.invariant_ok);
  EXPECT_TRUE(Contains(torn.detail, "9999")) << torn.detail;
  EXPECT_TRUE(Contains(torn.detail, "10000")) << torn.detail;

  // A missing account is a broken invariant even if the others add up.
  reads.Set(7, BankApplication::EncodeBalance(500));
  reads.SetMissing(0);
  reads.Set(3, BankApplication::EncodeBalance(2500));
  TxnOutcome missing;
  app->Execute(audit, reads, &writes, &missing);
  EXPECT_FALSE(missing.invariant_ok);
}

// Runs generated bank txns one after another on an in-memory table: every audit must pass,
// and transfers must keep the total.
TEST(BankTest, GeneratedLoadKeepsTheInvariantWhenRunSerially) {
  const WorkloadParams params = SmallBank();
  ASSERT_EQ(params.Validate(1), "");
  auto app = MakeApplication(params);
  class MapLoader : public Loader {
   public:
    void Put(Key key, std::string_view value) override { table[key] = std::string(value); }
    std::map<Key, std::string> table;
  } loader;
  app->Load(0, 1, &loader);
  ASSERT_EQ(loader.table.size(), params.bank_accounts);

  auto generator = app->NewGenerator(0, 1, 11);
  int audits = 0, transfers = 0, declined = 0;
  for (int i = 0; i < 3000; ++i) {
    Txn txn;
    generator->Next(&txn);
    ReadValues reads;
    const int positions = txn.read_set_size() + txn.read_write_set_size();
    reads.Reset(positions);
    int position = 0;
    for (Key k : txn.read_set()) reads.Set(position++, loader.table.at(k));
    for (Key k : txn.read_write_set()) reads.Set(position++, loader.table.at(k));
    WriteSet writes;
    TxnOutcome outcome;
    app->Execute(txn, reads, &writes, &outcome);
    ASSERT_TRUE(outcome.invariant_ok) << "txn " << i << ": " << outcome.detail;
    if (txn.procedure() == BankApplication::kAudit) {
      ++audits;
      EXPECT_EQ(writes.size(), 0u);
      continue;
    }
    ASSERT_EQ(txn.procedure(), BankApplication::kTransfer);
    ASSERT_EQ(txn.read_write_set_size(), 2);
    EXPECT_NE(txn.read_write_set(0), txn.read_write_set(1));
    ++transfers;
    if (!outcome.committed) {
      ++declined;
      EXPECT_EQ(writes.size(), 0u);
    }
    for (size_t w = 0; w < writes.size(); ++w) {
      loader.table[writes.key(w)] = std::string(writes.value(w));
    }
    int64_t total = 0;
    for (const auto& entry : loader.table) {
      const int64_t balance = BankApplication::DecodeBalance(entry.second);
      EXPECT_GE(balance, 0);
      total += balance;
    }
    ASSERT_EQ(total, static_cast<int64_t>(params.bank_accounts) * params.bank_initial_balance);
  }
  EXPECT_NEAR(audits, 600, 100);
  EXPECT_GT(transfers, 2000);
  // Long random walks drain some accounts; the declined path must have been exercised.
  EXPECT_GT(declined, 0);
}


// ---------------------------------------------------------------- report and bom

class MapLoader : public Loader {
 public:
  void Put(Key key, std::string_view value) override { table[key] = std::string(value); }
  std::map<Key, std::string> table;
};

// Runs a long procedure to its end over `table` (every read answered).
LtxRound RunOver(const Application& app, const Txn& txn, const std::map<Key, std::string>& table,
                 std::set<Key>* read = nullptr) {
  LtxRound last;
  std::string reason;
  RunLongProcedure(app, txn, [&](const std::vector<Key>& keys, const std::vector<KeyRange>& scans,
                                 LtxReads* out) {
    for (Key key : keys) {
      auto it = table.find(key);
      out->SetPoint(key, it != table.end(), it != table.end() ? it->second : std::string());
      if (read) read->insert(key);
    }
    for (const KeyRange& range : scans) {
      LtxReads::Rows rows;
      for (auto it = table.lower_bound(range.lo()); it != table.end() && it->first <= range.hi(); ++it) {
        rows.emplace_back(it->first, it->second);
      }
      out->AddScan(std::move(rows));
    }
    return std::string();
  }, &last, &reason);
  EXPECT_EQ(reason, "");
  return last;
}

TEST(ReportTest, ReportsReadADeclaredRangeOfTheKeysAndWriteTheirSummaryKeys) {
  WorkloadParams params;
  ApplyPreset(*FindWorkloadPreset("report"), &params);
  params.records = 20000;
  params.ltx_fraction = 0.05;
  ASSERT_EQ(params.Validate(3), "");
  auto app = MakeApplication(params);
  for (PartitionId p = 0; p < 3; ++p) {
    auto generator = app->NewGenerator(p, 3, 5 + p);
    int reports = 0, shorts = 0;
    for (int i = 0; i < 4000; ++i) {
      Txn txn;
      generator->Next(&txn);
      if (txn.txn_class() != LTX) {
        ++shorts;
        EXPECT_EQ(txn.procedure(), YcsbApplication::kReadModifyWrite);
        // Exactly one of its updates is in the period the reports read
        // (keys below 2,000), on its own partition; its other keys are
        // anywhere.
        int in_period = 0;
        for (Key k : txn.read_write_set()) {
          EXPECT_LT(k, params.records);
          EXPECT_EQ(k % 3, p);
          if (k < 2000) ++in_period;
        }
        EXPECT_GE(in_period, 1);
        EXPECT_EQ(txn.read_write_set(0) % 3, p);
        EXPECT_LT(txn.read_write_set(0), 2000u) << "the first update is in the period";
        std::set<Key> distinct(txn.read_write_set().begin(), txn.read_write_set().end());
        distinct.insert(txn.read_set().begin(), txn.read_set().end());
        EXPECT_EQ(distinct.size(), 10u) << "distinct keys";
        continue;
      }
      ++reports;
      ASSERT_EQ(txn.procedure(), YcsbApplication::kReport);
      EXPECT_TRUE(app->IsLongProcedure(txn.procedure()));
      EXPECT_FALSE(app->NeedsRecon(txn.procedure())) << "a report's reads are declared";
      EXPECT_EQ(app->CheckClientTxn(txn), "");
      ASSERT_EQ(txn.ltx().read_area_size(), 1);
      const KeyRange& range = txn.ltx().read_area(0);
      EXPECT_EQ(range.lo(), 0u) << "the period the short txns update";
      EXPECT_EQ(range.hi() - range.lo() + 1, 2000u) << "10% of the keys";
      // Its write area: the summary keys, above every loaded key, so short
      // txns never meet it.
      const KeyArea area(txn.ltx().write_area());
      ASSERT_EQ(area.ranges().size(), 1u);
      EXPECT_EQ(area.ranges()[0].second - area.ranges()[0].first + 1,
                YcsbApplication::kReportSummaryKeys);
      EXPECT_GE(area.ranges()[0].first, params.records);
    }
    EXPECT_NEAR(reports, 200, 60);
    EXPECT_GT(shorts, 3500);
  }
}

TEST(ReportTest, WithoutRangeWritesReportsReadRangesAnywhere) {
  WorkloadParams params;
  ApplyPreset(*FindWorkloadPreset("report"), &params);
  params.report_range_writes = 0;
  params.records = 20000;
  params.ltx_fraction = 0.05;
  ASSERT_EQ(params.Validate(1), "");
  auto generator = MakeApplication(params)->NewGenerator(0, 1, 9);
  std::set<Key> starts;
  int shorts_in_period = 0, shorts = 0;
  for (int i = 0; i < 4000; ++i) {
    Txn txn;
    generator->Next(&txn);
    if (txn.txn_class() == LTX) {
      starts.insert(txn.ltx().read_area(0).lo());
      continue;
    }
    ++shorts;
    shorts_in_period += std::any_of(txn.read_write_set().begin(), txn.read_write_set().end(),
                                    [](Key k) { return k < 2000; });
  }
  EXPECT_GT(starts.size(), 50u) << "a range placed at random each time";
  // Uniform keys: about 1 - 0.9^5 of the short txns update one of the
  // first 10%, far from all of them.
  EXPECT_LT(shorts_in_period, shorts * 6 / 10);
}

// One report over 1,000 loaded keys (its range: the first 100).
class ReportProcedureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WorkloadParams params;
    ApplyPreset(*FindWorkloadPreset("report"), &params);
    params.records = 1000;
    params.ltx_fraction = 1;
    app = MakeApplication(params);
    app->Load(0, 1, &loader);
    app->NewGenerator(0, 1, 3)->Next(&txn);
    ASSERT_EQ(txn.procedure(), YcsbApplication::kReport);
  }
  std::unique_ptr<Application> app;
  MapLoader loader;
  Txn txn;
};

TEST_F(ReportProcedureTest, SummarisesWhatItScannedDeterministically) {
  const LtxRound first = RunOver(*app, txn, loader.table);
  ASSERT_EQ(first.writes.size(), YcsbApplication::kReportSummaryKeys);
  uint64_t rows = 0;
  std::memcpy(&rows, first.writes.value(0).data(), 8);
  EXPECT_EQ(rows, 100u);
  EXPECT_NE(first.outcome.checksum, 0u);
  // The same state, the same summary; another value in the range, another.
  EXPECT_EQ(RunOver(*app, txn, loader.table).outcome.checksum, first.outcome.checksum);
  loader.table[txn.ltx().read_area(0).lo()] = "changed";
  EXPECT_NE(RunOver(*app, txn, loader.table).outcome.checksum, first.outcome.checksum);
}

// Pushed down (paxflow mode), each partition sends a summary of its share
// instead of its rows: any split into summaries and rows must give the
// summary keys and checksum the rows in one piece give (calvin mode, the
// oracle, replay).
TEST_F(ReportProcedureTest, PushedDownSharesSummariseAsTheRowsInOnePiece) {
  ASSERT_TRUE(app->SummarizesScans(txn));
  const LtxRound whole = RunOver(*app, txn, loader.table);
  // Shares as on 3 partitions (key % 3), each read in place by a visitor.
  auto share = [&](PartitionId p) {
    return app->SummarizeScans(
        txn,
        [&](size_t s, Key from, Key to, const ScanRow& row) {
          const KeyRange& range = txn.ltx().read_area(static_cast<int>(s));
          for (auto it = loader.table.lower_bound(std::max(range.lo(), from));
               it != loader.table.end() && it->first <= std::min(range.hi(), to); ++it) {
            if (it->first % 3 == p) row(it->first, it->second);
          }
        },
        ScanMemoUse());
  };
  for (int rows_from_partition = -1; rows_from_partition < 3; ++rows_from_partition) {
    LtxReads reads;
    LtxReads::Rows rows;
    for (PartitionId p = 0; p < 3; ++p) {
      if (static_cast<int>(p) != rows_from_partition) {
        reads.AddSummary(share(p));
        continue;
      }
      const KeyRange& range = txn.ltx().read_area(0);
      for (auto it = loader.table.lower_bound(range.lo());
           it != loader.table.end() && it->first <= range.hi(); ++it) {
        if (it->first % 3 == p) rows.emplace_back(it->first, it->second);
      }
    }
    reads.AddScan(std::move(rows));
    LtxRound out;
    app->ExecuteLong(txn, 1, reads, &out);
    EXPECT_EQ(out.outcome.checksum, whole.outcome.checksum) << "rows from " << rows_from_partition;
    ASSERT_EQ(out.writes.size(), whole.writes.size());
    for (size_t i = 0; i < whole.writes.size(); ++i) {
      EXPECT_EQ(out.writes.value(i), whole.writes.value(i)) << "summary key " << i;
    }
  }
}

WorkloadParams SmallBom() {
  WorkloadParams params;
  ApplyPreset(*FindWorkloadPreset("bom"), &params);
  params.bom_products = 6;
  params.bom_fanout = 3;
  params.bom_levels = 3;
  return params;
}

TEST(BomTest, LayoutLoadsEveryTreeOnOnePartition) {
  WorkloadParams params = SmallBom();
  ASSERT_EQ(params.Validate(3), "");
  params.bom_products = 7;
  EXPECT_TRUE(Contains(params.Validate(3), "bom_products")) << "7 trees on 3 partitions";
  params = SmallBom();
  const BomLayout layout(params);
  EXPECT_EQ(layout.tree_parts(), 13u);  // 1 + 3 + 9
  auto app = MakeApplication(params);
  EXPECT_EQ(app->DenseKeys(), layout.dense_keys());
  for (PartitionId p = 0; p < 3; ++p) {
    MapLoader loader;
    app->Load(p, 3, &loader);
    EXPECT_EQ(loader.table.size(), 2 * (13u + 3u)) << "two trees and their roll-ups";
    for (const auto& [key, value] : loader.table) {
      EXPECT_EQ(key % 3, p);
      EXPECT_LT(key, app->DenseKeys());
      uint64_t product, index;
      uint32_t level;
      if (!layout.DecodePart(key, &product, &level, &index)) continue;
      EXPECT_EQ(layout.PartKey(product, level, index), key);
      // Children: in the next level, on the same partition.
      for (uint32_t j = 0; level + 1 < layout.levels() && j < layout.fanout(); ++j) {
        const Key child = BomLayout::Word(value, 1 + j);
        uint64_t child_product, child_index;
        uint32_t child_level;
        ASSERT_TRUE(layout.DecodePart(child, &child_product, &child_level, &child_index));
        EXPECT_EQ(child_level, level + 1);
        EXPECT_EQ(child % 3, p);
      }
    }
  }
}

// A bom application loaded for one partition, with that partition's generator.
struct LoadedBom {
  LoadedBom(const WorkloadParams& params, PartitionId partition, uint32_t partitions, uint64_t seed)
      : layout(params), app(MakeApplication(params)) {
    app->Load(partition, partitions, &loader);
    generator = app->NewGenerator(partition, partitions, seed);
  }
  const BomLayout layout;
  std::unique_ptr<Application> app;
  MapLoader loader;
  std::unique_ptr<TxnGenerator> generator;
};

TEST(BomTest, GeneratedTxnsRelinkWithinTheLevelsAndRollupsWalkTheTree) {
  WorkloadParams params = SmallBom();
  params.ltx_fraction = 0.03;
  LoadedBom bom(params, 1, 3, 9);
  int rollups = 0, relinks = 0, costs = 0;
  for (int i = 0; i < 3000; ++i) {
    Txn txn;
    bom.generator->Next(&txn);
    EXPECT_EQ(bom.app->CheckClientTxn(txn), "") << i;
    if (txn.txn_class() == LTX) {
      ++rollups;
      ASSERT_EQ(txn.procedure(), BomApplication::kRollup);
      EXPECT_TRUE(bom.app->NeedsRecon(txn.procedure()));
      EXPECT_EQ(txn.ltx().read_area_size(), 0) << "paxflow needs no declared reads";
      // A roll-up of the walk, summed over every path, into the write area.
      std::set<Key> read;
      const LtxRound last = RunOver(*bom.app, txn, bom.loader.table, &read);
      const KeyArea area(txn.ltx().write_area());
      ASSERT_EQ(last.writes.size(), bom.layout.levels());
      for (size_t w = 0; w < last.writes.size(); ++w) EXPECT_TRUE(area.Contains(last.writes.key(w)));
      for (Key key : read) {
        EXPECT_EQ(key % 3, 1u);
        EXPECT_FALSE(area.Contains(key));
      }
      EXPECT_LE(read.size(), 13u);
      uint64_t leaves = 0;
      std::memcpy(&leaves, last.writes.value(bom.layout.levels() - 1).data(), 8);
      EXPECT_GE(leaves, 9u) << "9 leaf paths of cost >= 1";
      continue;
    }
    ASSERT_EQ(txn.procedure(), BomApplication::kUpdate);
    ASSERT_EQ(txn.read_write_set_size(), 4);
    ReadValues reads;
    reads.Reset(4);
    for (int k = 0; k < 4; ++k) reads.Set(k, bom.loader.table.at(txn.read_write_set(k)));
    WriteSet writes;
    TxnOutcome outcome;
    bom.app->Execute(txn, reads, &writes, &outcome);
    ASSERT_TRUE(outcome.committed) << outcome.detail;
    ASSERT_EQ(writes.size(), 4u);
    for (size_t w = 0; w < writes.size(); ++w) {
      uint64_t product, index;
      uint32_t level;
      ASSERT_TRUE(bom.layout.DecodePart(writes.key(w), &product, &level, &index));
      EXPECT_EQ(writes.key(w) % 3, 1u);
      const std::string& old = bom.loader.table.at(writes.key(w));
      const std::string now(writes.value(w));
      if (level + 1 == bom.layout.levels()) {
        ++costs;
      } else {
        // A re-link: still a pointer into the next level, on this partition.
        ++relinks;
        for (uint32_t j = 0; j < bom.layout.fanout(); ++j) {
          uint64_t cp, ci;
          uint32_t cl;
          ASSERT_TRUE(bom.layout.DecodePart(BomLayout::Word(now, 1 + j), &cp, &cl, &ci));
          EXPECT_EQ(cl, level + 1);
          EXPECT_EQ(BomLayout::Word(now, 1 + j) % 3, 1u);
        }
        EXPECT_EQ(BomLayout::Word(now, 0), BomLayout::Word(old, 0)) << "a re-link keeps the cost";
      }
      bom.loader.table[writes.key(w)] = now;
    }
  }
  EXPECT_NEAR(rollups, 90, 40);
  EXPECT_GT(relinks, 1000);
  EXPECT_GT(costs, 3000);
}

// bom-rollup's round as first written, over std::map: the reference its
// faster walk must match exactly (reads and their order, sums, checksum).
void ReferenceRollupRound(const WorkloadParams& params, Key root, uint32_t round,
                          const LtxReads& reads, std::vector<Key>* asked,
                          std::vector<uint64_t>* subtotal, uint64_t* checksum) {
  std::map<Key, uint64_t> level = {{root, 1}};
  *checksum = 0;
  subtotal->assign(params.bom_levels, 0);
  for (uint32_t l = 0; l < params.bom_levels; ++l) {
    if (l == round) {
      for (const auto& [key, paths] : level) asked->push_back(key);
      return;
    }
    std::map<Key, uint64_t> next;
    for (const auto& [key, paths] : level) {
      bool found = false;
      std::string_view value;
      reads.Get(key, &found, &value);
      *checksum = Mix64(*checksum ^ key ^ (found ? HashBytes(value) : 0));
      if (!found) continue;
      (*subtotal)[l] += paths * BomLayout::Word(value, 0);
      if (l + 1 == params.bom_levels) continue;
      for (uint32_t j = 0; j < params.bom_fanout; ++j) next[BomLayout::Word(value, 1 + j)] += paths;
    }
    level.swap(next);
  }
  for (uint64_t total : *subtotal) *checksum = Mix64(*checksum ^ total);
}

// Once re-links make the trees DAGs (parts reached by several paths, some
// by none), each level's roll-up is still the cost summed over every path
// from the root: checked against a walk that follows each path on its own.
TEST(BomTest, RollupsSumEveryPathThroughSharedParts) {
  WorkloadParams params = SmallBom();
  params.bom_fanout = 4;
  params.bom_levels = 4;
  params.bom_products = 3;
  params.ltx_fraction = 0.02;
  LoadedBom bom(params, 0, 1, 5);
  // Each root's first child pointer dangles (no such key): a walk reads it,
  // finds nothing, and goes on without it.
  for (uint64_t product = 0; product < params.bom_products; ++product) {
    std::string& root = bom.loader.table.at(bom.layout.PartKey(product, 0, 0));
    BomLayout::SetWord(&root, 1, bom.layout.dense_keys() + 7 + product);
  }
  // Sum over paths, one path at a time.
  std::function<void(Key, uint32_t, std::vector<uint64_t>*)> walk =
      [&](Key key, uint32_t level, std::vector<uint64_t>* sums) {
        auto it = bom.loader.table.find(key);
        if (it == bom.loader.table.end()) return;
        (*sums)[level] += BomLayout::Word(it->second, 0);
        if (level + 1 == bom.layout.levels()) return;
        for (uint32_t j = 0; j < bom.layout.fanout(); ++j) {
          walk(BomLayout::Word(it->second, 1 + j), level + 1, sums);
        }
      };
  int rollups = 0, shared = 0;
  for (int i = 0; i < 4000; ++i) {
    Txn txn;
    bom.generator->Next(&txn);
    if (txn.txn_class() == LTX) {
      Key root;
      std::memcpy(&root, txn.args().data(), 8);
      std::vector<uint64_t> sums(bom.layout.levels(), 0);
      // Round by round, against the reference walk: the same reads in the
      // same order, then the same roll-up and checksum.
      LtxReads fetched;
      for (uint32_t round = 0;; ++round) {
        LtxRound out;
        bom.app->ExecuteLong(txn, round, fetched, &out);
        std::vector<Key> asked;
        std::vector<uint64_t> subtotal;
        uint64_t checksum = 0;
        ReferenceRollupRound(params, root, round, fetched, &asked, &subtotal, &checksum);
        ASSERT_FALSE(out.abort) << out.reason;
        ASSERT_EQ(out.reads, asked) << "roll-up " << i << ", round " << round;
        if (out.done()) {
          EXPECT_EQ(out.outcome.checksum, checksum) << "roll-up " << i;
          for (uint32_t l = 0; l < bom.layout.levels(); ++l) {
            uint64_t total = 0;
            std::memcpy(&total, out.writes.value(l).data(), 8);
            ASSERT_EQ(total, subtotal[l]) << "roll-up " << i << ", level " << l;
          }
          break;
        }
        for (Key key : out.reads) {
          auto it = bom.loader.table.find(key);
          fetched.SetPoint(key, it != bom.loader.table.end(),
                           it != bom.loader.table.end() ? it->second : std::string());
        }
      }
      walk(root, 0, &sums);
      std::set<Key> read;
      const LtxRound last = RunOver(*bom.app, txn, bom.loader.table, &read);
      ASSERT_EQ(last.writes.size(), bom.layout.levels());
      for (uint32_t l = 0; l < bom.layout.levels(); ++l) {
        uint64_t total = 0;
        std::memcpy(&total, last.writes.value(l).data(), 8);
        ASSERT_EQ(total, sums[l]) << "roll-up " << i << ", level " << l;
      }
      // Fewer distinct parts read than paths: the walk shared parts.
      if (read.size() < 1 + 4 + 16 + 64) ++shared;
      ++rollups;
      continue;
    }
    ReadValues reads;
    reads.Reset(txn.read_write_set_size());
    for (int k = 0; k < txn.read_write_set_size(); ++k) {
      reads.Set(k, bom.loader.table.at(txn.read_write_set(k)));
    }
    WriteSet writes;
    TxnOutcome outcome;
    bom.app->Execute(txn, reads, &writes, &outcome);
    ASSERT_TRUE(outcome.committed) << outcome.detail;
    for (size_t w = 0; w < writes.size(); ++w) bom.loader.table[writes.key(w)] = std::string(writes.value(w));
  }
  EXPECT_GT(rollups, 40);
  EXPECT_GT(shared, rollups / 2) << "the re-links should have made most walks share parts";
}

// OLLP: the reconnaissance declares exactly what the walk reads; the locked
// run commits while the state is the one reconnoitered, and aborts with
// reason recon (retryable) once a re-link changed the walk.
TEST(OllpTest, ReconDeclaresTheWalkAndALockedRunOfAnotherWalkAbortsWithRecon) {
  const WorkloadParams params = SmallBom();
  const BomLayout layout(params);
  auto app = MakeApplication(params);
  MapLoader loader;
  app->Load(0, 1, &loader);
  Txn begin;
  begin.set_txn_class(LTX);
  begin.set_procedure(BomApplication::kRollup);
  begin.set_args(BomApplication::RollupArgs(layout.PartKey(0, 0, 0)));
  begin.mutable_ltx()->set_kind(LTX_BEGIN);
  for (uint32_t l = 0; l < layout.levels(); ++l) {
    KeyRange* range = begin.mutable_ltx()->add_write_area();
    range->set_lo(layout.RollupKey(0, l));
    range->set_hi(range->lo());
  }
  auto read = [&](Key key, std::string* value) {
    auto it = loader.table.find(key);
    if (it == loader.table.end()) return false;
    *value = it->second;
    return true;
  };
  Txn reconnoitered = begin;
  EXPECT_EQ(Reconnoiter(*app, &reconnoitered, read), 13u);
  EXPECT_TRUE(reconnoitered.ltx().recon());
  std::set<Key> walked;
  RunOver(*app, begin, loader.table, &walked);
  const KeyArea declared(reconnoitered.ltx().read_area());
  for (Key key : walked) EXPECT_TRUE(declared.Contains(key));

  // The locked run, as calvin mode's scheduler expands it: every declared
  // key read, in read_set, and the write area in read_write_set.
  auto locked = [&](const Txn& txn, TxnOutcome* outcome) {
    Txn expanded;
    std::vector<Key> keys;
    const KeyArea area(txn.ltx().read_area()), writes(txn.ltx().write_area());
    for (const auto& [lo, hi] : area.ranges()) {
      for (Key k = lo; k <= hi; ++k) expanded.add_read_set(k);
    }
    for (const auto& [lo, hi] : writes.ranges()) {
      for (Key k = lo; k <= hi; ++k) expanded.add_read_write_set(k);
    }
    ReadValues values;
    values.Reset(expanded.read_set_size() + expanded.read_write_set_size());
    size_t position = 0;
    for (Key k : expanded.read_set()) values.Set(position++, loader.table.at(k));
    for (Key k : expanded.read_write_set()) values.Set(position++, loader.table.at(k));
    WriteSet out;
    ExecuteLongLocked(*app, txn, expanded, values, &out, outcome);
    return out.size();
  };
  TxnOutcome outcome;
  EXPECT_EQ(locked(reconnoitered, &outcome), layout.levels());
  EXPECT_FALSE(outcome.aborted) << outcome.abort_reason;

  // A re-link of the root's first child to another level-1 part of another
  // product: the walk now reads parts the reconnaissance did not.
  std::string root = loader.table.at(layout.PartKey(0, 0, 0));
  BomLayout::SetWord(&root, 1, layout.PartKey(5, 1, 2));
  loader.table[layout.PartKey(0, 0, 0)] = root;
  EXPECT_EQ(locked(reconnoitered, &outcome), 0u);
  EXPECT_TRUE(outcome.aborted);
  EXPECT_EQ(LtxAbortReasonOf(outcome.abort_reason), kAbortRecon) << outcome.abort_reason;
  // A fresh reconnaissance of the new state commits.
  Txn again = begin;
  Reconnoiter(*app, &again, read);
  EXPECT_EQ(locked(again, &outcome), layout.levels());
  EXPECT_FALSE(outcome.aborted) << outcome.abort_reason;
  // Fewer keys than reconnoitered (a child re-linked to a sibling already
  // walked) is a different read set too.
  BomLayout::SetWord(&root, 1, layout.PartKey(0, 1, 1));
  loader.table[layout.PartKey(0, 0, 0)] = root;
  locked(again, &outcome);
  EXPECT_TRUE(outcome.aborted);
  EXPECT_EQ(LtxAbortReasonOf(outcome.abort_reason), kAbortRecon) << outcome.abort_reason;
}

}  // namespace
// LtxReads keeps its points in an open-addressing table: every key asked
// for is found with its value through growth, a key set again takes its
// last value, and a key never set is not found.
TEST(LtxReadsTest, PointsSurviveGrowthAndTheLastSetWins) {
  LtxReads reads;
  reads.Reserve(3);
  for (Key key = 0; key < 5000; ++key) {
    reads.SetPoint(key * 7919, key % 3 != 0, "v" + std::to_string(key));
  }
  reads.SetPoint(7919, true, "again");
  EXPECT_EQ(reads.points(), 5000u);
  for (Key key = 0; key < 5000; ++key) {
    bool found = false;
    std::string_view value;
    ASSERT_TRUE(reads.Get(key * 7919, &found, &value)) << key;
    if (key == 1) {
      EXPECT_TRUE(found);
      EXPECT_EQ(value, "again");
    } else {
      EXPECT_EQ(found, key % 3 != 0) << key;
      EXPECT_EQ(value, found ? "v" + std::to_string(key) : "") << key;
    }
  }
  bool found = false;
  std::string_view value;
  EXPECT_FALSE(reads.Get(1, &found, &value));
  EXPECT_FALSE(LtxReads().Get(0, &found, &value));
}

}  // namespace paxflow
