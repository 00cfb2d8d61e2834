#include "base/summary.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <sstream>

#include "common/proto_json.h"

namespace paxflow {
namespace {

// The field of `kinds` for txn kind `k` (kinds print as the fields are named).
KindSummaryFile* KindField(KindsFile* kinds, int k) {
  switch (k) {
    case kKindReadOnly: return kinds->mutable_ro();
    case kKindReadWrite: return kinds->mutable_rw();
    default: return kinds->mutable_ltx();
  }
}

std::string Fixed(double x, int digits) {
  char buffer[64];
  snprintf(buffer, sizeof(buffer), "%.*f", digits, x);
  return buffer;
}

std::string Millis(uint64_t micros) { return Fixed(micros / 1000.0, 2); }

std::string Percent(double part, double whole) {
  return Fixed(whole > 0 ? 100.0 * part / whole : 0, 1) + "%";
}

// The generator's LTX windows (GeneratorSource): all its LTXs, and in
// paxflow mode those of the LTX lane to the node's share of max_active_ltx.
constexpr char kLtxWindowFull[] = "LTX window full (max_inflight_ltx or max_active_ltx's share)";

}  // namespace

std::string AdmissionSummary::Bound(double throughput) const {
  if (epochs > 0 && 2 * at_batch_cap >= epochs) {
    return "batch full (max_batch) in " + Percent(at_batch_cap, epochs) + " of epochs";
  }
  // Fills held while the LTX threads were behind measure the lane's pace,
  // not a limit: a larger window would only queue more.
  const uint64_t at_ltx_limit = ltx_window_full - std::min(ltx_lane_behind, ltx_window_full);
  if (epochs > 0 && 2 * at_ltx_limit >= epochs) {
    return std::string(kLtxWindowFull) + " in " + Percent(at_ltx_limit, epochs) + " of epochs";
  }
  if (window_ceiling > 0 && throughput >= 0.9 * window_ceiling) {
    return "at " + Percent(throughput, window_ceiling) +
           " of the window's ceiling (max_inflight per epoch)";
  }
  return "";
}

std::string DigestHex(uint64_t digest) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "0x%016" PRIx64, digest);
  return buffer;
}

bool LtxSummary::any() const {
  uint64_t aborted = 0;
  for (uint64_t n : aborts) aborted += n;
  return aborted + deferrals + parked_reads + guards + late_records + pushed_down_shares +
             stage_us[kLtxRun].count() >
         0;
}

void LtxSummary::Add(const LtxSummary& other) {
  for (int r = 0; r < kLtxAbortReasons; ++r) aborts[r] += other.aborts[r];
  deferrals += other.deferrals;
  deferred_txns += other.deferred_txns;
  max_deferrals = std::max(max_deferrals, other.max_deferrals);
  parked_reads += other.parked_reads;
  held_installs += other.held_installs;
  early_reads += other.early_reads;
  locked_runs += other.locked_runs;
  locked_runs_given_back += other.locked_runs_given_back;
  locked_runs_writes_kept += other.locked_runs_writes_kept;
  pushed_down_shares += other.pushed_down_shares;
  pushed_down_rows += other.pushed_down_rows;
  guards += other.guards;
  late_records += other.late_records;
  deferred_wait_us.Merge(other.deferred_wait_us);
  parked_wait_us.Merge(other.parked_wait_us);
  for (int stage = 0; stage < kLtxStages; ++stage) stage_us[stage].Merge(other.stage_us[stage]);
}

bool ParseDigestHex(const std::string& text, uint64_t* digest) {
  const char* start = text.c_str();
  if (text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0) start += 2;
  if (*start == '\0' || std::strlen(start) > 16) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long value = std::strtoull(start, &end, 16);
  if (*end != '\0' || errno != 0) return false;
  *digest = value;
  return true;
}

uint64_t RunSummary::Committed() const {
  uint64_t total = 0;
  for (const auto& kind : kinds) total += kind.committed;
  return total;
}

