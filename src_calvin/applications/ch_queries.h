// CH-benCHmark's analytic queries (Q1, Q6, Q3, Q5) over TPC-C's tables, in
// two steps so that their work can go where the rows are:
//
// - ChSummarize reads one share of a query's rows (any set of whole
//   warehouses: a partition's, or every row at once) and returns the
//   share's summary: Q1's groups and Q6's sums, Q3's qualifying orders
//   counted and their top rows, Q5's revenue by nation, and what the
//   share says about the query's cover (its district rows, the first
//   district whose orders pass the planned ranges). Every join CH's
//   queries make is within one warehouse (order lines with their order,
//   its customer, its new-order row, the stock of the order's warehouse),
//   and a warehouse's rows all live on one partition, so a share joins
//   alone.
// - ChCombine folds the summaries of disjoint shares into the result.
//
// The result is a function of the rows, whatever their split into shares
// (sums, counts, and a top-k under a total order): paxflow mode summarizes
// each partition's share at the snapshot and ships only the summary;
// calvin mode, the oracle and replay summarize the rows they gathered as
// one share. Stateless functions; any thread.
#pragma once
#include <string>
#include <vector>

#include "applications/application.h"
#include "applications/tpcc.h"

namespace paxflow {
namespace tpcc {

// The summary of the share `visit` gives of query `txn` (its procedure and
// its planned ranges, txn.ltx().read_area(); scan i is range i). Each range
// is visited once: the district rows (and Q3's new orders) first, then the
// other tables but the order lines, then the order lines', so a share keeps
// no order line and copies no value. Rows that cannot change the result are
// not asked for: Q3's orders before a district's oldest undelivered one,
// and, with a memo (`use`), Q1's, Q6's and Q5's delivered prefix of each
// district, whose part the memo kept from an earlier share (ch_queries.cc,
// Prefix).
std::string ChSummarize(const Keys& keys, const Txn& txn, const ScanVisit& visit,
                        const ScanMemoUse& use);

// The result of query `txn` from the summaries of disjoint shares that
// together hold all its rows; false (and why) if the rows do not cover its
// period at its snapshot (or a summary is malformed). When its orders
// outran its planned ranges, *replan_orders is the last order id of the
// fullest district it found (a plan that reaches it covers them all), else 0.
bool ChCombine(const Keys& keys, const Txn& txn, const std::vector<std::string>& summaries,
               std::string* result, std::string* why, uint32_t* replan_orders);

}  // namespace tpcc
}  // namespace paxflow
