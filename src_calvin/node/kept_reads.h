// The sequencing node's own read-only txns, kept out of what goes to the
// partition's other replicas. Those replicas skip a single-partition
// read-only txn another node cut (SchedulerOptions::answering_node), so
// shipping, logging and, with replicated input, agreeing on its keys is
// work for nothing: in `mixed` such txns are nine tenths of an epoch's
// bytes. The node that cut an epoch takes them out of its own partition's
// batch before the batch is serialized (the consensus entry, the sequencer
// log record, the batches sent to asynchronous replicas) and puts them back,
// at their places in txn-id order, into the batch its own scheduler runs.
// Nobody else runs them, so what they read is the same, and the state
// (which they do not change) is the same on every replica.
//
// With replicated input the epoch's entry comes back from the group on
// another thread, maybe not at all (a deposed leader's entry), maybe as
// another leader's entry for the same epoch: the entry names the process
// that kept reads out of it (SequencedEpoch.kept_by), and only that process
// puts them back. Epochs not put back are forgotten once a later epoch
// commits, or when the node stops leading (their clients are answered
// then: node/node_replication.cc).
//
// Owns: by epoch, the txns taken out. Threads: Keep on the sequencer's
// thread; PutBack, Forget on the consumer's (one mutex, per epoch).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "common/types.h"
#include "txn.pb.h"

namespace paxflow {

// Moves the read-only txns of `batch` whose keys are all on `partition`
// (of `partitions`) into `out` (appended, in the batch's order). How many.
size_t TakeLocalReads(PartitionId partition, uint32_t partitions, Batch* batch,
                      std::vector<Txn>* out);
// Puts `txns` (in txn-id order) back into `batch` (in txn-id order) at
// their places; `txns` is left empty.
void PutBackById(std::vector<Txn>* txns, Batch* batch);

class KeptReads {
 public:
  KeptReads(PartitionId partition, uint32_t partitions)
      : partition_(partition), partitions_(partitions) {}

  // Takes epoch `epoch`'s local read-only txns out of `batch` (this
  // partition's) and keeps them; replaces what an earlier proposal of the
  // same epoch kept. How many.
  size_t Keep(Epoch epoch, Batch* batch);
  // The entry of epoch `epoch` committed: its kept txns go back into
  // `batch` if `ours` (this process kept them out of that entry), and they
  // and those of every earlier epoch are forgotten.
  void PutBack(Epoch epoch, bool ours, Batch* batch);
  // This node no longer sequences: nothing it kept will come back.
  void Forget();
  size_t epochs() const;

 private:
  const PartitionId partition_;
  const uint32_t partitions_;
  mutable std::mutex mu_;
  std::map<Epoch, std::vector<Txn>> kept_;
};

}  // namespace paxflow
