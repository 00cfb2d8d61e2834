#include "node/catch_up.h"

#include <glog/logging.h>

#include <algorithm>
#include <set>

#include "sequencer/input_log.h"

namespace paxflow {

CatchUpServer::CatchUpServer(CatchUpOptions options) : options_(std::move(options)) {}

CatchUpServer::~CatchUpServer() { Stop(); }

void CatchUpServer::Start() { thread_ = std::thread([this] { Loop(); }); }

void CatchUpServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CatchUpServer::RequestBatches(NodeId from, const BatchRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back([this, from, request] { ServeBatches(from, request); });
  }
  cv_.notify_one();
}

void CatchUpServer::RequestReads(NodeId from, const ReadsRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back([this, from, request] { ServeReads(from, request); });
  }
  cv_.notify_one();
}

void CatchUpServer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
    if (stop_) return;
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

bool CatchUpServer::SendTo(NodeId to, Channel channel, const std::string& payload) {
  // In slices, so that stopping the node does not wait for a slow peer.
  constexpr int kSliceMs = 100;
  for (int waited = 0; waited < options_.send_timeout_ms; waited += kSliceMs) {
    if (options_.transport->SendPaced(to, channel, payload, kSliceMs)) return true;
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return false;
  }
  return false;
}

void CatchUpServer::ServeFromInputLog(NodeId to, const BatchRequest& request) {
  if (!options_.input_log || to == options_.self) return;
  options_.input_log->Flush(false);
  SegmentedLogReader reader;
  if (!reader.Open(options_.log_dir, options_.log_name, kInputLogFormat, request.from_epoch())
           .empty()) {
    return;
  }
  LogEpoch epoch;
  std::string payload;
  uint64_t sent = 0;
  while (reader.Next(&payload)) {
    if (!epoch.ParseFromString(payload) || epoch.epoch() < request.from_epoch()) continue;
    if (epoch.epoch() > request.to_epoch()) break;
    for (const Batch& batch : epoch.batch()) {
      if (batch.partition() != request.partition() ||
          !std::count(request.sequencers().begin(), request.sequencers().end(),
                      batch.sequencer())) {
        continue;
      }
      if (!SendTo(to, BATCH, batch.SerializeAsString())) return;
      ++sent;
    }
  }
  served_batches_.fetch_add(sent);
  LOG(INFO) << "node " << options_.self << ": sent node " << to << " " << sent
            << " batch(es) of epochs " << request.from_epoch() << ".." << request.to_epoch()
            << " from its input log";
}

void CatchUpServer::ServeBatches(NodeId to, const BatchRequest& request) {
  if (request.to_epoch() < request.from_epoch()) return;
  // Another sequencer's batches (a replica of this partition whose
  // sequencer log lost them): from what this partition ran.
  if (request.sequencers_size() > 0 &&
      !std::count(request.sequencers().begin(), request.sequencers().end(),
                  options_.own_sequencer)) {
    ServeFromInputLog(to, request);
    return;
  }
  if (!options_.sequencer_log) return;
  // What the sequencers cut last may still sit in the writer's buffer.
  options_.sequencer_log->Flush(false);
  Cursor& cursor = cursors_[to];
  if (!cursor.open || request.from_epoch() <= cursor.last_epoch) {
    // Asked again (or first): from the request's first epoch.
    cursor = Cursor();
    std::string error = cursor.reader.Open(options_.log_dir, options_.log_name,
                                           kSequencerLogFormat, request.from_epoch());
    if (!error.empty()) {
      LOG(WARNING) << "node " << options_.self << ": cannot serve batches to node " << to << ": "
                   << error;
      return;
    }
    cursor.open = true;
  }
  SequencedEpoch record;
  std::string payload;
  uint64_t sent = 0;
  while (true) {
    if (!cursor.pending.empty()) {
      payload.swap(cursor.pending);
      cursor.pending.clear();
    } else if (!cursor.reader.Next(&payload)) {
      // The end for now. The next request opens the log again: a reader at
      // the end of the segment being written does not see what is appended
      // to it later, nor a torn tail written meanwhile.
      cursor = Cursor();
      break;
    }
    if (!record.ParseFromString(payload)) continue;
    if (record.epoch() > request.to_epoch()) {
      cursor.pending.swap(payload);
      break;
    }
    cursor.last_epoch = std::max<Epoch>(cursor.last_epoch, record.epoch());
    if (record.epoch() < request.from_epoch()) continue;
    if (request.sequencers_size() > 0 &&
        !std::count(request.sequencers().begin(), request.sequencers().end(), record.sequencer())) {
      continue;
    }
    for (Batch& batch : *record.mutable_batches()) {
      if (batch.partition() != request.partition()) continue;
      if (to == options_.self) {
        auto owned = std::make_unique<Batch>();
        owned->Swap(&batch);
        options_.deliver_local(std::move(owned));
      } else if (!SendTo(to, BATCH, batch.SerializeAsString())) {
        LOG(WARNING) << "node " << options_.self << ": node " << to
                     << " takes no batches; catch-up paused (it will ask again)";
        cursor = Cursor();
        return;
      }
      ++sent;
    }
  }
  served_batches_.fetch_add(sent);
  VLOG(1) << "node " << options_.self << ": sent node " << to << " " << sent << " batch(es) of "
          << request.from_epoch() << ".." << request.to_epoch();
}

void CatchUpServer::ServeReads(NodeId to, const ReadsRequest& request) {
  if (!options_.reads_log) return;
  options_.reads_log->Flush(false);
  SegmentedLogReader reader;
  std::string error = reader.Open(options_.log_dir, options_.log_name, kReadsLogFormat,
                                  request.after_epoch() + 1);
  if (!error.empty()) return;  // nothing sent yet: no reads log
  // A live request names the txns it waits for (ReadExchange): only those.
  const std::set<TxnId> only(request.txns().begin(), request.txns().end());
  SentReads record;
  std::string payload;
  uint64_t sent = 0;
  while (reader.Next(&payload)) {
    if (!record.ParseFromString(payload) || record.to_partition() != request.partition() ||
        RunEpochOf(record.reads()) <= request.after_epoch() ||
        (request.to_epoch() > 0 && RunEpochOf(record.reads()) > request.to_epoch()) ||
        (!only.empty() && !only.count(record.reads().txn_id()))) {
      continue;
    }
    record.mutable_reads()->set_resent(true);
    if (!SendTo(to, REMOTE_READS, record.reads().SerializeAsString())) {
      LOG(WARNING) << "node " << options_.self << ": node " << to
                   << " takes no reads; gave up re-sending them";
      break;
    }
    ++sent;
  }
  served_reads_.fetch_add(sent);
  LOG(INFO) << "node " << options_.self << ": sent node " << to << " again " << sent
            << " read(s) of txns after epoch " << request.after_epoch();
}

}  // namespace paxflow
