#include "node/replicated_sequencing.h"

#include <glog/logging.h>
#include <google/protobuf/io/coded_stream.h>

#include <pthread.h>

#include <algorithm>

#include "common/clock.h"
#include "node/peer_monitor.h"
#include "node/state_transfer.h"
#include "replication/raft_log.h"

namespace paxflow {
namespace {

// Member ids are node ids + 1: libraft takes no 0.
uint64_t MemberOf(NodeId node) { return uint64_t{node} + 1; }

// A SequencedEpoch record's epoch (its first field, as Node writes it).
bool RecordEpoch(const std::string& record, Epoch* epoch) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(record.data()),
                                            static_cast<int>(record.size()));
  uint64_t value = 0;
  if (in.ReadTag() != 8 || !in.ReadVarint64(&value)) return false;
  *epoch = value;
  return true;
}

}  // namespace

ReplicatedSequencing::ReplicatedSequencing(ReplicatedSequencingOptions options)
    : options_(std::move(options)) {
  committed_epoch_.store(options_.applied_through);
  window_epoch_ = options_.applied_through;
}

ReplicatedSequencing::~ReplicatedSequencing() { Stop(); }

std::string ReplicatedSequencing::Start() {
  const ClusterLayout& layout = *options_.layout;
  const NodeConfig* self = layout.Node(options_.self);
  replication::RaftLogOptions raft;
  raft.id = MemberOf(options_.self);
  for (uint32_t replica = 0; replica < layout.replicas(); ++replica) {
    const NodeConfig* member = layout.Node(layout.NodeOf(replica, self->partition()));
    raft.members.push_back(
        {MemberOf(member->id()), member->host() + ":" + std::to_string(member->consensus_port())});
  }
  raft.data_dir = options_.log_dir + "/node-" + std::to_string(options_.self) + ".raft";
  raft.election_timeout_ms = options_.election_timeout_ms;
  // A member that copied a peer's state (--from_peer) comes back under its
  // old id without its consensus log: it joins without bootstrapping (the
  // leader sends it the log or a snapshot) and casts no vote in a term it
  // may have voted in before (raft_log.h: vote_floor_term).
  raft.vote_floor_term = ReadVoteFloor(options_.log_dir, options_.self);
  if (raft.vote_floor_term > 0) raft.bootstrap = false;
  // Replica 0 stands first, so that a cluster starting up sequences within
  // moments rather than after a randomized 1-2 timeouts; any member leads
  // after a failover.
  if (self->replica() == 0) {
    raft.first_election_timeout_ms = std::max(20u, options_.election_timeout_ms / 10);
  }
  // Several heartbeats per election timeout, so that one lost or late
  // heartbeat does not depose a live leader.
  raft.heartbeat_ms = std::max(10u, options_.election_timeout_ms / 10);
  raft.connect_retry_ms = std::min(200u, std::max(20u, options_.election_timeout_ms / 5));
  std::string error;
  log_ = replication::StartRaftLog(raft, &error);
  if (!log_) {
    return "replicated_input: node " + std::to_string(options_.self) +
           " cannot start its consensus member (consensus_port " +
           std::to_string(self->consensus_port()) + ", " + raft.data_dir + "): " + error;
  }
  leaderless_since_us_ = NowMicros();
  consumer_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "px-consumer");
    Consume();
  });
  return "";
}

