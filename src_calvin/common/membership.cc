#include "common/membership.h"

#include <cstdio>

#include "common/proto_json.h"
#include "common/record_file.h"
#include "recovery.pb.h"

namespace paxflow {

Membership::Membership(const ClusterConfig& config, NodeId self, std::string dir)
    : config_(config), self_(self), dir_(std::move(dir)) {}

std::string Membership::Path(const std::string& dir, NodeId node) {
  return dir + "/node-" + std::to_string(node) + ".removed";
}

std::string Membership::Load() {
  if (dir_.empty()) return "";
  const std::string path = Path(dir_, self_);
  FILE* exists = fopen(path.c_str(), "rb");
  if (!exists) return "";
  fclose(exists);
  std::string bytes, error;
  RemovedNodes file;
  if (!ReadTextFile(path, &bytes, &error)) return error;
  if (!file.ParseFromString(bytes)) {
    return path + " is damaged (not a list of removed nodes); it says which nodes were removed "
                  "from the cluster: restore it, or remove the nodes again";
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (uint32_t node : file.node()) {
    const std::string why = CheckRemovable(config_, node, removed_);
    if (!why.empty()) return path + ": " + why + " (another cluster's file?)";
    removed_.insert(node);
  }
  return "";
}

std::string Membership::CheckRemovable(const ClusterConfig& config, NodeId node,
                                       const std::set<NodeId>& removed) {
  const NodeConfig* found = nullptr;
  for (const NodeConfig& candidate : config.node()) {
    if (candidate.id() == node) found = &candidate;
  }
  if (!found) return "node " + std::to_string(node) + " is not in the config";
  if (removed.count(node)) return "";
  const std::string partition = "partition " + std::to_string(found->partition());
  bool other = false;
  for (const NodeConfig& candidate : config.node()) {
    other |= candidate.id() != node && candidate.partition() == found->partition() &&
             !removed.count(candidate.id());
  }
  if (!other) {
    return "node " + std::to_string(node) + " is the only node of " + partition +
           ": without it the cluster cannot go on for that partition (its data is nowhere "
           "else); bring it back (paxflow-cluster restart --node=" + std::to_string(node) + ")";
  }
  if (found->replica() == 0) {
    return "node " + std::to_string(node) + " is " + partition +
           "'s node of replica 0: its sequencer orders every txn of that partition, and no "
           "other node takes over; the cluster cannot go on without it: bring it back "
           "(paxflow-cluster restart --node=" + std::to_string(node) + ")";
  }
  return "";
}

std::string Membership::Persist(const std::set<NodeId>& removed) const {
  if (dir_.empty()) return "";
  RemovedNodes file;
  for (NodeId node : removed) file.add_node(node);
  std::string error = WriteFileAtomically(Path(dir_, self_), file.SerializeAsString());
  if (error.empty()) error = SyncDirectory(dir_);
  return error;
}

std::string Membership::Remove(NodeId node) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node == self_) return "node " + std::to_string(node) + " cannot remove itself";
  if (removed_.count(node)) return "";
  const std::string why = CheckRemovable(config_, node, removed_);
  if (!why.empty()) return why;
  std::set<NodeId> next = removed_;
  next.insert(node);
  const std::string error = Persist(next);
  if (!error.empty()) return "cannot remember the removal: " + error;
  removed_ = std::move(next);
  return "";
}

std::vector<NodeId> Membership::Adopt(const std::vector<NodeId>& removed) {
  std::vector<NodeId> added;
  for (NodeId node : removed) {
    if (node == self_ || Removed(node)) continue;
    // A peer says this node was removed: ourselves we keep running (the
    // operator forced it), a valid other one we stop waiting for.
    if (Remove(node).empty()) added.push_back(node);
  }
  return added;
}

bool Membership::Removed(NodeId node) const {
  std::lock_guard<std::mutex> lock(mu_);
  return removed_.count(node) > 0;
}

std::vector<NodeId> Membership::List() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::vector<NodeId>(removed_.begin(), removed_.end());
}

std::string Membership::KeptLogsWarning(NodeId node, Epoch epoch, int64_t silent_us) {
  char seconds[32];
  snprintf(seconds, sizeof(seconds), "%.0f s", silent_us / 1e6);
  const std::string id = std::to_string(node);
  return "keeping logs from epoch " + std::to_string(epoch) + " for node " + id +
         ", silent for " + seconds + "; `paxflow-cluster remove --node=" + id +
         "` if it will not return";
}

}  // namespace paxflow
