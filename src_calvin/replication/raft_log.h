// RaftLog: the ReplicatedLog on libraft 0.15 (Debian's libraft-dev, the
// embedded C Raft of dqlite and LXD), with its libuv I/O: TCP between
// members, and a data directory of log segments written with O_DSYNC, so
// an entry a majority has acknowledged is on a majority's disks before it
// is reported committed.
//
// Threads: libraft and its libuv loop run on one thread of RaftLog's own,
// and only there. Calls come in through a mutex-guarded inbox and a
// uv_async_t that wakes the loop; Propose builds libraft's entry on the
// caller's thread and waits for the loop to have appended (or refused) it.
// The leader keeps what it proposed and hands that out at the commit
// instead of copying the entry back out of libraft's buffer. libraft's TCP
// connections get TCP_NODELAY (libraft 0.15 leaves Nagle's algorithm on).
// Events go out through a blocking queue (common/blocking_queue.h) the
// consumer parks on. The loop thread is named px-raft-loop (for perf and
// top; libuv's disk threads inherit the name). Leadership is read after
// every loop iteration (a uv_check_t: libraft 0.15 has no callback for it);
// a newly elected leader first commits a barrier, so it reports `leading`
// only once every entry of earlier terms has gone out before that event.
// The leader also applies Raft's commit rule itself after every iteration
// (libraft 0.15 counts a follower's reply only at the leader's own last
// stored index, which under a steady stream of entries held commits back).
//
// Snapshots and trimming: our checkpoints are the source of truth for a
// member's state, so libraft's snapshot of the state machine is tiny (the
// index it was taken at and the index Trim allowed). Automatic snapshots
// are off (threshold: never). Trim(t) makes libraft take one at its next
// commit, at the last applied index S, keeping the S - t entries after t
// (its "trailing" setting): the log drops what the checkpoint covers and
// nothing else. On disk libraft removes only whole closed segments
// (segment_bytes each). A member too far behind for the kept entries is
// sent that snapshot and reports kRestored.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "replication/replicated_log.h"

namespace paxflow::replication {

using RaftMember = Member;  // address: an IPv4 dotted quad and a port

struct RaftLogOptions {
  uint64_t id = 0;                  // this member; must be in `members`
  std::vector<RaftMember> members;  // the whole group, this member included
  std::string data_dir;             // created if missing; one member's alone
  // On an empty data dir: start the group with `members` as its voters
  // (every founding member does so, with the same list). Without it the
  // member waits for the leader to send it the log (or a snapshot): a
  // member on a new, empty disk joining its group (ReplicatedLog::Replace).
  bool bootstrap = true;
  // A member that lost its data dir and comes back under its old id
  // (bootstrap false): the highest term any other member of the group was
  // in when it came back. It may have voted in any term up to it before
  // it lost its disk, and forgot whom for: it grants no vote (pre-vote or
  // vote) for a term at or below it, and stands for election only once
  // its own term has reached it (so its own candidacies are in later
  // terms). 0: none (a member on its own data dir keeps its votes).
  uint64_t vote_floor_term = 0;
  unsigned election_timeout_ms = 1000;  // libraft randomizes it to 1x-2x
  // This member's election timeout until it first learns of a leader (0:
  // election_timeout_ms). A short one on one member makes it the group's
  // first leader within moments of a start instead of a whole timeout
  // later; pre-vote keeps it from deposing a leader it has not heard of yet.
  unsigned first_election_timeout_ms = 0;
  unsigned heartbeat_ms = 100;
  unsigned connect_retry_ms = 200;  // between attempts to reach a member
  size_t segment_bytes = 8 << 20;   // log segment size (trimming unit)
};

// Starts a member: opens (or bootstraps) its data dir, listens on its
// address, runs the loop thread. Null and `error` set if it cannot (a bad
// option, a data dir it cannot use, an address in use).
std::unique_ptr<ReplicatedLog> StartRaftLog(const RaftLogOptions& options, std::string* error);

}  // namespace paxflow::replication
