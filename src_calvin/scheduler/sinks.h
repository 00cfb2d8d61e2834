// What leaves a partition's scheduler: reads for other partitions of the
// same replica, results at a txn's origin, and the LTX lane's records for
// this node's sequencer. Small interfaces, so that a node, a replay and a
// test each wire them their own way (several schedulers in one process).
#pragma once
#include "applications/application.h"
#include "common/types.h"
#include "message.pb.h"
#include "txn.pb.h"

namespace paxflow {

// Sends to a partition of the same replica. Called from worker and LTX
// threads and from the scheduler thread; implementations are thread-safe.
class PeerSender {
 public:
  virtual ~PeerSender() = default;
  // A multi-partition txn's local reads, to a partition that executes it.
  virtual void SendRemoteReads(PartitionId to, const RemoteReads& reads) = 0;
  // The LTX lane: an LTX origin asks a participant for reads...
  virtual void SendLtxReadRequest(PartitionId to, const LtxReadRequest& request) = 0;
  // ... and the participant answers.
  virtual void SendLtxReadReply(PartitionId to, const LtxReadReply& reply) = 0;
};

// Receives every txn's result at its origin partition, on a worker or LTX
// thread (or the scheduler thread, for an LTX aborted by the log).
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  // `read_version`: the snapshot a PaxFlow read-only txn (or LTX) read, else 0.
  // `reads`: what a short procedure read (read_set, then read_write_set).
  virtual void OnResult(const Txn& txn, const TxnOutcome& outcome, Epoch read_version,
                        const ReadValues& reads) = 0;
};

// Hands an LTX record (commit, abort, guard) to this node's sequencer, which
// puts it into a coming epoch's batch. Any thread. Only replica-0 nodes
// submit; elsewhere the scheduler is given none.
class RecordSubmitter {
 public:
  virtual ~RecordSubmitter() = default;
  virtual void SubmitRecord(Txn record) = 0;
};

}  // namespace paxflow
