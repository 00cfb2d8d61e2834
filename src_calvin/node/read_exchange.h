// Remote reads on a live connection: a REMOTE_READS message can be lost
// (dropped on a full peer queue, lost with a broken connection), and the
// txn waiting for it would then wait forever with every batch present.
//
// Sender side: every reads message this node sends another partition of its
// replica is kept in memory (Send) until that partition's heartbeats say it
// has freed the txn's run epoch (Forget): it needs them no more. At most
// `max_kept_bytes` per partition; beyond, the oldest epochs go (the reads of
// read-write txns are in the reads log too, when there is one).
// Receiver side: the heartbeat thread (AskAgain) asks each partition whose
// reads txns here have waited for longer than `retry_us`
// (Scheduler::OverdueRemoteReads) to send them again: a ReadsRequest that
// names the txns. The sender answers (Serve) with the bytes it sent, marked
// as sent again; what it no longer keeps comes from its reads log. A txn it
// has not run yet is not answered: it sends the reads when it runs it.
//
// Why resend what was sent rather than recompute it: a participant's reads
// of a read-write txn are the values its store held when the txn ran under
// its locks, between the txns of the same epoch before and after it; the
// store versions by epoch, so once a later txn of that epoch wrote the key
// the value cannot be read back, and the txn's epoch may be freed there
// already. Resending the very bytes is exact by construction, for read-only
// txns (which the reads log does not hold) as well; the receiver takes one
// message per (txn, partition) and drops repeats as expected
// (RemoteReadTable).
//
// Stand-ins (replicated input): when this node's peer of partition p (its
// node of p in this replica) goes silent, every txn of p's here would wait
// `retry_us` for p's reads before AskAgain fetched them from a live replica
// of p, one overdue batch after another, for as long as the peer is gone.
// Instead StandIns (heartbeat thread) asks that replica (`reads_holder`) to
// stand in: a ReadsRequest with `stand_in`, renewed at every heartbeat
// while the peer is silent. The holder sends at once every reads it keeps
// for this partition with a run epoch after what this node published (the
// reads owed for pending epochs, in one go), and from then on a copy of
// every reads it sends this partition, until the request is not renewed for
// `stand_in_lease_us` (the peer is back, or this node is gone). The
// holder's replica ran the same txns on the same state, so the bytes are
// the ones the dead peer would have sent; they go marked as sent again,
// and the receiver drops whichever copy comes second.
//
// Also counts sends the transport refused (its queue for the peer was
// full) and says so in the log, at most every few seconds.
//
// Owns: the kept reads and the counters.
// Threads: Send from workers; Serve and Forget from the transport's
// receiver thread; AskAgain from the heartbeat thread; NoteUnsent from any.
// One mutex for the kept reads.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/config.h"
#include "common/transport.h"
#include "recovery.pb.h"
#include "scheduler/scheduler.h"

namespace paxflow {

struct ReadExchangeOptions {
  NodeId self = 0;
  PartitionId partition = 0;
  uint32_t replica = 0;
  const ClusterLayout* layout = nullptr;
  Transport* transport = nullptr;
  Scheduler* scheduler = nullptr;
  // How long a parked txn waits for a partition's reads before that
  // partition is asked again (and again, as long as they do not come).
  // Negative: never.
  int64_t retry_us = 500000;
  uint64_t max_kept_bytes = 64ull << 20;  // per partition
  // Serves a request from the reads log (what is no longer kept); null:
  // this node has no reads log.
  std::function<void(NodeId, const ReadsRequest&)> serve_from_log;
  // Whom AskAgain asks for partition p's reads; null: p's node of this
  // replica. With replicated input a dead node's partition lives on in its
  // other replicas, which ran the same txns on the same state and sent
  // their replica the very same reads (and keep them): one of them is
  // asked instead.
  std::function<NodeId(PartitionId)> reads_holder;
  // A stand-in request not renewed for this long lapses (StandIns renews
  // it every heartbeat).
  int64_t stand_in_lease_us = 4000000;
};

class ReadExchange {
 public:
  explicit ReadExchange(ReadExchangeOptions options);

  // Reads of epochs up to `epoch` were sent before this start (a restart
  // from a checkpoint there): a request for them goes to the reads log.
  // Before anything is sent.
  void SetSentBefore(Epoch epoch);

  // Sends `reads` to partition `to` of this replica, and keeps them.
  void Send(PartitionId to, const RemoteReads& reads);
  // A live request (one that names txns) from `from`: answered here, true.
  // False: a restarted node's request, for the reads log.
  bool Serve(NodeId from, const ReadsRequest& request);
  // Partition `partition` freed every epoch up to `freed` (its heartbeat).
  void Forget(PartitionId partition, Epoch freed);
  // Asks peers again for reads overdue here (heartbeat thread).
  void AskAgain();
  // Asks (renews) a stand-in for every partition whose peer here is silent
  // (heartbeat thread; needs `reads_holder`).
  void StandIns();
  // Stand-in requests this node serves now, and ever started.
  size_t standing_in() const;
  uint64_t stand_ins_started() const { return stand_ins_started_.load(); }

  // The transport refused a message (its queue for `to` was full).
  void NoteUnsent(Channel channel, NodeId to);

  // "reads asked again for 12 txn(s), sent again 10; unsent: 3 batch(es)";
  // empty if none of it happened.
  std::string Summary() const;
  uint64_t asked_again() const { return asked_txns_.load(); }
  uint64_t sent_again() const { return resent_.load(); }

 private:
  struct Kept {
    Epoch run_epoch = 0;
    std::string bytes;
  };
  struct PartitionKept {
    std::unordered_map<TxnId, Kept> by_txn;
    std::map<Epoch, std::vector<TxnId>> by_epoch;
    uint64_t bytes = 0;
    Epoch forgotten_through = 0;  // the receiver freed these epochs
    Epoch evicted_through = 0;    // these may no longer be kept: ask the reads log
  };
  // Sends, or counts it unsent (NoteUnsent).
  void SendOrNote(NodeId to, Channel channel, const std::string& bytes);
  // A stand-in request last renewed at `renewed_us` still holds at `now_us`.
  bool Renewed(int64_t renewed_us, int64_t now_us) const {
    return now_us - renewed_us <= options_.stand_in_lease_us;
  }
  void KeepLocked(PartitionId to, const RemoteReads& reads, std::string&& bytes);  // under mu_
  // Serves a stand-in request (see above).
  void StandIn(NodeId from, const ReadsRequest& request);
  void ForgetThrough(PartitionKept* kept, Epoch epoch);

  const ReadExchangeOptions options_;
  mutable std::mutex mu_;
  std::vector<PartitionKept> kept_;  // by partition
  // Under mu_, by partition: the nodes this one stands in for, with when
  // each last renewed its request.
  std::vector<std::map<NodeId, int64_t>> stand_in_for_;
  // Heartbeat thread only, by partition: whom StandIns asked (0: nobody).
  std::vector<NodeId> stand_in_asked_;
  std::atomic<uint64_t> stand_ins_started_{0}, stood_in_{0};
  std::atomic<uint64_t> asked_txns_{0}, asked_requests_{0}, resent_{0}, from_log_{0};
  std::atomic<uint64_t> unsent_reads_{0}, unsent_batches_{0}, unsent_other_{0};
  std::atomic<uint64_t> evicted_{0};
  std::atomic<int64_t> last_unsent_log_us_{0}, last_asked_log_us_{0};
};

}  // namespace paxflow
