#include "applications/tpcc.h"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "applications/ch_queries.h"
#include "common/atomic_max.h"
#include "common/hash.h"
#include "common/key_area.h"
#include "common/random.h"

namespace paxflow {

using namespace tpcc;  // NOLINT: this file is TPC-C's

namespace {

// Run-time and load-time constants of NURand (clause 2.1.6; C_RUN - C_LOAD
// for last names is 66, inside the allowed 65..119).
constexpr uint32_t kCLoadLast = 157, kCRunLast = 223, kCCustomer = 259, kCItem = 7911;

uint64_t UniformOf(void* rng, uint64_t n) { return static_cast<SplitMix64*>(rng)->Uniform(n); }

// Uniform in [x, y].
uint32_t Between(SplitMix64& rng, uint32_t x, uint32_t y) {
  return x + static_cast<uint32_t>(rng.Uniform(uint64_t{y} - x + 1));
}

uint32_t U32(std::string_view value) {
  uint32_t v = 0;
  if (value.size() == 4) std::memcpy(&v, value.data(), 4);
  return v;
}
std::string EncodeU32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); }

std::string Restart(const std::string& what) {
  return std::string(TpccApplication::kRestart) + ": " + what;
}

void Decline(TxnOutcome* outcome, const std::string& detail, bool restart) {
  outcome->committed = false;
  outcome->retryable = restart;
  outcome->detail = restart ? Restart(detail) : detail;
}

// Positions looked up by key, in one sorted array: Delivery and
// Stock-Level look up a hundred or more keys each, and a node-based map
// spent a malloc per key on every run. Where a key was added more than once
// the last one added counts, as in a map assigned in order (positions are
// added ascending).
template <typename K>
class PositionIndex {
 public:
  void Reserve(size_t count) { entries_.reserve(count); }
  void Add(K key, size_t position) { entries_.emplace_back(key, position); }
  // After the last Add, before any Find.
  void Seal() { std::sort(entries_.begin(), entries_.end()); }
  bool Find(K key, size_t* position) const {
    auto it = std::upper_bound(entries_.begin(), entries_.end(),
                               std::make_pair(key, std::numeric_limits<size_t>::max()));
    if (it == entries_.begin() || (it - 1)->first != key) return false;
    *position = (it - 1)->second;
    return true;
  }

 private:
  std::vector<std::pair<K, size_t>> entries_;
};

// The position of each key of a txn's lists (read_set, then read_write_set).
PositionIndex<Key> Positions(const Txn& txn) {
  PositionIndex<Key> at;
  at.Reserve(static_cast<size_t>(txn.read_set_size() + txn.read_write_set_size()));
  size_t p = 0;
  for (Key k : txn.read_set()) at.Add(k, p++);
  for (Key k : txn.read_write_set()) at.Add(k, p++);
  at.Seal();
  return at;
}

// Words each procedure's generator sets; the rest is its reconnaissance's.
size_t BaseWords(uint32_t procedure, const std::vector<uint32_t>& a) {
  switch (procedure) {
    case TpccApplication::kNewOrder: return a.size() >= 5 ? 5 + 3 * size_t{a[3]} : 5;
    case TpccApplication::kPayment: return 8;
    case TpccApplication::kOrderStatus: return 4;
    case TpccApplication::kDelivery: return 3 + kDistricts;  // and the orders it was given
    case TpccApplication::kStockLevel: return 3;
    default: return a.size();
  }
}

}  // namespace

uint32_t tpcc::NURand(uint64_t (*uniform)(void*, uint64_t), void* rng, uint32_t a, uint32_t x,
                      uint32_t y, uint32_t c) {
  const uint32_t r1 = static_cast<uint32_t>(uniform(rng, uint64_t{a} + 1));
  const uint32_t r2 = x + static_cast<uint32_t>(uniform(rng, uint64_t{y} - x + 1));
  return (((r1 | r2) + c) % (y - x + 1)) + x;
}

TpccApplication::TpccApplication(const WorkloadParams& params)
    : params_(params),
      keys_(params.warehouses ? params.warehouses : 1),
      delivery_hint_(new std::atomic<uint32_t>[keys_.warehouses() * kDistricts]()),
      free_streams_(new std::atomic<int64_t>[keys_.warehouses()]) {
  for (uint32_t p = 0; p < keys_.warehouses(); ++p) free_streams_[p].store(-1);
}

std::string TpccApplication::Words(const std::vector<uint32_t>& words) {
  return std::string(reinterpret_cast<const char*>(words.data()), 4 * words.size());
}

std::vector<uint32_t> TpccApplication::Words(std::string_view args) {
  std::vector<uint32_t> words(args.size() / 4);
  if (!words.empty()) std::memcpy(words.data(), args.data(), 4 * words.size());
  return words;
}

// ---- Load ----

CustomerRow TpccApplication::InitialCustomer(uint32_t w, uint32_t d, uint32_t c) const {
  SplitMix64 rng(Mix64(keys_.Customer(w, d, c)));
  CustomerRow row{};
  row.balance = -1000;  // -10.00
  row.ytd_payment = 1000;
  row.payment_cnt = 1;
  row.discount = static_cast<int32_t>(rng.Uniform(5001));  // 0..50%
  row.bad_credit = rng.Uniform(10) == 0;                   // 10% BC
  row.first = rng.Next();
  row.last = static_cast<uint16_t>(
      c <= kNames ? c - 1 : NURand(UniformOf, &rng, 255, 0, kNames - 1, kCLoadLast));
  return row;
}

std::vector<uint32_t> TpccApplication::CustomersNamed(uint32_t w, uint32_t d,
                                                      uint32_t name) const {
  std::vector<std::pair<uint64_t, uint32_t>> named;
  for (uint32_t c = 1; c <= kCustomers; ++c) {
    const CustomerRow row = InitialCustomer(w, d, c);
    if (row.last == name) named.emplace_back(row.first, c);
  }
  std::sort(named.begin(), named.end());
  std::vector<uint32_t> ids;
  for (const auto& [first, c] : named) ids.push_back(c);
  return ids;
}

