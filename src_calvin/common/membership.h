// Which nodes of the config have left the cluster for good (an operator's
// `paxflow-cluster remove --node=ID`: a replica that will not return).
// A removed node no longer holds back log trimming (it is left out of the
// stable checkpoint, node/peer_monitor.h), is not waited for when nodes
// start, and is not reported as silent; a node that keeps logs for a peer
// silent for long says so, and how to remove it (KeptLogsWarning).
//
// Only a node of a replica other than 0 can be removed: replica 0's node
// of a partition runs its sequencer, and without it (there is no
// fail-over) the partition cannot go on; neither can a partition without
// any node left. CheckRemovable says so, for the node and for
// paxflow-cluster alike.
//
// Durable: <log_dir>/node-<id>.removed (a RemovedNodes record, replaced
// atomically and its directory synced) is written before a removal takes
// effect, and read at start. Learned from: a client's RemoveNodeRequest
// (client thread), a peer's heartbeat or hello listing removed nodes
// (transport thread), so a node that was down meanwhile learns it too.
//
// Owns: the removed set and its file. Threads: any; one mutex.
#pragma once
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/types.h"

namespace paxflow {

class Membership {
 public:
  // `dir`: the node's log directory; empty: removals are not remembered.
  Membership(const ClusterConfig& config, NodeId self, std::string dir);

  // Reads the file, if any. Empty on success, else what is wrong with it.
  std::string Load();

  // Removes `node` (validated by CheckRemovable), remembered before it
  // counts. Empty on success (also if it was removed already), else why not.
  std::string Remove(NodeId node);
  // Removals a peer reports; those valid and new are applied (and
  // remembered). Returns the nodes newly removed.
  std::vector<NodeId> Adopt(const std::vector<NodeId>& removed);

  bool Removed(NodeId node) const;
  std::vector<NodeId> List() const;

  // Empty if `node` of `config` may be removed, given the nodes removed
  // already; else why not, for people.
  static std::string CheckRemovable(const ClusterConfig& config, NodeId node,
                                    const std::set<NodeId>& removed);
  static std::string Path(const std::string& dir, NodeId node);

  // A progress-line warning for a node silent for `silent_us` whose last
  // checkpoint holds back trimming: logs are kept from `epoch`.
  static std::string KeptLogsWarning(NodeId node, Epoch epoch, int64_t silent_us);
  // How long past --peer_timeout_ms a silent peer may hold back log
  // trimming before progress lines warn (KeptLogsWarning).
  static constexpr int kKeptLogsWarnFactor = 10;

 private:
  std::string Persist(const std::set<NodeId>& removed) const;  // mu_ held

  const ClusterConfig config_;
  const NodeId self_;
  const std::string dir_;
  mutable std::mutex mu_;
  std::set<NodeId> removed_;
};

}  // namespace paxflow
