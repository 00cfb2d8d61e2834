// Who does what for a txn on this partition (Calvin's participants):
// partitions holding keys it reads contribute values, partitions holding
// keys it writes (and its origin, which reports the result) run the
// procedure. Fills a TxnWork's reads_here, writes_here, executor, origin,
// all_local and the read exchange lists. After a restart, the txns of
// epochs sequenced before it report to no one, and on a node that answers
// only what it sequenced, another node's local read-only txns neither: it
// marks what is left to do.
//
// Owns: scratch marks by partition. Threads: the scheduler thread only.
#pragma once
#include <cstdint>
#include <vector>

#include "common/types.h"
#include "scheduler/txn_work.h"

namespace paxflow {

class ParticipantPlanner {
 public:
  ParticipantPlanner(PartitionId self, uint32_t partitions)
      : self_(self), partitions_(partitions), reader_(partitions, 0), writer_(partitions, 0) {}

  void Plan(TxnWork* work);
  // Epochs up to `epoch` were sequenced before a restart: their clients
  // are gone, so a read-only txn whose origin is here and that writes
  // nothing here is skipped, and an origin that only reports its result
  // does not run the procedure.
  void SetRecoveredThrough(Epoch epoch) { recovered_through_ = epoch; }
  // This node answers the results of the txns its own sequencer cut and
  // no others (SchedulerOptions::answering_node): a read-only txn that
  // another node sequenced and that reads only this partition is skipped.
  void SetAnsweringNode(int64_t node) { answering_node_ = node; }
  // Every partition holding one of the txn's keys, and its origin: the
  // lowest of them sequences a guard for the txn.
  PartitionId LowestParticipant(const Txn& txn) const;

 private:
  void PlanParticipants(TxnWork* work);

  const PartitionId self_;
  const uint32_t partitions_;
  std::vector<uint8_t> reader_, writer_;
  Epoch recovered_through_ = 0;
  int64_t answering_node_ = -1;  // -1: every txn runs
};

}  // namespace paxflow