void TpccApplication::Load(PartitionId partition, uint32_t partitions, Loader* loader) const {
  const uint32_t warehouses = keys_.warehouses();
  for (uint32_t w = partition; w < warehouses; w += partitions) {
    SplitMix64 rng(Mix64(uint64_t{w} + 1));
    for (uint32_t i = 1; i <= kItems; ++i) {
      ItemRow item{};
      item.price = Between(rng, 100, 10000);
      item.im_id = Between(rng, 1, 10000);
      loader->Put(keys_.Item(w, i), Encode(item));
      StockRow stock{};
      stock.quantity = static_cast<int32_t>(Between(rng, 10, 100));
      loader->Put(keys_.Stock(w, i), Encode(stock));
    }
    WarehouseRow warehouse{};
    warehouse.ytd = 30000000;  // 300,000.00
    warehouse.tax = static_cast<int32_t>(Between(rng, 0, 2000));
    loader->Put(keys_.Warehouse(w), Encode(warehouse));
    std::vector<uint32_t> permutation(kInitialOrders);
    for (uint32_t d = 0; d < kDistricts; ++d) {
      DistrictRow district{};
      district.ytd = 3000000;  // 30,000.00
      district.tax = static_cast<int32_t>(Between(rng, 0, 2000));
      district.next_o_id = kInitialOrders + 1;
      district.next_deliver = kFirstNewOrder;
      district.next_h_id = kCustomers + 1;
      loader->Put(keys_.District(w, d), Encode(district));
      std::vector<std::vector<std::pair<uint64_t, uint32_t>>> names(kNames);
      for (uint32_t c = 1; c <= kCustomers; ++c) {
        const CustomerRow customer = InitialCustomer(w, d, c);
        loader->Put(keys_.Customer(w, d, c), Encode(customer));
        names[customer.last].emplace_back(customer.first, c);
        HistoryRow history{};
        history.c_id = c;
        history.c_d = d;
        history.c_w = w;
        history.amount = 1000;
        loader->Put(keys_.History(w, d, c), Encode(history));
      }
      for (uint32_t name = 0; name < kNames; ++name) {
        std::sort(names[name].begin(), names[name].end());
        std::string ids;
        for (const auto& [first, c] : names[name]) ids += EncodeU32(c);
        loader->Put(keys_.NameIndex(w, d, name), ids);
      }
      // Orders 1..3000, one per customer in a random permutation.
      for (uint32_t i = 0; i < kInitialOrders; ++i) permutation[i] = i + 1;
      for (uint32_t i = kInitialOrders - 1; i > 0; --i) {
        std::swap(permutation[i], permutation[rng.Uniform(i + 1)]);
      }
      for (uint32_t o = 1; o <= kInitialOrders; ++o) {
        const bool delivered = o < kFirstNewOrder;
        OrderRow order{};
        order.c_id = permutation[o - 1];
        order.entry_d = 1;
        order.carrier_id = delivered ? static_cast<uint8_t>(Between(rng, 1, 10)) : 0;
        order.ol_cnt = static_cast<uint8_t>(Between(rng, 5, kMaxLines));
        order.all_local = 1;
        loader->Put(keys_.Order(w, d, o), Encode(order));
        loader->Put(keys_.LastOrder(w, d, order.c_id), EncodeU32(o));
        if (!delivered) loader->Put(keys_.NewOrder(w, d, o), std::string(1, '\1'));
        for (uint32_t ol = 1; ol <= order.ol_cnt; ++ol) {
          OrderLineRow line{};
          line.i_id = Between(rng, 1, kItems);
          line.supply_w = w;
          line.delivery_d = delivered ? 1 : 0;
          line.quantity = 5;
          line.amount = delivered ? 0 : Between(rng, 1, 999999);
          loader->Put(keys_.OrderLine(w, d, o, ol), Encode(line));
        }
      }
    }
  }
}

// ---- The generator ----

namespace {

class TpccGenerator : public TxnGenerator {
 public:
  TpccGenerator(const TpccApplication& app, PartitionId partition, uint32_t partitions,
                uint64_t seed)
      : app_(app), partition_(partition), partitions_(partitions), keys_(app.keys()), rng_(seed) {
    for (uint32_t w = partition; w < keys_.warehouses(); w += partitions) own_.push_back(w);
  }

  void Next(Txn* txn) override {
    uint32_t query = 0;
    if (app_.TakeQuery(partition_, partitions_, &query)) {
      // A long read-only scan; PlanDependent declares its ranges.
      txn->set_txn_class(LTX);
      txn->set_procedure(query);
      txn->mutable_ltx()->set_kind(LTX_SCAN);
      return;
    }
    const uint32_t w = own_[rng_.Uniform(own_.size())];
    const uint32_t roll = static_cast<uint32_t>(rng_.Uniform(100));
    ++clock_;
    if (roll < 45) NewOrder(txn, w);
    else if (roll < 88) Payment(txn, w);
    else if (roll < 92) OrderStatus(txn, w);
    else if (roll < 96) Delivery(txn, w);
    else StockLevel(txn, w);
  }

 private:
  uint32_t CustomerId() { return NURand(UniformOf, &rng_, 1023, 1, kCustomers, kCCustomer); }
  uint32_t LastName() { return NURand(UniformOf, &rng_, 255, 0, kNames - 1, kCRunLast); }
  uint32_t Other(uint32_t w) {
    uint32_t o = static_cast<uint32_t>(rng_.Uniform(keys_.warehouses() - 1));
    return o >= w ? o + 1 : o;
  }

  void NewOrder(Txn* txn, uint32_t w) {
    const uint32_t d = static_cast<uint32_t>(rng_.Uniform(kDistricts));
    const uint32_t c = CustomerId();
    const uint32_t lines = Between(rng_, 5, kMaxLines);
    const bool rollback = rng_.Uniform(100) == 0;  // 1%: the last item is unused
    std::vector<uint32_t> a = {w, d, c, lines, clock_};
    std::vector<uint32_t> items;
    while (items.size() < lines) {
      uint32_t i = NURand(UniformOf, &rng_, 8191, 1, kItems, kCItem);
      if (rollback && items.size() + 1 == lines) i = kItems + 1;
      if (std::find(items.begin(), items.end(), i) != items.end()) continue;
      items.push_back(i);
    }
    txn->set_procedure(TpccApplication::kNewOrder);
    txn->add_read_set(keys_.Warehouse(w));
    txn->add_read_set(keys_.Customer(w, d, c));
    txn->add_read_write_set(keys_.District(w, d));
    for (uint32_t i : items) {
      // 1% of lines come from a remote warehouse.
      const uint32_t supply = keys_.warehouses() > 1 && rng_.Uniform(100) == 0 ? Other(w) : w;
      a.push_back(i);
      a.push_back(supply);
      a.push_back(Between(rng_, 1, 10));
      txn->add_read_set(keys_.Item(w, i));
      txn->add_read_write_set(keys_.Stock(supply, i));
    }
    txn->set_args(TpccApplication::Words(a));
  }

  void Payment(Txn* txn, uint32_t w) {
    const uint32_t d = static_cast<uint32_t>(rng_.Uniform(kDistricts));
    uint32_t c_w = w, c_d = d;
    if (keys_.warehouses() > 1 && rng_.Uniform(100) < 15) {  // 15% remote
      c_w = Other(w);
      c_d = static_cast<uint32_t>(rng_.Uniform(kDistricts));
    }
    const bool by_name = rng_.Uniform(100) < 60;
    const uint32_t who = by_name ? LastName() : CustomerId();
    const uint32_t amount = Between(rng_, 100, 500000);
    txn->set_procedure(TpccApplication::kPayment);
    txn->set_args(TpccApplication::Words({w, d, c_w, c_d, by_name, who, amount, clock_}));
    // Keys: PlanDependent (by name needs the index).
  }

  void OrderStatus(Txn* txn, uint32_t w) {
    const uint32_t d = static_cast<uint32_t>(rng_.Uniform(kDistricts));
    const bool by_name = rng_.Uniform(100) < 60;
    const uint32_t who = by_name ? LastName() : CustomerId();
    txn->set_procedure(TpccApplication::kOrderStatus);
    txn->set_args(TpccApplication::Words({w, d, by_name, who}));
  }

