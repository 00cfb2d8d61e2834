// Replicated input: a member with no usable state (its log directory lost,
// the machine replaced, or its group's consensus log trimmed past what it
// holds) copies a live peer of its own partition, which holds the same
// state at the same epochs, and then rejoins its group exactly as a member
// restarted on its own disk does (--recover).
//
// What is copied, over the peer's client port (StateRequest, client.proto),
// in chunks of at most 1 MiB so that no message is big:
//   * the peer's newest checkpoint file (epoch C), checked whole on
//     arrival with the checkpoint format's own checksums, key count and
//     digest (CheckCheckpoint), then written as this node's (its header
//     names this node and replica; the request-id window in it is the
//     partition's, the same on every replica);
//   * the committed epochs of the peer's sequencer log after C (the
//     records its consensus group committed, filtered), which become this
//     node's sequencer log: the restart runs them (ReplayCommittedTail)
//     and rebuilds the request-id window from them;
//   * empty input and reads logs (headers only), and node-<id>.rejoin,
//     which holds the vote floor (RaftLogOptions::vote_floor_term): the
//     highest term every other member of the group was in.
// Whatever of this node the log directory held before is moved aside,
// into <log_dir>/replaced-node-<id>-<unix ms>/, never deleted.
// Then the group's leader is asked to forget how far it believed this
// member's consensus log went (ReplicatedLog::Rejoin).
//
// Owns nothing; functions run on the caller's thread (FetchStateFromPeer:
// paxflow-node's main thread before the node starts; ServeState: the
// client port's thread; FetchCommitted: the consensus consumer thread).
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "base/params.h"
#include "client.pb.h"
#include "common/config.h"
#include "common/types.h"

namespace paxflow {

// A peer's side: answers one StateRequest from `log_dir` (node `self`'s
// files). `rejoin` (REJOIN) asks its consensus member, if it leads, to
// forget member `node`'s log; empty or why not.
struct StateServer {
  std::string log_dir;
  NodeId self = 0;
  std::function<std::string(NodeId node)> rejoin;
};
std::string ServeState(const StateServer& server, const StateRequest& request, StateReply* reply);

struct FetchStateOptions {
  const ClusterLayout* layout = nullptr;
  NodeId self = 0;
  const NodeParams* params = nullptr;  // log_dir, and the header of the logs it writes
  std::function<void(const std::string&)> print;
  int timeout_ms = 5000;  // per request
};
// The whole copy described above. Empty on success, else what went wrong
// and what to do (nothing of this node's is lost: what it held was moved aside).
std::string FetchStateFromPeer(const FetchStateOptions& options);

// Whether `dir` holds any file of node `self` (its history, or a copy).
bool HoldsNodeFiles(const std::string& dir, NodeId self);

// The vote floor node-<id>.rejoin holds (0: no such file).
uint64_t ReadVoteFloor(const std::string& dir, NodeId self);

// The committed epochs `from`..`through` of the partition, in order, from
// the sequencer log of a live peer of node `self`'s partition (the first
// that holds them all): `each(epoch, record)`. Empty, or why none could.
std::string FetchCommitted(const ClusterLayout& layout, NodeId self, Epoch from, Epoch through,
                           const std::function<void(Epoch, const std::string&)>& each,
                           int timeout_ms = 5000);

}  // namespace paxflow
