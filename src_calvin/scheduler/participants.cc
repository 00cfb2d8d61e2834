#include "scheduler/participants.h"

#include <algorithm>

namespace paxflow {

void ParticipantPlanner::Plan(TxnWork* work) {
  PlanParticipants(work);
  // (A txn planned outside an epoch, restored from a checkpoint, is not skipped.)
  if (!work->epoch || !work->origin || work->writes_here) return;
  const Txn& txn = *work->txn;
  if (txn.txn_class() == RO && work->all_local && answering_node_ >= 0 &&
      txn.origin_node() != static_cast<uint32_t>(answering_node_)) {
    // Another node sequenced it and answers its client: its result is
    // wanted only there, it changes nothing, and it owes no reads to any
    // other partition (docs/design.md, "Read-only txns run where they were
    // sequenced").
    work->skipped = true;
    return;
  }
  if (work->epoch->epoch > recovered_through_) return;
  // Sequenced before a restart: the client waiting for this result is gone.
  // A read-only txn has nothing else to do here; another still owes its
  // reads to the partitions that write.
  if (txn.txn_class() == RO) {
    work->skipped = true;
  } else {
    work->executor = false;
  }
}

void ParticipantPlanner::PlanParticipants(TxnWork* work) {
  const Txn& txn = *work->txn;
  work->origin = txn.origin_partition() == self_;
  const bool has_reads = txn.read_set_size() + txn.read_write_set_size() > 0;
  const bool has_writes = txn.write_set_size() + txn.read_write_set_size() > 0;
  if (partitions_ == 1) {
    work->all_local = true;
    work->reads_here = has_reads;
    work->writes_here = has_writes;
    work->executor = true;
    return;
  }
  // Participants: readers contribute values, writers and the origin run the
  // procedure (Calvin's active participants).
  std::vector<PartitionId> touched;
  auto mark = [&](std::vector<uint8_t>& marks, Key key) {
    PartitionId p = PartitionOf(key, partitions_);
    if (!reader_[p] && !writer_[p]) touched.push_back(p);
    marks[p] = 1;
  };
  for (Key key : txn.read_set()) mark(reader_, key);
  for (Key key : txn.read_write_set()) {
    mark(reader_, key);
    mark(writer_, key);
  }
  for (Key key : txn.write_set()) mark(writer_, key);
  const PartitionId origin = txn.origin_partition() < partitions_ ? txn.origin_partition() : 0;
  work->reads_here = reader_[self_];
  work->writes_here = writer_[self_];
  work->executor = work->writes_here || origin == self_;
  work->all_local = true;
  uint32_t readers = 0;
  for (PartitionId p : touched) {
    if (p != self_) work->all_local = false;
    if (reader_[p]) ++readers;
  }
  if (work->executor) {
    work->remote_reads_expected = readers - (reader_[self_] ? 1 : 0);
    for (PartitionId p : touched) {
      if (p != self_ && reader_[p]) work->expected_readers.push_back(p);
    }
  }
  if (work->reads_here) {
    for (PartitionId p : touched) {
      if (p != self_ && writer_[p]) work->send_reads_to.push_back(p);
    }
    if (origin != self_ && !writer_[origin]) work->send_reads_to.push_back(origin);
  }
  for (PartitionId p : touched) reader_[p] = writer_[p] = 0;
}

PartitionId ParticipantPlanner::LowestParticipant(const Txn& txn) const {
  PartitionId lowest = txn.origin_partition() < partitions_ ? txn.origin_partition() : 0;
  auto visit = [&](Key key) { lowest = std::min(lowest, PartitionOf(key, partitions_)); };
  for (Key key : txn.read_set()) visit(key);
  for (Key key : txn.read_write_set()) visit(key);
  for (Key key : txn.write_set()) visit(key);
  return lowest;
}

}  // namespace paxflow
