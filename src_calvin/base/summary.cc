#include "base/summary.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <sstream>

#include "common/json.h"

namespace paxflow {
namespace {

std::string Fixed(double x, int digits) {
  char buffer[64];
  snprintf(buffer, sizeof(buffer), "%.*f", digits, x);
  return buffer;
}

std::string Millis(uint64_t micros) { return Fixed(micros / 1000.0, 2); }

}  // namespace

std::string DigestHex(uint64_t digest) {
  char buffer[32];
  snprintf(buffer, sizeof(buffer), "0x%016" PRIx64, digest);
  return buffer;
}

bool LtxSummary::any() const {
  uint64_t aborted = 0;
  for (uint64_t n : aborts) aborted += n;
  return aborted + deferrals + parked_reads + guards + late_records > 0;
}

void LtxSummary::Add(const LtxSummary& other) {
  for (int r = 0; r < kLtxAbortReasons; ++r) aborts[r] += other.aborts[r];
  deferrals += other.deferrals;
  deferred_txns += other.deferred_txns;
  max_deferrals = std::max(max_deferrals, other.max_deferrals);
  parked_reads += other.parked_reads;
  held_installs += other.held_installs;
  guards += other.guards;
  late_records += other.late_records;
  deferred_wait_us.Merge(other.deferred_wait_us);
  parked_wait_us.Merge(other.parked_wait_us);
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
        if (ltx.aborts[r] == 0) continue;
        out << (first ? "" : ", ") << LtxAbortReasonName(r) << " " << ltx.aborts[r];
        first = false;
      }
      out << ")";
    }
    out << "\n";
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
  if (ltx.held_installs + ltx.guards + ltx.late_records > 0) {
    out << "LTX installs held behind an earlier LTX: " << ltx.held_installs
        << "; guards against starvation: " << ltx.guards
        << "; commit/abort records too late: " << ltx.late_records << "\n";
  }
  if (visibility_us.count() > 0) {
    out << "RO visibility delay (ms): p50 " << Millis(visibility_us.Quantile(0.5)) << "  p99 "
        << Millis(visibility_us.Quantile(0.99)) << "  max " << Millis(visibility_us.max())
        << "\n";
  }
  if (invariant_failures > 0) out << "INVARIANT FAILURES: " << invariant_failures << "\n";
  if (dropped_messages > 0) out << "dropped messages: " << dropped_messages << "\n";
  if (waited_ro > 0) out << "read-only txns that waited for their snapshot: " << waited_ro << "\n";
  if (peak_rss_bytes > 0) out << "peak resident memory: " << (peak_rss_bytes >> 20) << " MiB\n";
  for (const auto& [epoch, digest] : epoch_digests) {
    out << "state digest at epoch " << epoch << ": " << DigestHex(digest) << "\n";
  }
  out << "state digest at epoch " << digest_epoch << ": " << DigestHex(digest) << "\n";
  return out.str();
}

