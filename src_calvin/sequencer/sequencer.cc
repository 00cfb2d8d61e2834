#include "sequencer/sequencer.h"

#include <glog/logging.h>
#include <pthread.h>

#include <chrono>

#include "common/clock.h"
#include "common/single_writer.h"

namespace paxflow {

Sequencer::Sequencer(const SequencerOptions& options, std::vector<TxnSource*> sources,
                     RecordQueue* records)
    : options_(options),
      sources_(std::move(sources)),
      records_(records),
      marks_(options.partitions, 0) {}

TxnClass Sequencer::Classify(const Txn& txn) {
  if (txn.txn_class() == LTX) return LTX;
  return txn.write_set_size() == 0 && txn.read_write_set_size() == 0 ? RO : RW;
}

std::vector<std::unique_ptr<Batch>> Sequencer::CloseEpoch(Epoch epoch, int64_t now_us,
                                                          bool final, bool take_new) {
  auto all = std::make_unique<Batch>();
  if (records_) records_->TakeAll(now_us, all.get());
  size_t room = take_new ? options_.max_batch : 0;
  for (TxnSource* source : sources_) {
    if (room == 0) break;
    room -= source->Fill(room, now_us, all.get());
  }
  if (take_new) {
    SingleWriterAdd(epochs_taking_new_);
    if (room == 0) SingleWriterAdd(epochs_at_batch_cap_);
  }
  bool has_rw = false;
  uint32_t position = 0;
  for (Txn& txn : *all->mutable_txns()) {
    txn.set_id(MakeTxnId(epoch, options_.sequencer_id, position++));
    txn.set_txn_class(Classify(txn));
    txn.set_origin_partition(options_.partition);
    txn.set_origin_node(options_.node);
    // LTX records are not read-write work by themselves: the LTX lane
    // decides which epochs they make read-write (installs, aborts).
    has_rw |= txn.txn_class() == RW;
  }

  std::vector<std::unique_ptr<Batch>> out(options_.partitions);
  for (uint32_t p = 0; p < options_.partitions; ++p) {
    if (options_.partitions == 1) {
      out[p] = std::move(all);
    } else {
      out[p] = std::make_unique<Batch>();
    }
    out[p]->set_epoch(epoch);
    out[p]->set_sequencer(options_.sequencer_id);
    out[p]->set_partition(p);
    out[p]->set_has_rw(has_rw);
    out[p]->set_final(final);
    out[p]->set_close_time_us(now_us);
  }
  if (options_.partitions == 1) return out;

  // A txn goes to every partition it touches, and to its origin, which
  // reports its result.
  std::vector<PartitionId> touched;
  for (Txn& txn : *all->mutable_txns()) {
    if (txn.txn_class() == LTX) {
      SplitLtxRecord(txn, options_.partitions, &out);
      continue;
    }
    touched.clear();
    auto mark = [&](PartitionId p) {
      if (!marks_[p]) {
        marks_[p] = 1;
        touched.push_back(p);
      }
    };
    mark(options_.partition);
    for (Key key : txn.read_set()) mark(PartitionOf(key, options_.partitions));
    for (Key key : txn.read_write_set()) mark(PartitionOf(key, options_.partitions));
    for (Key key : txn.write_set()) mark(PartitionOf(key, options_.partitions));
    for (size_t i = 0; i < touched.size(); ++i) {
      marks_[touched[i]] = 0;
      if (i + 1 == touched.size()) {
        out[touched[i]]->add_txns()->Swap(&txn);
      } else {
        *out[touched[i]]->add_txns() = txn;
      }
    }
  }
  return out;
}

void Sequencer::SplitLtxRecord(const Txn& txn, uint32_t partitions,
                               std::vector<std::unique_ptr<Batch>>* out) {
  if (txn.ltx().kind() != LTX_COMMIT) {
    for (uint32_t p = 0; p < partitions; ++p) *(*out)[p]->add_txns() = txn;
    return;
  }
  Txn shell = txn;
  shell.mutable_ltx()->clear_writes();
  std::vector<Txn*> copies(partitions);
  for (uint32_t p = 0; p < partitions; ++p) {
    copies[p] = (*out)[p]->add_txns();
    *copies[p] = shell;
  }
  for (const LtxWrite& write : txn.ltx().writes()) {
    *copies[PartitionOf(write.key(), partitions)]->mutable_ltx()->add_writes() = write;
  }
}

SequencerRunner::SequencerRunner(Sequencer* sequencer, uint32_t epoch_ms, uint64_t run_epochs,
                                 Deliver deliver, std::chrono::steady_clock::time_point start)
    : sequencer_(sequencer),
      epoch_ms_(epoch_ms),
      run_epochs_(run_epochs),
      deliver_(std::move(deliver)),
      start_(start) {}

SequencerRunner::~SequencerRunner() {
  RequestStop();
  Join();
}

void SequencerRunner::Start() { thread_ = std::thread([this] { Run(); }); }

bool SequencerRunner::Restart(Epoch first_epoch) {
  if (!failed_.load()) return false;
  Join();  // its thread returned when the epoch was refused
  failed_.store(false);
  first_epoch_ = first_epoch;
  Start();
  return true;
}

void SequencerRunner::RequestStop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
}