std::string RunSummary::ToText() const {
  std::ostringstream out;
  if (scope == "cluster") {
    out << "=== cluster summary: " << nodes << " node(s), mode " << mode << ", workload "
        << workload << ", " << Fixed(seconds, 1) << " s ===\n";
  } else {
    out << "=== node " << node << " summary (partition " << partition << ", replica " << replica
        << "): mode " << mode << ", workload " << workload << ", " << Fixed(seconds, 1)
        << " s ===\n";
  }
  out << "throughput: " << Fixed(Throughput(), 1) << " txn/s";
  for (int k = 0; k < kTxnKinds; ++k) {
    if (kinds[k].committed == 0) continue;
    out << "  " << TxnKindName(k) << " " << Fixed(seconds > 0 ? kinds[k].committed / seconds : 0, 1);
  }
  out << "\n";
  out << "latency (ms)     count      p50      p95      p99      max  declined\n";
  for (int k = 0; k < kTxnKinds; ++k) {
    const KindSummary& s = kinds[k];
    if (s.committed + s.aborted == 0) continue;
    char line[200];
    snprintf(line, sizeof(line), "  %-6s %12" PRIu64 " %8s %8s %8s %8s %9" PRIu64 "\n",
             TxnKindName(k), s.committed + s.aborted,
             Millis(s.latency_us.Quantile(0.50)).c_str(),
             Millis(s.latency_us.Quantile(0.95)).c_str(),
             Millis(s.latency_us.Quantile(0.99)).c_str(), Millis(s.latency_us.max()).c_str(),
             s.declined);
    out << line;
  }
  const KindSummary& long_txns = kinds[kKindLong];
  if (long_txns.committed + long_txns.aborted > 0) {
    out << "long txns: " << long_txns.committed << " committed, " << long_txns.aborted
        << " aborted";
    if (long_txns.aborted > 0) {
      out << " (";
      bool first = true;
      for (int r = 0; r < kLtxAbortReasons; ++r) {
        // OLLP restarts (recon) run again: they have a line of their own, below.
        if (ltx.aborts[r] == 0 || r == kAbortRecon) continue;
        out << (first ? "" : ", ") << LtxAbortReasonName(r) << " " << ltx.aborts[r];
        first = false;
      }
      out << ")";
    }
    out << "\n";
  }
  if (long_txns.committed + long_txns.aborted > 0 || ltx.deferred_txns > 0) {
    // Starvation both ways: how often the short side was set aside at worst,
    // and how much of the long side the guards against that cost.
    const uint64_t begun = long_txns.committed + long_txns.aborted;
    out << "starvation: most deferrals of one short txn " << ltx.max_deferrals
        << "; LTXs aborted by guards " << ltx.aborts[kAbortGuard] << " of " << begun << " ("
        << Fixed(100.0 * ltx.GuardAbortShare(begun), 2) << "%)\n";
  }
  if (ltx.aborts[kAbortRecon] > 0) {
    out << "OLLP restarts (what it read at its position differed from its "
           "reconnaissance: calvin mode's LTXs, planned long scans; run again): "
        << ltx.aborts[kAbortRecon] << "\n";
  }
  if (ltx.deferred_txns > 0) {
    out << "short txns deferred by an LTX's write area: " << ltx.deferred_txns << " ("
        << ltx.deferrals << " deferrals, at most " << ltx.max_deferrals
        << " for one txn); added latency (ms) p50 " << Millis(ltx.deferred_wait_us.Quantile(0.5))
        << "  p99 " << Millis(ltx.deferred_wait_us.Quantile(0.99)) << "  max "
        << Millis(ltx.deferred_wait_us.max()) << "\n";
  }
  if (ltx.parked_reads > 0) {
    out << "read-only txns that waited for an LTX: " << ltx.parked_reads << "; waited (ms) p50 "
        << Millis(ltx.parked_wait_us.Quantile(0.5)) << "  p99 "
        << Millis(ltx.parked_wait_us.Quantile(0.99)) << "  max "
        << Millis(ltx.parked_wait_us.max()) << "\n";
  }
  if (ltx.stage_us[kLtxRun].count() > 0) {
    // Where an LTX's life goes at its origin (what short txns deferred by
    // its write area wait for), stage by stage.
    out << "LTX life at its origin (ms, p50/p99):";
    for (int stage = 0; stage < kLtxStages; ++stage) {
      const Histogram& h = ltx.stage_us[stage];
      out << (stage ? "," : "") << " " << LtxStageName(stage) << " " << Millis(h.Quantile(0.5))
          << "/" << Millis(h.Quantile(0.99));
    }
    out << "\n";
  }
  if (ltx.locked_runs + ltx.locked_runs_given_back > 0) {
    out << "LTXs in place run locked on a worker: " << ltx.locked_runs
        << " (given back to an LTX thread: " << ltx.locked_runs_given_back
        << "; writes kept in the record for a later LTX of the same epoch: "
        << ltx.locked_runs_writes_kept << ")\n";
  }
  if (ltx.pushed_down_shares > 0) {
    out << "Long-scan shares summarized where their rows are: " << ltx.pushed_down_shares
        << " (" << ltx.pushed_down_rows << " rows folded in place, not shipped)\n";
  }
  if (ltx.held_installs + ltx.guards + ltx.late_records > 0) {
    out << "LTX installs held behind an earlier LTX: " << ltx.held_installs
        << "; LTXs that read an unresolved LTX's writes early: " << ltx.early_reads
        << "; guards against starvation: " << ltx.guards
        << "; commit/abort records too late: " << ltx.late_records << "\n";
  }
  if (input_stage_us[kInputTotal].count() > 0) {
    // With replicated input: how long its group holds an epoch back.
    out << "epoch input, cut to scheduler (ms, p50/p99):";
    const char* separator = " ";
    for (int stage = 0; stage < kInputStages; ++stage) {
      const Histogram& h = input_stage_us[stage];
      if (h.count() == 0) continue;
      out << separator << InputStageName(stage) << " " << Millis(h.Quantile(0.5)) << "/"
          << Millis(h.Quantile(0.99));
      separator = ", ";
    }
    out << "\n";
  }
  if (visibility_us.count() > 0) {
    out << "RO visibility delay (ms): p50 " << Millis(visibility_us.Quantile(0.5)) << "  p99 "
        << Millis(visibility_us.Quantile(0.99)) << "  max " << Millis(visibility_us.max())
        << "\n";
  }
  for (const ProcedureSummary& p : procedures) {
    char line[192];
    snprintf(line, sizeof(line), "%-20s committed %10llu  %9.1f/s  declined %llu  OLLP-restarts %llu\n",
             p.name.c_str(), static_cast<unsigned long long>(p.committed),
             seconds > 0 ? p.committed / seconds : 0.0, static_cast<unsigned long long>(p.declined),
             static_cast<unsigned long long>(p.restarts));
    out << line;
    if (p.name == "tpcc-new-order" && seconds > 0) {
      out << "tpmC (New-Orders committed per minute): " << static_cast<uint64_t>(p.committed * 60.0 / seconds) << "\n";
    }
    if (p.latency_us.count() > 0 && p.age_epochs.count() == 0) {
      out << "  " << p.name << " latency (ms) p50 " << Millis(p.latency_us.Quantile(0.5))
          << "  p95 " << Millis(p.latency_us.Quantile(0.95)) << "  p99 "
          << Millis(p.latency_us.Quantile(0.99)) << "  max " << Millis(p.latency_us.max()) << "\n";
    } else if (p.latency_us.count() > 0) {
      out << "  " << p.name << " latency (ms) p50 " << Millis(p.latency_us.Quantile(0.5))
          << "  p99 " << Millis(p.latency_us.Quantile(0.99)) << "; snapshot age at result: p50 "
          << p.age_epochs.Quantile(0.5) << " epochs / " << Millis(p.age_us.Quantile(0.5))
          << " ms, p99 " << p.age_epochs.Quantile(0.99) << " epochs / "
          << Millis(p.age_us.Quantile(0.99)) << " ms\n";
    }
  }
  if (!consistency.empty()) out << "CONSISTENCY CHECK FAILED: " << consistency << "\n";
  if (invariant_failures > 0) out << "INVARIANT FAILURES: " << invariant_failures << "\n";
  if (dropped_messages > 0) out << "dropped messages: " << dropped_messages << "\n";
  if (waited_ro > 0) out << "read-only txns that waited for their snapshot: " << waited_ro << "\n";
  if (admission.epochs > 0) {
    auto share = [&](uint64_t n) { return Percent(n, admission.epochs); };
    out << "admission: " << admission.epochs << " epochs took new txns; batch full (max_batch) in "
        << share(admission.at_batch_cap) << ", " << kLtxWindowFull << " in "
        << share(admission.ltx_window_full);
    if (admission.ltx_lane_behind > 0) {
      out << " (LTX threads behind, max_ltx_backlog, in " << share(admission.ltx_lane_behind)
          << ")";
    }
    if (admission.window_ceiling > 0) {
      out << "; window's ceiling (max_inflight per epoch) " << Fixed(admission.window_ceiling, 0)
          << " txn/s";
    }
    out << "\n";
    const std::string bound = admission.Bound(Throughput());
    if (!bound.empty()) out << "bounded by admission: " << bound << "\n";
  }
  if (peak_rss_bytes > 0) out << "peak resident memory: " << (peak_rss_bytes >> 20) << " MiB\n";
  for (const auto& [epoch, digest] : epoch_digests) {
    out << "state digest at epoch " << epoch << ": " << DigestHex(digest) << "\n";
  }
  out << "state digest at epoch " << digest_epoch << ": " << DigestHex(digest) << "\n";
  return out.str();
}

