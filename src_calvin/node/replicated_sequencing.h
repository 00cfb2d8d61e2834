// Replicated input for one node (param replicated_input): the replicas of
// its partition form one consensus group (replication/raft_log.h), and
// the partition's input goes through it before anything runs.
//
// The group's leader runs the partition's sequencer. What it cuts for an
// epoch (a SequencedEpoch record: the epoch's batches for every partition,
// what the sequencer log holds) is proposed as one entry (Propose, on the
// sequencer's thread); nothing of it is delivered at the cut. Every member,
// the leader included, is handed the committed entries in one order and
// hands them to the node (`committed`), which runs its own partition's
// batch; the leader also sends the other partitions theirs. An entry whose
// epoch is not above the last committed one is skipped (a deposed leader's
// late entry), the same way on every member, so they all run one sequence.
// When this member comes to lead (libraft commits a barrier first, so
// every entry of earlier terms has come out by then), `lead` is called with
// the epoch after the last committed one: its sequencer resumes there.
//
// Owns: the RaftLog (its data dir: <log_dir>/node-<id>.raft), the
// consumer thread that takes its events, and the request-id window that
// drops retried client txns from committed epochs (request_dedup.h).
// A member restarted on its data dir (applied_through) rejoins as a
// follower: it is handed the entries its log kept (from the last trim on)
// and skips those it ran before it stopped.
// Threads: `committed`, `lead` and `failed` run on the consumer thread;
// Propose on the sequencer's; the rest on any.
#pragma once
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>

#include "common/config.h"
#include "common/types.h"
#include "client.pb.h"
#include "node/request_dedup.h"
#include "replication/replicated_log.h"

namespace paxflow {

struct ReplicatedSequencingOptions {
  const ClusterConfig* config = nullptr;
  const ClusterLayout* layout = nullptr;
  NodeId self = 0;
  std::string log_dir;
  unsigned election_timeout_ms = 1000;
  // A member restarted on its data dir (--recover) has run the committed
  // epochs through this one (its sequencer log's last): the group's
  // entries at or below it are skipped, and the next must follow it.
  Epoch applied_through = 0;
  bool restarted = false;
  // Consumer thread: a committed SequencedEpoch record of epoch `epoch`;
  // `leading`: this member leads (it sends the other partitions theirs);
  // `committed_us`: when its consensus member learned it was committed (0:
  // it came from a peer's sequencer log instead).
  std::function<void(Epoch epoch, const std::string& record, bool leading, int64_t committed_us)>
      committed;
  // Consumer thread: this member leads now; its sequencer starts at
  // `first_epoch`. Called again when a member that led and was deposed is
  // elected again: false if its sequencer cannot start again yet (it has
  // not stopped), and it hands leadership off instead.
  std::function<bool(Epoch first_epoch)> lead;
  // Consumer thread: this member led and no longer does (its sequencer stopped).
  std::function<void()> follow;
  std::function<void(const std::string&)> print;
  // Consumer thread: this member cannot go on (the group's log lacks
  // epochs it needs, or its disk failed under the group's log); says why
  // and what to do.
  std::function<void(const std::string&)> failed;
};

class ReplicatedSequencing {
 public:
  explicit ReplicatedSequencing(ReplicatedSequencingOptions options);
  ~ReplicatedSequencing();

  // Opens the group's member (bootstraps it on a fresh data dir), starts
  // the consumer thread. Empty on success, else why not.
  std::string Start();
  // The leader's sequencer thread: epoch `epoch`'s record into the log.
  // False if this member cannot propose (it no longer leads): the
  // sequencer stops here, and the group's new leader goes on.
  bool Propose(Epoch epoch, std::string record);
  // This member has been told to lead (its sequencer was started).
  bool leads() const { return leads_.load(); }
  Epoch committed_epoch() const { return committed_epoch_.load(); }
  // Stop was called: `committed` should return without waiting.
  bool stopping() const { return stop_.load(); }
  replication::Leadership leadership() const;
  // The leader's node id as this member knows it (-1: none known).
  int64_t leader_node() const;
  // Leader: member `node` lost its log and copied a peer's state
  // (node/state_transfer.h); the group sends it the log from where it is.
  // Empty, or why not (this member does not lead).
  std::string Rejoin(NodeId node);
  // Its role, term, leader and committed epoch, into a status reply.
  void FillStatus(StatusReply* status) const;
  // Why the partition's input cannot move now (no leader known, for how
  // long), or empty.
  std::string Problem() const;
  // Every node holds a checkpoint at `stable` (the cluster's stable
  // checkpoint: a member that is down holds it back): the consensus log
  // drops the entries of epochs up to it, which the checkpoints cover.
  // Any thread (the node's heartbeat thread).
  void TrimCoveredBy(Epoch stable);
  // This node can no longer act as leader (its log failed: it sequences
  // and acknowledges nothing more): while it leads, the group is asked to
  // elect another member (at most every 200 ms until one leads), and an
  // election it wins starts nothing. Any thread.
  void Resign() { resigned_.store(true); }
  // The last epoch whose entry the log was told to drop (0: none).
  Epoch trimmed_epoch() const { return trimmed_epoch_.load(); }
  void Stop();
  // Which committed txns are retries of a request id that ran already
  // (request_dedup.h). Under window_mu() (the consumer thread, and a
  // restart before Start).
  RequestDedup& dedup() { return dedup_; }
  // Held by the consumer from filtering a committed epoch until it is in
  // the sequencer log (set_window_epoch), so that a saved window never
  // holds an epoch the member's logs do not.
  std::mutex& window_mu() { return window_mu_; }
  void set_window_epoch(Epoch epoch) { window_epoch_ = epoch; }  // window_mu() held
  // The window and the last epoch fed to it, for a checkpoint (its thread).
  void SaveWindow(RequestWindow* out);

 private:
  void Consume();
  // The next committed epoch is `next`, past committed_epoch_ + 1: the
  // epochs between come from a peer's sequencer log (the group's log was
  // trimmed past them: a member that copied a peer's state took the
  // snapshot of a later trim). False if no peer has them.
  bool FillGap(Epoch next);
  void Gap(Epoch next);
  // A member elected again whose sequencer could not start again leads a
  // group nothing sequences for: it hands leadership off, at most every
  // 200 ms until another member leads.
  void HandOffIfStale();

  const ReplicatedSequencingOptions options_;
  std::unique_ptr<replication::ReplicatedLog> log_;
  std::thread consumer_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> leads_{false};
  std::atomic<Epoch> committed_epoch_{0};
  std::atomic<int64_t> leaderless_since_us_{0};  // 0: a leader is known
  // Committed entries not trimmed yet, (epoch, log index), in order: about
  // 100 a second between checkpoints.
  std::mutex indexes_mu_;
  std::deque<std::pair<Epoch, uint64_t>> indexes_;
  std::atomic<Epoch> trimmed_epoch_{0};
  bool deposed_ = false;  // consumer thread: `follow` was called
  std::atomic<uint64_t> lead_term_{0};  // the term its sequencer started in (consumer writes)
  int64_t last_hand_off_us_ = 0;  // consumer thread
  std::atomic<bool> resigned_{false};  // Resign
  int64_t stale_since_us_ = 0;    // consumer thread
  std::mutex window_mu_;
  RequestDedup dedup_;  // fed every committed epoch, in order, from the start
  Epoch window_epoch_ = 0;  // the last one fed (window_mu_)
  Epoch restored_index_ = 0;  // consumer thread: kRestored's index (0: none)
};

}  // namespace paxflow