  void Delivery(Txn* txn, uint32_t w) {
    txn->set_procedure(TpccApplication::kDelivery);
    if (app_.delivery_ltx()) {
      // An LTX whose write area PlanDependent declares (PlansLtxAreas).
      txn->set_txn_class(LTX);
      txn->mutable_ltx()->set_kind(LTX_BEGIN);
    }
    // The order to deliver in each district: 0, chosen by PlanDependent.
    std::vector<uint32_t> a = {w, Between(rng_, 1, 10), clock_};
    a.resize(3 + kDistricts, 0);
    txn->set_args(TpccApplication::Words(a));
  }

  void StockLevel(Txn* txn, uint32_t w) {
    txn->set_procedure(TpccApplication::kStockLevel);
    txn->set_args(TpccApplication::Words(
        {w, static_cast<uint32_t>(rng_.Uniform(kDistricts)), Between(rng_, 10, 20)}));
  }

  const TpccApplication& app_;
  const PartitionId partition_;
  const uint32_t partitions_;
  const Keys keys_;
  SplitMix64 rng_;
  std::vector<uint32_t> own_;
  uint32_t clock_ = 1;  // stands for dates: the generator's txn count
};

}  // namespace

std::unique_ptr<TxnGenerator> TpccApplication::NewGenerator(PartitionId partition,
                                                            uint32_t partitions,
                                                            uint64_t seed) const {
  return std::make_unique<TpccGenerator>(*this, partition, partitions, seed);
}

// ---- OLLP: planning dependent txns ----

uint32_t TpccApplication::TakeDelivery(uint32_t w, uint32_t d, uint32_t oldest,
                                       uint32_t next_o_id) const {
  std::atomic<uint32_t>& hint = delivery_hint_[w * kDistricts + d];
  uint32_t given = hint.load(std::memory_order_relaxed);
  while (true) {
    const uint32_t o = std::max(given, oldest);
    if (o >= next_o_id) return 0;  // nothing undelivered yet
    if (hint.compare_exchange_weak(given, o + 1, std::memory_order_relaxed)) return o;
  }
}

void TpccApplication::PlanDependent(Txn* txn, const ReconRead& read) const {
  if (IsQuery(txn->procedure())) {
    PlanQuery(txn, read);
    return;
  }
  std::vector<uint32_t> a = Words(txn->args());
  a.resize(std::min(a.size(), BaseWords(txn->procedure(), a)));
  std::string value;
  // The middle customer of a last name (clause 2.5.2.2: position n/2
  // rounded up, by first name). The index is never changed by TPC-C's
  // txns, so where the partition cannot read it (a remote customer's) its
  // content is what the loader wrote.
  auto by_name = [&](uint32_t w, uint32_t d, uint32_t name) -> uint32_t {
    std::vector<uint32_t> ids;
    if (read(keys_.NameIndex(w, d, name), &value)) {
      for (size_t i = 0; i + 4 <= value.size(); i += 4) ids.push_back(U32(value.substr(i, 4)));
    } else {
      ids = CustomersNamed(w, d, name);
    }
    return ids.empty() ? 0 : ids[(ids.size() - 1) / 2];
  };
  auto order_of = [&](uint32_t w, uint32_t d, uint32_t o, OrderRow* order) {
    return read(keys_.Order(w, d, o), &value) && Decode(value, order);
  };
  switch (txn->procedure()) {
    case kPayment: {
      if (a.size() != 8) return;
      txn->clear_read_set();
      txn->clear_read_write_set();
      const uint32_t w = a[0], d = a[1], c_w = a[2], c_d = a[3];
      uint32_t c = a[5];
      if (a[4]) {
        c = by_name(c_w, c_d, a[5]);
        a.push_back(c);
        txn->add_read_set(keys_.NameIndex(c_w, c_d, a[5]));
      }
      txn->add_read_write_set(keys_.Warehouse(w));
      txn->add_read_write_set(keys_.District(w, d));
      txn->add_read_write_set(keys_.Customer(c_w, c_d, c));
      break;
    }
    case kOrderStatus: {
      if (a.size() != 4) return;
      txn->clear_read_set();
      const uint32_t w = a[0], d = a[1];
      txn->add_read_set(keys_.District(w, d));  // guards the district's orders (calvin mode)
      uint32_t c = a[3];
      if (a[2]) {
        c = by_name(w, d, a[3]);
        txn->add_read_set(keys_.NameIndex(w, d, a[3]));
      }
      const uint32_t o = read(keys_.LastOrder(w, d, c), &value) ? U32(value) : 0;
      OrderRow order{};
      order_of(w, d, o, &order);
      a.insert(a.end(), {c, o, order.ol_cnt});
      txn->add_read_set(keys_.Customer(w, d, c));
      txn->add_read_set(keys_.LastOrder(w, d, c));
      txn->add_read_set(keys_.Order(w, d, o));
      for (uint32_t ol = 1; ol <= order.ol_cnt; ++ol) txn->add_read_set(keys_.OrderLine(w, d, o, ol));
      break;
    }
    case kDelivery: {
      if (a.size() != 3 + kDistricts) return;
      txn->clear_read_write_set();
      const uint32_t w = a[0];
      for (uint32_t d = 0; d < kDistricts; ++d) {
        DistrictRow district{};
        if (read(keys_.District(w, d), &value)) Decode(value, &district);
        // The order this Delivery delivers in d: the one it was given
        // before (a restart keeps it, so that Deliveries in flight keep
        // their turns), unless it was delivered meanwhile or none was; then
        // the next one not given to a Delivery yet (the hint), at least the
        // oldest undelivered one.
        uint32_t o = a[3 + d];
        if (o == 0 || o < district.next_deliver) {
          o = TakeDelivery(w, d, district.next_deliver, district.next_o_id);
        }
        OrderRow order{};
        if (o != 0 && !order_of(w, d, o, &order)) o = 0;  // not there yet (a torn read)
        a[3 + d] = o;
        a.insert(a.end(), {order.c_id, order.ol_cnt});
      }
      std::vector<Key> rows = DeliveryKeys(a);
      if (txn->txn_class() == LTX) {
        // --tpcc_delivery_ltx: the same keys are the LTX's write area (it
        // reads nothing else); ExecuteLong finds them again in its args.
        LtxRecord* ltx = txn->mutable_ltx();
        ltx->clear_write_area();
        ltx->clear_read_area();
        KeyArea::OfKeys(std::move(rows)).AppendTo(ltx->mutable_write_area());
      } else {
        for (Key k : rows) txn->add_read_write_set(k);
      }
      break;
    }
    case kStockLevel: {
      if (a.size() != 3) return;
      txn->clear_read_set();
      const uint32_t w = a[0], d = a[1];
      txn->add_read_set(keys_.District(w, d));
      DistrictRow district{};
      if (read(keys_.District(w, d), &value)) Decode(value, &district);
      const uint32_t next = district.next_o_id;
      a.push_back(next);
      std::vector<uint32_t> items;
      const uint32_t first = next > kStockLevelOrders ? next - kStockLevelOrders : 1;
      for (uint32_t o = first; o < next; ++o) {
        OrderRow order{};
        order_of(w, d, o, &order);
        a.push_back(order.ol_cnt);
        for (uint32_t ol = 1; ol <= order.ol_cnt; ++ol) {
          txn->add_read_set(keys_.OrderLine(w, d, o, ol));
          OrderLineRow line{};
          if (read(keys_.OrderLine(w, d, o, ol), &value) && Decode(value, &line)) {
            items.push_back(line.i_id);
          }
        }
      }
      std::sort(items.begin(), items.end());
      items.erase(std::unique(items.begin(), items.end()), items.end());
      a.push_back(static_cast<uint32_t>(items.size()));
      for (uint32_t i : items) {
        a.push_back(i);
        txn->add_read_set(keys_.Stock(w, i));
      }
      break;
    }
    default:
      return;
  }
  txn->set_args(Words(a));
}

