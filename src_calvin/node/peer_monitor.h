// What a node knows of its peers: when each last spoke (any message) and
// what its last heartbeat said. Failure detection and catch-up decisions
// read it: who is silent and for how long, which node runs a sequencer and
// how far it has sequenced, which checkpoint every node holds, and which
// peers are alive but make no progress. Nodes removed from the cluster
// (common/membership.h) count neither for the stable checkpoint nor as silent.
//
// Owns: the latest heartbeat of each peer, and when its epochs last moved.
// In: heartbeats (OnHeartbeat, transport thread); last-heard times (from
// the transport, less its deaf time). Out: answers, to any thread.
// Threads: any; one mutex.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/transport.h"
#include "common/membership.h"
#include "recovery.pb.h"

namespace paxflow {

class PeerMonitor {
 public:
  // `membership` (may be null: nobody is ever removed) outlives this.
  PeerMonitor(const ClusterConfig& config, NodeId self, const Transport* transport,
              int64_t silence_us, const Membership* membership = nullptr);

  // True when the heartbeat comes from a new incarnation of a peer heard
  // before: it restarted.
  bool OnHeartbeat(const Heartbeat& heartbeat);

  // "node 1 at 127.0.0.1:17111"
  std::string Describe(NodeId peer) const;
  // Microseconds since anything came from `peer`: since this node started
  // if it never spoke.
  int64_t SilentForUs(NodeId peer, int64_t now_us) const;
  bool Silent(NodeId peer, int64_t now_us) const {
    return SilentForUs(peer, now_us) > silence_us_;
  }
  // The nodes serving `partition` (this one too) that are not silent and
  // not removed, in replica order: who can stand in for a dead replica of
  // it (replicated input).
  std::vector<NodeId> LiveReplicas(PartitionId partition, int64_t now_us) const;
  // Every peer silent beyond the threshold, as "node 3 at HOST:PORT, silent
  // for 3.2 s", except those in `skip`.
  std::vector<std::string> SilentPeers(int64_t now_us, const std::vector<NodeId>& skip) const;

  // Microseconds since the epochs `peer`'s heartbeats report (admitted,
  // sequenced) last moved: since its first heartbeat if they never did; 0
  // if none came.
  int64_t StuckForUs(NodeId peer, int64_t now_us) const;
  // Peers silent for longer than `silent_us` (removed ones aside) that hold
  // back the stable checkpoint: none of them holds a checkpoint as new as
  // `own`'s newest. With how long each has been silent.
  std::vector<std::pair<NodeId, int64_t>> HoldingBack(const std::vector<Epoch>& own,
                                                      int64_t silent_us, int64_t now_us) const;

  // The last heartbeat of `peer`; false if none came yet.
  bool Latest(NodeId peer, Heartbeat* heartbeat) const;
  // The node that runs sequencer `sequencer`, as its heartbeats say (a
  // live one before a silent one); else `fallback`.
  NodeId NodeOfSequencer(uint32_t sequencer, NodeId fallback) const;
  // The newest epoch at which every node (this one: `own` checkpoints)
  // holds a checkpoint; 0 while some node was never heard from. Removed
  // nodes do not count.
  Epoch StableCheckpoint(const std::vector<Epoch>& own) const;
  // The highest stable checkpoint any peer reported.
  Epoch HighestStableView() const;

  static std::string Seconds(int64_t micros);  // "3.2 s"

 private:
  const ClusterConfig config_;
  const NodeId self_;
  const Transport* const transport_;
  const int64_t silence_us_;
  const int64_t started_us_;
  const int64_t started_deaf_us_;  // the transport's DeafUs then
  const Membership* const membership_;
  mutable std::mutex mu_;
  std::map<NodeId, Heartbeat> latest_;
  std::map<NodeId, int64_t> moved_us_;  // when each peer's epochs last moved
};

}  // namespace paxflow
