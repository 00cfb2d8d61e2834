// A node's checkpoints. Decides at which epochs (every `every_epochs`
// epochs, the same on every node, and epochs whose batches ask for one),
// asks the scheduler to hold each snapshot, writes it on a thread of its
// own (checkpoint/checkpoint.h) while the partition goes on (calvin mode:
// pauses, and says for how long), then rolls the logs so that their old
// segments can go. Once every node holds a checkpoint (the stable one),
// older checkpoints and the log segments before it are removed; the stable
// epoch is remembered in <dir>/node-<id>.recovery.
//
// Owns: the checkpoint thread, the pending snapshots, clients waiting for
// a checkpoint. In: CheckpointAt (batch hooks), AddWaiter (client port),
// Retain (the node's heartbeat thread); snapshots from the scheduler.
// Out: checkpoint files; ReleaseSnapshot; log rolls and removals; lines
// for the node's output. Threads: any caller; one mutex; its own thread.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backend/store.h"
#include "checkpoint/checkpoint.h"
#include "client.pb.h"
#include "common/segmented_log.h"
#include "recovery.pb.h"
#include "scheduler/scheduler.h"

namespace paxflow {

struct CheckpointerOptions {
  std::string dir;
  CheckpointHeader header;      // node, partition, replica, partitions, params, mode
  uint64_t every_epochs = 0;    // 0: only when asked
  bool single_version = false;  // calvin mode: the partition pauses meanwhile
  bool sync = false;            // --log_fsync: sync the logs before rolling them
  uint32_t stall_nth = 0;       // testing: the n-th checkpoint stalls half written
  Store* store = nullptr;
  Scheduler* scheduler = nullptr;
  std::vector<SegmentedLogWriter*> logs;  // rolled after each checkpoint
  // Adds what else the node keeps with its state (the checkpoint thread).
  std::function<void(CheckpointHeader*)> annotate;
  std::function<void(const std::string&)> print;
};

class Checkpointer {
 public:
  using Waiter = std::function<void(const CheckpointReply& reply, const std::string& error)>;

  explicit Checkpointer(CheckpointerOptions options);
  ~Checkpointer();

  // Starts the thread and asks for the first periodic checkpoint after
  // `epoch` (the epoch execution resumes after). `stable`: what the node
  // remembered (RecoveryState).
  void Start(Epoch epoch, Epoch stable);
  void Stop();

  // A batch of `epoch` asks every node for a checkpoint there.
  void CheckpointAt(Epoch epoch);
  // A client waits for the first checkpoint at `from` or later; answered
  // at once if one is held already.
  void AddWaiter(Epoch from, Waiter done);
  // Epochs of the checkpoints on disk, ascending.
  std::vector<Epoch> Held() const;
  // When the newest of them was written (Unix ms, from its header: it
  // holds across restarts); 0 if none is held.
  int64_t NewestWrittenUnixMs() const;
  Epoch Stable() const;
  // Every node holds the checkpoint at `stable`: drop what only older
  // states needed. No-op unless `stable` is newer than the last one.
  void Retain(Epoch stable);

  // What <dir>/node-<id>.recovery says (0 if nothing).
  static Epoch ReadStable(const std::string& dir, NodeId node);
  static std::string StatePath(const std::string& dir, NodeId node);

 private:
  void Ask(Epoch epoch);  // mu_ held
  void AskPeriodicAfter(Epoch epoch);  // mu_ held
  void Ready(const SnapshotInfo& info);  // scheduler thread
  void Loop();
  void Write(const SnapshotInfo& info);
  void AnswerWaiters(Epoch epoch, const CheckpointReply& reply, const std::string& error);
  // mu_ held: newest_written_ms_ from the newest held checkpoint's header.
  void ReadNewestWrittenLocked();

  const CheckpointerOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<SnapshotInfo> ready_;
  std::set<Epoch> asked_;  // snapshots requested, not yet written
  std::vector<Epoch> held_;
  int64_t newest_written_ms_ = 0;  // held_.back()'s written_unix_ms (0: none)
  Epoch stable_ = 0;
  std::vector<std::pair<Epoch, Waiter>> waiters_;
  CheckpointReply last_written_;  // the newest written since start
  uint32_t written_ = 0;
  bool stop_ = false;
  std::thread thread_;
  size_t slot_ = 0;
};

}  // namespace paxflow
