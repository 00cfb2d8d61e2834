// TPC-C: its nine tables in our 64-bit key space, its loader, its five
// transactions with the specification's mix, and its consistency checks
// (clause 3.3.2). docs/design.md ("TPC-C") gives the key encoding and how
// each dependent read is handled; in short:
//
// - New-Order writes its order, new-order, order-line and customer-last-
//   order rows at the district's next_o_id without declaring them: the
//   district row, which it locks for writing, guards every order id of its
//   district (every txn that touches those rows declares the district).
// - Payment and Order-Status by last name, Order-Status's last order,
//   Delivery's oldest new orders and Stock-Level's last 20 orders are
//   planned by a reconnaissance (OLLP, PlanDependent) outside the order;
//   at its position the procedure checks what it relied on and, if that
//   changed, declines with a retryable "ollp-restart" and is resubmitted.
//
// CH-benCHmark (the `ch` preset, --ch_streams): analytic queries Q1, Q6,
// Q3 and Q5 over the same tables, each a long read-only scan (an LTX_SCAN)
// of the whole tables CH's definition reads,
// issued by closed-loop analytic streams beside the TPC-C mix;
// docs/design.md ("CH-benCHmark") says how each mode runs them.
//
// Immutable after construction but for the Delivery planning hint (an
// atomic per district, read and moved by PlanDependent only: it shapes
// plans, which are logged in the txns, never what a txn does), the query
// planning hint (raised by a query whose plan went stale, read by
// PlanQuery; it too shapes plans only) and the
// analytic streams' free slots (taken by the generators, given back by
// OnGeneratedResult: they shape the mix, never what a txn does); any thread.
#pragma once
#include <cstdint>
#include <cstring>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "applications/application.h"
#include "applications/workload.h"

