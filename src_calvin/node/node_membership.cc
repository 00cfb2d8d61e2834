// Node: membership and the reports about peers that speak but do not
// help: an operator's removal of a node (client port), removals learned
// from peers, warnings for logs kept for a long-silent peer, and why the
// partition waits for a peer that is alive (recovering, stuck). See
// common/membership.h.
#include <glog/logging.h>

#include "common/clock.h"
#include "node/node.h"

namespace paxflow {

std::string Node::ServeRemoveNode(const RemoveNodeRequest& request, std::string* detail) {
  const NodeId node = request.node();
  const std::string who = monitor_->Describe(node);
  if (node == options_.id) {
    return "node " + std::to_string(node) + " is the node asked: ask the others to remove it";
  }
  if (membership_->Removed(node)) {
    *detail = "node " + std::to_string(options_.id) + " knew " + who + " was removed";
    return "";
  }
  const std::vector<NodeId> removed = membership_->List();
  std::string why = Membership::CheckRemovable(options_.config, node,
                                               std::set<NodeId>(removed.begin(), removed.end()));
  if (!why.empty()) return why;
  const int64_t now = NowMicros();
  if (!request.force() && !monitor_->Silent(node, now)) {
    return who + " is alive (node " + std::to_string(options_.id) + " heard from it " +
           PeerMonitor::Seconds(monitor_->SilentForUs(node, now)) +
           " ago): remove is for a node that will not return; stop it first, or give --force "
           "(it then falls behind what the others keep and cannot catch up)";
  }
  why = membership_->Remove(node);
  if (!why.empty()) return why;
  *detail = "node " + std::to_string(options_.id) + " removed " + who +
            ": it no longer waits for it nor keeps logs for it" +
            (options_.params.engine.log_dir.empty()
                 ? std::string()
                 : " (remembered in " + Membership::Path(options_.params.engine.log_dir,
                                                         options_.id) + ")");
  Print("[node " + std::to_string(options_.id) + "] " + who +
        " was removed from the cluster (paxflow-cluster remove)");
  return "";
}

void Node::LearnRemoved(NodeId from,
                        const google::protobuf::RepeatedField<uint32_t>& removed) {
  if (removed.empty()) return;
  for (NodeId node : membership_->Adopt(std::vector<NodeId>(removed.begin(), removed.end()))) {
    Print("[node " + std::to_string(options_.id) + "] node " + std::to_string(from) + " says " +
          monitor_->Describe(node) + " was removed from the cluster; no longer waiting for it");
  }
}

std::vector<std::string> Node::KeptLogsWarnings(int64_t now_us) const {
  std::vector<std::string> warnings;
  if (!checkpointer_) return warnings;
  const int64_t long_silence = int64_t{options_.params.engine.peer_timeout_ms} * 1000 *
                               Membership::kKeptLogsWarnFactor;
  for (const auto& [peer, silent_us] :
       monitor_->HoldingBack(checkpointer_->Held(), long_silence, now_us)) {
    warnings.push_back(Membership::KeptLogsWarning(peer, checkpointer_->Stable(), silent_us));
  }
  return warnings;
}

std::string Node::AlivePeerProblem(NodeId peer, const Heartbeat& heartbeat,
                                   int64_t now_us) const {
  if (heartbeat.recovering()) {
    return ", recovering (at epoch " + std::to_string(heartbeat.admitted_epoch()) + " of " +
           std::to_string(heartbeat.rejoin_epoch()) + ")";
  }
  // Its epochs stand still (a partition paused, a sequencer that cannot
  // cut): as bad as silence for whoever waits for its batches.
  const int64_t stuck = monitor_->StuckForUs(peer, now_us);
  if (stuck > int64_t{options_.params.engine.peer_timeout_ms} * 1000 * kStuckFactor) {
    return ", stuck at epoch " + std::to_string(heartbeat.sequenced_epoch()) + " for " +
           PeerMonitor::Seconds(stuck);
  }
  return "";
}

}  // namespace paxflow