std::string RunSummary::ToJson() const {
  std::ostringstream out;
  out << "{\"scope\":" << JsonEscape(scope) << ",\"node\":" << node
      << ",\"partition\":" << partition << ",\"replica\":" << replica << ",\"nodes\":" << nodes
      << ",\"mode\":" << JsonEscape(mode) << ",\"workload\":" << JsonEscape(workload)
      << ",\"seconds\":" << Fixed(seconds, 6) << ",\"throughput\":" << Fixed(Throughput(), 3)
      << ",\"kinds\":{";
  for (int k = 0; k < kTxnKinds; ++k) {
    const KindSummary& s = kinds[k];
    if (k) out << ",";
    out << "\"" << TxnKindName(k) << "\":{\"committed\":" << s.committed
        << ",\"declined\":" << s.declined
        << ",\"throughput\":" << Fixed(seconds > 0 ? s.committed / seconds : 0, 3)
        << ",\"p50_ms\":" << Millis(s.latency_us.Quantile(0.5))
        << ",\"p95_ms\":" << Millis(s.latency_us.Quantile(0.95))
        << ",\"p99_ms\":" << Millis(s.latency_us.Quantile(0.99))
        << ",\"max_ms\":" << Millis(s.latency_us.max())
        << ",\"mean_ms\":" << Fixed(s.latency_us.Mean() / 1000.0, 3)
        << ",\"histogram_us\":" << JsonEscape(s.latency_us.Encode()) << "}";
  }
  out << "},\"visibility\":{\"count\":" << visibility_us.count()
      << ",\"p50_ms\":" << Millis(visibility_us.Quantile(0.5))
      << ",\"p99_ms\":" << Millis(visibility_us.Quantile(0.99))
      << ",\"max_ms\":" << Millis(visibility_us.max())
      << ",\"histogram_us\":" << JsonEscape(visibility_us.Encode()) << "}"
      << ",\"invariant_failures\":" << invariant_failures
      << ",\"dropped_messages\":" << dropped_messages << ",\"waited_ro\":" << waited_ro
      << ",\"peak_rss_bytes\":" << peak_rss_bytes
      << ",\"digest_epoch\":" << digest_epoch
      << ",\"digest\":" << JsonEscape(DigestHex(digest)) << ",\"epoch_digests\":[";
  for (size_t i = 0; i < epoch_digests.size(); ++i) {
    if (i) out << ",";
    out << "{\"epoch\":" << epoch_digests[i].first << ",\"digest\":"
        << JsonEscape(DigestHex(epoch_digests[i].second)) << "}";
  }
  out << "]}";
  return out.str();
}

std::string RunSummary::FromJson(const std::string& json, RunSummary* out) {
  JsonValue root;
  std::string error = ParseJson(json, &root);
  if (!error.empty()) return error;
  if (root.type != JsonValue::kObject) return "summary is not a JSON object";
  RunSummary s;
  s.scope = root.StringOr("scope", "node");
  s.node = static_cast<NodeId>(root.NumberOr("node", 0));
  s.partition = static_cast<PartitionId>(root.NumberOr("partition", 0));
  s.replica = static_cast<uint32_t>(root.NumberOr("replica", 0));
  s.nodes = static_cast<uint32_t>(root.NumberOr("nodes", 1));
  s.mode = root.StringOr("mode", "");
  s.workload = root.StringOr("workload", "");
  s.seconds = root.NumberOr("seconds", 0);
  if (const JsonValue* kinds = root.Find("kinds")) {
    for (int k = 0; k < kTxnKinds; ++k) {
      const JsonValue* kind = kinds->Find(TxnKindName(k));
      if (!kind) continue;
      s.kinds[k].committed = static_cast<uint64_t>(kind->NumberOr("committed", 0));
      s.kinds[k].declined = static_cast<uint64_t>(kind->NumberOr("declined", 0));
      if (!s.kinds[k].latency_us.Decode(kind->StringOr("histogram_us", "0;0;0;"))) {
        return "bad latency histogram for " + std::string(TxnKindName(k));
      }
    }
  }
  if (const JsonValue* visibility = root.Find("visibility")) {
    if (!s.visibility_us.Decode(visibility->StringOr("histogram_us", "0;0;0;"))) {
      return "bad visibility histogram";
    }
  }
  s.invariant_failures = static_cast<uint64_t>(root.NumberOr("invariant_failures", 0));
  s.dropped_messages = static_cast<uint64_t>(root.NumberOr("dropped_messages", 0));
  s.waited_ro = static_cast<uint64_t>(root.NumberOr("waited_ro", 0));
  s.peak_rss_bytes = static_cast<uint64_t>(root.NumberOr("peak_rss_bytes", 0));
  s.digest_epoch = static_cast<Epoch>(root.NumberOr("digest_epoch", 0));
  s.digest = std::strtoull(root.StringOr("digest", "0").c_str(), nullptr, 16);
  *out = std::move(s);
  return "";
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
    total.ltx.Add(node.ltx);
    total.digest += node.digest;
    total.digest_epoch = std::max(total.digest_epoch, node.digest_epoch);
  }
  return total;
}

}  // namespace paxflow