// ---- The procedures ----

void TpccApplication::Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
                              TxnOutcome* outcome) const {
  const std::vector<uint32_t> a = Words(txn.args());
  switch (txn.procedure()) {
    case kNewOrder: NewOrder(txn, a, reads, writes, outcome); return;
    case kPayment: Payment(txn, a, reads, writes, outcome); return;
    case kOrderStatus: OrderStatus(txn, a, reads, outcome); return;
    case kDelivery: Delivery(txn, a, reads, writes, outcome); return;
    case kStockLevel: StockLevel(txn, a, reads, outcome); return;
    default: Decline(outcome, "unknown tpcc procedure", false);
  }
}

void TpccApplication::NewOrder(const Txn& txn, const std::vector<uint32_t>& a,
                               const ReadValues& reads, WriteSet* writes,
                               TxnOutcome* outcome) const {
  // read_set: warehouse, customer, items; read_write_set: district, stocks.
  const size_t lines = a.size() >= 5 ? a[3] : 0;
  if (a.size() != 5 + 3 * lines || lines == 0 || lines > kMaxLines ||
      static_cast<size_t>(txn.read_set_size()) != 2 + lines ||
      static_cast<size_t>(txn.read_write_set_size()) != 1 + lines) {
    Decline(outcome, "malformed tpcc-new-order", false);
    return;
  }
  const uint32_t w = a[0], d = a[1], c = a[2], date = a[4];
  const size_t rw = 2 + lines;  // position of the district
  WarehouseRow warehouse;
  CustomerRow customer;
  DistrictRow district;
  if (!reads.Found(0) || !Decode(reads.Get(0), &warehouse) || !reads.Found(1) ||
      !Decode(reads.Get(1), &customer) || !reads.Found(rw) || !Decode(reads.Get(rw), &district)) {
    Decline(outcome, "tpcc-new-order: no such warehouse, district or customer", false);
    return;
  }
  uint64_t checksum = Mix64(district.next_o_id);
  for (size_t l = 0; l < lines; ++l) {
    if (!reads.Found(2 + l)) {
      // Clause 2.4.2.3: an unused item id rolls the whole txn back.
      outcome->checksum = checksum;
      Decline(outcome, "tpcc-new-order: item " + std::to_string(a[5 + 3 * l]) +
                           " not found (rolled back)", false);
      return;
    }
  }
  const uint32_t o = district.next_o_id++;
  writes->Put(txn.read_write_set(0), Encode(district));
  bool all_local = true;
  int64_t total = 0;
  for (size_t l = 0; l < lines; ++l) {
    const uint32_t i = a[5 + 3 * l], supply = a[6 + 3 * l], quantity = a[7 + 3 * l];
    ItemRow item;
    Decode(reads.Get(2 + l), &item);
    StockRow stock{};
    if (reads.Found(rw + 1 + l)) Decode(reads.Get(rw + 1 + l), &stock);
    stock.quantity = stock.quantity >= static_cast<int32_t>(quantity) + 10
                         ? stock.quantity - static_cast<int32_t>(quantity)
                         : stock.quantity - static_cast<int32_t>(quantity) + 91;
    stock.ytd += quantity;
    stock.order_cnt++;
    if (supply != w) {
      stock.remote_cnt++;
      all_local = false;
    }
    writes->Put(txn.read_write_set(static_cast<int>(1 + l)), Encode(stock));
    OrderLineRow line{};
    line.i_id = i;
    line.supply_w = supply;
    line.quantity = quantity;
    line.amount = item.price * quantity;
    total += line.amount;
    // The district row, locked for writing, guards its order ids: these
    // rows are written without being declared (docs/design.md, TPC-C).
    writes->Put(keys_.OrderLine(w, d, o, static_cast<uint32_t>(l + 1)), Encode(line));
    checksum = Mix64(checksum ^ static_cast<uint64_t>(stock.quantity));
  }
  OrderRow order{};
  order.c_id = c;
  order.entry_d = date;
  order.ol_cnt = static_cast<uint8_t>(lines);
  order.all_local = all_local;
  writes->Put(keys_.Order(w, d, o), Encode(order));
  writes->Put(keys_.NewOrder(w, d, o), std::string(1, '\1'));
  writes->Put(keys_.LastOrder(w, d, c), EncodeU32(o));
  total = total * (10000 - customer.discount) / 10000 * (10000 + warehouse.tax + district.tax) / 10000;
  outcome->checksum = Mix64(checksum ^ static_cast<uint64_t>(total));
}

void TpccApplication::Payment(const Txn& txn, const std::vector<uint32_t>& a,
                              const ReadValues& reads, WriteSet* writes,
                              TxnOutcome* outcome) const {
  // read_set: [name index]; read_write_set: warehouse, district, customer.
  const bool by_name = a.size() >= 5 && a[4];
  if (a.size() != (by_name ? 9u : 8u) || txn.read_write_set_size() != 3 ||
      txn.read_set_size() != (by_name ? 1 : 0)) {
    Decline(outcome, "malformed tpcc-payment (planned by PlanDependent?)", false);
    return;
  }
  const uint32_t w = a[0], d = a[1], c_w = a[2], c_d = a[3], amount = a[6];
  const size_t rw = by_name ? 1 : 0;
  uint32_t c = a[5];
  if (by_name) {
    std::vector<uint32_t> ids;
    if (reads.Found(0)) ids = Words(reads.Get(0));
    c = ids.empty() ? 0 : ids[(ids.size() - 1) / 2];
    if (c != a[8]) {
      Decline(outcome, "the customer named differs from the reconnaissance's", true);
      return;
    }
  }
  WarehouseRow warehouse;
  DistrictRow district;
  CustomerRow customer;
  if (!reads.Found(rw) || !Decode(reads.Get(rw), &warehouse) || !reads.Found(rw + 1) ||
      !Decode(reads.Get(rw + 1), &district) || !reads.Found(rw + 2) ||
      !Decode(reads.Get(rw + 2), &customer)) {
    Decline(outcome, "tpcc-payment: no such warehouse, district or customer", false);
    return;
  }
  warehouse.ytd += amount;
  district.ytd += amount;
  const uint32_t h = district.next_h_id++;
  customer.balance -= amount;
  customer.ytd_payment += amount;
  customer.payment_cnt++;
  writes->Put(txn.read_write_set(0), Encode(warehouse));
  writes->Put(txn.read_write_set(1), Encode(district));
  writes->Put(txn.read_write_set(2), Encode(customer));
  HistoryRow history{};
  history.c_id = c;
  history.c_d = c_d;
  history.c_w = c_w;
  history.amount = amount;
  // Guarded by the district row, as New-Order's rows are.
  writes->Put(keys_.History(w, d, h), Encode(history));
  outcome->checksum = Mix64(static_cast<uint64_t>(customer.balance) ^ Mix64(c));
}