SummaryFile RunSummary::ToFile() const {
  SummaryFile file;
  file.set_scope(scope);
  file.set_node(node);
  file.set_partition(partition);
  file.set_replica(replica);
  file.set_nodes(nodes);
  file.set_mode(mode);
  file.set_workload(workload);
  file.set_seconds(seconds);
  file.set_throughput(Throughput());
  for (int k = 0; k < kTxnKinds; ++k) {
    const KindSummary& s = kinds[k];
    KindSummaryFile& kind = *KindField(file.mutable_kinds(), k);
    kind.set_committed(s.committed);
    kind.set_declined(s.declined);
    kind.set_throughput(seconds > 0 ? s.committed / seconds : 0);
    kind.set_p50_ms(s.latency_us.Quantile(0.5) / 1000.0);
    kind.set_p95_ms(s.latency_us.Quantile(0.95) / 1000.0);
    kind.set_p99_ms(s.latency_us.Quantile(0.99) / 1000.0);
    kind.set_max_ms(s.latency_us.max() / 1000.0);
    kind.set_mean_ms(s.latency_us.Mean() / 1000.0);
    kind.set_histogram_us(s.latency_us.Encode());
    kind.set_aborted(s.aborted);
  }
  VisibilityFile* visibility = file.mutable_visibility();
  visibility->set_count(visibility_us.count());
  visibility->set_p50_ms(visibility_us.Quantile(0.5) / 1000.0);
  visibility->set_p99_ms(visibility_us.Quantile(0.99) / 1000.0);
  visibility->set_max_ms(visibility_us.max() / 1000.0);
  visibility->set_histogram_us(visibility_us.Encode());
  file.set_invariant_failures(invariant_failures);
  file.set_dropped_messages(dropped_messages);
  file.set_waited_ro(waited_ro);
  AdmissionFile* admitted = file.mutable_admission();
  admitted->set_epochs(admission.epochs);
  admitted->set_at_batch_cap(admission.at_batch_cap);
  admitted->set_ltx_window_full(admission.ltx_window_full);
  admitted->set_ltx_lane_behind(admission.ltx_lane_behind);
  admitted->set_window_ceiling(admission.window_ceiling);
  file.set_peak_rss_bytes(peak_rss_bytes);
  file.set_consistency(consistency);
  for (const ProcedureSummary& p : procedures) {
    ProcedureSummaryFile* f = file.add_procedures();
    f->set_name(p.name);
    f->set_committed(p.committed);
    f->set_declined(p.declined);
    f->set_restarts(p.restarts);
    if (p.latency_us.count() > 0) {
      f->set_latency_us(p.latency_us.Encode());
      f->set_latency_p50_us(p.latency_us.Quantile(0.5));
      f->set_latency_p95_us(p.latency_us.Quantile(0.95));
      f->set_latency_p99_us(p.latency_us.Quantile(0.99));
      f->set_latency_max_us(p.latency_us.max());
    }
    if (p.age_epochs.count() > 0) {
      f->set_age_us(p.age_us.Encode());
      f->set_age_epochs(p.age_epochs.Encode());
    }
  }
  if (ltx.any()) {
    LtxSummaryFile* out = file.mutable_ltx();
    for (int r = 0; r < kLtxAbortReasons; ++r) {
      if (ltx.aborts[r]) (*out->mutable_aborts())[LtxAbortReasonName(r)] = ltx.aborts[r];
    }
    out->set_deferrals(ltx.deferrals);
    out->set_deferred_txns(ltx.deferred_txns);
    out->set_max_deferrals(ltx.max_deferrals);
    out->set_parked_reads(ltx.parked_reads);
    out->set_held_installs(ltx.held_installs);
    out->set_early_reads(ltx.early_reads);
    out->set_locked_runs(ltx.locked_runs);
    out->set_locked_runs_given_back(ltx.locked_runs_given_back);
    out->set_locked_runs_writes_kept(ltx.locked_runs_writes_kept);
    out->set_pushed_down_shares(ltx.pushed_down_shares);
    out->set_pushed_down_rows(ltx.pushed_down_rows);
    out->set_guards(ltx.guards);
    out->set_late_records(ltx.late_records);
    out->set_deferred_wait_us(ltx.deferred_wait_us.Encode());
    out->set_parked_wait_us(ltx.parked_wait_us.Encode());
    for (int stage = 0; stage < kLtxStages; ++stage) {
      if (ltx.stage_us[stage].count() == 0) continue;
      (*out->mutable_stage_us())[LtxStageName(stage)] = ltx.stage_us[stage].Encode();
    }
  }
  for (int stage = 0; stage < kInputStages; ++stage) {
    if (input_stage_us[stage].count() == 0) continue;
    (*file.mutable_input_stage_us())[InputStageName(stage)] = input_stage_us[stage].Encode();
  }
  file.set_digest_epoch(digest_epoch);
  file.set_digest(DigestHex(digest));
  for (const auto& [epoch, value] : epoch_digests) {
    EpochDigestFile* entry = file.add_epoch_digests();
    entry->set_epoch(epoch);
    entry->set_digest(DigestHex(value));
  }
  return file;
}

