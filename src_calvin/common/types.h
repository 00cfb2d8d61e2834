// Basic identifiers shared by every component.
#pragma once
#include <cstdint>
#include <string>

namespace paxflow {

using Key = uint64_t;
using Epoch = uint64_t;
using TxnId = uint64_t;
using NodeId = uint32_t;
using PartitionId = uint32_t;

// A txn id packs (epoch, sequencer, position) so that numeric order is the
// global order: by epoch, then sequencer, then position in the batch.
constexpr int kTxnPositionBits = 20;
constexpr int kTxnSequencerBits = 12;
constexpr uint32_t kMaxBatchLimit = (1u << kTxnPositionBits) - 1;
constexpr uint32_t kMaxSequencers = 1u << kTxnSequencerBits;

inline TxnId MakeTxnId(Epoch epoch, uint32_t sequencer, uint32_t position) {
  return (epoch << (kTxnPositionBits + kTxnSequencerBits)) |
         (uint64_t{sequencer} << kTxnPositionBits) | position;
}
inline Epoch TxnEpoch(TxnId id) { return id >> (kTxnPositionBits + kTxnSequencerBits); }
inline uint32_t TxnSequencer(TxnId id) {
  return (id >> kTxnPositionBits) & (kMaxSequencers - 1);
}
inline uint32_t TxnPosition(TxnId id) { return id & kMaxBatchLimit; }
std::string TxnIdString(TxnId id);  // "e12.s0.p7"

// Which engine runs the workload.
enum class Mode {
  kCalvin,   // every txn through the lock manager, single-version store
  kPaxflow,  // read-only txns on committed snapshots, multi-version store
};
const char* ModeName(Mode mode);
bool ParseMode(const std::string& text, Mode* mode);

// Why an LTX did not commit.
enum LtxAbortReason : int {
  kAbortBusy = 0,        // max_active_ltx LTXs were unresolved at its begin
  kAbortTimeout = 1,     // not committed within ltx_timeout epochs
  kAbortWriteArea = 2,   // wrote outside its write-preservation area
  kAbortProcedure = 3,   // its procedure gave up (bad arguments, undeclared read, ...)
  kAbortRestart = 4,     // a participant restarted and lost its reads
  kAbortGuard = 5,       // its write area touched keys guarded for a starving short txn
  kAbortRecon = 6,       // calvin mode (OLLP): it read other keys than its reconnaissance
  // It read the writes of an earlier LTX that had finished but was not yet
  // resolved, and that LTX was then aborted (docs/ltx.md, early reads).
  kAbortCascade = 7,
  // Replicated input: its origin partition's group changed leader before it
  // committed; the new leader aborted it through the log (docs/ltx.md).
  kAbortFailover = 8,
};
constexpr int kLtxAbortReasons = 9;
const char* LtxAbortReasonName(int reason);  // "busy", "timeout", ...
// The reason an abort text starts with ("recon: ..."); procedure if none.
int LtxAbortReasonOf(const std::string& text);

// The partition that owns a key.
inline PartitionId PartitionOf(Key key, uint32_t partitions) {
  return static_cast<PartitionId>(key % partitions);
}
// The first key at or above `lo` that partition `p` owns. Near the top of
// the key space it may wrap below `lo`: callers check it is not.
inline Key FirstKeyOn(Key lo, PartitionId p, uint32_t partitions) {
  return lo + (p + partitions - lo % partitions) % partitions;
}

}  // namespace paxflow