void TpccApplication::OrderStatus(const Txn& txn, const std::vector<uint32_t>& a,
                                  const ReadValues& reads, TxnOutcome* outcome) const {
  // read_set: district, [name index], customer, last order, order, lines.
  const bool by_name = a.size() >= 3 && a[2];
  const size_t head = by_name ? 5 : 4;
  if (a.size() != 7 || static_cast<size_t>(txn.read_set_size()) != head + a[6] ||
      txn.read_write_set_size() != 0) {
    Decline(outcome, "malformed tpcc-order-status (planned by PlanDependent?)", false);
    return;
  }
  const uint32_t c = a[4], o = a[5], ol_cnt = a[6];
  if (by_name) {
    std::vector<uint32_t> ids;
    if (reads.Found(1)) ids = Words(reads.Get(1));
    if ((ids.empty() ? 0 : ids[(ids.size() - 1) / 2]) != c) {
      Decline(outcome, "the customer named differs from the reconnaissance's", true);
      return;
    }
  }
  const size_t at = head - 3;  // the customer
  OrderRow order{};
  if (!reads.Found(at + 1) || U32(reads.Get(at + 1)) != o || !reads.Found(at + 2) ||
      !Decode(reads.Get(at + 2), &order) || order.ol_cnt != ol_cnt || order.c_id != c) {
    Decline(outcome, "the customer's last order differs from the reconnaissance's", true);
    return;
  }
  CustomerRow customer{};
  if (reads.Found(at)) Decode(reads.Get(at), &customer);
  uint64_t checksum = Mix64(static_cast<uint64_t>(customer.balance) ^ Mix64(o));
  checksum = Mix64(checksum ^ order.carrier_id);
  for (uint32_t l = 0; l < ol_cnt; ++l) {
    checksum = Mix64(checksum ^ (reads.Found(head + l) ? HashBytes(reads.Get(head + l)) : 0));
  }
  outcome->checksum = checksum;
}

void TpccApplication::Delivery(const Txn& txn, const std::vector<uint32_t>& a,
                               const ReadValues& reads, WriteSet* writes,
                               TxnOutcome* outcome) const {
  // read_write_set: the 10 districts, then the rows of the order each
  // delivers.
  if (txn.read_write_set_size() < static_cast<int>(kDistricts) || txn.read_set_size() != 0) {
    Decline(outcome, "malformed tpcc-delivery (planned by PlanDependent?)", false);
    return;
  }
  const PositionIndex<Key> at = Positions(txn);
  Deliver(a,
          [&](Key k, std::string_view* value) {
            size_t p;
            if (!at.Find(k, &p) || !reads.Found(p)) return false;
            *value = reads.Get(p);
            return true;
          },
          writes, outcome);
}

std::vector<Key> TpccApplication::DeliveryKeys(const std::vector<uint32_t>& a) const {
  std::vector<Key> keys;
  if (a.size() != 3 + 3 * kDistricts) return keys;
  const uint32_t w = a[0];
  for (uint32_t d = 0; d < kDistricts; ++d) keys.push_back(keys_.District(w, d));
  for (uint32_t d = 0; d < kDistricts; ++d) {
    const uint32_t o = a[3 + d], c = a[3 + kDistricts + 2 * d], ol_cnt = a[4 + kDistricts + 2 * d];
    if (o == 0) continue;
    keys.push_back(keys_.NewOrder(w, d, o));
    keys.push_back(keys_.Order(w, d, o));
    for (uint32_t ol = 1; ol <= ol_cnt; ++ol) keys.push_back(keys_.OrderLine(w, d, o, ol));
    keys.push_back(keys_.Customer(w, d, c));
  }
  return keys;
}

void TpccApplication::Deliver(const std::vector<uint32_t>& a, const RowGet& get,
                              WriteSet* writes, TxnOutcome* outcome) const {
  // args: w, carrier, date, each district's order (0: none), then each
  // district's (customer, ol_cnt) as the reconnaissance read.
  if (a.size() != 3 + 3 * kDistricts) {
    Decline(outcome, "malformed tpcc-delivery (planned by PlanDependent?)", false);
    return;
  }
  const uint32_t w = a[0], carrier = a[1], date = a[2];
  // Every district first, then the writes: a restart writes nothing.
  struct Pick { uint32_t d, o, c, ol_cnt; DistrictRow district; };
  std::vector<Pick> picks;
  for (uint32_t d = 0; d < kDistricts; ++d) {
    const uint32_t o = a[3 + d], c = a[3 + kDistricts + 2 * d], ol_cnt = a[4 + kDistricts + 2 * d];
    DistrictRow district{};
    std::string_view value;
    if (!get(keys_.District(w, d), &value) || !Decode(value, &district)) {
      Decline(outcome, "tpcc-delivery: no such district", false);
      return;
    }
    const bool none = district.next_deliver >= district.next_o_id;
    if (o == 0 && none) continue;  // clause 2.7.4.2: nothing to deliver here
    if (o != district.next_deliver) {
      Decline(outcome, "district " + std::to_string(d) + "'s oldest new order is " +
                           std::to_string(district.next_deliver) + ", not " + std::to_string(o),
              true);
      return;
    }
    OrderRow order{};
    if (!get(keys_.Order(w, d, o), &value) || !Decode(value, &order) || order.c_id != c ||
        order.ol_cnt != ol_cnt || !get(keys_.NewOrder(w, d, o), &value)) {
      Decline(outcome, "order " + std::to_string(o) + " differs from the reconnaissance's", true);
      return;
    }
    picks.push_back({d, o, c, ol_cnt, district});
  }
  uint64_t checksum = 0;
  for (Pick& pick : picks) {
    std::string_view value;
    OrderRow order{};
    get(keys_.Order(w, pick.d, pick.o), &value);
    Decode(value, &order);
    order.carrier_id = static_cast<uint8_t>(carrier);
    writes->Put(keys_.Order(w, pick.d, pick.o), Encode(order));
    writes->Delete(keys_.NewOrder(w, pick.d, pick.o));
    int64_t sum = 0;
    for (uint32_t ol = 1; ol <= pick.ol_cnt; ++ol) {
      OrderLineRow line{};
      const Key k = keys_.OrderLine(w, pick.d, pick.o, ol);
      if (get(k, &value)) Decode(value, &line);
      sum += line.amount;
      line.delivery_d = date;
      writes->Put(k, Encode(line));
    }
    CustomerRow customer{};
    const Key ck = keys_.Customer(w, pick.d, pick.c);
    if (get(ck, &value)) Decode(value, &customer);
    customer.balance += sum;
    customer.delivery_cnt++;
    writes->Put(ck, Encode(customer));
    pick.district.next_deliver++;
    writes->Put(keys_.District(w, pick.d), Encode(pick.district));
    checksum = Mix64(checksum ^ Mix64(uint64_t{pick.o} << 8 | pick.d) ^ static_cast<uint64_t>(sum));
  }
  outcome->checksum = checksum;
  outcome->detail = "delivered " + std::to_string(picks.size()) + " orders";
}

