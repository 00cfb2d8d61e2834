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
  void Keep(PartitionId to, const RemoteReads& reads, std::string&& bytes);
  void ForgetThrough(PartitionKept* kept, Epoch epoch);

  const ReadExchangeOptions options_;
  mutable std::mutex mu_;
  std::vector<PartitionKept> kept_;  // by partition
  std::atomic<uint64_t> asked_txns_{0}, asked_requests_{0}, resent_{0}, from_log_{0};
  std::atomic<uint64_t> unsent_reads_{0}, unsent_batches_{0}, unsent_other_{0};
  std::atomic<uint64_t> evicted_{0};
  std::atomic<int64_t> last_unsent_log_us_{0}, last_asked_log_us_{0};
};

}  // namespace paxflow