void SequencerRunner::Abort() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    abort_.store(true);
    stop_.store(true);
  }
  cv_.notify_all();
}

void SequencerRunner::Join() {
  if (thread_.joinable()) thread_.join();
}

void SequencerRunner::CatchUpTo(Epoch epoch) {
  if (epoch <= catch_up_to_.load()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    catch_up_to_.store(epoch);
  }
  cv_.notify_all();
}

bool SequencerRunner::WaitForLimit(Epoch epoch) {
  if (!limit_) return false;
  bool waited = false;
  std::unique_lock<std::mutex> lock(mu_);
  // The final epoch goes out whatever the limit: the others must learn it.
  while (!stop_.load() && epoch > limit_()) {
    waited = true;
    cv_.wait_for(lock, std::chrono::milliseconds(epoch_ms_));
  }
  return waited;
}

void SequencerRunner::Run() {
  pthread_setname_np(pthread_self(), "px-sequencer");
  const auto period = std::chrono::milliseconds(epoch_ms_);
  bool ended = false;  // the load has ended; draining what is owed
  // Epoch e closes at anchor + (e - anchor_epoch) periods.
  auto anchor = start_ + period * static_cast<int64_t>(first_epoch_ - 1);
  Epoch anchor_epoch = first_epoch_ - 1;
  for (Epoch epoch = first_epoch_;; ++epoch) {
    {
      // Once the load has ended, epochs keep their schedule (a stop request
      // no longer hurries them); only an abort does.
      const auto deadline = anchor + period * static_cast<int64_t>(epoch - anchor_epoch);
      std::unique_lock<std::mutex> lock(mu_);
      auto hurried = [&] { return ended ? abort_.load() : stop_.load(); };
      if (cv_.wait_until(lock, deadline,
                         [&] { return hurried() || epoch <= catch_up_to_.load(); }) &&
          !hurried()) {
        // Caught up early: the clock counts from here.
        anchor = std::chrono::steady_clock::now();
        anchor_epoch = epoch;
      }
    }
    if (WaitForLimit(epoch)) {
      // Held back: go on at the usual pace from now, not in a burst.
      anchor = std::chrono::steady_clock::now();
      anchor_epoch = epoch;
    }
    // The epoch the load ends in still takes new txns, as every epoch did.
    const bool take_new = !ended;
    ended |= stop_.load() || (run_epochs_ > 0 && epoch >= run_epochs_);
    // An epoch that takes new txns is never the last when something may be
    // owed: they may begin LTXs, which resolve in a later epoch, and what
    // the drain sees does not include them yet (it reads the epochs before).
    const bool final = ended && (abort_.load() || !drain_ || (!take_new && !drain_()));
    auto batches = sequencer_->CloseEpoch(epoch, NowMicros(), final, take_new);
    if (before_send_ && !before_send_(epoch, batches)) {
      failed_.store(true);
      return;  // not done: the node stays up and says why
    }
    epoch_.store(epoch, std::memory_order_relaxed);
    for (PartitionId p = 0; p < batches.size(); ++p) deliver_(p, std::move(batches[p]));
    if (final) break;
  }
  done_.store(true);
}

}  // namespace paxflow