std::string RunSummary::FromFile(const SummaryFile& file, RunSummary* out) {
  RunSummary s;
  s.scope = file.scope().empty() ? "node" : file.scope();
  s.node = file.node();
  s.partition = file.partition();
  s.replica = file.replica();
  s.nodes = file.nodes() ? file.nodes() : 1;
  s.mode = file.mode();
  s.workload = file.workload();
  s.seconds = file.seconds();
  KindsFile kinds = file.kinds();
  for (int k = 0; k < kTxnKinds; ++k) {
    const KindSummaryFile& kind = *KindField(&kinds, k);
    s.kinds[k].committed = kind.committed();
    s.kinds[k].declined = kind.declined();
    s.kinds[k].aborted = kind.aborted();
    const std::string& histogram = kind.histogram_us();
    if (!s.kinds[k].latency_us.Decode(histogram.empty() ? "0;0;0;" : histogram)) {
      return "bad latency histogram for " + std::string(TxnKindName(k));
    }
  }
  const std::string& visibility = file.visibility().histogram_us();
  if (!s.visibility_us.Decode(visibility.empty() ? "0;0;0;" : visibility)) {
    return "bad visibility histogram";
  }
  s.invariant_failures = file.invariant_failures();
  s.dropped_messages = file.dropped_messages();
  s.waited_ro = file.waited_ro();
  s.admission.epochs = file.admission().epochs();
  s.admission.at_batch_cap = file.admission().at_batch_cap();
  s.admission.ltx_window_full = file.admission().ltx_window_full();
  s.admission.ltx_lane_behind = file.admission().ltx_lane_behind();
  s.admission.window_ceiling = file.admission().window_ceiling();
  s.peak_rss_bytes = file.peak_rss_bytes();
  s.consistency = file.consistency();
  for (const ProcedureSummaryFile& f : file.procedures()) {
    ProcedureSummary p;
    p.name = f.name();
    p.committed = f.committed();
    p.declined = f.declined();
    p.restarts = f.restarts();
    if ((!f.latency_us().empty() && !p.latency_us.Decode(f.latency_us())) ||
        (!f.age_us().empty() && !p.age_us.Decode(f.age_us())) ||
        (!f.age_epochs().empty() && !p.age_epochs.Decode(f.age_epochs()))) {
      return "procedure " + p.name + ": a histogram does not decode";
    }
    s.procedures.push_back(std::move(p));
  }
  if (file.has_ltx()) {
    const LtxSummaryFile& in = file.ltx();
    for (const auto& [name, count] : in.aborts()) {
      int reason = 0;
      while (reason < kLtxAbortReasons && name != LtxAbortReasonName(reason)) ++reason;
      if (reason == kLtxAbortReasons) return "unknown LTX abort reason '" + name + "'";
      s.ltx.aborts[reason] = count;
    }
    s.ltx.deferrals = in.deferrals();
    s.ltx.deferred_txns = in.deferred_txns();
    s.ltx.max_deferrals = in.max_deferrals();
    s.ltx.parked_reads = in.parked_reads();
    s.ltx.held_installs = in.held_installs();
    s.ltx.early_reads = in.early_reads();
    s.ltx.locked_runs = in.locked_runs();
    s.ltx.locked_runs_given_back = in.locked_runs_given_back();
    s.ltx.locked_runs_writes_kept = in.locked_runs_writes_kept();
    s.ltx.pushed_down_shares = in.pushed_down_shares();
    s.ltx.pushed_down_rows = in.pushed_down_rows();
    s.ltx.guards = in.guards();
    s.ltx.late_records = in.late_records();
    for (auto [text, histogram] : {std::make_pair(&in.deferred_wait_us(), &s.ltx.deferred_wait_us),
                                   std::make_pair(&in.parked_wait_us(), &s.ltx.parked_wait_us)}) {
      if (!histogram->Decode(text->empty() ? "0;0;0;" : *text)) {
        return "bad LTX wait histogram";
      }
    }
    for (const auto& [name, text] : in.stage_us()) {
      int stage = 0;
      while (stage < kLtxStages && name != LtxStageName(stage)) ++stage;
      if (stage == kLtxStages) return "unknown LTX stage '" + name + "'";
      if (!s.ltx.stage_us[stage].Decode(text)) return "bad LTX stage histogram '" + name + "'";
    }
  }
  for (const auto& [name, text] : file.input_stage_us()) {
    int stage = 0;
    while (stage < kInputStages && name != InputStageName(stage)) ++stage;
    if (stage == kInputStages) return "unknown input stage '" + name + "'";
    if (!s.input_stage_us[stage].Decode(text)) return "bad input stage histogram '" + name + "'";
  }
  s.digest_epoch = file.digest_epoch();
  if (!ParseDigestHex(file.digest().empty() ? "0" : file.digest(), &s.digest)) {
    return "digest '" + file.digest() + "' is not a hex number";
  }
  for (const EpochDigestFile& entry : file.epoch_digests()) {
    uint64_t value = 0;
    if (!ParseDigestHex(entry.digest(), &value)) {
      return "digest '" + entry.digest() + "' is not a hex number";
    }
    s.epoch_digests.emplace_back(entry.epoch(), value);
  }
  *out = std::move(s);
  return "";
}

