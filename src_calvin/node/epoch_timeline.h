// Where an epoch's input spends its time at the node that cuts it, from the
// cut until its batch reaches this node's scheduler. Without replicated
// input that is one step (the batch is delivered right after the cut); with
// it (node/replicated_sequencing.h) the batch waits for its group first, in
// stages, each measured on its own (common/stats.h's InputStage):
//   propose   the cut -> the record in the leader's consensus log
//   commit    -> the group committed it (a majority holds it on disk), as
//                the leader's consensus thread learns it
//   hand-out  -> the node's consumer thread takes it
//   deliver   -> its batch is handed to the scheduler (the cut, without
//                replicated input)
// Epochs this node did not cut (a follower's, an earlier leader's) are not
// counted.
//
// Owns: the cut times of the last epochs, the stage histograms.
// Threads: Cut and Proposed on the first sequencer's thread; Committed and
// Delivered on the consumer's (replicated input) or the sequencer's;
// Fill on any. One mutex: about 100 epochs a second.
#pragma once
#include <array>
#include <cstdint>
#include <mutex>

#include "common/histogram.h"
#include "common/stats.h"
#include "common/types.h"

namespace paxflow {

class EpochTimeline {
 public:
  void Cut(Epoch epoch, int64_t now_us);
  void Proposed(Epoch epoch, int64_t now_us);
  // The group committed `epoch`: its consensus thread learned it at
  // `engine_us`, the consumer took it at `now_us`.
  void Committed(Epoch epoch, int64_t engine_us, int64_t now_us);
  void Delivered(Epoch epoch, int64_t now_us);
  // Copies of the stage histograms, indexed by InputStage.
  void Fill(Histogram out[kInputStages]) const;

 private:
  struct Times {
    Epoch epoch = 0;  // 0: free
    int64_t cut_us = 0, proposed_us = 0, taken_us = 0;
  };
  // The slot of `epoch` if it holds that epoch's cut, else null (mu_ held).
  Times* Find(Epoch epoch);

  mutable std::mutex mu_;
  // Epochs in flight between cut and delivery: a few dozen at most (a
  // sequencer runs max_epochs_ahead of its scheduler, but the group
  // commits within a few epochs); one a lap behind is overwritten, and
  // its remaining stages go uncounted.
  std::array<Times, 1024> times_;
  Histogram stage_us_[kInputStages];
};

}  // namespace paxflow
