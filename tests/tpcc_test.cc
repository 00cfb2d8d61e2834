// TPC-C (applications/tpcc.h): the key encoding and loader, each txn run
// against a plain map (the serial oracle: one txn at a time, its effects
// checked row by row), the consistency checks passing after a mixed run and
// failing on a corrupted row, and OLLP restarts stepped by hand: the state
// changes between the reconnaissance and the txn's position.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <sstream>
#include <tuple>
#include <map>
#include <memory>
#include <set>
#include <type_traits>
#include <string>
#include <vector>

#include "applications/long_run.h"
#include "applications/tpcc.h"
#include "applications/workload.h"
#include "common/hash.h"
#include "common/key_area.h"
#include "common/types.h"

namespace paxflow {
namespace {

using namespace tpcc;  // NOLINT

WorkloadParams Params(uint32_t warehouses) {
  WorkloadParams params;
  params.workload = "tpcc";
  params.application = "tpcc";
  params.warehouses = warehouses;
  return params;
}

// One database on a map, run one txn at a time.
class Db {
 public:
  Db(uint32_t warehouses, uint32_t partitions)
      : app_(Params(warehouses)), partitions_(partitions) {
    struct MapLoader : Loader {
      std::map<Key, std::string>* table;
      void Put(Key key, std::string_view value) override { (*table)[key] = std::string(value); }
    } loader;
    loader.table = &rows;
    for (PartitionId p = 0; p < partitions; ++p) app_.Load(p, partitions, &loader);
  }
  const TpccApplication& app() const { return app_; }
  const Keys& keys() const { return app_.keys(); }

  // The reconnaissance, reading partition `partition`'s rows only (what a
  // generating node can read).
  void Plan(Txn* txn, PartitionId partition = 0) const {
    if (!app_.NeedsRecon(txn->procedure())) return;
    app_.PlanDependent(txn, [&](Key key, std::string* value) {
      auto it = rows.find(key);
      if (PartitionOf(key, partitions_) != partition || it == rows.end()) return false;
      *value = it->second;
      return true;
    });
  }
  // Runs `txn` at its position: reads its declared keys, applies what it writes.
  TxnOutcome Execute(const Txn& txn) {
    ReadValues reads;
    reads.Reset(txn.read_set_size() + txn.read_write_set_size());
    size_t p = 0;
    auto read = [&](Key key) {
      auto it = rows.find(key);
      if (it == rows.end()) reads.SetMissing(p++);
      else reads.Set(p++, it->second);
    };
    for (Key k : txn.read_set()) read(k);
    for (Key k : txn.read_write_set()) read(k);
    WriteSet writes;
    TxnOutcome outcome;
    app_.Execute(txn, reads, &writes, &outcome);
    if (outcome.committed) {
      for (size_t i = 0; i < writes.size(); ++i) rows[writes.key(i)] = std::string(writes.value(i));
      for (Key k : writes.deletes()) rows.erase(k);
    } else {
      EXPECT_EQ(writes.size(), 0u) << "a declined txn must write nothing";
    }
    return outcome;
  }
  std::string Check() const {
    return CheckConsistency(keys().warehouses(), [&](const std::function<void(Key, std::string_view)>& visit) {
      for (const auto& [k, v] : rows) visit(k, v);
    });
  }
  template <typename Row>
  Row Get(Key key) const {
    Row row{};
    auto it = rows.find(key);
    EXPECT_TRUE(it != rows.end() && Decode(it->second, &row)) << "no row " << key;
    return row;
  }

  std::map<Key, std::string> rows;

