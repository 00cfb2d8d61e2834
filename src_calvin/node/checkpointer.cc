#include "node/checkpointer.h"

#include <sys/stat.h>

#include <glog/logging.h>

#include <algorithm>
#include <cstdio>

#include "common/clock.h"
#include "common/proto_json.h"
#include "common/record_file.h"
#include "partition/partition_setup.h"

namespace paxflow {
namespace {

std::string Fixed(double value, int digits) {
  char text[32];
  snprintf(text, sizeof(text), "%.*f", digits, value);
  return text;
}

}  // namespace

Checkpointer::Checkpointer(CheckpointerOptions options) : options_(std::move(options)) {
  slot_ = options_.store->RegisterThread();
  held_ = ListCheckpoints(options_.dir, options_.header.node_id());
  ReadNewestWrittenLocked();  // no other thread yet
}

Checkpointer::~Checkpointer() { Stop(); }

void Checkpointer::ReadNewestWrittenLocked() {
  newest_written_ms_ = 0;
  if (held_.empty()) return;
  CheckpointHeader header;
  const std::string path = CheckpointPath(options_.dir, options_.header.node_id(), held_.back());
  if (ReadCheckpointHeader(path, &header).empty()) {
    newest_written_ms_ = static_cast<int64_t>(header.written_unix_ms());
  }
}

int64_t Checkpointer::NewestWrittenUnixMs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return newest_written_ms_;
}

std::string Checkpointer::StatePath(const std::string& dir, NodeId node) {
  return dir + "/node-" + std::to_string(node) + ".recovery";
}

Epoch Checkpointer::ReadStable(const std::string& dir, NodeId node) {
  std::string text, error;
  RecoveryState state;
  if (!ReadTextFile(StatePath(dir, node), &text, &error) || !state.ParseFromString(text)) return 0;
  return state.stable_checkpoint();
}

void Checkpointer::Start(Epoch epoch, Epoch stable) {
  std::lock_guard<std::mutex> lock(mu_);
  // Listed again: a fresh start removed what the node held when it was made.
  held_ = ListCheckpoints(options_.dir, options_.header.node_id());
  ReadNewestWrittenLocked();
  stable_ = stable;
  if (options_.every_epochs > 0) AskPeriodicAfter(epoch);
  thread_ = std::thread([this] { Loop(); });
}

void Checkpointer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::vector<std::pair<Epoch, Waiter>> waiters;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiters.swap(waiters_);
  }
  for (auto& [from, done] : waiters) done(CheckpointReply(), "the node stopped first");
}

void Checkpointer::Ask(Epoch epoch) {
  if (!asked_.insert(epoch).second) return;
  options_.scheduler->RequestSnapshot(epoch, [this](const SnapshotInfo& info) { Ready(info); });
}

void Checkpointer::AskPeriodicAfter(Epoch epoch) {
  // The next two: a request must reach the scheduler before the epoch after
  // it is admitted, and execution may trail admission by many epochs.
  const Epoch every = options_.every_epochs;
  const Epoch next = (epoch / every + 1) * every;
  Ask(next);
  Ask(next + every);
}

void Checkpointer::CheckpointAt(Epoch epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!stop_) Ask(epoch);
}

void Checkpointer::AddWaiter(Epoch from, Waiter done) {
  CheckpointReply reply;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (last_written_.epoch() >= from) {
      reply = last_written_;
    } else if (!held_.empty() && held_.back() >= from) {
      // Written before this start: what the file says of itself.
      reply.set_epoch(held_.back());
      reply.set_path(CheckpointPath(options_.dir, options_.header.node_id(), held_.back()));
      struct stat info {};
      if (stat(reply.path().c_str(), &info) == 0) reply.set_bytes(info.st_size);
    } else {
      waiters_.emplace_back(from, std::move(done));
      return;
    }
  }
  done(reply, "");
}

std::vector<Epoch> Checkpointer::Held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_;
}

Epoch Checkpointer::Stable() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stable_;
}

void Checkpointer::Ready(const SnapshotInfo& info) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ready_.push_back(info);
    if (options_.every_epochs > 0 && !stop_) {
      // Later ones first: the scheduler is past this epoch already. A
      // refused one (asked too late) asks from where execution is.
      const Epoch now = info.ok ? info.epoch : options_.scheduler->Status().admitted_epoch + 1;
      AskPeriodicAfter(now);
    }
  }
  cv_.notify_all();
}

void Checkpointer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !ready_.empty(); });
    if (stop_) return;
    const SnapshotInfo info = ready_.front();
    ready_.pop_front();
    lock.unlock();
    if (info.ok) {
      Write(info);
    } else {
      LOG(INFO) << "node " << options_.header.node_id() << ": no checkpoint at epoch "
                << info.epoch << ": later epochs had run when it was asked for";
    }
    lock.lock();
    asked_.erase(info.epoch);
  }
}

