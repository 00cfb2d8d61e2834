// A replicated log: the members of one group (a partition's replicas)
// agree on one sequence of entries (the partition's epoch batches). The
// leader proposes; every member, the leader included, is handed the
// committed entries in the same order. An entry is committed once a
// majority of the members hold it on disk.
//
// This is our interface; the engine behind it (raft_log.h: libraft) can be
// swapped without touching its users.
//
// Owns: the engine, its event loop thread, its data directory.
// In: Propose (leader), Trim (any member). Out: events (NextEvents).
// Threads: any thread may call Propose, Trim, leadership() and Stop; one
// consumer thread calls NextEvents. The engine's own thread never runs
// caller code.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace paxflow::replication {

struct Member {
  uint64_t id = 0;      // > 0, unique in the group, never reused
  std::string address;  // where the others reach it: "127.0.0.1:port"
};

// Who leads, as this member knows it.
struct Leadership {
  uint64_t term = 0;
  uint64_t leader = 0;   // the leader's member id; 0: none known
  bool leading = false;  // this member leads and may propose: it was elected
                         // and has been handed every entry of earlier terms
};

struct LogEvent {
  enum class Kind {
    kCommitted,   // `index`, `bytes`: the next committed entry
    kLeadership,  // `leadership` changed
    kRestored,    // entries up to `index` will not be handed out: the log
                  // was trimmed there (a snapshot); this member must get
                  // its state up to `index` elsewhere (a peer's checkpoint
                  // and catch-up), then takes the entries after it
    kFailed,      // `bytes`: why this member cannot write its log (its
                  // disk failed); it takes no new entries from then on
  };
  Kind kind = Kind::kCommitted;
  uint64_t index = 0;  // increasing, not dense (the engine uses some itself)
  std::string bytes;
  // kCommitted: when this member's engine learned the entry was committed
  // (common/clock.h's NowMicros), for measuring what waits after it.
  int64_t committed_us = 0;
  Leadership leadership;
};

struct ProposeResult {
  enum class Status {
    kAppended,   // in the leader's log at `index`; it is committed once it
                 // comes out of NextEvents (it may never be, if leadership
                 // is lost first: the next leader's entries follow instead)
    kNotLeader,  // `leader` leads (0: nobody known; this member's own id: it
                 // was just elected and is not leading yet)
    kStopped,
    kFailed,  // `error` says why
  };
  Status status = Status::kFailed;
  uint64_t index = 0;
  uint64_t leader = 0;
  std::string error;
};

class ReplicatedLog {
 public:
  virtual ~ReplicatedLog() = default;

  virtual uint64_t id() const = 0;  // this member's id

  // Appends `bytes` to the log if this member leads (waits only for the
  // engine's thread to take it, never for a commit).
  virtual ProposeResult Propose(std::string bytes) = 0;

  // Moves the events so far into `out`, in order, waiting up to `timeout`
  // for the first. False if none came (or the log is stopped and drained).
  // After a restart on its data directory a member is handed its committed
  // entries again from the last trim on (kRestored first if there was
  // one): the consumer skips the indexes it already has.
  virtual bool NextEvents(std::vector<LogEvent>* out, std::chrono::milliseconds timeout) = 0;

  virtual Leadership leadership() const = 0;

  // Leader only: replaces member `old_id` (gone for good, or back on an
  // empty disk) by `fresh`, a new id started on an empty data dir without
  // bootstrap. Returns once the change is under way (kAppended): the group
  // sends `fresh` the log (or a snapshot), makes it a voter once it caught
  // up, then drops `old_id`. A member that lost its disk never comes back
  // under its old id: it would have forgotten its votes and what it
  // acknowledged, which consensus counts on.
  virtual ProposeResult Replace(uint64_t old_id, const Member& fresh) = 0;

  // Leader only: member `member` (same id) came back with no log: it lost
  // its disk and installed a peer's checkpoint (node/state_transfer.h).
  // The leader forgets how far it believed that member's log went, and
  // sends it the log from where the member really is (from a snapshot, if
  // the log was trimmed). kAppended once done (nothing is proposed).
  virtual ProposeResult Rejoin(uint64_t member) = 0;

  // Entries up to `index` are covered by this member's checkpoint: the log
  // need not keep them. Takes effect at a later commit; see the engine for
  // what is kept.
  virtual void Trim(uint64_t index) = 0;

  // Leader only: asks the group to elect another voter (the engine picks
  // the most up-to-date one). For a member elected again in a process that
  // can no longer act as leader. Ignored if it does not lead or a hand-off
  // is under way; whether it worked shows in leadership() later.
  virtual void HandOff() = 0;

  // Leaves the group cleanly (the others elect a leader if it led) and
  // joins the engine's thread. Idempotent; the destructor calls it.
  virtual void Stop() = 0;
};

}  // namespace paxflow::replication
