#include "applications/long_run.h"

#include <algorithm>
#include <set>

#include "common/key_area.h"
#include "common/types.h"

namespace paxflow {
namespace {

// A runaway procedure (one that never stops asking) is cut off here.
constexpr uint32_t kMaxRounds = 1000;

std::string Reason(int code, const std::string& text) {
  return std::string(LtxAbortReasonName(code)) + ": " + text;
}

}  // namespace

void RunLongProcedure(const Application& app, const Txn& txn, const LtxFetch& fetch,
                      LtxRound* last, std::string* abort_reason) {
  LtxReads reads;
  abort_reason->clear();
  for (uint32_t round = 0; round < kMaxRounds; ++round) {
    *last = LtxRound();
    app.ExecuteLong(txn, round, reads, last);
    if (last->abort) {
      *abort_reason = Reason(last->restart ? kAbortRecon : kAbortProcedure, last->reason);
      return;
    }
    if (last->done()) return;
    std::string error = fetch(last->reads, last->scans, &reads);
    if (!error.empty()) {
      *abort_reason = Reason(kAbortProcedure, error);
      return;
    }
  }
  *abort_reason = Reason(kAbortProcedure, "more than " + std::to_string(kMaxRounds) + " rounds");
}

size_t Reconnoiter(const Application& app, Txn* begin, const ReconRead& read) {
  std::vector<Key> keys;
  std::vector<KeyRange> scans;
  std::string value;
  auto fetch = [&](const std::vector<Key>& wanted, const std::vector<KeyRange>& ranges,
                   LtxReads* out) -> std::string {
    for (Key key : wanted) {
      const bool found = read(key, &value);
      out->SetPoint(key, found, value);
      keys.push_back(key);
    }
    // Scans are declared as they are: a range's keys need no recon.
    for (const KeyRange& range : ranges) {
      scans.push_back(range);
      out->AddScan({});
    }
    return "";
  };
  LtxRound last;
  std::string reason;
  RunLongProcedure(app, *begin, fetch, &last, &reason);
  LtxRecord* ltx = begin->mutable_ltx();
  ltx->clear_read_area();
  const size_t declared = keys.size();
  KeyArea::OfKeys(std::move(keys)).AppendTo(ltx->mutable_read_area());
  for (const KeyRange& range : scans) *ltx->add_read_area() = range;
  ltx->set_recon(true);
  return declared;
}

void ExecuteLongLocked(const Application& app, const Txn& begin, const Txn& expanded,
                       const ReadValues& reads, WriteSet* writes, TxnOutcome* outcome) {
  // Each key's position in the expanded txn's lists, sorted by key (a
  // sorted vector, not a map: a scan locks up to millions of keys).
  std::vector<std::pair<Key, size_t>> position;
  position.reserve(static_cast<size_t>(expanded.read_set_size() + expanded.read_write_set_size()));
  for (Key key : expanded.read_set()) position.emplace_back(key, position.size());
  for (Key key : expanded.read_write_set()) position.emplace_back(key, position.size());
  std::sort(position.begin(), position.end());
  auto at_or_after = [&](Key key) {
    return std::lower_bound(position.begin(), position.end(), std::make_pair(key, size_t{0}));
  };
  const KeyArea write_area(begin.ltx().write_area());
  KeyArea declared(begin.ltx().read_area());
  const bool recon = begin.ltx().recon();
  std::string recon_mismatch;  // OLLP: why its reads differ from the reconnaissance
  std::set<Key> read_keys;     // OLLP: the distinct keys it read
  bool scanned = false;
  auto fetch = [&](const std::vector<Key>& keys, const std::vector<KeyRange>& scans,
                   LtxReads* out) -> std::string {
    for (Key key : keys) {
      auto it = at_or_after(key);
      if (it == position.end() || it->first != key) {
        if (recon) {
          recon_mismatch = "it read key " + std::to_string(key) +
                           ", which its reconnaissance did not read (the state changed between)";
          return recon_mismatch;
        }
        return "it read key " + std::to_string(key) +
               ", outside the areas it declared (a locked LTX locks only those)";
      }
      if (recon && declared.Contains(key)) read_keys.insert(key);
      out->SetPoint(key, reads.Found(it->second),
                    reads.Found(it->second) ? reads.Get(it->second) : std::string_view());
    }
    for (const KeyRange& scan : scans) {
      scanned = true;
      if (!declared.Covers(scan.lo(), scan.hi()) && !write_area.Covers(scan.lo(), scan.hi())) {
        return "it scanned [" + std::to_string(scan.lo()) + ", " + std::to_string(scan.hi()) +
               "], outside the areas it declared (a locked LTX locks only those)";
      }
      LtxReads::Rows rows;
      for (auto it = at_or_after(scan.lo()); it != position.end() && it->first <= scan.hi(); ++it) {
        if (reads.Found(it->second)) rows.emplace_back(it->first, std::string(reads.Get(it->second)));
      }
      out->AddScan(std::move(rows));
    }
    return "";
  };
  LtxRound last;
  std::string reason;
  RunLongProcedure(app, begin, fetch, &last, &reason);
  if (recon && reason.empty()) {
    // Every key it declared must have been read too: fewer reads mean the
    // walk changed as well. (With scans, whose ranges the reconnaissance
    // declared whole, only reads outside them are checked.)
    uint64_t declared_points = 0;
    for (const KeyRange& range : begin.ltx().read_area()) {
      declared_points += range.hi() - range.lo() + 1;
    }
    if (read_keys.size() != declared_points && !scanned) {
      recon_mismatch = "it read " + std::to_string(read_keys.size()) + " of the " +
                       std::to_string(declared_points) +
                       " keys its reconnaissance read (the state changed between)";
    }
  }
  if (!recon_mismatch.empty()) reason = Reason(kAbortRecon, recon_mismatch);
  if (reason.empty()) {
    for (size_t i = 0; i < last.writes.size() && reason.empty(); ++i) {
      if (!write_area.Contains(last.writes.key(i))) {
        reason = Reason(kAbortWriteArea, "it wrote key " + std::to_string(last.writes.key(i)) +
                                             ", outside its write area");
      }
    }
    for (size_t i = 0; i < last.deletes.size() && reason.empty(); ++i) {
      if (!write_area.Contains(last.deletes[i])) {
        reason = Reason(kAbortWriteArea, "it deleted key " + std::to_string(last.deletes[i]) +
                                             ", outside its write area");
      }
    }
  }
  *outcome = last.outcome;
  if (!reason.empty()) {
    outcome->committed = false;
    outcome->aborted = true;
    outcome->abort_reason = reason;
    return;
  }
  // Deletes apply after every write (LtxRound's contract, and WriteSet's).
  for (size_t i = 0; i < last.writes.size(); ++i) writes->Put(last.writes.key(i), last.writes.value(i));
  for (Key key : last.deletes) writes->Delete(key);
}

}  // namespace paxflow
