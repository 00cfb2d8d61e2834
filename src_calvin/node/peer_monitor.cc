#include "node/peer_monitor.h"

#include <algorithm>
#include <cstdio>

#include "common/clock.h"

namespace paxflow {

PeerMonitor::PeerMonitor(const ClusterConfig& config, NodeId self, const Transport* transport,
                         int64_t silence_us, const Membership* membership)
    : config_(config),
      self_(self),
      transport_(transport),
      silence_us_(silence_us),
      started_us_(NowMicros()),
      started_deaf_us_(transport ? transport->DeafUs(started_us_) : 0),
      membership_(membership) {}

bool PeerMonitor::OnHeartbeat(const Heartbeat& heartbeat) {
  std::lock_guard<std::mutex> lock(mu_);
  Heartbeat& latest = latest_[heartbeat.node_id()];
  const bool restarted = latest.incarnation() != 0 && latest.incarnation() != heartbeat.incarnation();
  if (latest.incarnation() == 0 || restarted ||
      latest.admitted_epoch() != heartbeat.admitted_epoch() ||
      latest.sequenced_epoch() != heartbeat.sequenced_epoch()) {
    moved_us_[heartbeat.node_id()] = NowMicros();
  }
  latest = heartbeat;
  return restarted;
}

std::string PeerMonitor::Seconds(int64_t micros) {
  char text[32];
  snprintf(text, sizeof(text), "%.1f s", micros / 1e6);
  return text;
}

std::string PeerMonitor::Describe(NodeId peer) const {
  for (const NodeConfig& node : config_.node()) {
    if (node.id() == peer) {
      return "node " + std::to_string(peer) + " at " + node.host() + ":" +
             std::to_string(node.port());
    }
  }
  return "node " + std::to_string(peer);
}

int64_t PeerMonitor::SilentForUs(NodeId peer, int64_t now_us) const {
  if (peer == self_) return 0;
  Transport::Heard since = transport_->LastHeard(peer);
  if (since.at_us < started_us_) since = {started_us_, started_deaf_us_};
  // While the receiver thread was in a handler nobody could be heard: a
  // large message parsed there (calvin mode ships whole tables' rows for a
  // scan) is not every other peer's silence.
  const int64_t deaf = transport_->DeafUs(now_us) - since.deaf_us;
  return std::max<int64_t>(0, now_us - since.at_us - deaf);
}

std::vector<NodeId> PeerMonitor::LiveReplicas(PartitionId partition, int64_t now_us) const {
  std::vector<std::pair<uint32_t, NodeId>> live;  // by replica
  for (const NodeConfig& node : config_.node()) {
    if (node.partition() != partition || Silent(node.id(), now_us)) continue;
    if (membership_ && membership_->Removed(node.id())) continue;
    live.emplace_back(node.replica(), node.id());
  }
  std::sort(live.begin(), live.end());
  std::vector<NodeId> nodes;
  for (const auto& [replica, id] : live) nodes.push_back(id);
  return nodes;
}

std::vector<std::string> PeerMonitor::SilentPeers(int64_t now_us,
                                                  const std::vector<NodeId>& skip) const {
  std::vector<std::string> silent;
  for (const NodeConfig& node : config_.node()) {
    if (node.id() == self_ || std::count(skip.begin(), skip.end(), node.id())) continue;
    if (membership_ && membership_->Removed(node.id())) continue;
    const int64_t quiet = SilentForUs(node.id(), now_us);
    if (quiet > silence_us_) silent.push_back(Describe(node.id()) + ", silent for " + Seconds(quiet));
  }
  return silent;
}

bool PeerMonitor::Latest(NodeId peer, Heartbeat* heartbeat) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = latest_.find(peer);
  if (it == latest_.end()) return false;
  *heartbeat = it->second;
  return true;
}

NodeId PeerMonitor::NodeOfSequencer(uint32_t sequencer, NodeId fallback) const {
  const int64_t now = NowMicros();
  std::lock_guard<std::mutex> lock(mu_);
  // With replicated input a partition's sequencer moves to another replica
  // when its leader dies, and the dead one's last heartbeat still names it:
  // a live node that runs it comes first.
  NodeId silent = fallback;
  bool any_silent = false;
  for (const auto& [id, heartbeat] : latest_) {
    if (!std::count(heartbeat.sequencers().begin(), heartbeat.sequencers().end(), sequencer)) {
      continue;
    }
    if (!Silent(id, now)) return id;
    if (!any_silent) silent = id;
    any_silent = true;
  }
  return silent;
}

Epoch PeerMonitor::StableCheckpoint(const std::vector<Epoch>& own) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Epoch> common = own;
  for (const NodeConfig& node : config_.node()) {
    if (node.id() == self_ || (membership_ && membership_->Removed(node.id()))) continue;
    auto it = latest_.find(node.id());
    if (it == latest_.end()) return 0;
    const auto& theirs = it->second.checkpoints();
    common.erase(std::remove_if(common.begin(), common.end(),
                                [&](Epoch epoch) {
                                  return std::find(theirs.begin(), theirs.end(), epoch) ==
                                         theirs.end();
                                }),
                 common.end());
  }
  return common.empty() ? 0 : *std::max_element(common.begin(), common.end());
}

int64_t PeerMonitor::StuckForUs(NodeId peer, int64_t now_us) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = moved_us_.find(peer);
  return it == moved_us_.end() ? 0 : now_us - it->second;
}

std::vector<std::pair<NodeId, int64_t>> PeerMonitor::HoldingBack(const std::vector<Epoch>& own,
                                                                 int64_t silent_us,
                                                                 int64_t now_us) const {
  std::vector<std::pair<NodeId, int64_t>> holding;
  if (own.empty()) return holding;
  const Epoch newest = *std::max_element(own.begin(), own.end());
  for (const NodeConfig& node : config_.node()) {
    if (node.id() == self_ || (membership_ && membership_->Removed(node.id()))) continue;
    const int64_t quiet = SilentForUs(node.id(), now_us);
    if (quiet <= silent_us) continue;
    Epoch theirs = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = latest_.find(node.id());
      if (it != latest_.end()) {
        for (Epoch epoch : it->second.checkpoints()) theirs = std::max(theirs, epoch);
      }
    }
    if (theirs < newest) holding.emplace_back(node.id(), quiet);
  }
  return holding;
}

Epoch PeerMonitor::HighestStableView() const {
  std::lock_guard<std::mutex> lock(mu_);
  Epoch highest = 0;
  for (const auto& [id, heartbeat] : latest_) {
    highest = std::max<Epoch>(highest, heartbeat.stable_checkpoint());
  }
  return highest;
}

}  // namespace paxflow