 private:
  TpccApplication app_;
  uint32_t partitions_;
};

Txn NewOrderTxn(const Keys& keys, uint32_t w, uint32_t d, uint32_t c,
                const std::vector<std::pair<uint32_t, uint32_t>>& items) {  // (item, supply)
  Txn txn;
  txn.set_procedure(TpccApplication::kNewOrder);
  std::vector<uint32_t> a = {w, d, c, static_cast<uint32_t>(items.size()), 7};
  txn.add_read_set(keys.Warehouse(w));
  txn.add_read_set(keys.Customer(w, d, c));
  txn.add_read_write_set(keys.District(w, d));
  for (const auto& [i, supply] : items) {
    a.insert(a.end(), {i, supply, 3});
    txn.add_read_set(keys.Item(w, i));
    txn.add_read_write_set(keys.Stock(supply, i));
  }
  txn.set_args(TpccApplication::Words(a));
  return txn;
}

Txn Dependent(uint32_t procedure, const std::vector<uint32_t>& args) {
  Txn txn;
  txn.set_procedure(procedure);
  txn.set_args(TpccApplication::Words(args));
  return txn;
}

// One Db of one warehouse, loaded once (the loader takes a moment).
class TpccOneWarehouse : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { shared_ = new Db(1, 1); }
  static void TearDownTestSuite() { delete shared_; }
  void SetUp() override { saved_ = shared_->rows; }
  void TearDown() override { shared_->rows = saved_; }
  Db& db() { return *shared_; }
  static Db* shared_;
  std::map<Key, std::string> saved_;
};
Db* TpccOneWarehouse::shared_ = nullptr;

TEST(TpccKeysTest, EveryRowOfAWarehouseLivesOnItsPartition) {
  const Keys keys(6);
  for (uint32_t w = 0; w < 6; ++w) {
    for (Key k : {keys.Warehouse(w), keys.District(w, 9), keys.Customer(w, 3, 3000),
                  keys.OrderLine(w, 9, 1u << 27, 15), keys.Stock(w, kItems)}) {
      EXPECT_EQ(PartitionOf(k, 3), w % 3);
      EXPECT_EQ(PartitionOf(k, 2), w % 2);
      EXPECT_EQ(keys.WarehouseOf(k), w);
    }
  }
  const Key line = keys.OrderLine(4, 7, 123456, 11);
  EXPECT_EQ(keys.TableOf(line), kOrderLine);
  EXPECT_EQ(keys.DistrictOf(line), 7u);
  EXPECT_EQ(keys.IdOf(line), (123456u << 4) | 11u);
  // The largest key of the largest cluster still fits.
  const Keys most(kMaxWarehouses);
  EXPECT_EQ(most.TableOf(most.Stock(kMaxWarehouses - 1, kItems)), kStock);
}

TEST(TpccParamsTest, WarehousesMustBeAMultipleOfThePartitions) {
  EXPECT_EQ(Params(3).Validate(3), "");
  EXPECT_EQ(Params(6).Validate(3), "");
  EXPECT_NE(Params(4).Validate(3).find("warehouses=4"), std::string::npos);
  EXPECT_NE(Params(0).Validate(1).find("warehouses=0"), std::string::npos);
  const WorkloadPreset* preset = FindWorkloadPreset("tpcc");
  ASSERT_NE(preset, nullptr);
}

TEST_F(TpccOneWarehouse, LoadHoldsTheSpecifiedRowsAndIsConsistent) {
  const Keys& keys = db().keys();
  EXPECT_EQ(db().Check(), "");
  const DistrictRow district = db().Get<DistrictRow>(keys.District(0, 4));
  EXPECT_EQ(district.next_o_id, kInitialOrders + 1);
  EXPECT_EQ(district.next_deliver, kFirstNewOrder);
  size_t new_orders = 0, customers = 0;
  for (const auto& [k, v] : db().rows) {
    new_orders += keys.TableOf(k) == kNewOrder;
    customers += keys.TableOf(k) == kCustomer;
  }
  EXPECT_EQ(new_orders, kDistricts * (kInitialOrders - kFirstNewOrder + 1));
  EXPECT_EQ(customers, kDistricts * kCustomers);
  // The name index holds every customer of each name, sorted by first name.
  const std::vector<uint32_t> named = db().app().CustomersNamed(0, 2, 371);
  ASSERT_FALSE(named.empty());
  const std::string& row = db().rows.at(keys.NameIndex(0, 2, 371));
  ASSERT_EQ(row.size(), 4 * named.size());
  EXPECT_EQ(TpccApplication::Words(row), named);
  for (size_t i = 1; i < named.size(); ++i) {
    EXPECT_LE(db().Get<CustomerRow>(keys.Customer(0, 2, named[i - 1])).first,
              db().Get<CustomerRow>(keys.Customer(0, 2, named[i])).first);
  }
}

TEST_F(TpccOneWarehouse, NewOrderTakesTheNextOrderIdAndWritesItsRows) {
  const Keys& keys = db().keys();
  const StockRow before = db().Get<StockRow>(keys.Stock(0, 42));
  const TxnOutcome outcome = db().Execute(NewOrderTxn(keys, 0, 3, 77, {{42, 0}, {43, 0}, {44, 0},
                                                                       {45, 0}, {46, 0}}));
  ASSERT_TRUE(outcome.committed) << outcome.detail;
  const uint32_t o = kInitialOrders + 1;
  EXPECT_EQ(db().Get<DistrictRow>(keys.District(0, 3)).next_o_id, o + 1);
  const OrderRow order = db().Get<OrderRow>(keys.Order(0, 3, o));
  EXPECT_EQ(order.c_id, 77u);
  EXPECT_EQ(order.ol_cnt, 5u);
  EXPECT_EQ(order.carrier_id, 0u);
  EXPECT_TRUE(db().rows.count(keys.NewOrder(0, 3, o)));
  EXPECT_EQ(TpccApplication::Words(db().rows.at(keys.LastOrder(0, 3, 77))),
            std::vector<uint32_t>{o});
  for (uint32_t ol = 1; ol <= 5; ++ol) {
    const OrderLineRow line = db().Get<OrderLineRow>(keys.OrderLine(0, 3, o, ol));
    EXPECT_EQ(line.i_id, 41 + ol);
    EXPECT_EQ(line.quantity, 3u);
    EXPECT_EQ(line.amount, 3 * db().Get<ItemRow>(keys.Item(0, line.i_id)).price);
  }
  const StockRow after = db().Get<StockRow>(keys.Stock(0, 42));
  EXPECT_EQ(after.ytd, before.ytd + 3);
  EXPECT_EQ(after.order_cnt, before.order_cnt + 1);
  EXPECT_EQ(after.quantity, before.quantity >= 13 ? before.quantity - 3 : before.quantity - 3 + 91);
  EXPECT_EQ(db().Check(), "");
}

TEST_F(TpccOneWarehouse, NewOrderWithAnUnusedItemRollsBackEntirely) {
  const Keys& keys = db().keys();
  const auto before = db().rows;
  const TxnOutcome outcome =
      db().Execute(NewOrderTxn(keys, 0, 1, 5, {{10, 0}, {11, 0}, {12, 0}, {13, 0}, {kItems + 1, 0}}));
  EXPECT_FALSE(outcome.committed);
  EXPECT_FALSE(outcome.retryable);
  EXPECT_NE(outcome.detail.find("rolled back"), std::string::npos) << outcome.detail;
  EXPECT_TRUE(db().rows == before);
}

TEST_F(TpccOneWarehouse, PaymentByNamePaysTheMiddleCustomerAndKeepsTheYtdSums) {
  const Keys& keys = db().keys();
  const std::vector<uint32_t> named = db().app().CustomersNamed(0, 6, 500);
  ASSERT_FALSE(named.empty());
  const uint32_t c = named[(named.size() - 1) / 2];
  const CustomerRow before = db().Get<CustomerRow>(keys.Customer(0, 6, c));
  Txn txn = Dependent(TpccApplication::kPayment, {0, 2, 0, 6, 1, 500, 12345, 9});
  db().Plan(&txn);
  const TxnOutcome outcome = db().Execute(txn);
  ASSERT_TRUE(outcome.committed) << outcome.detail;
  const CustomerRow after = db().Get<CustomerRow>(keys.Customer(0, 6, c));
  EXPECT_EQ(after.balance, before.balance - 12345);
  EXPECT_EQ(after.payment_cnt, before.payment_cnt + 1);
  EXPECT_EQ(db().Get<WarehouseRow>(keys.Warehouse(0)).ytd, 30000000 + 12345);
  EXPECT_EQ(db().Get<DistrictRow>(keys.District(0, 2)).ytd, 3000000 + 12345);
  const HistoryRow history = db().Get<HistoryRow>(keys.History(0, 2, kCustomers + 1));
  EXPECT_EQ(history.c_id, c);
  EXPECT_EQ(history.c_d, 6u);
  EXPECT_EQ(db().Check(), "");
}

TEST_F(TpccOneWarehouse, OrderStatusReadsTheLastOrderAndRestartsWhenTheCustomerOrdersMeanwhile) {
  const Keys& keys = db().keys();
  Txn status = Dependent(TpccApplication::kOrderStatus, {0, 4, 0, 99});
  db().Plan(&status);
  EXPECT_EQ(status.read_write_set_size(), 0) << "read-only: paxflow mode's RO path";
  TxnOutcome outcome = db().Execute(status);
  ASSERT_TRUE(outcome.committed) << outcome.detail;
  // Between the reconnaissance and the position, the customer orders.
  ASSERT_TRUE(db().Execute(NewOrderTxn(keys, 0, 4, 99, {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}})).committed);
  outcome = db().Execute(status);
  EXPECT_FALSE(outcome.committed);
  EXPECT_TRUE(outcome.retryable);
  EXPECT_EQ(outcome.detail.rfind(TpccApplication::kRestart, 0), 0u) << outcome.detail;
  // Planned afresh (what the node does with a restart), it reads the new order.
  db().Plan(&status);
  EXPECT_EQ(TpccApplication::Words(status.args())[5], kInitialOrders + 1);
  EXPECT_TRUE(db().Execute(status).committed);
}