namespace paxflow {

namespace tpcc {

constexpr uint32_t kDistricts = 10;        // per warehouse
constexpr uint32_t kCustomers = 3000;      // per district
constexpr uint32_t kItems = 100000;
constexpr uint32_t kInitialOrders = 3000;  // per district, one per customer
constexpr uint32_t kFirstNewOrder = 2101;  // orders 2101..3000 start undelivered
constexpr uint32_t kNames = 1000;          // last names are 3 syllables of 0..999
constexpr uint32_t kMaxLines = 15;
constexpr uint32_t kStockLevelOrders = 20;
constexpr uint32_t kMaxWarehouses = 4096;  // the key encoding's limit
// CH-benCHmark: a query reads whole tables, as CH defines it: every order
// line (and order, new order, customer, stock its join needs) of every
// district; its planned ranges reach kChMargin orders past the next_o_id
// its planning read, for the New-Orders sequenced before it runs. Q3
// reports its top kChTopRows.
constexpr uint32_t kChMargin = 512;
constexpr uint32_t kChTopRows = 10;
// Q3's stand-in for CH's c_state LIKE 'A%': a last name's number below this.
constexpr uint32_t kChQ3Names = 100;
// Q5's stand-ins for CH's nation, supplier and region tables (not stored:
// they never change). A customer's nation is its last name's number mod
// kChNations (CH: ascii(substr(c_state, 1, 1)), 62 nations); stock (w, i)'s
// supplier is ((w + 1) * i) mod kChSuppliers (CH: mod(s_w_id * s_i_id,
// 10000), its warehouse ids counted from 1), of nation supplier mod
// kChNations; a nation's region is nation mod 5, and Q5 keeps region
// kChQ5Region (CH: r_name = 'EUROPE').
constexpr uint32_t kChNations = 62;
constexpr uint32_t kChSuppliers = 10000;
constexpr uint32_t kChRegions = 5;
constexpr uint32_t kChQ5Region = 3;
inline uint32_t ChSupplierNation(uint32_t w, uint32_t i) {
  return static_cast<uint32_t>(((uint64_t{w} + 1) * i) % kChSuppliers) % kChNations;
}

enum Table : uint32_t {
  kWarehouse = 1, kDistrict = 2, kCustomer = 3, kNameIndex = 4, kOrder = 5, kNewOrder = 6,
  kOrderLine = 7, kLastOrder = 8, kHistory = 9, kItem = 10, kStock = 11,
};

// Rows, stored as their bytes (little-endian, fixed size). Money in cents,
// rates in basis points. Text columns (names, addresses, fillers) are not
// stored, except what a txn decides on: the last name's number and a sort
// key standing for the first name.
struct WarehouseRow { int64_t ytd; int32_t tax; uint32_t pad; };
struct DistrictRow {
  int64_t ytd; int32_t tax;
  uint32_t next_o_id;     // D_NEXT_O_ID
  uint32_t next_deliver;  // the oldest undelivered order (= next_o_id: none)
  uint32_t next_h_id;     // history rows of this district
};
struct CustomerRow {
  int64_t balance, ytd_payment;
  uint32_t payment_cnt, delivery_cnt;
  int32_t discount; uint16_t last; uint8_t bad_credit, pad;
  uint64_t first;  // sort key of C_FIRST
};
struct OrderRow { uint32_t c_id, entry_d; uint8_t carrier_id, ol_cnt, all_local, pad; };
struct OrderLineRow { uint32_t i_id, supply_w, delivery_d; uint32_t quantity; int64_t amount; };
struct HistoryRow { uint32_t c_id, c_d, c_w, pad; int64_t amount; };
struct ItemRow { int64_t price; uint32_t im_id, pad; };
struct StockRow { int32_t quantity; uint32_t order_cnt, remote_cnt, pad; int64_t ytd; };
// New-order rows hold one byte; last-order rows a uint32 o_id; name-index
// rows the uint32 customer ids of that last name, sorted by first name.

template <typename Row>
std::string Encode(const Row& row) {
  return std::string(reinterpret_cast<const char*>(&row), sizeof(row));
}
// False (and `row` zeroed) if `value` is not a Row.
template <typename Row>
bool Decode(std::string_view value, Row* row) {
  *row = Row{};
  if (value.size() != sizeof(Row)) return false;
  std::memcpy(row, value.data(), sizeof(Row));
  return true;
}

// Keys: (table << 48 | district << 44 | id) * warehouses + w, w in
// [0, warehouses). A partition holds the keys k with k % partitions ==
// partition, so with warehouses a multiple of the partitions every row of
// warehouse w lives on partition w % partitions.
class Keys {
 public:
  explicit Keys(uint32_t warehouses) : w_(warehouses) {}
  uint32_t warehouses() const { return w_; }
  Key Make(Table t, uint32_t w, uint32_t d, uint64_t id) const {
    return ((uint64_t{t} << 48 | uint64_t{d} << 44 | id) * w_) + w;
  }
  Key Warehouse(uint32_t w) const { return Make(kWarehouse, w, 0, 0); }
  Key District(uint32_t w, uint32_t d) const { return Make(kDistrict, w, d, 0); }
  Key Customer(uint32_t w, uint32_t d, uint32_t c) const { return Make(kCustomer, w, d, c); }
  Key NameIndex(uint32_t w, uint32_t d, uint32_t name) const { return Make(kNameIndex, w, d, name); }
  Key Order(uint32_t w, uint32_t d, uint32_t o) const { return Make(kOrder, w, d, o); }
  Key NewOrder(uint32_t w, uint32_t d, uint32_t o) const { return Make(kNewOrder, w, d, o); }
  Key OrderLine(uint32_t w, uint32_t d, uint32_t o, uint32_t ol) const {
    return Make(kOrderLine, w, d, uint64_t{o} << 4 | ol);
  }
  Key LastOrder(uint32_t w, uint32_t d, uint32_t c) const { return Make(kLastOrder, w, d, c); }
  Key History(uint32_t w, uint32_t d, uint32_t h) const { return Make(kHistory, w, d, h); }
  Key Item(uint32_t w, uint32_t i) const { return Make(kItem, w, 0, i); }
  Key Stock(uint32_t w, uint32_t i) const { return Make(kStock, w, 0, i); }
  // The parts of a key.
  Table TableOf(Key k) const { return static_cast<Table>((k / w_) >> 48); }
  uint32_t WarehouseOf(Key k) const { return static_cast<uint32_t>(k % w_); }
  uint32_t DistrictOf(Key k) const { return static_cast<uint32_t>(((k / w_) >> 44) & 0xf); }
  uint64_t IdOf(Key k) const { return (k / w_) & ((uint64_t{1} << 44) - 1); }

