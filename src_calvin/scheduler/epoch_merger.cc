#include "scheduler/epoch_merger.h"

#include <algorithm>

namespace paxflow {

EpochMerger::EpochMerger(uint32_t sequencers, Epoch first_epoch)
    : sequencers_(sequencers),
      next_epoch_(first_epoch),
      final_epoch_(sequencers, 0),
      finished_(sequencers, false) {}

std::string EpochMerger::Add(std::unique_ptr<Batch> batch) {
  std::string why;
  Offer(std::move(batch), &why);
  return why;
}

void EpochMerger::StartAt(Epoch first_epoch) {
  next_epoch_ = first_epoch;
  pending_.erase(pending_.begin(), pending_.lower_bound(first_epoch));
}

std::vector<std::pair<uint32_t, Epoch>> EpochMerger::FinishedThrough(Epoch through) const {
  std::vector<std::pair<uint32_t, Epoch>> finished;
  for (uint32_t s = 0; s < sequencers_; ++s) {
    if (finished_[s] && final_epoch_[s] <= through) finished.emplace_back(s, final_epoch_[s]);
  }
  return finished;
}

void EpochMerger::MarkFinished(uint32_t sequencer, Epoch final_epoch) {
  if (sequencer >= sequencers_ || finished_[sequencer]) return;
  finished_[sequencer] = true;
  final_epoch_[sequencer] = final_epoch;
  ++finished_sequencers_;
}

EpochMerger::Outcome EpochMerger::Offer(std::unique_ptr<Batch> batch, std::string* why) {
  const uint32_t sequencer = batch->sequencer();
  const Epoch epoch = batch->epoch();
  const std::string where =
      "batch (epoch " + std::to_string(epoch) + ", sequencer " + std::to_string(sequencer) + ")";
  auto fail = [&](Outcome outcome, const std::string& problem) {
    *why = where + ": " + problem;
    return outcome;
  };
  if (sequencer >= sequencers_) {
    return fail(Outcome::kRejected,
                "no such sequencer (cluster has " + std::to_string(sequencers_) + ")");
  }
  if (epoch < next_epoch_) return fail(Outcome::kRepeated, "epoch already executed");
  if (Stopped(sequencer, epoch)) {
    return fail(Outcome::kRejected,
                "sequencer finished at epoch " + std::to_string(final_epoch_[sequencer]));
  }
  if (window_ > 0 && epoch >= next_epoch_ + window_) {
    return fail(Outcome::kTooFarAhead, "more than " + std::to_string(window_) +
                                           " epochs ahead of epoch " +
                                           std::to_string(next_epoch_));
  }
  auto& slots = pending_[epoch];
  if (slots.empty()) slots.resize(sequencers_);
  if (slots[sequencer]) return fail(Outcome::kRepeated, "duplicate");
  if (batch->final()) {
    // Anything buffered past the final epoch contradicts it.
    for (auto it = pending_.upper_bound(epoch); it != pending_.end(); ++it) {
      if (it->second[sequencer]) {
        return fail(Outcome::kRejected, "final, but a later batch already arrived");
      }
    }
    final_epoch_[sequencer] = epoch;
    finished_[sequencer] = true;
    ++finished_sequencers_;
  }
  slots[sequencer] = std::move(batch);
  why->clear();
  return Outcome::kAccepted;
}

std::unique_ptr<MergedEpoch> EpochMerger::TakeReady() {
  if (Finished()) return nullptr;
  auto it = pending_.find(next_epoch_);
  for (uint32_t s = 0; s < sequencers_; ++s) {
    const bool present = it != pending_.end() && it->second[s];
    if (!present && !Stopped(s, next_epoch_)) return nullptr;
  }
  auto merged = std::make_unique<MergedEpoch>();
  merged->epoch = next_epoch_;
  if (it != pending_.end()) {
    merged->batches = std::move(it->second);
    pending_.erase(it);
  } else {
    merged->batches.resize(sequencers_);
  }
  for (const auto& batch : merged->batches) {
    if (!batch) continue;
    merged->has_rw |= batch->has_rw();
    merged->close_time_us = std::max(merged->close_time_us, batch->close_time_us());
  }
  ++next_epoch_;
  merged->last = Finished();
  return merged;
}

bool EpochMerger::Finished() const {
  if (finished_sequencers_ < sequencers_) return false;
  Epoch last = *std::max_element(final_epoch_.begin(), final_epoch_.end());
  return next_epoch_ > last;
}

std::vector<uint32_t> EpochMerger::MissingFor(Epoch epoch) const {
  std::vector<uint32_t> missing;
  auto it = pending_.find(epoch);
  const auto* batches = it == pending_.end() ? nullptr : &it->second;
  for (uint32_t s = 0; s < sequencers_; ++s) {
    if (Awaited(s, epoch, batches)) missing.push_back(s);
  }
  return missing;
}

Epoch EpochMerger::FirstIncompleteEpoch() const {
  // The scheduler asks after every step: look, without allocating, at the
  // buffered epochs (few: those too far ahead are refused).
  for (Epoch epoch = next_epoch_;; ++epoch) {
    auto it = pending_.find(epoch);
    if (it == pending_.end()) return epoch;
    for (uint32_t s = 0; s < sequencers_; ++s) {
      if (Awaited(s, epoch, &it->second)) return epoch;
    }
  }
}

}  // namespace paxflow