void TpccApplication::StockLevel(const Txn& txn, const std::vector<uint32_t>& a,
                                 const ReadValues& reads, TxnOutcome* outcome) const {
  // read_set: district, the lines of the last 20 orders, their stocks.
  // args: w, d, threshold, next_o_id seen, each order's ol_cnt, items.
  if (a.size() < 4 || txn.read_write_set_size() != 0) {
    Decline(outcome, "malformed tpcc-stock-level (planned by PlanDependent?)", false);
    return;
  }
  const uint32_t threshold = a[2], next = a[3];
  const uint32_t first = next > kStockLevelOrders ? next - kStockLevelOrders : 1;
  const size_t orders = next > first ? next - first : 0;
  size_t lines = 0;
  for (size_t i = 0; i < orders && 4 + i < a.size(); ++i) lines += a[4 + i];
  const size_t items_at = 4 + orders;
  if (items_at >= a.size() || a.size() != items_at + 1 + a[items_at] ||
      static_cast<size_t>(txn.read_set_size()) != 1 + lines + a[items_at]) {
    Decline(outcome, "malformed tpcc-stock-level args", false);
    return;
  }
  DistrictRow district{};
  if (!reads.Found(0) || !Decode(reads.Get(0), &district)) {
    Decline(outcome, "tpcc-stock-level: no such district", false);
    return;
  }
  // Clause 3.4.0.1 lets Stock-Level run at isolation level 1; we give it
  // one snapshot, and accept a district whose next_o_id moved past the
  // reconnaissance's: the 20 orders it names exist and their lines' items
  // never change. Only a district behind it (never, short of a bug) restarts.
  if (district.next_o_id < next) {
    Decline(outcome, "the district's next order id is behind the reconnaissance's", true);
    return;
  }
  PositionIndex<uint32_t> stock_at;
  stock_at.Reserve(a[items_at]);
  for (uint32_t j = 0; j < a[items_at]; ++j) stock_at.Add(a[items_at + 1 + j], 1 + lines + j);
  stock_at.Seal();
  std::vector<uint32_t> low;
  for (size_t p = 1; p <= lines; ++p) {
    OrderLineRow line{};
    if (!reads.Found(p) || !Decode(reads.Get(p), &line)) continue;
    size_t at;
    if (!stock_at.Find(line.i_id, &at)) {
      Decline(outcome, "an order line's item differs from the reconnaissance's", true);
      return;
    }
    StockRow stock{};
    if (reads.Found(at)) Decode(reads.Get(at), &stock);
    if (stock.quantity < static_cast<int32_t>(threshold)) low.push_back(line.i_id);
  }
  std::sort(low.begin(), low.end());
  low.erase(std::unique(low.begin(), low.end()), low.end());
  outcome->checksum = Mix64(low.size() ^ Mix64(next));
  outcome->detail = std::to_string(low.size()) + " items low";
}

// ---- Names, clients ----

const char* TpccApplication::ProcedureName(uint32_t procedure) const {
  switch (procedure) {
    case kNewOrder: return "tpcc-new-order";
    case kPayment: return "tpcc-payment";
    case kOrderStatus: return "tpcc-order-status";
    case kDelivery: return "tpcc-delivery";
    case kStockLevel: return "tpcc-stock-level";
    case kQ1: return "ch-q1";
    case kQ6: return "ch-q6";
    case kQ3: return "ch-q3";
    case kQ5: return "ch-q5";
    default: return "unknown";
  }
}

std::vector<std::pair<std::string, uint32_t>> TpccApplication::Procedures() const {
  return {{"tpcc-new-order", kNewOrder}, {"tpcc-payment", kPayment},
          {"tpcc-order-status", kOrderStatus}, {"tpcc-delivery", kDelivery},
          {"tpcc-stock-level", kStockLevel}, {"ch-q1", kQ1}, {"ch-q6", kQ6}, {"ch-q3", kQ3},
          {"ch-q5", kQ5}};
}

