#include "common/stats.h"

namespace paxflow {

const char* TxnKindName(int kind) {
  switch (kind) {
    case kKindReadOnly: return "RO";
    case kKindReadWrite: return "RW";
    default: return "LTX";
  }
}

const char* LtxStageName(int stage) {
  switch (stage) {
    case kLtxSequencing: return "sequencing";
    case kLtxStartWait: return "start wait";
    case kLtxReadWait: return "reads wait";
    case kLtxRun: return "run";
    case kLtxCommitWait: return "commit record wait";
    case kLtxParkedRead: return "read parked for earlier LTXs";
    case kLtxSnapshotWait: return "read waiting for its snapshot";
    default: return "install";
  }
}

const char* InputStageName(int stage) {
  switch (stage) {
    case kInputPropose: return "propose";
    case kInputCommit: return "commit";
    case kInputHandOut: return "hand-out";
    case kInputDeliver: return "deliver";
    default: return "cut to scheduler";
  }
}

NodeStats::NodeStats(size_t slots) {
  for (size_t i = 0; i < slots; ++i) slots_.push_back(std::make_unique<WorkerStats>());
}

uint64_t NodeStats::Committed(int kind) const {
  uint64_t total = 0;
  for (const auto& slot : slots_) total += slot->committed[kind].load(std::memory_order_relaxed);
  return total;
}

uint64_t NodeStats::CommittedAll() const {
  uint64_t total = 0;
  for (int kind = 0; kind < kTxnKinds; ++kind) total += Committed(kind);
  return total;
}

uint64_t NodeStats::GeneratedDone() const {
  uint64_t total = 0;
  for (const auto& slot : slots_) total += slot->generated_done.load(std::memory_order_relaxed);
  return total;
}

bool WorkerStats::RecordResult(int kind, bool was_aborted, const std::string& abort_reason,
                               int64_t latency, bool generated) {
  if (generated) Add(generated_done);
  if (kind == kKindLong && was_aborted && LtxAbortReasonOf(abort_reason) == kAbortRecon) {
    return true;
  }
  latency_us[kind].RecordElapsed(latency);
  Add(was_aborted ? aborted[kind] : committed[kind]);
  return false;
}

uint64_t NodeStats::LongDone() const { return Committed(kKindLong) + Aborted(kKindLong); }

uint64_t NodeStats::Declined(int kind) const {
  uint64_t total = 0;
  for (const auto& slot : slots_) total += slot->declined[kind].load(std::memory_order_relaxed);
  return total;
}

uint64_t NodeStats::Aborted(int kind) const {
  uint64_t total = 0;
  for (const auto& slot : slots_) total += slot->aborted[kind].load(std::memory_order_relaxed);
  return total;
}

uint64_t NodeStats::InvariantFailures() const {
  uint64_t total = 0;
  for (const auto& slot : slots_) total += slot->invariant_failures.load(std::memory_order_relaxed);
  return total;
}

Histogram NodeStats::Latency(int kind) const {
  Histogram merged;
  for (const auto& slot : slots_) merged.Merge(slot->latency_us[kind]);
  return merged;
}

Histogram NodeStats::Visibility() const {
  Histogram merged;
  for (const auto& slot : slots_) merged.Merge(slot->visibility_us);
  return merged;
}

Histogram NodeStats::LtxWait(int kind) const {
  Histogram merged;
  for (const auto& slot : slots_) merged.Merge(slot->ltx_wait_us[kind]);
  return merged;
}

Histogram NodeStats::LtxStage(int stage) const {
  Histogram merged;
  for (const auto& slot : slots_) merged.Merge(slot->ltx_stage_us[stage]);
  return merged;
}

}  // namespace paxflow
