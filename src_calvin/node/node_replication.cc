// Node: replicated input's hooks (node/replicated_sequencing.h). The
// sequencer's cut goes to the group (BeforeSend proposes it); what the
// group commits comes back here, on every member, and only then runs.
#include <glog/logging.h>

#include <chrono>
#include <thread>

#include "common/atomic_max.h"
#include "common/clock.h"
#include "common/segmented_log.h"
#include "node/node.h"
#include "node/state_transfer.h"
#include "recovery.pb.h"
#include "sequencer/input_log.h"

namespace paxflow {

namespace {

// Reads the committed records of node `node`'s sequencer log from epoch
// `from` through `through`, in order, into `each` (false: stop). Empty, or
// what went wrong.
std::string ReadCommitted(const std::string& dir, NodeId node, Epoch from, Epoch through,
                          const std::function<bool(SequencedEpoch&)>& each) {
  SegmentedLogReader reader;
  reader.StopAtDamage();
  std::string error = reader.Open(dir, NodeFileName(node), kSequencerLogFormat, from);
  if (!error.empty()) return error;
  std::string payload;
  SequencedEpoch record;
  Epoch next = from;  // committed epochs follow one another
  while (next <= through && reader.Next(&payload)) {
    if (!record.ParseFromString(payload)) return "a record of its sequencer log does not parse";
    if (record.epoch() < next) continue;
    if (record.epoch() > next) break;
    ++next;
    if (!each(record)) return "";
  }
  if (reader.damaged()) return reader.damage();
  if (next <= through) {
    return "its sequencer log lacks committed epoch " + std::to_string(next) + " (of " +
           std::to_string(from) + ".." + std::to_string(through) + ")";
  }
  return "";
}

}  // namespace

std::string Node::MakeReplication(Epoch applied_through) {
  std::string error = ReplicationConfigProblem(options_.config);
  if (!error.empty()) return "config: " + error;
  ReplicatedSequencingOptions options;
  options.config = &options_.config;
  options.layout = &layout_;
  options.self = options_.id;
  options.log_dir = options_.params.engine.log_dir;
  options.election_timeout_ms = options_.params.engine.election_timeout_ms;
  options.restarted = options_.params.engine.recover;
  options.applied_through = applied_through;
  options.failed = [this](const std::string& why) { LogFailed(why); };
  options.committed = [this](Epoch epoch, const std::string& record, bool leading,
                             int64_t committed_us) {
    OnCommittedEpoch(epoch, record, leading, committed_us);
  };
  options.lead = [this](Epoch first_epoch) {
    // It resumes after the last epoch the group committed, closing the
    // epochs behind the clock back to back. First lead: built in Start,
    // never run before. Led before: its sequencer stopped at the proposal
    // the group refused once it was deposed (Depose answered what waited).
    if (led_) {
      for (auto& runner : runners_) {
        if (!runner->failed()) return false;  // still running: not yet refused
      }
      for (auto& runner : runners_) runner->Restart(first_epoch);
    } else {
      led_ = true;
      for (auto& runner : runners_) {
        runner->SetFirstEpoch(first_epoch);
        runner->Start();
      }
    }
    // The LTX origin role from its first epoch on (orphans aborted there).
    scheduler_->SetLtxOrigin(first_epoch);
    if (clients_) clients_->SetSequences(true);
    return true;
  };
  options.follow = [this] {
    // Its clients go to the new leader; what waited here is answered. Its
    // LTXs' records could not be sequenced: the new leader aborts them.
    scheduler_->SetLtxOrigin(0);
    if (clients_) clients_->Depose();
    if (kept_reads_) kept_reads_->Forget();
  };
  options.print = [this](const std::string& line) { Print(line); };
  replicated_ = std::make_unique<ReplicatedSequencing>(std::move(options));
  if (options_.params.engine.recover) {
    // A member restarted on its data dir: the request-id window as its
    // checkpoint saved it, then fed the committed epochs its sequencer log
    // holds after that (filtered already; filtering again drops nothing
    // and leaves the window as the original did: request_dedup.h), so it
    // filters what the group commits next exactly as the others do.
    const Epoch saved = restored_window_.epoch();
    if (saved > applied_through) {
      return "--recover: its checkpoint's request-id window was saved after epoch " +
             std::to_string(saved) + ", but its sequencer log ends at epoch " +
             std::to_string(applied_through) + " (its tail was lost): it cannot rejoin its "
             "group from this log directory";
    }
    std::lock_guard<std::mutex> lock(replicated_->window_mu());
    RequestDedup& dedup = replicated_->dedup();
    error = dedup.Load(restored_window_);
    size_t dropped_again = 0;
    std::vector<RequestDedup::Dropped> dropped;
    if (error.empty() && applied_through > saved) {
      error = ReadCommitted(options_.params.engine.log_dir, options_.id, saved + 1,
                            applied_through, [&](SequencedEpoch& record) {
                              dropped_again += dedup.Filter(&record, &dropped);
                              return true;
                            });
    }
    if (!error.empty()) return "--recover: cannot rebuild its request-id window: " + error;
    if (dropped_again > 0) {
      LOG(ERROR) << "node " << options_.id << ": its sequencer log holds " << dropped_again
                 << " retried txns its window drops: the log was not filtered by this window";
    }
    replicated_->set_window_epoch(applied_through);
    Print("[node " + std::to_string(options_.id) + "] rejoins its partition's consensus group "
          "as a follower: request-id window of epoch " + std::to_string(saved) + " (" +
          std::to_string(dedup.clients()) + " clients), committed epochs through " +
          std::to_string(applied_through) + " held; the group's entries after it follow");
  }
  if (clients_ && !options_.params.engine.log_dir.empty()) {
    // A member that lost its state copies it from here (state_transfer.h).
    StateServer server;
    server.log_dir = options_.params.engine.log_dir;
    server.self = options_.id;
    server.rejoin = [this](NodeId node) { return replicated_->Rejoin(node); };
    clients_->SetStateProvider([server](const StateRequest& request, StateReply* reply) {
      return ServeState(server, request, reply);
    });
  }
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

void Node::OnCommittedEpoch(Epoch epoch, const std::string& record, bool leading,
                            int64_t committed_us) {
  if (committed_us > 0) epoch_timeline_.Committed(epoch, committed_us, NowMicros());
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
  {
    // Until the epoch is in the sequencer log: a checkpoint's copy of the
    // window then never holds an epoch this member's logs do not.
    std::lock_guard<std::mutex> window(replicated_->window_mu());
    if (replicated_->dedup().Filter(&sequenced, &dropped) > 0) {
      filtered = sequenced.SerializeAsString();
    }
    if (sequencer_log_) {
      // What peers fetch when a batch is lost on the way: committed epochs only.
      std::string error = sequencer_log_->Append(epoch, filtered.empty() ? record : filtered);
      if (error.empty()) error = sequencer_log_->Flush(options_.params.engine.log_fsync || final);
      if (!error.empty()) LogFailed(error);
    }
    replicated_->set_window_epoch(epoch);
  }
  RaiseTo(&sequenced_epoch_, epoch);
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
      auto batch = std::make_unique<Batch>(std::move(*sequenced.mutable_batches(p)));
      // Its own local read-only txns, if this process proposed the entry.
      if (kept_reads_) {
        kept_reads_->PutBack(epoch, sequenced.kept_by() != 0 && sequenced.kept_by() == kept_token_,
                             batch.get());
      }
      DeliverBatch(std::move(batch));
      epoch_timeline_.Delivered(epoch, NowMicros());
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
  if (!clients_ || !leading) return;
  for (const RequestDedup::Dropped& d : dropped) {
    if (d.verdict == RequestDedup::Verdict::kTooOld) {
      clients_->AnswerDropped(d.txn, ClientService::DroppedAs::kTooOld, d.original);
    } else if (d.txn.txn_class() == LTX) {
      // The LTX its request id began may still be running, or may have
      // aborted: the answer is its outcome, from the lane's table (the same
      // on every replica), once it is known.
      ClientService* clients = clients_.get();
      const TxnId original = d.original;
      scheduler_->ltx_outcomes().Ask(
          original, [clients, txn = d.txn, original](LtxOutcomes::Known known,
                                                     const TxnOutcome& outcome) {
            clients->AnswerLtxRetry(txn, original, known == LtxOutcomes::Known::kResolved,
                                    outcome);
          });
    } else {
      clients_->AnswerDropped(d.txn, ClientService::DroppedAs::kAlreadyApplied, d.original);
    }
  }
}

void Node::ReplayCommittedTail(Epoch from, Epoch through) {
  // Its input log ends before these (they were committed and queued, not
  // yet run, when it stopped); its sequencer log holds them as committed.
  const PartitionId own = self_->partition();
  const std::string error = ReadCommitted(
      options_.params.engine.log_dir, options_.id, from, through, [&](SequencedEpoch& record) {
        WaitForReplayRoom(record.epoch());
        if (replay_stop_.load() || own >= static_cast<PartitionId>(record.batches_size())) {
          return !replay_stop_.load();
        }
        DeliverBatch(std::make_unique<Batch>(std::move(*record.mutable_batches(own))));
        return true;
      });
  if (!error.empty() && !replay_stop_.load()) {
    LogFailed("cannot replay its committed epochs " + std::to_string(from) + ".." +
              std::to_string(through) + " from its sequencer log: " + error);
  }
}

}  // namespace paxflow