void ReplicatedSequencing::Consume() {
  std::vector<replication::LogEvent> events;
  while (!stop_.load()) {
    events.clear();
    log_->NextEvents(&events, std::chrono::milliseconds(100));  // none: a quiet 100 ms
    for (replication::LogEvent& event : events) {
      switch (event.kind) {
        case replication::LogEvent::Kind::kCommitted: {
          Epoch epoch = 0;
          if (!RecordEpoch(event.bytes, &epoch)) {
            LOG(ERROR) << "node " << options_.self << ": committed entry " << event.index
                       << " is not an epoch record; skipped";
            break;
          }
          // A deposed leader's entry for an epoch its successor cut again
          // is skipped alike by every member (and a restarted member skips
          // what it ran before it stopped).
          if (epoch <= committed_epoch_.load()) break;
          if (options_.restarted && epoch != committed_epoch_.load() + 1 && !FillGap(epoch)) {
            // Committed epochs follow one another; the log kept none of
            // those between (the group trimmed them while it was away).
            // It leaves the group (it must not lead it either).
            Gap(epoch);
            stop_.store(true);
            log_->Stop();
            return;
          }
          committed_epoch_.store(epoch);
          {
            std::lock_guard<std::mutex> lock(indexes_mu_);
            indexes_.emplace_back(epoch, event.index);
          }
          options_.committed(epoch, event.bytes, leads_.load(), event.committed_us);
          break;
        }
        case replication::LogEvent::Kind::kLeadership: {
          const replication::Leadership& now = event.leadership;
          leaderless_since_us_ = now.leader == 0 ? NowMicros() : 0;
          // A resigned member starts nothing when elected: it hands off
          // (HandOffIfStale, below).
          if (now.leading && !resigned_.load() &&
              (!leads_.load() || now.term != lead_term_.load())) {
            // Elected (again, if it led before and was deposed): its
            // sequencer resumes after the last committed epoch.
            const Epoch first = committed_epoch_.load() + 1;
            if (options_.lead(first)) {
              leads_.store(true);
              lead_term_.store(now.term);
              deposed_ = false;
              if (options_.print) {
                options_.print("[node " + std::to_string(options_.self) +
                               "] leads its partition's consensus group (term " +
                               std::to_string(now.term) + "): sequencing from epoch " +
                               std::to_string(first));
              }
            }
          } else if (!now.leading && leads_.load() && !deposed_) {
            deposed_ = true;
            if (options_.print) {
              options_.print("[node " + std::to_string(options_.self) +
                             "] no longer leads its partition's group (term " +
                             std::to_string(now.term) + "); its sequencer stops");
            }
            if (options_.follow) options_.follow();
          }
          break;
        }
        case replication::LogEvent::Kind::kRestored:
          // Entries up to event.index will not come (a trim): fine if this
          // member ran them already, which the next entry's epoch tells.
          restored_index_ = event.index;
          break;
        case replication::LogEvent::Kind::kFailed:
          // Its disk failed under the group's log: it stops as for a
          // failed write of its own logs (the others go on without it).
          LOG(ERROR) << "node " << options_.self << ": " << event.bytes;
          if (options_.failed) options_.failed(event.bytes);
          // A leader that can no longer log asks the group to elect another.
          Resign();
          break;
      }
    }
    // After the events: one may be the election that restarts its sequencer.
    HandOffIfStale();
  }
}

bool ReplicatedSequencing::FillGap(Epoch next) {
  const Epoch from = committed_epoch_.load() + 1;
  const std::string error = FetchCommitted(
      *options_.layout, options_.self, from, next - 1, [this](Epoch epoch, const std::string& record) {
        if (stop_.load()) return;
        committed_epoch_.store(epoch);
        options_.committed(epoch, record, leads_.load(), 0);
      });
  if (!error.empty()) {
    LOG(WARNING) << "node " << options_.self << ": " << error;
    return false;
  }
  if (options_.print) {
    options_.print("[node " + std::to_string(options_.self) + "] its group's log was trimmed "
                   "past epochs " + std::to_string(from) + ".." + std::to_string(next - 1) +
                   ": fetched them from a peer's sequencer log");
  }
  return !stop_.load();
}

void ReplicatedSequencing::Gap(Epoch next) {
  const Epoch have = committed_epoch_.load();
  const std::string why =
      "it rejoined its partition's consensus group, but the group's log goes on at epoch " +
      std::to_string(next) + " and its own logs end at epoch " + std::to_string(have) +
      ": epochs " + std::to_string(have + 1) + ".." + std::to_string(next - 1) +
      " were trimmed at a checkpoint" +
      (restored_index_ > 0 ? " (log index " + std::to_string(restored_index_) + ")" : "") +
      ". A member that is down holds trimming back, so this happens when its log directory "
      "lost files or is an older copy, or the node was removed from the cluster. Loading a "
      "peer's checkpoint to rejoin is not built yet: this node cannot rejoin from this log "
      "directory; its partition goes on with its other replicas";
  LOG(ERROR) << "node " << options_.self << ": " << why;
  if (options_.failed) options_.failed(why);
}

void ReplicatedSequencing::SaveWindow(RequestWindow* out) {
  std::lock_guard<std::mutex> lock(window_mu_);
  dedup_.Save(out);
  out->set_epoch(window_epoch_);
}

bool ReplicatedSequencing::Propose(Epoch epoch, std::string record) {
  const replication::ProposeResult result = log_->Propose(std::move(record));
  if (result.status == replication::ProposeResult::Status::kAppended) return true;
  LOG(WARNING) << "node " << options_.self << ": epoch " << epoch << " not proposed ("
               << (result.status == replication::ProposeResult::Status::kNotLeader
                       ? "no longer leads"
                       : result.error) << "); its sequencer stops";
  return false;
}

