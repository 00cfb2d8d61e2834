#include "sequencer/generator_source.h"

#include <algorithm>

namespace paxflow {

InflightWindow::InflightWindow(uint64_t limit, std::function<uint64_t()> completed)
    : limit_(limit), completed_(std::move(completed)) {}

size_t InflightWindow::Claim(size_t want) {
  if (limit_ == 0) return want;
  uint64_t generated = generated_.load(std::memory_order_relaxed);
  while (true) {
    const uint64_t done = completed_ ? completed_() : 0;
    const uint64_t inflight = generated > done ? generated - done : 0;
    const uint64_t room = inflight < limit_ ? limit_ - inflight : 0;
    const size_t take = static_cast<size_t>(std::min<uint64_t>(want, room));
    if (generated_.compare_exchange_weak(generated, generated + take,
                                         std::memory_order_relaxed)) {
      return take;
    }
  }
}

GeneratorSource::GeneratorSource(std::unique_ptr<TxnGenerator> generator,
                                 InflightWindow* window, ResubmitQueue* resubmit)
    : generator_(std::move(generator)), window_(window), resubmit_(resubmit) {}

size_t GeneratorSource::Fill(size_t max, int64_t now_us, Batch* batch) {
  const size_t count = window_ ? window_->Claim(max) : max;
  batch->mutable_txns()->Reserve(batch->txns_size() + static_cast<int>(count));
  for (size_t i = 0; i < count; ++i) {
    Txn* txn = batch->add_txns();
    // A resubmitted txn keeps its first submit time: its latency counts
    // its restarts.
    if (!resubmit_ || !resubmit_->Pop(txn)) {
      generator_->Next(txn);
      txn->set_submit_time_us(now_us);
    }
  }
  return count;
}

}  // namespace paxflow