std::string RunSummary::ToJson() const { return MessageToJson(ToFile()); }

std::string RunSummary::FromJson(const std::string& json, RunSummary* out) {
  SummaryFile file;
  std::string error = JsonToMessage(json, &file);
  if (!error.empty()) return "not a summary: " + error;
  return FromFile(file, out);
}

RunSummary RunSummary::Combine(const std::vector<RunSummary>& nodes) {
  RunSummary total;
  total.scope = "cluster";
  total.nodes = static_cast<uint32_t>(nodes.size());
  for (const RunSummary& node : nodes) {
    if (total.mode.empty()) {
      total.mode = node.mode;
      total.workload = node.workload;
    }
    total.dropped_messages += node.dropped_messages;
    total.peak_rss_bytes = std::max(total.peak_rss_bytes, node.peak_rss_bytes);
    // Whichever node cut the epochs (a group's leader need not be replica 0).
    for (int stage = 0; stage < kInputStages; ++stage) {
      total.input_stage_us[stage].Merge(node.input_stage_us[stage]);
    }
    if (node.replica != 0) continue;
    total.seconds = std::max(total.seconds, node.seconds);
    for (int k = 0; k < kTxnKinds; ++k) {
      total.kinds[k].committed += node.kinds[k].committed;
      total.kinds[k].declined += node.kinds[k].declined;
      total.kinds[k].aborted += node.kinds[k].aborted;
      total.kinds[k].latency_us.Merge(node.kinds[k].latency_us);
    }
    total.visibility_us.Merge(node.visibility_us);
    total.invariant_failures += node.invariant_failures;
    total.waited_ro += node.waited_ro;
    total.admission.Add(node.admission);
    total.ltx.Add(node.ltx);
    if (!node.consistency.empty()) {
      total.consistency += (total.consistency.empty() ? "" : "; ") + std::string("node ") +
                           std::to_string(node.node) + ": " + node.consistency;
    }
    for (const ProcedureSummary& p : node.procedures) {
      auto it = std::find_if(total.procedures.begin(), total.procedures.end(),
                             [&](const ProcedureSummary& q) { return q.name == p.name; });
      if (it == total.procedures.end()) {
        total.procedures.push_back(p);
      } else {
        it->committed += p.committed;
        it->declined += p.declined;
        it->restarts += p.restarts;
        it->latency_us.Merge(p.latency_us);
        it->age_us.Merge(p.age_us);
        it->age_epochs.Merge(p.age_epochs);
      }
    }
    total.digest += node.digest;
    total.digest_epoch = std::max(total.digest_epoch, node.digest_epoch);
  }
  return total;
}

}  // namespace paxflow
