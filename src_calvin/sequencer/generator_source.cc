#include "sequencer/generator_source.h"

namespace paxflow {

GeneratorSource::GeneratorSource(std::unique_ptr<TxnGenerator> generator, uint64_t max_inflight,
                                 std::function<uint64_t()> completed)
    : generator_(std::move(generator)),
      max_inflight_(max_inflight),
      completed_(std::move(completed)) {}

size_t GeneratorSource::Fill(size_t max, int64_t now_us, Batch* batch) {
  size_t count = max;
  if (max_inflight_ > 0) {
    const uint64_t done = completed_ ? completed_() : 0;
    const uint64_t inflight = generated_ > done ? generated_ - done : 0;
    const uint64_t room = inflight < max_inflight_ ? max_inflight_ - inflight : 0;
    if (room < count) count = static_cast<size_t>(room);
  }
  batch->mutable_txns()->Reserve(batch->txns_size() + static_cast<int>(count));
  for (size_t i = 0; i < count; ++i) {
    Txn* txn = batch->add_txns();
    generator_->Next(txn);
    txn->set_submit_time_us(now_us);
  }
  generated_ += count;
  return count;
}

}  // namespace paxflow