 private:
  uint32_t w_;
};

// TPC-C's NURand(A, x, y) with run-time constant C (clause 2.1.6).
uint32_t NURand(uint64_t (*uniform)(void*, uint64_t), void* rng, uint32_t a, uint32_t x,
                uint32_t y, uint32_t c);

// Clause 3.3.2's consistency conditions 1-4 over one partition's rows
// (every warehouse's rows are on one partition): empty if they hold, else
// the first few violations. `scan` visits every (key, value).
std::string CheckConsistency(uint32_t warehouses,
                             const std::function<void(const std::function<void(Key, std::string_view)>&)>& scan);

}  // namespace tpcc

class TpccApplication : public Application {
 public:
  enum Procedure : uint32_t {
    kNewOrder = 1, kPayment = 2, kOrderStatus = 3, kDelivery = 4, kStockLevel = 5,
    // CH-benCHmark's analytic queries (long read-only scans).
    kQ1 = 6, kQ6 = 7, kQ3 = 8, kQ5 = 9,
  };
  static constexpr uint32_t kProcedures = 5;
  // An OLLP restart's detail starts with this.
  static constexpr const char* kRestart = "ollp-restart";

  explicit TpccApplication(const WorkloadParams& params);
  const char* name() const override { return "tpcc"; }
  uint64_t DenseKeys() const override { return 0; }
  void Load(PartitionId partition, uint32_t partitions, Loader* loader) const override;
  void Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
               TxnOutcome* outcome) const override;
  std::unique_ptr<TxnGenerator> NewGenerator(PartitionId partition, uint32_t partitions,
                                             uint64_t seed) const override;
  const char* ProcedureName(uint32_t procedure) const override;
  std::vector<std::pair<std::string, uint32_t>> Procedures() const override;
  std::string CheckClientTxn(const Txn& txn) const override;
  static bool IsQuery(uint32_t procedure) {
    return procedure == kQ1 || procedure == kQ6 || procedure == kQ3 || procedure == kQ5;
  }
  bool IsLongProcedure(uint32_t procedure) const override { return IsQuery(procedure); }
  // A query's ranges are planned from a recent state too (the period).
  bool NeedsRecon(uint32_t procedure) const override {
    return procedure == kPayment || procedure == kOrderStatus || procedure == kDelivery ||
           procedure == kStockLevel || IsQuery(procedure);
  }
  // --tpcc_delivery_ltx: the generator issues Delivery as an LTX whose
  // write area (the rows it delivers) its plan declares, in both modes; it
  // reads only those rows, so paxflow's lane may lock it at its begin.
  bool delivery_ltx() const { return params_.tpcc_delivery_ltx; }
  bool PlansLtxAreas(uint32_t procedure) const override { return procedure == kDelivery; }
  bool ReadsDeclared(uint32_t procedure) const override { return procedure == kDelivery; }
  void ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                   LtxRound* out) const override;
  // CH's queries are pushed down to the data (ch_queries.h): a partition
  // summarizes its share of a query's rows, the origin combines.
  bool SummarizesScans(const Txn& txn) const override { return IsQuery(txn.procedure()); }
  std::string SummarizeScans(const Txn& txn, const ScanVisit& visit,
                             const ScanMemoUse& memo) const override;
  // Gives a finished query's stream its slot back (the stream of the
  // query's origin_partition).
  void OnGeneratedResult(const Txn& txn, const TxnOutcome& outcome) const override;
  void PlanDependent(Txn* txn, const ReconRead& read) const override;
  std::string CheckState(const StateScan& scan) const override;

  const tpcc::Keys& keys() const { return keys_; }
  // The customer ids of last name `name` in district (w, d), sorted by
  // first name: what the loader puts in the name-index row.
  std::vector<uint32_t> CustomersNamed(uint32_t w, uint32_t d, uint32_t name) const;
  // The initial customer row (the loader's).
  tpcc::CustomerRow InitialCustomer(uint32_t w, uint32_t d, uint32_t c) const;

  // Args are uint32 words; each procedure's first words are the
  // generator's choices, the rest its reconnaissance's (PlanDependent).
  static std::string Words(const std::vector<uint32_t>& words);
  static std::vector<uint32_t> Words(std::string_view args);

 private:
  void NewOrder(const Txn& txn, const std::vector<uint32_t>& a, const ReadValues& reads,
                WriteSet* writes, TxnOutcome* outcome) const;
  void Payment(const Txn& txn, const std::vector<uint32_t>& a, const ReadValues& reads,
               WriteSet* writes, TxnOutcome* outcome) const;
  void OrderStatus(const Txn& txn, const std::vector<uint32_t>& a, const ReadValues& reads,
                   TxnOutcome* outcome) const;
  void Delivery(const Txn& txn, const std::vector<uint32_t>& a, const ReadValues& reads,
                WriteSet* writes, TxnOutcome* outcome) const;
  void StockLevel(const Txn& txn, const std::vector<uint32_t>& a, const ReadValues& reads,
                  TxnOutcome* outcome) const;
  // Delivery's checks and writes over its planned rows (`get`: false if a
  // row has no value), the same as a short txn or an LTX.
  using RowGet = std::function<bool(Key key, std::string_view* value)>;
  void Deliver(const std::vector<uint32_t>& a, const RowGet& get, WriteSet* writes,
               TxnOutcome* outcome) const;
  // The rows a planned Delivery (its args) reads and writes: its districts,
  // then each delivered order's new-order, order, lines and customer.
  std::vector<Key> DeliveryKeys(const std::vector<uint32_t>& a) const;
  void DeliveryLong(const Txn& txn, uint32_t round, const LtxReads& reads, LtxRound* out) const;
  // A query's declared ranges (its read area) from a recent state.
  void PlanQuery(Txn* txn, const ReconRead& read) const;
  // A query over its scans: false (and why) if its planned ranges do not
  // cover its period at its snapshot (*replan_orders: see ChCombine).
  bool RunQuery(const Txn& txn, const LtxReads& reads, std::string* result,
                std::string* why, uint32_t* replan_orders) const;

 public:
  // The analytic streams (CH): a generator of partition `partition` takes
  // a free stream's turn (true, and the query's procedure) or gets false.
  bool TakeQuery(PartitionId partition, uint32_t partitions, uint32_t* procedure) const;

 private:

  // Delivery's turn in district d of w: the next undelivered order no
  // planned Delivery was given yet (at least `oldest`); 0 if that order
  // does not exist yet (`next_o_id`).
  uint32_t TakeDelivery(uint32_t w, uint32_t d, uint32_t oldest, uint32_t next_o_id) const;

  WorkloadParams params_;
  tpcc::Keys keys_;
  // By warehouse * kDistricts + district: the next order to give a Delivery.
  std::unique_ptr<std::atomic<uint32_t>[]> delivery_hint_;
  // CH: by partition (fewer than the warehouses), its streams with no
  // query in flight (-1: not counted yet), and the next query to issue (Q1,
  // Q6, Q3, Q5 in turn). By partition, since one process may run several
  // partitions' generators (paxflow-load's clients).
  std::unique_ptr<std::atomic<int64_t>[]> free_streams_;
  mutable std::atomic<uint32_t> next_query_{0};
  // CH: the last order id of the fullest district a query found when New-
  // Orders outran its plan; PlanQuery plans at least that far.
  mutable std::atomic<uint32_t> query_orders_hint_{0};
};

}  // namespace paxflow