std::string TpccApplication::CheckClientTxn(const Txn& txn) const {
  // A client's call is held to what the generator makes: the node plans
  // the dependent ones (OLLP, on arrival), so their keys are not the
  // client's to declare; a New-Order declares exactly the keys its args
  // name. Ids out of range would name other tables' keys (the encoding is
  // dense), so every word is checked.
  if (txn.args().size() % 4 != 0) return "args are not whole 32-bit words";
  const std::vector<uint32_t> a = Words(txn.args());
  const uint32_t warehouses = keys_.warehouses();
  auto words = [&](size_t n) {
    return a.size() == n ? std::string()
                         : "takes " + std::to_string(n) + " words of args, not " +
                               std::to_string(a.size());
  };
  auto range = [](const char* what, uint32_t value, uint32_t lo, uint32_t hi) {
    return value >= lo && value <= hi
               ? std::string()
               : std::string(what) + " " + std::to_string(value) + " is outside " +
                     std::to_string(lo) + ".." + std::to_string(hi);
  };
  auto customer = [&](uint32_t by_name, uint32_t who) {
    if (by_name > 1) return std::string("by-name flag must be 0 or 1");
    return by_name ? range("last name", who, 0, kNames - 1) : range("customer", who, 1, kCustomers);
  };
  auto first_problem = [](std::initializer_list<std::string> problems) {
    for (const std::string& problem : problems) {
      if (!problem.empty()) return problem;
    }
    return std::string();
  };
  if (txn.write_set_size() > 0) return "declares blind writes; TPC-C txns have none";
  if (IsQuery(txn.procedure())) {
    // CH's queries: a long scan (an LTX with no write area) whose ranges
    // the node plans from its state, as it plans the generator's.
    if (txn.txn_class() != LTX || txn.ltx().kind() != LTX_SCAN) {
      return "is an analytic query: send it as an LTX with no write area (a long scan)";
    }
    if (txn.ltx().read_area_size() > 0 || txn.read_set_size() + txn.read_write_set_size() > 0) {
      return "declares ranges or keys; the node plans a query's ranges (send none)";
    }
    return a.empty() ? "" : words(0);
  }
  if (txn.txn_class() == LTX) return "is not an analytic query (ch-q1, ch-q6, ch-q3, ch-q5): send it as a txn";
  const bool planned_here = NeedsRecon(txn.procedure());
  if (planned_here && txn.read_set_size() + txn.read_write_set_size() > 0) {
    return "declares keys; the node plans them (send args only)";
  }
  std::string problem;
  switch (txn.procedure()) {
    case kNewOrder: {
      if (a.size() < 5) return words(5);
      const uint32_t w = a[0], d = a[1], lines = a[3];
      problem = first_problem({range("warehouse", w, 0, warehouses - 1),
                               range("district", d, 0, kDistricts - 1),
                               range("customer", a[2], 1, kCustomers),
                               range("order lines", lines, 1, kMaxLines)});
      if (!problem.empty()) return problem;
      if (a.size() != 5 + 3 * size_t{lines}) return words(5 + 3 * size_t{lines});
      std::vector<Key> reads = {keys_.Warehouse(w), keys_.Customer(w, d, a[2])};
      std::vector<Key> read_writes = {keys_.District(w, d)};
      for (uint32_t line = 0; line < lines; ++line) {
        const uint32_t item = a[5 + 3 * line], supply = a[6 + 3 * line], quantity = a[7 + 3 * line];
        // kItems + 1 is the unused item of the 1% that roll back.
        problem = first_problem({range("item", item, 1, kItems + 1),
                                 range("supplying warehouse", supply, 0, warehouses - 1),
                                 range("quantity", quantity, 1, 10)});
        if (!problem.empty()) return "line " + std::to_string(line + 1) + ": " + problem;
        reads.push_back(keys_.Item(w, item));
        read_writes.push_back(keys_.Stock(supply, item));
      }
      auto same = [](std::vector<Key> want, const google::protobuf::RepeatedField<uint64_t>& got) {
        std::vector<Key> have(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        std::sort(have.begin(), have.end());
        return want == have;
      };
      if (!same(reads, txn.read_set()) || !same(read_writes, txn.read_write_set())) {
        return "declared keys differ from those its args name (read: warehouse, customer, each "
               "line's item; read-write: district, each line's stock)";
      }
      return "";
    }
    case kPayment:
      if (!(problem = words(8)).empty()) return problem;
      return first_problem({range("warehouse", a[0], 0, warehouses - 1),
                            range("district", a[1], 0, kDistricts - 1),
                            range("customer's warehouse", a[2], 0, warehouses - 1),
                            range("customer's district", a[3], 0, kDistricts - 1),
                            customer(a[4], a[5]), range("amount", a[6], 1, 500000)});
    case kOrderStatus:
      if (!(problem = words(4)).empty()) return problem;
      return first_problem({range("warehouse", a[0], 0, warehouses - 1),
                            range("district", a[1], 0, kDistricts - 1), customer(a[2], a[3])});
    case kDelivery:
      if (!(problem = words(3 + kDistricts)).empty()) return problem;
      for (uint32_t d = 0; d < kDistricts; ++d) {
        if (a[3 + d] != 0) return "the order words (4 to 13) must be 0: the node chooses them";
      }
      return first_problem({range("warehouse", a[0], 0, warehouses - 1),
                            range("carrier", a[1], 1, 10)});
    case kStockLevel:
      if (!(problem = words(3)).empty()) return problem;
      return first_problem({range("warehouse", a[0], 0, warehouses - 1),
                            range("district", a[1], 0, kDistricts - 1),
                            range("threshold", a[2], 10, 20)});
    default:
      return "unknown procedure";
  }
}

// ---- CH-benCHmark's analytic queries ----

bool TpccApplication::TakeQuery(PartitionId partition, uint32_t partitions,
                                uint32_t* procedure) const {
  if (params_.ch_streams == 0 || partition >= keys_.warehouses()) return false;
  std::atomic<int64_t>& streams = free_streams_[partition];
  int64_t free = streams.load(std::memory_order_relaxed);
  if (free < 0) {
    // This partition's streams: s in [0, ch_streams) with s % partitions == partition.
    const int64_t mine = params_.ch_streams / partitions + (partition < params_.ch_streams % partitions);
    streams.compare_exchange_strong(free, mine, std::memory_order_relaxed);
    free = streams.load(std::memory_order_relaxed);
  }
  while (free > 0) {
    if (streams.compare_exchange_weak(free, free - 1, std::memory_order_relaxed)) {
      static constexpr uint32_t kTurns[] = {kQ1, kQ6, kQ3, kQ5};
      *procedure = kTurns[next_query_.fetch_add(1, std::memory_order_relaxed) % 4];
      return true;
    }
  }
  return false;
}

void TpccApplication::OnGeneratedResult(const Txn& txn, const TxnOutcome& outcome) const {
  if (!IsQuery(txn.procedure()) || txn.origin_partition() >= keys_.warehouses()) return;
  // A restart keeps its stream's turn: it goes again (Node::OnResult).
  if (outcome.aborted && LtxAbortReasonOf(outcome.abort_reason) == kAbortRecon) return;
  std::atomic<int64_t>& streams = free_streams_[txn.origin_partition()];
  if (streams.load(std::memory_order_relaxed) >= 0) streams.fetch_add(1, std::memory_order_relaxed);
}

void TpccApplication::PlanQuery(Txn* txn, const ReconRead& read) const {
  // Whole tables, as CH reads them: district d's orders 1 .. hi[d] of every
  // warehouse, hi[d] the largest next_o_id its planning reads, less one,
  // plus kChMargin (a warehouse this partition cannot read is taken to end
  // as the others, or as the fullest district a query whose plan it outran
  // found; RunQuery checks the cover all the same, and a query it fails
  // restarts, planned again). The district
  // rows are read too: they guard every order id of their districts (New-
  // Order writes its rows under the district's lock, undeclared), so in
  // calvin mode their read locks keep inserts out of the ranges, and
  // RunQuery learns each district's orders from them.
  // Ranges span every warehouse (a key's warehouse is its lowest digit), so
  // a query reads each table as kDistricts ranges; calvin mode locks every
  // key of them (KeyArea::KeysOn), existing or not.
  const uint32_t warehouses = keys_.warehouses();
  LtxRecord* ltx = txn->mutable_ltx();
  ltx->clear_read_area();
  std::string value;
  std::vector<uint32_t> hi(kDistricts, 0);
  for (uint32_t d = 0; d < kDistricts; ++d) {
    for (uint32_t w = 0; w < warehouses; ++w) {
      DistrictRow district{};
      if (!read(keys_.District(w, d), &value) || !Decode(value, &district)) continue;
      hi[d] = std::max(hi[d], district.next_o_id - 1 + kChMargin);
    }
    if (hi[d] == 0) hi[d] = kInitialOrders + kChMargin;  // none readable: the loaded state
    // Warehouses it cannot read may be fuller: as full as the last query
    // that found its plan outrun saw (ExecuteLong).
    const uint32_t found = query_orders_hint_.load(std::memory_order_relaxed);
    if (found != 0) hi[d] = std::max(hi[d], found + kChMargin);
  }
  auto add = [&](Table t, uint32_t d, uint64_t first, uint64_t last) {
    KeyRange* range = ltx->add_read_area();
    range->set_lo(keys_.Make(t, 0, d, first));
    range->set_hi(keys_.Make(t, warehouses - 1, d, last));
  };
  const uint32_t q = txn->procedure();
  for (uint32_t d = 0; d < kDistricts; ++d) add(kDistrict, d, 0, 0);
  for (uint32_t d = 0; d < kDistricts; ++d) {
    add(kOrderLine, d, uint64_t{1} << 4, uint64_t{hi[d]} << 4 | 0xf);
    if (q == kQ3 || q == kQ5) {
      add(tpcc::kOrder, d, 1, hi[d]);
      add(kCustomer, d, 1, kCustomers);
    }
    if (q == kQ3) add(tpcc::kNewOrder, d, 1, hi[d]);
  }
  if (q == kQ5) add(kStock, 0, 1, kItems);
}

void TpccApplication::DeliveryLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                                   LtxRound* out) const {
  // Two rounds: the rows its plan names (its write area), then the short
  // Delivery's checks and writes over them. A plan gone stale (another
  // Delivery took the order) aborts it as a restart (OLLP): the node plans
  // it again and resubmits it, as it does a short one.
  const std::vector<uint32_t> a = Words(txn.args());
  if (round == 0) {
    out->reads = DeliveryKeys(a);
    if (out->reads.empty()) {
      out->abort = true;
      out->reason = "malformed tpcc-delivery (planned by PlanDependent?)";
    }
    return;
  }
  Deliver(a,
          [&](Key k, std::string_view* value) {
            bool found = false;
            return reads.Get(k, &found, value) && found;
          },
          &out->writes, &out->outcome);
  if (!out->outcome.committed) {
    out->writes.Clear();
    out->abort = true;
    out->restart = out->outcome.retryable;
    out->reason = out->outcome.detail;
    return;
  }
  out->deletes = out->writes.deletes();
}