TEST_F(TpccOneWarehouse, DeliveryDeliversTheOldestNewOrderOfEachDistrict) {
  const Keys& keys = db().keys();
  Txn delivery = Dependent(TpccApplication::kDelivery, {0, 4, 50, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  db().Plan(&delivery);
  const uint32_t o = TpccApplication::Words(delivery.args())[3 + 8];
  ASSERT_EQ(o, db().Get<DistrictRow>(keys.District(0, 8)).next_deliver);
  const OrderRow order = db().Get<OrderRow>(keys.Order(0, 8, o));
  const CustomerRow before = db().Get<CustomerRow>(keys.Customer(0, 8, order.c_id));
  int64_t sum = 0;
  for (uint32_t ol = 1; ol <= order.ol_cnt; ++ol) {
    sum += db().Get<OrderLineRow>(keys.OrderLine(0, 8, o, ol)).amount;
  }
  TxnOutcome outcome = db().Execute(delivery);
  ASSERT_TRUE(outcome.committed) << outcome.detail;
  EXPECT_EQ(outcome.detail, "delivered 10 orders");
  EXPECT_FALSE(db().rows.count(keys.NewOrder(0, 8, o))) << "new-order row deleted";
  EXPECT_EQ(db().Get<OrderRow>(keys.Order(0, 8, o)).carrier_id, 4u);
  EXPECT_EQ(db().Get<OrderLineRow>(keys.OrderLine(0, 8, o, 1)).delivery_d, 50u);
  const CustomerRow after = db().Get<CustomerRow>(keys.Customer(0, 8, order.c_id));
  EXPECT_EQ(after.balance, before.balance + sum);
  EXPECT_EQ(after.delivery_cnt, before.delivery_cnt + 1);
  EXPECT_EQ(db().Get<DistrictRow>(keys.District(0, 8)).next_deliver, o + 1);
  EXPECT_EQ(db().Check(), "");
}

// OLLP, stepped: each planned Delivery is given its turn (the next order
// of each district no Delivery was given yet). Run out of turn it restarts
// and keeps its turn; a turn another Delivery took meanwhile is given anew.
TEST(TpccDeliveryTest, DeliveriesKeepTheirTurnsAcrossRestarts) {
  // A Db of its own: the planning hints live in the application.
  Db own(1, 1);
  auto db = [&]() -> Db& { return own; };
  const Keys& keys = db().keys();
  Txn first = Dependent(TpccApplication::kDelivery, {0, 1, 60, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  Txn second = Dependent(TpccApplication::kDelivery, {0, 2, 61, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
  db().Plan(&first);
  db().Plan(&second);
  const uint32_t turn = TpccApplication::Words(first.args())[3];
  EXPECT_EQ(turn, kFirstNewOrder);
  EXPECT_EQ(TpccApplication::Words(second.args())[3], turn + 1);
  // The second runs first: the oldest new order is not its turn.
  const auto before = db().rows;
  TxnOutcome outcome = db().Execute(second);
  EXPECT_FALSE(outcome.committed);
  EXPECT_TRUE(outcome.retryable);
  EXPECT_EQ(outcome.detail.rfind(TpccApplication::kRestart, 0), 0u) << outcome.detail;
  EXPECT_TRUE(db().rows == before);
  // Planned again (the node resubmits it), it keeps its turn.
  db().Plan(&second);
  EXPECT_EQ(TpccApplication::Words(second.args())[3], turn + 1);
  outcome = db().Execute(first);
  ASSERT_TRUE(outcome.committed) << outcome.detail;
  EXPECT_EQ(db().Get<OrderRow>(keys.Order(0, 0, turn)).carrier_id, 1u);
  outcome = db().Execute(second);
  ASSERT_TRUE(outcome.committed) << outcome.detail;
  EXPECT_EQ(db().Get<OrderRow>(keys.Order(0, 0, turn + 1)).carrier_id, 2u);
  EXPECT_EQ(db().Check(), "");
  // A turn already delivered (a node restarted, its hints forgotten) is
  // given anew from the district's oldest new order.
  Txn stale = first;
  outcome = db().Execute(stale);
  EXPECT_FALSE(outcome.committed);
  EXPECT_TRUE(outcome.retryable);
  db().Plan(&stale);
  EXPECT_GT(TpccApplication::Words(stale.args())[3], turn + 1);
  EXPECT_TRUE(db().Execute(stale).committed);
}

// --tpcc_delivery_ltx: a Delivery LTX's plan declares its rows as its
// write area (and no key lists); run as an LTX (RunLongProcedure, as calvin
// mode and the oracle do) it makes the short Delivery's writes, and a plan
// gone stale aborts it as an OLLP restart, writing nothing.
TEST(TpccDeliveryTest, AsAnLtxItDeclaresItsRowsAndRestartsWhenStale) {
  Db own(1, 1);
  const Keys& keys = own.keys();
  auto ltx = [](uint32_t carrier, uint32_t date) {
    Txn txn = Dependent(TpccApplication::kDelivery, {0, carrier, date, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    txn.set_txn_class(LTX);
    txn.mutable_ltx()->set_kind(LTX_BEGIN);
    return txn;
  };
  Txn first = ltx(1, 60), second = ltx(2, 61);
  own.Plan(&first);
  own.Plan(&second);
  EXPECT_EQ(first.read_write_set_size(), 0);
  EXPECT_EQ(first.ltx().read_area_size(), 0);
  const KeyArea area(first.ltx().write_area());
  for (uint32_t d = 0; d < kDistricts; ++d) {
    EXPECT_TRUE(area.Contains(keys.District(0, d)));
    EXPECT_TRUE(area.Contains(keys.NewOrder(0, d, kFirstNewOrder)));
  }
  auto run = [&](const Txn& txn, std::string* reason) {
    LtxRound last;
    RunLongProcedure(
        own.app(), txn,
        [&](const std::vector<Key>& wanted, const std::vector<KeyRange>&, LtxReads* out) {
          for (Key k : wanted) {
            EXPECT_TRUE(KeyArea(txn.ltx().write_area()).Contains(k))
                << "read outside its write area: " << k;
            auto it = own.rows.find(k);
            out->SetPoint(k, it != own.rows.end(), it != own.rows.end() ? it->second : "");
          }
          return std::string();
        },
        &last, reason);
    if (!reason->empty()) return;
    for (size_t i = 0; i < last.writes.size(); ++i) {
      EXPECT_TRUE(KeyArea(txn.ltx().write_area()).Contains(last.writes.key(i)));
      own.rows[last.writes.key(i)] = std::string(last.writes.value(i));
    }
    for (Key k : last.deletes) own.rows.erase(k);
  };
  // The second first: not its turn, a restart, nothing written.
  const auto before = own.rows;
  std::string reason;
  run(second, &reason);
  EXPECT_EQ(LtxAbortReasonOf(reason), kAbortRecon) << reason;
  EXPECT_TRUE(own.rows == before);
  run(first, &reason);
  ASSERT_EQ(reason, "");
  EXPECT_EQ(own.Get<OrderRow>(keys.Order(0, 3, kFirstNewOrder)).carrier_id, 1u);
  EXPECT_EQ(own.rows.count(keys.NewOrder(0, 3, kFirstNewOrder)), 0u);
  own.Plan(&second);  // planned again (the node resubmits it): its turn kept
  run(second, &reason);
  ASSERT_EQ(reason, "");
  EXPECT_EQ(own.Get<OrderRow>(keys.Order(0, 3, kFirstNewOrder + 1)).carrier_id, 2u);
  EXPECT_EQ(own.Check(), "");
}

TEST_F(TpccOneWarehouse, StockLevelCountsLowStockOfTheLastTwentyOrders) {
  const Keys& keys = db().keys();
  Txn level = Dependent(TpccApplication::kStockLevel, {0, 5, 20});
  db().Plan(&level);
  EXPECT_EQ(level.read_write_set_size(), 0);
  // Serially: the distinct items of orders 2981..3000 with quantity < 20.
  std::set<uint32_t> low;
  for (uint32_t o = kInitialOrders - 19; o <= kInitialOrders; ++o) {
    const OrderRow order = db().Get<OrderRow>(keys.Order(0, 5, o));
    for (uint32_t ol = 1; ol <= order.ol_cnt; ++ol) {
      const uint32_t i = db().Get<OrderLineRow>(keys.OrderLine(0, 5, o, ol)).i_id;
      if (db().Get<StockRow>(keys.Stock(0, i)).quantity < 20) low.insert(i);
    }
  }
  TxnOutcome outcome = db().Execute(level);
  ASSERT_TRUE(outcome.committed) << outcome.detail;
  EXPECT_EQ(outcome.detail, std::to_string(low.size()) + " items low");
  // A New-Order in the district meanwhile does not restart it (level 1 suffices).
  ASSERT_TRUE(db().Execute(NewOrderTxn(keys, 0, 5, 1, {{1, 0}, {2, 0}, {3, 0}, {4, 0}, {5, 0}})).committed);
  EXPECT_TRUE(db().Execute(level).committed);
}

// The generator's mix, run serially with its OLLP plans, keeps clause
// 3.3.2's conditions; corrupting a row on purpose breaks each of them.
TEST(TpccMixTest, GeneratedMixKeepsConsistencyAndCorruptionIsCaught) {
  Db db(2, 2);
  const Keys& keys = db.keys();
  std::map<uint32_t, int> done, declined, restarts;
  size_t remote = 0;
  for (PartitionId p = 0; p < 2; ++p) {
    auto generator = db.app().NewGenerator(p, 2, 17 + p);
    for (int n = 0; n < 1500; ++n) {
      Txn txn;
      generator->Next(&txn);
      db.Plan(&txn, p);
      for (Key k : txn.read_write_set()) remote += PartitionOf(k, 2) != p;
      TxnOutcome outcome = db.Execute(txn);
      ++done[txn.procedure()];
      if (!outcome.committed) ++declined[txn.procedure()];
      if (outcome.retryable) ++restarts[txn.procedure()];
      ASSERT_TRUE(outcome.committed || !outcome.retryable ||
                  txn.procedure() != TpccApplication::kNewOrder);
    }
  }
  // The mix: 45/43/4/4/4 of 3000.
  EXPECT_NEAR(done[TpccApplication::kNewOrder], 1350, 120);
  EXPECT_NEAR(done[TpccApplication::kPayment], 1290, 120);
  for (uint32_t p : {TpccApplication::kOrderStatus, TpccApplication::kDelivery,
                     TpccApplication::kStockLevel}) {
    EXPECT_NEAR(done[p], 120, 50) << p;
  }
  EXPECT_NEAR(declined[TpccApplication::kNewOrder], 13, 12) << "1% rolled back";
  EXPECT_EQ(restarts[TpccApplication::kPayment], 0) << "the name index never changes";
  EXPECT_GT(remote, 50u) << "15% of Payments and 1% of New-Order lines are remote";
  ASSERT_EQ(db.Check(), "");

  // Corruptions, one condition each.
  auto corrupt = [&](Key key, auto change) {
    auto row = db.Get<std::decay_t<decltype(change(nullptr))>>(key);
    change(&row);
    const std::string saved = db.rows.at(key);
    db.rows[key] = Encode(row);
    const std::string problem = db.Check();
    db.rows[key] = saved;
    return problem;
  };
  EXPECT_NE(corrupt(keys.Warehouse(1), [](WarehouseRow* r) { if (r) r->ytd += 1; return WarehouseRow{}; })
                .find("3.3.2.1"), std::string::npos);
  EXPECT_NE(corrupt(keys.District(0, 3), [](DistrictRow* r) { if (r) r->next_o_id += 1; return DistrictRow{}; })
                .find("3.3.2.2"), std::string::npos);
  EXPECT_NE(corrupt(keys.Order(1, 2, 5), [](OrderRow* r) { if (r) r->ol_cnt += 1; return OrderRow{}; })
                .find("3.3.2.4"), std::string::npos);
  // A new-order row missing from the middle.
  const DistrictRow district = db.Get<DistrictRow>(keys.District(0, 0));
  const Key middle = keys.NewOrder(0, 0, district.next_deliver + 3);
  const std::string saved = db.rows.at(middle);
  db.rows.erase(middle);
  EXPECT_NE(db.Check().find("3.3.2.3"), std::string::npos);
  db.rows[middle] = saved;
  EXPECT_EQ(db.Check(), "");
}

// Clients call TPC-C's procedures with the generator's args (paxflow-load
// does): every generated txn passes CheckClientTxn, and a call whose words
// would name another table's keys, or whose keys are not the ones its
// args name, is refused with what is wrong.
TEST(TpccClientTest, GeneratedCallsPassAndMalformedOnesAreRefusedByName) {
  const TpccApplication app(Params(2));
  const Keys& keys = app.keys();
  auto generator = app.NewGenerator(1, 2, 99);
  std::set<uint32_t> seen;
  for (int n = 0; n < 2000; ++n) {
    Txn txn;
    generator->Next(&txn);
    seen.insert(txn.procedure());
    ASSERT_EQ(app.CheckClientTxn(txn), "") << app.ProcedureName(txn.procedure());
  }
  EXPECT_EQ(seen.size(), 5u);

  auto refusal = [&](const Txn& txn) { return app.CheckClientTxn(txn); };
  auto contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const Txn good = NewOrderTxn(keys, 1, 3, 42, {{5, 1}, {6, 0}, {7, 1}, {8, 1}, {9, 1}});
  ASSERT_EQ(refusal(good), "");
  EXPECT_TRUE(contains(refusal(NewOrderTxn(keys, 2, 3, 42, {{5, 1}})), "warehouse 2"));
  EXPECT_TRUE(contains(refusal(NewOrderTxn(keys, 1, 10, 42, {{5, 1}})), "district 10"));
  EXPECT_TRUE(contains(refusal(NewOrderTxn(keys, 1, 3, 0, {{5, 1}})), "customer 0"));
  EXPECT_TRUE(contains(refusal(NewOrderTxn(keys, 1, 3, 42, {{kItems + 2, 1}})), "item"));
  EXPECT_TRUE(contains(refusal(NewOrderTxn(keys, 1, 3, 42, {{5, 2}})), "supplying warehouse 2"));
  Txn other_keys = good;
  other_keys.set_read_write_set(1, keys.Stock(0, 5));  // line 1 says warehouse 1
  EXPECT_TRUE(contains(refusal(other_keys), "declared keys differ"));
  Txn short_args = good;
  short_args.set_args(good.args().substr(0, good.args().size() - 4));
  EXPECT_TRUE(contains(refusal(short_args), "words of args"));
  short_args.set_args(good.args().substr(0, good.args().size() - 1));
  EXPECT_TRUE(contains(refusal(short_args), "whole 32-bit words"));

  EXPECT_EQ(refusal(Dependent(TpccApplication::kPayment, {1, 2, 0, 9, 1, 999, 100, 1})), "");
  EXPECT_TRUE(contains(refusal(Dependent(TpccApplication::kPayment, {1, 2, 0, 9, 1, 1000, 100, 1})),
                       "last name 1000"));
  EXPECT_TRUE(contains(refusal(Dependent(TpccApplication::kPayment, {1, 2, 0, 9, 2, 1, 100, 1})),
                       "by-name flag"));
  Txn with_keys = Dependent(TpccApplication::kOrderStatus, {0, 1, 0, 7});
  ASSERT_EQ(refusal(with_keys), "");
  with_keys.add_read_set(keys.Customer(0, 1, 7));
  EXPECT_TRUE(contains(refusal(with_keys), "the node plans them"));
  std::vector<uint32_t> delivery(3 + kDistricts, 0);
  delivery[1] = 5;
  EXPECT_EQ(refusal(Dependent(TpccApplication::kDelivery, delivery)), "");
  delivery[7] = 12;
  EXPECT_TRUE(contains(refusal(Dependent(TpccApplication::kDelivery, delivery)), "must be 0"));
  EXPECT_TRUE(contains(refusal(Dependent(TpccApplication::kStockLevel, {0, 1, 9})), "threshold 9"));
  EXPECT_TRUE(contains(refusal(Dependent(99, {})), "unknown procedure"));
  // CH's queries: long scans whose ranges the node plans.
  Txn query = Dependent(TpccApplication::kQ5, {});
  EXPECT_TRUE(contains(refusal(query), "as an LTX"));
  query.set_txn_class(LTX);
  query.mutable_ltx()->set_kind(LTX_SCAN);
  EXPECT_EQ(refusal(query), "");
  Txn planned_query = query;
  KeyRange* range = planned_query.mutable_ltx()->add_read_area();
  range->set_lo(keys.Stock(0, 1));
  range->set_hi(keys.Stock(0, 9));
  EXPECT_TRUE(contains(refusal(planned_query), "plans a query's ranges"));
  query.set_args(TpccApplication::Words({1}));
  EXPECT_TRUE(contains(refusal(query), "words of args"));
  Txn ltx_payment = Dependent(TpccApplication::kPayment, {1, 2, 0, 9, 1, 999, 100, 1});
  ltx_payment.set_txn_class(LTX);
  EXPECT_TRUE(contains(refusal(ltx_payment), "not an analytic query"));
}

// ---- CH-benCHmark's queries ----

// Query `procedure`, planned on `db` now (or `planned`, planned before).
Txn Query(Db& db, uint32_t procedure, const Txn* planned) {
  if (planned) return *planned;
  Txn txn;
  txn.set_txn_class(LTX);
  txn.set_procedure(procedure);
  txn.mutable_ltx()->set_kind(LTX_SCAN);
  db.Plan(&txn);
  return txn;
}

// A query planned on partition 0's rows and run over the whole map (what a
// serial execution at its snapshot gives): its result text, or "abort: ...".
std::string RunQuery(Db& db, uint32_t procedure, Txn* planned = nullptr) {
  const Txn txn = Query(db, procedure, planned);
  auto fetch = [&](const std::vector<Key>& keys, const std::vector<KeyRange>& scans,
                   LtxReads* out) -> std::string {
    EXPECT_TRUE(keys.empty()) << "a query reads only its ranges";
    for (const KeyRange& scan : scans) {
      LtxReads::Rows rows;
      for (auto it = db.rows.lower_bound(scan.lo()); it != db.rows.end() && it->first <= scan.hi(); ++it) {
        rows.emplace_back(it->first, it->second);
      }
      out->AddScan(std::move(rows));
    }
    return "";
  };
  LtxRound last;
  std::string reason;
  RunLongProcedure(db.app(), txn, fetch, &last, &reason);
  if (!reason.empty()) return "abort: " + reason;
  EXPECT_EQ(last.outcome.checksum, HashBytes(last.outcome.detail));
  EXPECT_EQ(last.writes.size(), 0u);
  return last.outcome.detail;
}

// The same queries computed directly: point lookups over the whole map,
// order by order (no ranges, no planning).
std::string Direct(Db& db, uint32_t procedure) {
  const Keys& keys = db.keys();
  struct Q1 { uint64_t quantity = 0; int64_t amount = 0; uint64_t count = 0; };
  std::map<uint32_t, Q1> q1;
  int64_t q6_revenue = 0;
  uint64_t q6_count = 0;
  std::vector<std::tuple<int64_t, uint32_t, uint32_t, uint32_t, uint32_t>> q3;  // -revenue, date, w, d, o
  std::map<uint32_t, int64_t> q5;  // nation -> revenue
  for (uint32_t w = 0; w < keys.warehouses(); ++w) {
    for (uint32_t d = 0; d < kDistricts; ++d) {
      const uint32_t next = db.Get<DistrictRow>(keys.District(w, d)).next_o_id;
      for (uint32_t o = 1; o < next; ++o) {
        const OrderRow order = db.Get<OrderRow>(keys.Order(w, d, o));
        const uint32_t nation = db.Get<CustomerRow>(keys.Customer(w, d, order.c_id)).last % kChNations;
        int64_t revenue = 0;
        for (uint32_t ol = 1; ol <= order.ol_cnt; ++ol) {
          const OrderLineRow line = db.Get<OrderLineRow>(keys.OrderLine(w, d, o, ol));
          revenue += line.amount;
          if (nation % kChRegions == kChQ5Region && db.rows.count(keys.Stock(w, line.i_id)) > 0 &&
              static_cast<uint32_t>(((w + 1ull) * line.i_id) % kChSuppliers) % kChNations == nation) {
            q5[nation] += line.amount;
          }
          if (line.delivery_d == 0) continue;
          q1[ol].quantity += line.quantity;
          q1[ol].amount += line.amount;
          q1[ol].count++;
          q6_revenue += line.amount;
          q6_count++;
        }
        const bool undelivered = db.rows.count(keys.NewOrder(w, d, o)) > 0;
        if (undelivered && db.Get<CustomerRow>(keys.Customer(w, d, order.c_id)).last < kChQ3Names) {
          q3.emplace_back(-revenue, order.entry_d, w, d, o);
        }
      }
    }
  }
  std::ostringstream out;
  if (procedure == TpccApplication::kQ1) {
    out << "q1";
    for (const auto& [n, g] : q1) out << " " << n << ":" << g.quantity << ":" << g.amount << ":" << g.count;
  } else if (procedure == TpccApplication::kQ6) {
    out << "q6 " << q6_revenue << ":" << q6_count;
  } else if (procedure == TpccApplication::kQ5) {
    std::vector<std::pair<int64_t, uint32_t>> rows;
    for (const auto& [n, revenue] : q5) {
      if (revenue != 0) rows.emplace_back(-revenue, n);
    }
    std::sort(rows.begin(), rows.end());
    out << "q5 " << rows.size();
    for (const auto& [minus, n] : rows) out << " " << n << ":" << -minus;
  } else {
    std::sort(q3.begin(), q3.end());
    out << "q3 " << q3.size();
    for (size_t i = 0; i < q3.size() && i < kChTopRows; ++i) {
      const auto& [revenue, date, w, d, o] = q3[i];
      out << " " << w << "." << d << "." << o << ":" << -revenue << ":" << date;
    }
  }
  return out.str();
}

// `txns` txns of `generator`'s mix, each planned and run at once.
void RunMix(Db& db, TxnGenerator* generator, int txns) {
  for (int n = 0; n < txns; ++n) {
    Txn txn;
    generator->Next(&txn);
    db.Plan(&txn);
    db.Execute(txn);
  }
}

// What the partitions of RunQueryPushedDown keep between queries: one memo
// per share, and the rows they read.
struct ShareMemos {
  std::vector<std::unique_ptr<ScanMemo>> memos;
  Epoch snapshot = 0;  // the epoch the db's current state stands for
  uint64_t rows_read = 0;
};

// A query pushed down (paxflow mode's long scan): `shares` summaries, each
// of the warehouses w with w % shares == share, read from `db` as a
// partition reads its own rows (with its memo from `memos`, if given), then
// round 1 over the summaries alone.
std::string RunQueryPushedDown(Db& db, uint32_t procedure, uint32_t shares,
                               Txn* planned = nullptr, ShareMemos* memos = nullptr) {
  const Txn txn = Query(db, procedure, planned);
  EXPECT_TRUE(db.app().SummarizesScans(txn));
  LtxReads reads;
  if (memos != nullptr) memos->memos.resize(shares);
  for (uint32_t share = 0; share < shares; ++share) {
    ScanMemoUse use;
    if (memos != nullptr) {
      use.memo = &memos->memos[share];
      use.snapshot = memos->snapshot;
      use.may_learn = true;
    }
    reads.AddSummary(db.app().SummarizeScans(
        txn,
        [&](size_t s, Key from, Key to, const ScanRow& row) {
          const KeyRange& scan = txn.ltx().read_area(static_cast<int>(s));
          for (auto it = db.rows.lower_bound(std::max(scan.lo(), from));
               it != db.rows.end() && it->first <= std::min(scan.hi(), to); ++it) {
            if (db.keys().WarehouseOf(it->first) % shares != share) continue;
            if (memos != nullptr) memos->rows_read++;
            row(it->first, it->second);
          }
        },
        use));
  }
  for (int s = 0; s < txn.ltx().read_area_size(); ++s) reads.AddScan({});
  LtxRound last;
  db.app().ExecuteLong(txn, 1, reads, &last);
  // (As RunLongProcedure words it: an OLLP restart is a "recon" abort.)
  if (last.abort) return std::string("abort: ") + (last.restart ? "recon: " : "") + last.reason;
  EXPECT_EQ(last.outcome.checksum, HashBytes(last.outcome.detail));
  return last.outcome.detail;
}

TEST(TpccChTest, QueriesMatchADirectComputationAndNeverAnswerOutsideTheirPlan) {
  // Two warehouses on one partition: every range spans both.
  Db db(2, 1);
  std::vector<uint32_t> queries = {TpccApplication::kQ1, TpccApplication::kQ6, TpccApplication::kQ3,
                                   TpccApplication::kQ5};
  for (uint32_t q : queries) EXPECT_EQ(RunQuery(db, q), Direct(db, q)) << "loaded state";
  // A mix with Deliveries (delivered lines), New-Orders (the period moves).
  auto generator = db.app().NewGenerator(0, 1, 5);
  RunMix(db, generator.get(), 2500);
  ASSERT_EQ(db.Check(), "");
  // (The direct computation walks every row: once per query and state.)
  std::map<uint32_t, std::string> direct;
  for (uint32_t q : queries) direct[q] = Direct(db, q);
  for (uint32_t q : queries) {
    const std::string result = RunQuery(db, q);
    EXPECT_EQ(result, direct[q]);
    EXPECT_EQ(result.find("abort"), std::string::npos) << result;
  }
  // Pushed down: one summary per share of the warehouses (paxflow mode's
  // partitions), combined, gives the same result as the rows in one place.
  for (uint32_t q : queries) {
    for (uint32_t shares : {1u, 2u}) {
      EXPECT_EQ(RunQueryPushedDown(db, q, shares), direct[q]) << shares << " shares";
    }
  }
  EXPECT_NE(direct[TpccApplication::kQ3].find("q3 0"), 0u) << "Q3 found no order at all";
  EXPECT_NE(direct[TpccApplication::kQ5].find("q5 0"), 0u) << "Q5 found no nation at all";

  // Planned, then kChMargin + 1 New-Orders in one district before it runs:
  // its ranges no longer cover the period, and it says so.
  Txn planned;
  planned.set_txn_class(LTX);
  planned.set_procedure(TpccApplication::kQ6);
  planned.mutable_ltx()->set_kind(LTX_SCAN);
  db.Plan(&planned);
  // (The district of the warehouse further ahead: ranges span both.)
  const uint32_t w = db.Get<DistrictRow>(db.keys().District(1, 4)).next_o_id >
                             db.Get<DistrictRow>(db.keys().District(0, 4)).next_o_id
                         ? 1
                         : 0;
  for (uint32_t n = 0; n <= kChMargin; ++n) {
    ASSERT_TRUE(db.Execute(NewOrderTxn(db.keys(), w, 4, 1 + n % 100, {{1 + n % 50, w}})).committed);
  }
  const std::string late = RunQuery(db, TpccApplication::kQ6, &planned);
  EXPECT_NE(late.find("past the planned"), std::string::npos) << late;
  EXPECT_EQ(late.find("abort: recon: "), 0u) << "an OLLP restart, retryable: " << late;
  const std::string late_pushed = RunQueryPushedDown(db, TpccApplication::kQ6, 2, &planned);
  ASSERT_EQ(late_pushed.find("abort: "), 0u) << late_pushed;
  EXPECT_NE(late.find(late_pushed.substr(7)), std::string::npos) << late << " / " << late_pushed;
  EXPECT_EQ(RunQuery(db, TpccApplication::kQ6), Direct(db, TpccApplication::kQ6)) << "planned afresh";

  // Planned on a partition that reads warehouse 0 only (of 2 partitions),
  // warehouse 1 behind it: its ranges still cover warehouse 1's period.
  Db split(2, 2);
  auto only0 = split.app().NewGenerator(0, 2, 9);
  for (int n = 0; n < 1500; ++n) {
    Txn txn;
    only0->Next(&txn);
    split.Plan(&txn, 0);
    split.Execute(txn);
  }
  for (uint32_t q : queries) {
    EXPECT_EQ(RunQuery(split, q), Direct(split, q)) << "warehouse 1 behind";
    EXPECT_EQ(RunQueryPushedDown(split, q, 2), Direct(split, q)) << "warehouse 1 behind, pushed down";
  }

  // Warehouse 1 more than kChMargin orders ahead of warehouse 0, planned
  // where only warehouse 0 is read: the plan falls short of warehouse 1,
  // the query restarts (OLLP), and planned again it covers both, in both
  // shapes (a partition that reads warehouse 0 only learns from the restart).
  const uint32_t behind = split.Get<DistrictRow>(split.keys().District(0, 7)).next_o_id;
  while (split.Get<DistrictRow>(split.keys().District(1, 7)).next_o_id <= behind + kChMargin + 1) {
    ASSERT_TRUE(split.Execute(NewOrderTxn(split.keys(), 1, 7, 3, {{7, 1}})).committed);
  }
  Txn short_plan;
  short_plan.set_txn_class(LTX);
  short_plan.set_procedure(TpccApplication::kQ1);
  short_plan.mutable_ltx()->set_kind(LTX_SCAN);
  split.Plan(&short_plan, 0);
  const std::string outrun = RunQueryPushedDown(split, TpccApplication::kQ1, 2, &short_plan);
  EXPECT_EQ(outrun.find("abort: recon: "), 0u) << outrun;
  EXPECT_NE(outrun.find("warehouse 1 district 7"), std::string::npos) << outrun;
  for (uint32_t q : queries) {
    Txn again;
    again.set_txn_class(LTX);
    again.set_procedure(q);
    again.mutable_ltx()->set_kind(LTX_SCAN);
    split.Plan(&again, 0);
    EXPECT_EQ(RunQuery(split, q, &again), Direct(split, q)) << "planned again after a restart";
    EXPECT_EQ(RunQueryPushedDown(split, q, 2, &again), Direct(split, q))
        << "planned again after a restart, pushed down";
  }
}

TEST(TpccChTest, APartitionsMemoSkipsWhatCannotChangeAndKeepsTheResult) {
  // Two warehouses, in one share or two (paxflow mode's partitions), each
  // share with its memo; between queries a mix with Deliveries and
  // New-Orders moves the prefixes.
  Db db(2, 1);
  const std::vector<uint32_t> queries = {TpccApplication::kQ1, TpccApplication::kQ6,
                                         TpccApplication::kQ3, TpccApplication::kQ5};
  std::map<std::pair<uint32_t, uint32_t>, ShareMemos> memos;  // by query, shares
  auto generator = db.app().NewGenerator(0, 1, 11);
  for (Epoch epoch = 1; epoch <= 4; ++epoch) {
    for (uint32_t q : queries) {
      const std::string direct = Direct(db, q);  // walks every row: once per state
      for (uint32_t shares : {1u, 2u}) {
        ShareMemos& memo = memos[{q, shares}];
        memo.snapshot = epoch;
        const uint64_t before = memo.rows_read;
        EXPECT_EQ(RunQueryPushedDown(db, q, shares, nullptr, &memo), direct)
            << "query " << q << " at epoch " << epoch << ", " << shares << " shares";
        ShareMemos fresh;  // the same query with new memos
        fresh.snapshot = epoch;
        EXPECT_EQ(RunQueryPushedDown(db, q, shares, nullptr, &fresh), direct);
        if (epoch > 1) {
          // (Q3 reads its undelivered orders' rows once: each round it
          // reads the new-order rows and the orders New-Order added.)
          EXPECT_LT(memo.rows_read - before, fresh.rows_read / 4)
              << "query " << q << " read it all again";
        }
      }
    }
    RunMix(db, generator.get(), 600);
    ASSERT_EQ(db.Check(), "");
  }
  // A memo learnt at a later snapshot than a share's is not used there.
  for (uint32_t q : queries) {
    ShareMemos& memo = memos[{q, 2}];
    memo.snapshot = 2;
    EXPECT_EQ(RunQueryPushedDown(db, q, 2, nullptr, &memo), Direct(db, q)) << "older snapshot";
  }
}

TEST(TpccChTest, StreamsIssueOneQueryEachUntilItsResultIsIn) {
  WorkloadParams params = Params(2);
  params.ch_streams = 3;  // partition 0 of 2 runs streams 0 and 2
  TpccApplication app(params);
  uint32_t q = 0;
  std::vector<uint32_t> taken;
  while (app.TakeQuery(0, 2, &q)) taken.push_back(q);
  EXPECT_EQ(taken, (std::vector<uint32_t>{TpccApplication::kQ1, TpccApplication::kQ6}));
  Txn done;
  done.set_procedure(TpccApplication::kQ1);
  app.OnGeneratedResult(done, TxnOutcome{});
  ASSERT_TRUE(app.TakeQuery(0, 2, &q));
  EXPECT_EQ(q, TpccApplication::kQ3);
  EXPECT_FALSE(app.TakeQuery(0, 2, &q));
  // Without streams, the generator makes TPC-C's five txns only.
  TpccApplication plain(Params(1));
  EXPECT_FALSE(plain.TakeQuery(0, 1, &q));
}

}  // namespace
}  // namespace paxflow
