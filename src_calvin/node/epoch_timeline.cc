#include "node/epoch_timeline.h"

namespace paxflow {

EpochTimeline::Times* EpochTimeline::Find(Epoch epoch) {
  Times& slot = times_[epoch % times_.size()];
  return slot.epoch == epoch ? &slot : nullptr;
}

void EpochTimeline::Cut(Epoch epoch, int64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  times_[epoch % times_.size()] = Times{epoch, now_us, 0, 0};
}

void EpochTimeline::Proposed(Epoch epoch, int64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  Times* times = Find(epoch);
  if (times == nullptr) return;
  times->proposed_us = now_us;
  stage_us_[kInputPropose].RecordElapsed(now_us - times->cut_us);
}

void EpochTimeline::Committed(Epoch epoch, int64_t engine_us, int64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  Times* times = Find(epoch);
  if (times == nullptr || times->proposed_us == 0) return;
  times->taken_us = now_us;
  stage_us_[kInputCommit].RecordElapsed(engine_us - times->proposed_us);
  stage_us_[kInputHandOut].RecordElapsed(now_us - engine_us);
}

void EpochTimeline::Delivered(Epoch epoch, int64_t now_us) {
  std::lock_guard<std::mutex> lock(mu_);
  Times* times = Find(epoch);
  if (times == nullptr) return;
  stage_us_[kInputDeliver].RecordElapsed(now_us - (times->taken_us ? times->taken_us : times->cut_us));
  stage_us_[kInputTotal].RecordElapsed(now_us - times->cut_us);
  times->epoch = 0;
}

void EpochTimeline::Fill(Histogram out[kInputStages]) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (int stage = 0; stage < kInputStages; ++stage) {
    out[stage].Clear();
    out[stage].Merge(stage_us_[stage]);
  }
}

}  // namespace paxflow