void TpccApplication::ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                                  LtxRound* out) const {
  if (txn.procedure() == kDelivery) {
    DeliveryLong(txn, round, reads, out);
    return;
  }
  if (!IsQuery(txn.procedure())) {
    Application::ExecuteLong(txn, round, reads, out);
    return;
  }
  if (txn.ltx().read_area_size() == 0) {
    out->abort = true;
    out->reason = std::string(ProcedureName(txn.procedure())) +
                  " has no ranges (planned by PlanDependent?)";
    return;
  }
  if (round == 0) {
    // A long scan reads its declared ranges in one round (paxflow's LTX
    // lane starts it at round 1 with them; calvin mode and the oracle
    // ask here).
    out->scans.assign(txn.ltx().read_area().begin(), txn.ltx().read_area().end());
    return;
  }
  std::string result, why;
  uint32_t replan_orders = 0;
  if (!RunQuery(txn, reads, &result, &why, &replan_orders)) {
    out->abort = true;
    out->reason = why;
    if (replan_orders != 0) {
      // New-Orders outran the plan (OLLP): planned again, to the orders
      // found, it goes again. Raised, never lowered: it only shapes plans.
      out->restart = true;
      RaiseTo(&query_orders_hint_, replan_orders, std::memory_order_relaxed);
    }
    return;
  }
  out->outcome.checksum = HashBytes(result);
  out->outcome.detail = std::move(result);
}

bool TpccApplication::RunQuery(const Txn& txn, const LtxReads& reads, std::string* result,
                               std::string* why, uint32_t* replan_orders) const {
  // Pushed down (paxflow mode): each partition's summary came instead of
  // its rows. Rows gathered here (calvin mode, the oracle, replay) are
  // summarized as one more share: the same computation.
  std::vector<std::string> shares = reads.summaries();
  bool rows = false;
  for (size_t s = 0; s < reads.scans(); ++s) rows |= !reads.Scan(s).empty();
  if (rows || shares.empty()) {
    shares.push_back(SummarizeScans(
        txn,
        [&](size_t s, Key from, Key to, const ScanRow& row) {
          if (s >= reads.scans()) return;
          // (Gathered from several partitions: not one ascending run.)
          for (const auto& [k, value] : reads.Scan(s)) {
            if (k >= from && k <= to) row(k, value);
          }
        },
        ScanMemoUse()));
  }
  return ChCombine(keys_, txn, shares, result, why, replan_orders);
}

std::string TpccApplication::SummarizeScans(const Txn& txn, const ScanVisit& visit,
                                            const ScanMemoUse& memo) const {
  return ChSummarize(keys_, txn, visit, memo);
}

// ---- Consistency (clause 3.3.2, conditions 1 to 4) ----

std::string TpccApplication::CheckState(const StateScan& scan) const {
  return tpcc::CheckConsistency(keys_.warehouses(), scan);
}

std::string tpcc::CheckConsistency(
    uint32_t warehouses,
    const std::function<void(const std::function<void(Key, std::string_view)>&)>& scan) {
  const Keys keys(warehouses);
  struct DistrictState {
    bool seen = false;
    DistrictRow row{};
    uint32_t max_order = 0, max_new_order = 0, min_new_order = ~0u, new_orders = 0;
  };
  std::map<uint32_t, WarehouseRow> warehouse;
  std::map<std::pair<uint32_t, uint32_t>, DistrictState> district;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::pair<int, int>> lines;  // ol_cnt, count
  scan([&](Key k, std::string_view value) {
    const uint32_t w = keys.WarehouseOf(k), d = keys.DistrictOf(k);
    const uint64_t id = keys.IdOf(k);
    switch (keys.TableOf(k)) {
      case kWarehouse: Decode(value, &warehouse[w]); break;
      case kDistrict: {
        DistrictState& s = district[{w, d}];
        s.seen = true;
        Decode(value, &s.row);
        break;
      }
      case kOrder: {
        DistrictState& s = district[{w, d}];
        s.max_order = std::max(s.max_order, static_cast<uint32_t>(id));
        OrderRow order{};
        Decode(value, &order);
        lines[{w, d, static_cast<uint32_t>(id)}].first = order.ol_cnt;
        break;
      }
      case kNewOrder: {
        DistrictState& s = district[{w, d}];
        const uint32_t o = static_cast<uint32_t>(id);
        s.max_new_order = std::max(s.max_new_order, o);
        s.min_new_order = std::min(s.min_new_order, o);
        s.new_orders++;
        break;
      }
      case kOrderLine: lines[{w, d, static_cast<uint32_t>(id >> 4)}].second++; break;
      default: break;
    }
  });
  std::string problems;
  int count = 0;
  auto problem = [&](const std::string& text) {
    if (++count <= 5) problems += (problems.empty() ? "" : "; ") + text;
  };
  std::map<uint32_t, int64_t> district_ytd;
  for (const auto& [wd, s] : district) {
    const std::string name = "warehouse " + std::to_string(wd.first) + " district " +
                             std::to_string(wd.second);
    if (!s.seen) {
      problem(name + " has orders but no district row");
      continue;
    }
    district_ytd[wd.first] += s.row.ytd;
    // Condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
    if (s.row.next_o_id - 1 != s.max_order) {
      problem(name + ": next_o_id - 1 = " + std::to_string(s.row.next_o_id - 1) +
              " but its largest order id is " + std::to_string(s.max_order) +
              " (clause 3.3.2.2)");
    }
    if (s.new_orders > 0 && s.row.next_o_id - 1 != s.max_new_order) {
      problem(name + ": next_o_id - 1 = " + std::to_string(s.row.next_o_id - 1) +
              " but its largest new-order id is " + std::to_string(s.max_new_order) +
              " (clause 3.3.2.2)");
    }
    // Condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER.
    if (s.new_orders > 0 && s.max_new_order - s.min_new_order + 1 != s.new_orders) {
      problem(name + ": new-order ids " + std::to_string(s.min_new_order) + ".." +
              std::to_string(s.max_new_order) + " are not contiguous (" +
              std::to_string(s.new_orders) + " rows; clause 3.3.2.3)");
    }
  }
  // Condition 1: W_YTD = sum(D_YTD).
  for (const auto& [w, row] : warehouse) {
    if (row.ytd != district_ytd[w]) {
      problem("warehouse " + std::to_string(w) + ": ytd " + std::to_string(row.ytd) +
              " but its districts' ytd sum to " + std::to_string(district_ytd[w]) +
              " (clause 3.3.2.1)");
    }
  }
  // Condition 4: sum(O_OL_CNT) = rows in ORDER-LINE, here order by order.
  for (const auto& [o, n] : lines) {
    if (n.first != n.second) {
      problem("warehouse " + std::to_string(std::get<0>(o)) + " district " +
              std::to_string(std::get<1>(o)) + " order " + std::to_string(std::get<2>(o)) +
              ": ol_cnt " + std::to_string(n.first) + " but " + std::to_string(n.second) +
              " order lines (clause 3.3.2.4)");
    }
  }
  if (count > 5) problems += "; and " + std::to_string(count - 5) + " more";
  return problems;
}

}  // namespace paxflow
