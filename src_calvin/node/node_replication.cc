// Node: replicated input's hooks (node/replicated_sequencing.h). The
// sequencer's cut goes to the group (BeforeSend proposes it); what the
// group commits comes back here, on every member, and only then runs.
#include <glog/logging.h>

#include <chrono>
#include <thread>

#include "node/node.h"
#include "recovery.pb.h"

namespace paxflow {

std::string Node::MakeReplication() {
  std::string error = ReplicationConfigProblem(options_.config);
  if (!error.empty()) return "config: " + error;
  ReplicatedSequencingOptions options;
  options.config = &options_.config;
  options.layout = &layout_;
  options.self = options_.id;
  options.log_dir = options_.params.engine.log_dir;
  options.election_timeout_ms = options_.params.engine.election_timeout_ms;
  options.committed = [this](Epoch epoch, const std::string& record, bool leading) {
    OnCommittedEpoch(epoch, record, leading);
  };
  options.lead = [this](Epoch first_epoch) {
    // Built in Start, never run before: it resumes after the last epoch
    // the group committed, closing the epochs behind the clock back to back.
    for (auto& runner : runners_) {
      runner->SetFirstEpoch(first_epoch);
      runner->Start();
    }
    if (clients_) clients_->SetSequences(true);
  };
  options.follow = [this] {
    // Its clients go to the new leader; what waited here is answered.
    if (clients_) clients_->Depose();
  };
  options.print = [this](const std::string& line) { Print(line); };
  replicated_ = std::make_unique<ReplicatedSequencing>(std::move(options));
  if (clients_) {
    // NOT_LEADER replies name the leader, so that clients go there.
    clients_->SetLeaderHint([this] {
      LeaderHint hint;
      const int64_t leader = replicated_->leader_node();
      const NodeConfig* node = leader < 0 ? nullptr : layout_.Node(static_cast<NodeId>(leader));
      if (node && node->client_port() != 0) {
        hint.node = leader;
        hint.address = ClientEndpoint(*node);
      }
      return hint;
    });
  }
  return "";
}

void Node::OnCommittedEpoch(Epoch epoch, const std::string& record, bool leading) {
  SequencedEpoch sequenced;
  if (!sequenced.ParseFromString(record) || sequenced.epoch() != epoch) {
    LOG(ERROR) << "node " << options_.id << ": committed epoch " << epoch
               << " does not parse; the partition cannot run it";
    LogFailed("committed entry of epoch " + std::to_string(epoch) + " does not parse");
    return;
  }
  const bool final = sequenced.batches_size() > 0 && sequenced.batches(0).final();
  // Client retries whose request id the log holds already are dropped
  // here, alike on every member, before anything logs, runs or sends them.
  std::vector<RequestDedup::Dropped> dropped;  // allocates only if something is dropped
  std::string filtered;
  if (replicated_->dedup().Filter(&sequenced, &dropped) > 0) {
    filtered = sequenced.SerializeAsString();
  }
  if (sequencer_log_) {
    // What peers fetch when a batch is lost on the way: committed epochs only.
    std::string error = sequencer_log_->Append(epoch, filtered.empty() ? record : filtered);
    if (error.empty()) error = sequencer_log_->Flush(options_.params.engine.log_fsync || final);
    if (!error.empty()) LogFailed(error);
  }
  Epoch seen = sequenced_epoch_.load();
  while (seen < epoch && !sequenced_epoch_.compare_exchange_weak(seen, epoch)) {
  }
  // A replica behind the group (the majority commits without it) takes
  // the entry only once its scheduler has room for the epoch: beyond its
  // window the batch would be refused, and nothing sends it again. The
  // group's log keeps what waits.
  const Epoch window = 2 * Epoch{options_.params.engine.max_epochs_ahead};
  while (epoch >= scheduler_->Status().next_epoch + window && !replicated_->stopping()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const PartitionId own = self_->partition();
  for (int p = 0; p < sequenced.batches_size(); ++p) {
    if (static_cast<PartitionId>(p) == own) {
      DeliverBatch(std::make_unique<Batch>(std::move(*sequenced.mutable_batches(p))));
      continue;
    }
    if (!leading) continue;
    // The leader sends the other partitions theirs, to every replica, as
    // replica 0 does without replicated input; a replica that misses one
    // asks the sequencing node again (AskForMissedBatches).
    const std::string bytes = sequenced.batches(p).SerializeAsString();
    for (uint32_t replica = 0; replica < layout_.replicas(); ++replica) {
      const NodeId node = layout_.NodeOf(replica, p);
      if (!transport_->Send(node, BATCH, bytes)) read_exchange_->NoteUnsent(BATCH, node);
    }
  }
  // The leader, which sequenced a dropped retry in this process, answers
  // its client (entries of earlier terms or processes have no waiter here).
  for (const RequestDedup::Dropped& d : dropped) {
    if (clients_ && leading) {
      clients_->AnswerDropped(d.txn, d.verdict == RequestDedup::Verdict::kTooOld, d.original);
    }
  }
}

}  // namespace paxflow