void ReplicatedSequencing::HandOffIfStale() {
  const replication::Leadership now = log_->leadership();
  if (resigned_.load()) {
    // A node whose log failed leads a group nothing sequences for.
    const int64_t now_us = NowMicros();
    if (now.leading && now_us - last_hand_off_us_ >= 200000) {
      last_hand_off_us_ = now_us;
      log_->HandOff();
    }
    return;
  }
  if (!leads_.load() || !now.leading || now.term == lead_term_.load()) {
    stale_since_us_ = 0;
    last_hand_off_us_ = 0;
    return;
  }
  // Stale for 200 ms first: the election's event may not be handed out yet.
  const int64_t now_us = NowMicros();
  if (stale_since_us_ == 0) stale_since_us_ = now_us;
  if (now_us - stale_since_us_ < 200000 || now_us - last_hand_off_us_ < 200000) return;
  if (last_hand_off_us_ == 0 && options_.print) {
    options_.print("[node " + std::to_string(options_.self) + "] elected again (term " +
                   std::to_string(now.term) + ") before its sequencer stopped from term " +
                   std::to_string(lead_term_.load()) + ": it hands leadership to another member");
  }
  last_hand_off_us_ = now_us;
  log_->HandOff();
}

std::string ReplicatedSequencing::Rejoin(NodeId node) {
  if (!log_ || stop_.load()) return "node " + std::to_string(options_.self) + " runs no consensus member now";
  const replication::ProposeResult result = log_->Rejoin(MemberOf(node));
  switch (result.status) {
    case replication::ProposeResult::Status::kAppended:
      if (options_.print) {
        options_.print("[node " + std::to_string(options_.self) + "] node " +
                       std::to_string(node) + " copied a peer's state: its group sends it the "
                       "log from where it is");
      }
      return "";
    case replication::ProposeResult::Status::kNotLeader:
      return "node " + std::to_string(options_.self) + " does not lead its group" +
             (result.leader > 0 ? " (node " + std::to_string(result.leader - 1) + " does)" : "");
    default:
      return "node " + std::to_string(options_.self) + ": " +
             (result.error.empty() ? std::string("stopped") : result.error);
  }
}

replication::Leadership ReplicatedSequencing::leadership() const {
  return log_ ? log_->leadership() : replication::Leadership{};
}

int64_t ReplicatedSequencing::leader_node() const {
  const replication::Leadership now = leadership();
  return now.leader == 0 ? -1 : static_cast<int64_t>(now.leader - 1);
}

void ReplicatedSequencing::FillStatus(StatusReply* status) const {
  const replication::Leadership now = leadership();
  // "leader" once its sequencer runs (its barrier committed), not at election.
  status->set_group_role(leads_.load() && now.leading && now.term == lead_term_.load()
                             ? "leader"
                             : "follower");
  status->set_group_term(now.term);
  status->set_group_leader(now.leader == 0 ? -1 : static_cast<int64_t>(now.leader - 1));
  status->set_group_committed_epoch(committed_epoch_.load());
  status->set_group_trimmed_epoch(trimmed_epoch_.load());
}

std::string ReplicatedSequencing::Problem() const {
  const int64_t since = leaderless_since_us_.load();
  if (since == 0 || leadership().leader != 0) return "";
  return "no leader in partition " +
         std::to_string(options_.layout->Node(options_.self)->partition()) +
         "'s consensus group for " + PeerMonitor::Seconds(NowMicros() - since) +
         " (an election is under way, or a majority of its replicas is down)";
}

void ReplicatedSequencing::TrimCoveredBy(Epoch stable) {
  if (!log_ || stable <= trimmed_epoch_.load()) return;
  uint64_t index = 0;
  Epoch through = 0;
  {
    std::lock_guard<std::mutex> lock(indexes_mu_);
    while (!indexes_.empty() && indexes_.front().first <= stable) {
      through = indexes_.front().first;
      index = indexes_.front().second;
      indexes_.pop_front();
    }
  }
  if (index == 0) return;
  log_->Trim(index);
  trimmed_epoch_.store(through);
}

void ReplicatedSequencing::Stop() {
  stop_.store(true);
  if (log_) log_->Stop();
  if (consumer_.joinable()) consumer_.join();
}

}  // namespace paxflow
