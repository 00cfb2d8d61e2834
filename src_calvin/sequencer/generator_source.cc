#include "sequencer/generator_source.h"

#include <algorithm>

#include "common/single_writer.h"

namespace paxflow {

InflightWindow::InflightWindow(uint64_t limit, std::function<uint64_t()> completed,
                               std::function<bool()> behind,
                               std::function<bool(const Txn&)> takes_room)
    : limit_(limit),
      completed_(std::move(completed)),
      behind_(std::move(behind)),
      takes_room_(std::move(takes_room)) {}

uint64_t InflightWindow::Done() const {
  return completed_ ? completed_() : finished_.load(std::memory_order_relaxed);
}

size_t InflightWindow::Claim(size_t want) {
  if (behind()) return 0;
  if (limit_ == 0) return want;
  uint64_t generated = generated_.load(std::memory_order_relaxed);
  while (true) {
    const uint64_t done = Done();
    const uint64_t inflight = generated > done ? generated - done : 0;
    const uint64_t room = inflight < limit_ ? limit_ - inflight : 0;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(want, room));
    if (generated_.compare_exchange_weak(generated, generated + take,
                                         std::memory_order_relaxed)) {
      return take;
    }
  }
}

void InflightWindow::Release(size_t count) {
  generated_.fetch_sub(count, std::memory_order_relaxed);
}

GeneratorSource::GeneratorSource(std::unique_ptr<TxnGenerator> generator,
                                 InflightWindow* window, ResubmitQueue* resubmit,
                                 InflightWindow* ltx_window, InflightWindow* ltx_share_window)
    : generator_(std::move(generator)),
      window_(window),
      resubmit_(resubmit),
      ltx_window_(ltx_window),
      ltx_share_window_(ltx_share_window) {}

bool GeneratorSource::ClaimLtxRoom(const Txn& txn) {
  if (ltx_window_ && ltx_window_->Claim(1) == 0) return false;
  if (ltx_share_window_ && ltx_share_window_->TakesRoom(txn) &&
      ltx_share_window_->Claim(1) == 0) {
    if (ltx_window_) ltx_window_->Release(1);
    return false;
  }
  return true;
}

size_t GeneratorSource::Fill(size_t max, int64_t now_us, Batch* batch) {
  const size_t count = window_ ? window_->Claim(max) : max;
  batch->mutable_txns()->Reserve(batch->txns_size() + static_cast<int>(count));
  for (size_t i = 0; i < count; ++i) {
    Txn* txn = batch->add_txns();
    // A resubmitted txn keeps its first submit time (its latency counts its
    // restarts). An LTX's restart is not counted done (WorkerStats::
    // RecordResult, Node::OnResult), so the LTX is still in flight in the
    // LTX windows: it takes no new room.
    if (resubmit_ && resubmit_->Pop(txn)) continue;
    // A held LTX keeps the time it was drawn: its latency counts the hold.
    if (!held_.empty() && ClaimLtxRoom(held_.front())) {
      txn->Swap(&held_.front());
      held_.pop_front();
      continue;
    }
    while (true) {
      generator_->Next(txn);
      txn->set_submit_time_us(now_us);
      if (txn->txn_class() != LTX || ClaimLtxRoom(*txn)) break;
      held_.emplace_back();
      held_.back().Swap(txn);
      if (held_.size() >= kMaxHeld) {
        // The batch ends here; what it claimed but did not fill is room again.
        batch->mutable_txns()->RemoveLast();
        if (window_) window_->Release(count - i);
        SingleWriterAdd(ltx_window_full_);
        if (ltx_window_ && ltx_window_->behind()) SingleWriterAdd(ltx_lane_behind_);
        return i;
      }
      txn->Clear();
    }
  }
  return count;
}

}  // namespace paxflow
