#include "applications/ch_queries.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <tuple>

#include "applications/summary_words.h"

namespace paxflow {
namespace tpcc {
namespace {

using Procedure = TpccApplication::Procedure;

// Q3's result rows: revenue desc, then entry date, then (w, d, o).
struct Q3Row {
  int64_t revenue;
  uint32_t entry_d, w, d, o;
};
bool Q3Before(const Q3Row& a, const Q3Row& b) {
  return std::tie(b.revenue, a.entry_d, a.w, a.d, a.o) <
         std::tie(a.revenue, b.entry_d, b.w, b.d, b.o);
}

// What order lines add to Q1, Q6 and Q5 (only the query's part is filled).
struct Sums {
  struct Group {
    uint64_t quantity = 0;
    int64_t amount = 0;
    uint64_t count = 0;
  };
  Group groups[kMaxLines + 1];  // Q1, by ol_number
  int64_t revenue = 0;          // Q6
  uint64_t count = 0;           // Q6
  int64_t nation_revenue[kChNations] = {};  // Q5
  void Add(const Sums& other) {
    for (uint32_t n = 0; n <= kMaxLines; ++n) {
      groups[n].quantity += other.groups[n].quantity;
      groups[n].amount += other.groups[n].amount;
      groups[n].count += other.groups[n].count;
    }
    revenue += other.revenue;
    count += other.count;
    for (uint32_t n = 0; n < kChNations; ++n) nation_revenue[n] += other.nation_revenue[n];
  }
};

// What a share contributes. Only the part of its query is filled.
struct Share {
  uint64_t districts = 0;  // district rows read
  // The first district (by w, then d) whose orders 1..last pass the planned
  // 1..planned; past_w == kNone: none.
  static constexpr uint32_t kNone = ~0u;
  uint32_t past_w = kNone, past_d = 0, past_last = 0, past_planned = 0;
  // With past_w set: the last order id of the fullest district it read, so
  // that the query's next plan covers every district at once.
  uint32_t past_most = 0;
  Sums sums;
  uint64_t q3_rows = 0;         // Q3: qualifying orders
  std::vector<Q3Row> q3_top;    // Q3: the first kChTopRows of them
};

// A partition's memo (ScanMemo). TPC-C's txns change little of what CH's
// queries read, and the memo keeps what cannot change again:
// - per query (Q1, Q6, Q5) and district, the part of a prefix of its
//   orders. Delivery delivers a district's oldest undelivered order first
//   and is the only txn that writes an order line after New-Order made it
//   (its delivery date only), so once orders 1..frozen are delivered
//   nothing Q1 and Q6 read of them changes again; Q5 reads a line's amount
//   and item with its order's customer and its stock row, which no txn
//   changes once the order exists, so its prefix is every order in the
//   table. What the prefix adds holds at every later snapshot: a share
//   reads only the lines past it, and moves it over the orders it read.
// - the customers' last names and which stock rows exist (Q3, Q5): TPC-C
//   never changes a customer's last name nor inserts or deletes a customer
//   or a stock row.
struct Prefix {
  uint32_t frozen = 0;  // orders 1..frozen
  Epoch epoch = 0;      // learnt at this snapshot: holds at later ones
  Sums sums;            // what their lines add
};
class ChMemo : public ScanMemo {
 public:
  // By query (MemoQuery), then w * kDistricts + d.
  std::vector<Prefix> prefixes[3];
  // ChSummarize's arrays of the same names, and the (w, d) and w whose
  // rows they hold.
  std::vector<uint16_t> last_name;
  std::vector<bool> names_of;
  std::vector<bool> stocked;
  std::vector<bool> stock_of;
  // Q3: what an order adds once it exists (New-Order writes its row and
  // lines in one txn; its customer, entry date and lines' amounts never
  // change after), by w * kDistricts + d, indexed by order id, for the
  // orders q3_known[i].first .. second of the district (first > second:
  // none). Such facts hold at every snapshot at which the order exists, so
  // a share reads only the orders past them; whether an order is
  // undelivered it reads at its own snapshot (the new-order rows).
  struct Q3Order {
    uint32_t c_id = 0, entry_d = 0;
    int64_t revenue = 0;  // all its lines' amounts
  };
  std::vector<std::vector<Q3Order>> q3_orders;
  std::vector<std::pair<uint32_t, uint32_t>> q3_known;
};
// Whether `known` holds every entry `needed` holds.
bool Covers(const std::vector<bool>& known, const std::vector<bool>& needed) {
  if (known.size() != needed.size()) return false;
  for (size_t i = 0; i < needed.size(); ++i) {
    if (needed[i] && !known[i]) return false;
  }
  return true;
}
int MemoQuery(uint32_t q) {
  switch (q) {
    case TpccApplication::kQ1: return 0;
    case TpccApplication::kQ6: return 1;
    case TpccApplication::kQ5: return 2;
    default: return -1;  // Q3 reads undelivered orders only: no prefix (ChMemo::q3_orders)
  }
}

// A district's lines past its prefix, read in order while the memo learns:
// the delivered orders that follow the prefix without a gap.
struct Run {
  bool active = false;
  uint32_t last = 0;     // the prefix now ends at this order
  uint32_t current = 0;  // the order whose lines are being read (0: none)
  Sums sums, current_sums;
  // Line of order o; `frozen`: delivered (and in the snapshot's table).
  void Step(uint32_t o, bool frozen) {
    if (o != current) {
      if (current != 0) {
        sums.Add(current_sums);
        last = current;
      }
      current_sums = Sums();
      current = o;
      if (o != last + 1) active = false;
    }
    if (!frozen) active = false;
  }
  void Finish() {
    if (active && current != 0) {
      sums.Add(current_sums);
      last = current;
    }
  }
};

// A share's summary: its fields in order (summary_words.h), Q3's rows last.
std::string EncodeShare(const Share& s) {
  SummaryWriter w;
  w.Word(s.districts);
  w.Word(s.past_w);
  w.Word(s.past_d);
  w.Word(s.past_last);
  w.Word(s.past_planned);
  w.Word(s.past_most);
  for (const Sums::Group& g : s.sums.groups) {
    w.Word(g.quantity);
    w.Word(static_cast<uint64_t>(g.amount));
    w.Word(g.count);
  }
  w.Word(static_cast<uint64_t>(s.sums.revenue));
  w.Word(s.sums.count);
  for (int64_t r : s.sums.nation_revenue) w.Word(static_cast<uint64_t>(r));
  w.Word(s.q3_rows);
  w.Word(s.q3_top.size());
  for (const Q3Row& row : s.q3_top) {
    w.Word(static_cast<uint64_t>(row.revenue));
    w.Word(row.entry_d);
    w.Word(row.w);
    w.Word(row.d);
    w.Word(row.o);
  }
  return w.Take();
}

bool DecodeShare(const std::string& in, Share* s) {
  SummaryReader r(in);
  uint64_t word = 0;
  auto u32 = [&](uint32_t* field) {
    r.Word(&word);
    *field = static_cast<uint32_t>(word);
  };
  auto i64 = [&](int64_t* field) {
    r.Word(&word);
    *field = static_cast<int64_t>(word);
  };
  r.Word(&s->districts);
  u32(&s->past_w);
  u32(&s->past_d);
  u32(&s->past_last);
  u32(&s->past_planned);
  u32(&s->past_most);
  for (Sums::Group& g : s->sums.groups) {
    r.Word(&g.quantity);
    i64(&g.amount);
    r.Word(&g.count);
  }
  i64(&s->sums.revenue);
  r.Word(&s->sums.count);
  for (int64_t& revenue : s->sums.nation_revenue) i64(&revenue);
  r.Word(&s->q3_rows);
  uint64_t top = 0;
  if (!r.Word(&top) || top > kChTopRows) return false;
  s->q3_top.resize(top);
  for (Q3Row& row : s->q3_top) {
    i64(&row.revenue);
    u32(&row.entry_d);
    u32(&row.w);
    u32(&row.d);
    u32(&row.o);
  }
  return r.ok();
}

bool OnlyOrderLines(const Keys& keys, const KeyRange& range) {
  return keys.TableOf(range.lo()) == kOrderLine && keys.TableOf(range.hi()) == kOrderLine;
}
bool HasOrderLines(const Keys& keys, const KeyRange& range) {
  return keys.TableOf(range.lo()) <= kOrderLine && keys.TableOf(range.hi()) >= kOrderLine;
}

}  // namespace

std::string ChSummarize(const Keys& keys, const Txn& txn, const ScanVisit& visit,
                        const ScanMemoUse& use) {
  const uint32_t warehouses = keys.warehouses();
  const uint32_t q = txn.procedure();
  const auto& ranges = txn.ltx().read_area();
  // The planned order ids of each district (its order-line range ends there).
  std::vector<uint32_t> planned_hi(kDistricts, 0);
  for (const KeyRange& range : ranges) {
    if (keys.TableOf(range.lo()) != kOrderLine) continue;
    planned_hi[keys.DistrictOf(range.lo())] = static_cast<uint32_t>(keys.IdOf(range.hi()) >> 4);
  }
  auto at = [&](uint32_t w, uint32_t d) { return size_t{w} * kDistricts + d; };
  Share share;
  // Each district's orders at the snapshot: [1, next).
  std::vector<uint32_t> next(size_t{warehouses} * kDistricts, 0);
  std::vector<bool> seen(next.size(), false);
  auto in_table = [&](uint32_t w, uint32_t d, uint32_t o) { return o < next[at(w, d)]; };
  // Orders 1..skip[w, d] add nothing this share needs to read: the memo's
  // prefix (Q1, Q6, Q5), or the orders before the oldest undelivered one
  // (Q3). Their rows are not read.
  std::vector<uint32_t> skip(next.size(), 0);
  // The memo, and its prefixes for a query it keeps them of.
  ChMemo* memo = nullptr;
  if (use.memo != nullptr) {
    if (dynamic_cast<ChMemo*>(use.memo->get()) == nullptr) use.memo->reset(new ChMemo);
    memo = static_cast<ChMemo*>(use.memo->get());
  }
  std::vector<Prefix>* prefixes = nullptr;
  if (memo != nullptr && MemoQuery(q) >= 0) {
    prefixes = &memo->prefixes[MemoQuery(q)];
    if (prefixes->size() != next.size()) prefixes->assign(next.size(), Prefix());
    for (size_t i = 0; i < next.size(); ++i) {
      // A prefix learnt at a later snapshot may not hold at this one.
      if ((*prefixes)[i].epoch <= use.snapshot) skip[i] = (*prefixes)[i].frozen;
    }
  }
  // The smallest skip of district d over this share's warehouses (those
  // whose district row it read): where its ranges' reads start.
  auto first_unskipped = [&](uint32_t d) {
    uint32_t first = ~0u;
    for (uint32_t w = 0; w < warehouses; ++w) {
      if (seen[at(w, d)]) first = std::min(first, skip[at(w, d)]);
    }
    return first == ~0u ? 0 : first;
  };
  // Customers' last names and stocked items in arrays (whole tables of
  // this share's warehouses, no allocation per row).
  constexpr uint16_t kNoCustomer = 0xffff;
  std::vector<uint16_t> last_name;  // C_LAST's number by (w, d, c)
  auto customer_at = [&](uint32_t w, uint32_t d, uint32_t c) {
    return at(w, d) * (kCustomers + 1) + c;
  };
  auto customer_last = [&](uint32_t w, uint32_t d, uint32_t c) -> uint16_t {
    return last_name.empty() || c > kCustomers ? kNoCustomer : last_name[customer_at(w, d, c)];
  };
  std::vector<bool> stocked;  // by w * (kItems + 1) + i
  // From the memo, if it holds them for this share's warehouses (the
  // district rows read tell which); given back (or learnt) at the end.
  bool names_from_memo = false, stock_from_memo = false;
  // The warehouses whose stock this share reads (set once the district
  // rows are read, before the memo is asked or given back).
  std::vector<bool> stock_of;
  auto give_back = [&](bool learn) {
    if (memo == nullptr) return;
    if (names_from_memo || (learn && !last_name.empty())) {
      if (!names_from_memo) memo->names_of = seen;
      memo->last_name = std::move(last_name);
    }
    if (stock_from_memo || (learn && !stocked.empty())) {
      if (!stock_from_memo) memo->stock_of = stock_of;
      memo->stocked = std::move(stocked);
    }
  };
  // Orders by (w, d), indexed by order id up to the planned ids (one
  // array a district, made when its first order or new-order row comes).
  struct Order {
    uint32_t c_id = 0, entry_d = 0;
    bool exists = false;       // its order row decoded
    bool undelivered = false;  // it has a new-order row
    bool q3 = false;           // one of Q3's rows
    int64_t revenue = 0;       // Q3: its lines' amounts
  };
  std::vector<std::vector<Order>> orders(next.size());
  auto order_at = [&](uint32_t w, uint32_t d, uint64_t o) -> Order* {
    if (o > planned_hi[d]) return nullptr;  // past the plan: never in the table
    std::vector<Order>& district = orders[at(w, d)];
    if (district.empty()) district.resize(size_t{planned_hi[d]} + 1);
    return &district[o];
  };
  auto find_order = [&](uint32_t w, uint32_t d, uint32_t o) -> Order* {
    std::vector<Order>& district = orders[at(w, d)];
    return o < district.size() ? &district[o] : nullptr;
  };
  auto read_row = [&](Key k, std::string_view value) {
    const uint32_t w = keys.WarehouseOf(k), d = keys.DistrictOf(k);
    const uint64_t id = keys.IdOf(k);
    if (w >= warehouses || d >= kDistricts) return;
    switch (keys.TableOf(k)) {
      case kDistrict: {
        DistrictRow row{};
        if (!Decode(value, &row)) break;
        next[at(w, d)] = row.next_o_id;
        seen[at(w, d)] = true;
        ++share.districts;
        break;
      }
      case kOrder: {
        OrderRow row{};
        if (id <= skip[at(w, d)] || !Decode(value, &row)) break;
        if (Order* order = order_at(w, d, static_cast<uint32_t>(id))) {
          order->exists = true;
          order->c_id = row.c_id;
          order->entry_d = row.entry_d;
        }
        break;
      }
      case kNewOrder:
        if (Order* order = order_at(w, d, static_cast<uint32_t>(id))) order->undelivered = true;
        break;
      case kCustomer: {
        CustomerRow row{};
        if (id > kCustomers || !Decode(value, &row)) break;
        if (last_name.empty()) last_name.assign(customer_at(warehouses, 0, 0), kNoCustomer);
        last_name[customer_at(w, d, static_cast<uint32_t>(id))] = row.last;
        break;
      }
      case kStock:
        if (id > kItems) break;
        if (stocked.empty()) stocked.assign(size_t{warehouses} * (kItems + 1), false);
        stocked[size_t{w} * (kItems + 1) + id] = true;
        break;
      default: break;
    }
  };
  // Where range i's reads start: its table's first row past the skipped
  // orders of its district, for the tables keyed by order.
  auto from_of = [&](const KeyRange& range) -> Key {
    const Table t = keys.TableOf(range.lo());
    const uint32_t d = keys.DistrictOf(range.lo());
    if (t != kOrder && t != kOrderLine) return range.lo();
    if (t != keys.TableOf(range.hi()) || d != keys.DistrictOf(range.hi())) return range.lo();
    const uint64_t first = uint64_t{first_unskipped(d)} + 1;
    return std::max(range.lo(), keys.Make(t, 0, d, t == kOrderLine ? first << 4 : first));
  };

  // Pass 1: the district rows and (Q3) the new orders: the orders that
  // matter start at each district's oldest undelivered one.
  auto first_pass = [&](const KeyRange& range) {
    const Table lo = keys.TableOf(range.lo()), hi = keys.TableOf(range.hi());
    return lo == hi && (lo == kDistrict || (q == TpccApplication::kQ3 && lo == kNewOrder));
  };
  for (int i = 0; i < ranges.size(); ++i) {
    if (first_pass(ranges[i])) visit(static_cast<size_t>(i), ranges[i].lo(), ranges[i].hi(), read_row);
  }
  if (q == TpccApplication::kQ3) {
    for (uint32_t w = 0; w < warehouses; ++w) {
      for (uint32_t d = 0; d < kDistricts; ++d) {
        // Orders below the oldest new-order row have none: not Q3's rows.
        // (No array: no new-order row up to the plan, so none at all.)
        const std::vector<Order>& district = orders[at(w, d)];
        uint32_t o = 1;
        while (o < district.size() && !district[o].undelivered) ++o;
        skip[at(w, d)] = district.empty() ? planned_hi[d] : o - 1;
      }
    }
  }
  // Q3's rows start at each district's oldest undelivered order; with a
  // memo, the orders it knows from there on are not read again (skip moves
  // past them), but still count (q3_oldest).
  std::vector<uint32_t> q3_oldest;
  if (q == TpccApplication::kQ3) {
    q3_oldest = skip;
    if (memo != nullptr && memo->q3_known.size() == next.size()) {
      for (uint32_t w = 0; w < warehouses; ++w) {
        for (uint32_t d = 0; d < kDistricts; ++d) {
          const size_t i = at(w, d);
          const auto [lo, hi] = memo->q3_known[i];
          if (!seen[i] || lo > skip[i] + 1 || hi <= skip[i]) continue;
          const uint32_t last = std::min(hi, next[i] - 1);  // orders in this snapshot's table
          for (uint32_t o = skip[i] + 1; o <= last; ++o) {
            Order* order = order_at(w, d, o);
            if (order == nullptr) break;
            const ChMemo::Q3Order& known = memo->q3_orders[i][o];
            order->exists = true;
            order->c_id = known.c_id;
            order->entry_d = known.entry_d;
            order->revenue = known.revenue;
            skip[i] = o;
          }
        }
      }
    }
  }
  // Pass 2: every other table but the order lines (the customers and the
  // stock from the memo if it has them).
  if (memo != nullptr && Covers(memo->names_of, seen)) {
    names_from_memo = true;
    last_name = std::move(memo->last_name);
  }
  if (memo != nullptr) {
    stock_of.assign(warehouses, false);
    for (uint32_t w = 0; w < warehouses; ++w) stock_of[w] = seen[at(w, 0)];
    if (Covers(memo->stock_of, stock_of)) {
      stock_from_memo = true;
      stocked = std::move(memo->stocked);
    }
  }
  for (int i = 0; i < ranges.size(); ++i) {
    if (first_pass(ranges[i]) || OnlyOrderLines(keys, ranges[i])) continue;
    const Table t = keys.TableOf(ranges[i].lo());
    if (t == keys.TableOf(ranges[i].hi()) &&
        ((t == kCustomer && names_from_memo) || (t == kStock && stock_from_memo))) {
      continue;
    }
    visit(static_cast<size_t>(i), from_of(ranges[i]), ranges[i].hi(), read_row);
  }
  uint32_t most = 0;
  for (uint32_t w = 0; w < warehouses; ++w) {
    for (uint32_t d = 0; d < kDistricts; ++d) {
      if (!seen[at(w, d)]) continue;
      const uint32_t last = next[at(w, d)] - 1;
      most = std::max(most, last);
      if (last > planned_hi[d] && share.past_w == Share::kNone) {
        share.past_w = w;
        share.past_d = d;
        share.past_last = last;
        share.past_planned = planned_hi[d];
      }
    }
  }
  if (share.past_w != Share::kNone) {
    share.past_most = most;
    give_back(/*learn=*/false);
    return EncodeShare(share);  // the query fails: no need to go on
  }
  if (q == TpccApplication::kQ3) {
    // CH Q3's rows: undelivered orders (a new-order row) of customers whose
    // last name's number is below kChQ3Names (CH: c_state LIKE 'A%').
    for (uint32_t w = 0; w < warehouses; ++w) {
      for (uint32_t d = 0; d < kDistricts; ++d) {
        std::vector<Order>& district = orders[at(w, d)];
        for (uint32_t o = q3_oldest[at(w, d)] + 1; o < district.size(); ++o) {
          Order& order = district[o];
          order.q3 = order.exists && order.undelivered && in_table(w, d, o) &&
                     customer_last(w, d, order.c_id) < kChQ3Names;  // or none
          share.q3_rows += order.q3;
        }
      }
    }
  }

  // The memo learns from this share's lines when it may, and only from a
  // prefix that holds here (moving it to this snapshot).
  std::vector<Run> runs;
  if (prefixes != nullptr && use.may_learn) {
    runs.resize(next.size());
    for (size_t i = 0; i < next.size(); ++i) {
      runs[i].active = seen[i] && (*prefixes)[i].epoch <= use.snapshot;
      runs[i].last = skip[i];
    }
  }
  // Pass 3: the order lines. Q1 and Q6 read a district's lines up to its
  // first undelivered order only: Delivery delivers the oldest first, so
  // every later order is undelivered too and adds nothing to them
  // (`done`: the district's rest is of no use).
  const bool delivered_only = q == TpccApplication::kQ1 || q == TpccApplication::kQ6;
  std::vector<bool> done(next.size(), false);
  auto line_row = [&](Key k, std::string_view value) {
      const uint32_t w = keys.WarehouseOf(k), d = keys.DistrictOf(k);
      if (w >= warehouses || d >= kDistricts || keys.TableOf(k) != kOrderLine) return;
      const uint64_t id = keys.IdOf(k);
      const uint32_t o = static_cast<uint32_t>(id >> 4);
      if (o <= skip[at(w, d)] || done[at(w, d)]) return;
      OrderLineRow line{};
      if (!Decode(value, &line)) return;
      const bool delivered = line.delivery_d != 0 && in_table(w, d, o);
      if (delivered_only && !delivered) {
        done[at(w, d)] = true;
        if (!runs.empty()) runs[at(w, d)].Step(o, false);
        return;
      }
      // What the line adds goes to the share and, while its district's
      // run of orders that cannot change goes on, to the run's order.
      Sums* run_sums = nullptr;
      if (!runs.empty() && runs[at(w, d)].active) {
        Run& run = runs[at(w, d)];
        run.Step(o, delivered_only ? delivered : in_table(w, d, o));
        if (run.active) run_sums = &run.current_sums;
      }
      switch (q) {
        case TpccApplication::kQ1: {
          // CH Q1: delivered lines (ol_delivery_d > date) grouped by
          // ol_number: sum(quantity), sum(amount), count.
          if (!in_table(w, d, o) || line.delivery_d == 0) break;
          for (Sums* sums : {&share.sums, run_sums}) {
            if (sums == nullptr) continue;
            Sums::Group& g = sums->groups[id & 0xf];
            g.quantity += line.quantity;
            g.amount += line.amount;
            g.count++;
          }
          break;
        }
        case TpccApplication::kQ6:
          // CH Q6: revenue of the delivered lines with quantity 1..100000.
          if (!in_table(w, d, o) || line.delivery_d == 0 || line.quantity < 1 ||
              line.quantity > 100000) {
            break;
          }
          for (Sums* sums : {&share.sums, run_sums}) {
            if (sums == nullptr) continue;
            sums->revenue += line.amount;
            sums->count++;
          }
          break;
        case TpccApplication::kQ3: {
          // Every order's, not only Q3's rows: the memo learns them.
          Order* order = find_order(w, d, o);
          if (order != nullptr) order->revenue += line.amount;
          break;
        }
        case TpccApplication::kQ5: {
          // CH Q5: the lines whose order's customer and whose stock's
          // supplier (stock: the line's item in the order's warehouse) are
          // of the same nation, in region kChQ5Region.
          const Order* order = find_order(w, d, o);
          if (order == nullptr || !order->exists || !in_table(w, d, o)) break;
          const uint16_t last = customer_last(w, d, order->c_id);
          if (last == kNoCustomer) break;
          const uint32_t nation = last % kChNations;
          if (nation % kChRegions != kChQ5Region || line.i_id > kItems || stocked.empty() ||
              !stocked[size_t{w} * (kItems + 1) + line.i_id] ||
              ChSupplierNation(w, line.i_id) != nation) {
            break;
          }
          for (Sums* sums : {&share.sums, run_sums}) {
            if (sums != nullptr) sums->nation_revenue[nation] += line.amount;
          }
          break;
        }
        default: break;
      }
  };
  for (int i = 0; i < ranges.size(); ++i) {
    if (!HasOrderLines(keys, ranges[i])) continue;
    const KeyRange& range = ranges[i];
    const uint32_t d = keys.DistrictOf(range.lo());
    if (!delivered_only || memo == nullptr || !OnlyOrderLines(keys, range) ||
        d != keys.DistrictOf(range.hi())) {
      visit(static_cast<size_t>(i), from_of(range), range.hi(), line_row);
      continue;
    }
    // Read by pieces of orders, doubling, until every warehouse of the
    // share is done with the district (rows gathered elsewhere, without a
    // memo, are read in one piece: each piece would go over all of them).
    auto all_done = [&] {
      for (uint32_t w = 0; w < warehouses; ++w) {
        if (seen[at(w, d)] && !done[at(w, d)]) return false;
      }
      return true;
    };
    uint64_t o = uint64_t{first_unskipped(d)} + 1;
    for (uint64_t piece = 64; o <= planned_hi[d] && !all_done(); piece *= 2) {
      const uint64_t last = std::min<uint64_t>(planned_hi[d], o + piece - 1);
      visit(static_cast<size_t>(i), keys.Make(kOrderLine, 0, d, o << 4),
            keys.Make(kOrderLine, warehouses - 1, d, last << 4 | 0xf), line_row);
      o = last + 1;
    }
  }
  if (prefixes != nullptr) {
    for (size_t i = 0; i < next.size(); ++i) {
      // The prefix's part, read before, and its move over this share's run.
      if (!seen[i] || (*prefixes)[i].epoch > use.snapshot) continue;
      share.sums.Add((*prefixes)[i].sums);
      if (runs.empty()) continue;
      Run& run = runs[i];
      run.Finish();
      if (run.last <= (*prefixes)[i].frozen) continue;
      (*prefixes)[i].frozen = run.last;
      (*prefixes)[i].epoch = use.snapshot;
      (*prefixes)[i].sums.Add(run.sums);
    }
  }
  if (q == TpccApplication::kQ3) {
    for (uint32_t w = 0; w < warehouses; ++w) {
      for (uint32_t d = 0; d < kDistricts; ++d) {
        const std::vector<Order>& district = orders[at(w, d)];
        for (uint32_t o = 0; o < district.size(); ++o) {
          if (district[o].q3) {
            share.q3_top.push_back({district[o].revenue, district[o].entry_d, w, d, o});
          }
        }
      }
    }
    const size_t top = std::min<size_t>(share.q3_top.size(), kChTopRows);
    std::partial_sort(share.q3_top.begin(), share.q3_top.begin() + static_cast<std::ptrdiff_t>(top),
                      share.q3_top.end(), Q3Before);
    share.q3_top.resize(top);
  }
  if (q == TpccApplication::kQ3 && memo != nullptr && use.may_learn) {
    // Orders oldest + 1 .. next - 1 of each district are known now: read
    // here whole (an order's lines come with it) or known before.
    if (memo->q3_known.size() != next.size()) {
      memo->q3_known.assign(next.size(), {1, 0});
      memo->q3_orders.assign(next.size(), {});
    }
    for (size_t i = 0; i < next.size(); ++i) {
      if (!seen[i] || orders[i].empty()) continue;
      const uint32_t first = q3_oldest[i] + 1, last = next[i] - 1;
      if (first > last) continue;
      std::vector<ChMemo::Q3Order>& known = memo->q3_orders[i];
      if (known.size() <= last) known.resize(size_t{last} + 1);
      for (uint32_t o = skip[i] + 1; o <= last; ++o) {
        const Order& order = orders[i][o];
        known[o] = {order.c_id, order.entry_d, order.revenue};
      }
      auto& [lo, hi] = memo->q3_known[i];
      // One run of known orders: joined if they touch, else the new one.
      if (lo <= hi && first <= hi + 1 && lo <= last + 1) {
        lo = std::min(lo, first);
        hi = std::max(hi, last);
      } else {
        lo = first;
        hi = last;
      }
    }
  }
  give_back(use.may_learn);
  return EncodeShare(share);
}

bool ChCombine(const Keys& keys, const Txn& txn, const std::vector<std::string>& summaries,
               std::string* result, std::string* why, uint32_t* replan_orders) {
  *replan_orders = 0;
  const uint32_t warehouses = keys.warehouses();
  Share all;
  for (const std::string& summary : summaries) {
    Share s;
    if (!DecodeShare(summary, &s)) {
      *why = "a share's summary is malformed";
      return false;
    }
    all.districts += s.districts;
    all.past_most = std::max(all.past_most, s.past_most);
    if (s.past_w != Share::kNone &&
        std::tie(s.past_w, s.past_d) < std::tie(all.past_w, all.past_d)) {
      all.past_w = s.past_w;
      all.past_d = s.past_d;
      all.past_last = s.past_last;
      all.past_planned = s.past_planned;
    }
    all.sums.Add(s.sums);
    all.q3_rows += s.q3_rows;
    all.q3_top.insert(all.q3_top.end(), s.q3_top.begin(), s.q3_top.end());
  }
  if (all.districts != uint64_t{warehouses} * kDistricts) {
    *why = "it read " + std::to_string(all.districts) + " district rows, not " +
           std::to_string(warehouses * kDistricts);
    return false;
  }
  if (all.past_w != Share::kNone) {
    // New-Orders outran the planned ranges (OLLP's planning was too
    // early): a wrong answer is never given.
    *replan_orders = all.past_most;
    *why = "warehouse " + std::to_string(all.past_w) + " district " + std::to_string(all.past_d) +
           "'s orders are 1.." + std::to_string(all.past_last) + ", past the planned 1.." +
           std::to_string(all.past_planned);
    return false;
  }
  std::ostringstream out;
  switch (txn.procedure()) {
    case TpccApplication::kQ1:
      // The averages follow from the sums and the count.
      out << "q1";
      for (uint32_t n = 1; n <= kMaxLines; ++n) {
        const Sums::Group& g = all.sums.groups[n];
        if (g.count == 0) continue;
        out << " " << n << ":" << g.quantity << ":" << g.amount << ":" << g.count;
      }
      break;
    case TpccApplication::kQ6: out << "q6 " << all.sums.revenue << ":" << all.sums.count; break;
    case TpccApplication::kQ3: {
      std::sort(all.q3_top.begin(), all.q3_top.end(), Q3Before);
      out << "q3 " << all.q3_rows;
      for (size_t i = 0; i < all.q3_top.size() && i < kChTopRows; ++i) {
        const Q3Row& row = all.q3_top[i];
        out << " " << row.w << "." << row.d << "." << row.o << ":" << row.revenue << ":"
            << row.entry_d;
      }
      break;
    }
    case TpccApplication::kQ5: {
      // Revenue by nation, desc, then nation.
      std::vector<std::pair<int64_t, uint32_t>> rows;  // -revenue, nation
      for (uint32_t n = 0; n < kChNations; ++n) {
        if (all.sums.nation_revenue[n] != 0) rows.emplace_back(-all.sums.nation_revenue[n], n);
      }
      std::sort(rows.begin(), rows.end());
      out << "q5 " << rows.size();
      for (const auto& [minus, n] : rows) out << " " << n << ":" << -minus;
      break;
    }
    default: break;
  }
  *result = out.str();
  return true;
}

}  // namespace tpcc
}  // namespace paxflow