void Checkpointer::Write(const SnapshotInfo& info) {
  const NodeId node = options_.header.node_id();
  const int64_t paused_since = NowMicros();
  CheckpointHeader header = options_.header;
  DescribeSnapshot(info, &header);
  if (options_.annotate) options_.annotate(&header);
  header.set_written_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                                 std::chrono::system_clock::now().time_since_epoch())
                                 .count());
  // The reads sent for txns up to this epoch must be in the reads log
  // before the checkpoint makes their replay unnecessary.
  std::string error;
  for (SegmentedLogWriter* log : options_.logs) {
    if (error.empty()) error = log->Flush(options_.sync);
  }
  const bool stall = options_.stall_nth > 0 && ++written_ == options_.stall_nth;
  CheckpointStats stats;
  if (error.empty()) {
    error = WriteCheckpoint(options_.dir, header, options_.store, slot_, &stats, [&] {
      if (!stall) return;
      options_.print("[node " + std::to_string(node) + "] checkpoint at epoch " +
                     std::to_string(info.epoch) +
                     ": stalled half written (--fault_stall_checkpoint)");
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_; });
    });
  }
  options_.scheduler->ReleaseSnapshot(info.epoch);
  const double paused_ms = (NowMicros() - paused_since) / 1000.0;
  CheckpointReply reply;
  if (!error.empty()) {
    LOG(ERROR) << "node " << node << ": checkpoint at epoch " << info.epoch << " failed: " << error;
    options_.print("[node " + std::to_string(node) + "] checkpoint at epoch " +
                   std::to_string(info.epoch) + " FAILED: " + error);
    AnswerWaiters(info.epoch, reply, "checkpoint at epoch " + std::to_string(info.epoch) +
                                         " failed: " + error);
    return;
  }
  // New segments from here: the old ones hold nothing a later checkpoint needs.
  for (SegmentedLogWriter* log : options_.logs) {
    const std::string rolled = log->Roll();
    if (!rolled.empty()) LOG(ERROR) << "node " << node << ": " << rolled;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_.push_back(info.epoch);
    std::sort(held_.begin(), held_.end());
    if (held_.back() == info.epoch) newest_written_ms_ = header.written_unix_ms();
  }
  std::string line = "[node " + std::to_string(node) + "] checkpoint at epoch " +
                     std::to_string(info.epoch) + ": " + std::to_string(stats.keys) + " keys, " +
                     Fixed(stats.bytes / 1048576.0, 1) + " MiB in " + Fixed(stats.seconds, 2) +
                     " s (" + stats.path + ")";
  if (options_.single_version) {
    line += "; the partition paused " + Fixed(paused_ms, 1) + " ms";
  }
  options_.print(line);
  reply.set_epoch(info.epoch);
  reply.set_path(stats.path);
  reply.set_keys(stats.keys);
  reply.set_bytes(stats.bytes);
  reply.set_seconds(stats.seconds);
  AnswerWaiters(info.epoch, reply, "");
}

void Checkpointer::AnswerWaiters(Epoch epoch, const CheckpointReply& reply,
                                 const std::string& error) {
  std::vector<Waiter> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (error.empty()) last_written_ = reply;
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      if (it->first <= epoch) {
        due.push_back(std::move(it->second));
        it = waiters_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (Waiter& done : due) done(reply, error);
}

void Checkpointer::Retain(Epoch stable) {
  const NodeId node = options_.header.node_id();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stable <= stable_) return;
    stable_ = stable;
  }
  RecoveryState state;
  state.set_stable_checkpoint(stable);
  const std::string path = StatePath(options_.dir, node);
  // Synced whole: the removals below rely on it.
  std::string error = WriteFileAtomically(path, state.SerializeAsString(), /*sync=*/true);
  if (!error.empty()) {
    // Nothing is removed unless the new stable epoch is remembered.
    LOG(ERROR) << "node " << node << ": " << error;
    std::lock_guard<std::mutex> lock(mu_);
    stable_ = 0;
    return;
  }
  size_t segments = 0;
  for (SegmentedLogWriter* log : options_.logs) segments += log->DropThrough(stable);
  const size_t checkpoints = RemoveCheckpointsBefore(options_.dir, node, stable);
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_.erase(std::remove_if(held_.begin(), held_.end(), [&](Epoch e) { return e < stable; }),
                held_.end());
  }
  LOG(INFO) << "node " << node << ": every node holds the checkpoint at epoch " << stable
            << "; removed " << checkpoints << " older checkpoint(s) and " << segments
            << " log segment(s)";
}

}  // namespace paxflow
