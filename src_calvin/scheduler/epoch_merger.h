// Collects the batches of every sequencer and releases epochs in order.
//
// Owns: batches received for epochs not yet released.
// In: batches from any sequencer, in any order (Add).
// Out: epoch e, merged in sequencer order, once every sequencer's batch for
// e is here (TakeReady). A sequencer that sent its final batch at epoch f
// counts as sending empty batches for every epoch after f.
// Threads: one caller at a time (the scheduler thread).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/types.h"
#include "txn.pb.h"

namespace paxflow {

struct MergedEpoch {
  Epoch epoch = 0;
  // One per sequencer, in sequencer order; nullptr for a sequencer that had
  // already stopped.
  std::vector<std::unique_ptr<Batch>> batches;
  bool has_rw = false;         // any sequencer's batch held RW work
  int64_t close_time_us = 0;   // latest close time among the batches
  bool last = false;           // no sequencer sends anything after this epoch
};

class EpochMerger {
 public:
  explicit EpochMerger(uint32_t sequencers, Epoch first_epoch = 1);

  enum class Outcome {
    kAccepted,
    kRepeated,     // a batch it has (or an epoch already released): sent again, harmless
    kTooFarAhead,  // beyond the window; its sender keeps it and sends it again when asked
    kRejected,     // cannot belong here (unknown sequencer, contradicts a final batch)
  };
  // Takes `batch`, or says why not in `why`.
  Outcome Offer(std::unique_ptr<Batch> batch, std::string* why);
  // Empty string if accepted; otherwise why the batch was dropped
  // (unknown sequencer, duplicate, stale epoch, after the sequencer's final).
  std::string Add(std::unique_ptr<Batch> batch);
  // Bounds memory: batches for epochs at or beyond next_epoch() + `epochs`
  // are refused (kTooFarAhead). 0: no bound.
  void set_window(Epoch epochs) { window_ = epochs; }
  // Restarts the order at `first_epoch` (a node restored from a checkpoint);
  // whatever is buffered for earlier epochs is dropped.
  void StartAt(Epoch first_epoch);
  // Sequencers that sent their final batch at an epoch <= `through`, with
  // that epoch; and the same set given back after a restore.
  std::vector<std::pair<uint32_t, Epoch>> FinishedThrough(Epoch through) const;
  void MarkFinished(uint32_t sequencer, Epoch final_epoch);
  // The next epoch in order if complete, else nullptr.
  std::unique_ptr<MergedEpoch> TakeReady();

  // Every sequencer has finished and every epoch has been taken.
  bool Finished() const;
  Epoch next_epoch() const { return next_epoch_; }
  // Sequencers whose batch for the next epoch has not arrived.
  std::vector<uint32_t> MissingForNextEpoch() const { return MissingFor(next_epoch_); }
  // The first epoch from the next one on that lacks some sequencer's batch
  // (what the partition will wait for even while admission is held back),
  // and those sequencers.
  Epoch FirstIncompleteEpoch() const;
  std::vector<uint32_t> MissingFor(Epoch epoch) const;
  size_t buffered_epochs() const { return pending_.size(); }

 private:
  bool Stopped(uint32_t sequencer, Epoch epoch) const {
    return finished_[sequencer] && epoch > final_epoch_[sequencer];
  }
  // Whether sequencer `s`'s batch for `epoch` is still due (`batches`: the
  // epoch's buffered ones, null if none came).
  bool Awaited(uint32_t s, Epoch epoch,
               const std::vector<std::unique_ptr<Batch>>* batches) const {
    return !(batches && (*batches)[s]) && !Stopped(s, epoch);
  }

  const uint32_t sequencers_;
  Epoch next_epoch_;
  std::map<Epoch, std::vector<std::unique_ptr<Batch>>> pending_;
  std::vector<Epoch> final_epoch_;  // valid where finished_
  std::vector<bool> finished_;
  uint32_t finished_sequencers_ = 0;
  Epoch window_ = 0;
};

}  // namespace paxflow
