// The long-transaction lane (after Shirakami's S-LTX), paxflow mode: every
// decision here is a function of the ordered input log, so replicas and
// replays agree.
//
// An LTX has a begin record (epoch N: procedure, arguments, its
// write-preservation (WP) area), then a commit record (its writes) or an
// abort record; the log may also abort it (timeout). It is serialized at the
// start of N+1, before that epoch's short txns; LTXs among themselves by
// begin record. What this lane does with that, on every partition:
// - defers a short RW txn that touches the WP area of an LTX active at its
//   position (it holds nothing) and re-examines it right after the
//   resolution that frees it, as if sequenced there;
// - installs a commit record's local writes at its position, like a
//   write-only txn, unless an earlier unresolved LTX with an overlapping WP
//   area holds it back until that one resolves;
// - applies the read rule for read-only txns and LTX reads: a key in the WP
//   area of an LTX pending for the reader waits (parks, holding no thread)
//   until those LTXs resolve, then reads the last one's written value from
//   its commit record; other keys are read at the snapshot;
// - aborts LTXs by timeout and when too many are active (busy), and applies
//   guards against starvation;
// - at the origin (replica 0) starts each LTX's procedure on the LTX
//   threads (LtxExecutor) and reports results that the scheduler thread
//   knows (aborts, installs with nothing local).
// - in place, an LTX that runs locked starts from its install instead: once
//   the install holds its area's locks and its declared reads outside the
//   area are readable, the lane fills the install with those reads and a
//   worker runs the procedure (LockedRunReady, OnLockedRunDone; a run
//   given back starts on the LTX threads, OnGivenBack).
//
// - checkpoints and restarts: SaveState writes everything above that the
//   log alone cannot rebuild (ltx_state.proto) at a checkpoint epoch;
//   RestoreState brings it back into a fresh lane. The reads the lane owed
//   at the checkpoint are not served again: their origins get a retryable
//   error (so do later requests of an LTX whose snapshot predates the
//   checkpoint: the restored store has no older versions; requests for LTXs
//   begun after it are kept and served). Requests that had reached the
//   partition unread at the checkpoint are in the state and taken up after
//   the restart; those lost in the crash are asked again by their origins,
//   which hear of the restart (OnPartitionRestarted). A parked RO is kept (it may owe
//   its reads to a live partition) with its reads of this partition at its
//   snapshot, read when the state is saved; it reports no result here. Epochs up to
//   SetReplayThrough's bound are replayed: every decision as live, but no
//   procedure, record or result (a restart with no checkpoint replays from
//   the initial state the same way). At the first epoch after that bound, a
//   replica-0 lane aborts, through its sequencer, every LTX begun here that
//   has no commit record (its procedure's state is gone), and sequences
//   again the guards the log may owe.
//
// Owns: every known LTX (records, areas, state, commit values kept for
// readers), deferred short txns, parked readers, guards, read requests not
// yet servable, reads owed from before a restart, and the LtxExecutor.
// In: the records and txns of each epoch in processing order, from the
// scheduler (Begin/EndEpoch, OnRecord, Defer, CheckReader), read requests.
// Out: Actions (installs and released txns, in order) for the scheduler to
// run in the current epoch; read tasks to the executor; guard records.
// Threads: the scheduler thread, except the executor's own threads.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <string>
#include <vector>

#include "applications/application.h"
#include "backend/store.h"
#include "common/flat_key_map.h"
#include "common/key_area.h"
#include "common/small_id_list.h"
#include "common/stats.h"
#include "ltx_state.pb.h"
#include "scheduler/area_index.h"
#include "scheduler/ltx_executor.h"
#include "scheduler/ltx_outcomes.h"
#include "scheduler/participants.h"
#include "scheduler/sinks.h"
#include "scheduler/txn_work.h"

namespace paxflow {

struct LtxLaneOptions {
  PartitionId partition = 0;
  uint32_t partitions = 1;
  bool runs_procedures = true;  // replica 0: runs LTXs, sequences records, answers clients
  // Replicated input: the origin role (running procedures, sequencing
  // records, answering clients, aborting orphans) is the group leader's,
  // from the first epoch it sequences (SetOrigin), not replica 0's for good.
  bool origin_follows_leadership = false;
  std::string fault_hold_file;  // testing: LtxExecutorOptions::hold_file
  uint32_t ltx_workers = 1;
  uint64_t ltx_timeout = 1000;    // epochs from the begin record
  uint32_t max_active_ltx = 16;   // unresolved LTXs; a begin beyond them aborts (busy)
  uint32_t ltx_max_deferrals = 3; // then a guard record protects the txn
  // One partition: every LTX runs in place (docs/ltx.md, "In place"). Its
  // write area is locked key by key, at most `max_locked_keys` keys.
  bool in_place = false;
  uint64_t max_locked_keys = 1u << 22;
  // In place: an LTX whose procedure reads only its write area and its
  // declared reads (Application::ReadsDeclared) runs under its install's
  // locks on a worker, once its declared reads outside its area are
  // readable (a locked run); its reads there are checked key by key, at
  // most `max_locked_run_reads` of them, else it runs on an LTX thread.
  bool locked_run = false;
  uint64_t max_locked_run_reads = 1u << 16;
};

class LtxLane {
 public:
  // What the scheduler runs, in order, at the current position: an install
  // (a write-only txn) or a released txn (deferred RW, parked RO).
  struct Action {
    std::unique_ptr<TxnWork> work;
  };

  LtxLane(const LtxLaneOptions& options, Store* store, const Application* app,
          PeerSender* peers, RecordSubmitter* records, NodeStats* stats, ResultSink* results,
          size_t stats_slot, LtxExecutor::Callbacks executor_callbacks);

  // How the lane learns that a key's value at an epoch is final on this
  // partition before the epoch is published (RwLane::Settled): LTX reads of
  // such keys are served at once. Without it they wait for publication.
  // `prefetch` fetches ahead what `settled` will touch for a key, in stages
  // (RwLane::PrefetchSettled), so that checking thousands of keys overlaps
  // their cache misses.
  void SetSettledCheck(std::function<bool(Key, Epoch)> settled,
                       std::function<void(Key, int)> prefetch) {
    settled_ = std::move(settled);
    settled_prefetch_ = std::move(prefetch);
  }

  void Start() { executor_.Start(); }
  void Stop() { executor_.Stop(); }
  size_t RunQueued(TxnId held = 0) { return executor_.RunQueued(held); }
  // Tasks waiting for an LTX thread (LtxExecutor::queued). Any thread.
  size_t queued_tasks() const { return executor_.queued(); }

  // Epoch boundaries. BeginEpoch applies the timeouts that fall at `epoch`;
  // EndEpoch fixes what each LTX begun in `epoch` will find pending and
  // starts it. `read_only_snapshot` is the snapshot of this epoch's ROs.
  void BeginEpoch(Epoch epoch, Epoch read_only_snapshot, std::vector<Action>* actions);
  void EndEpoch(Epoch epoch);
  // A resolution (install or abort of an active LTX) happened in the epoch
  // being admitted: it counts as a read-write epoch.
  bool resolved_this_epoch() const { return resolved_this_epoch_; }

  // A begin record at its place in the log, before OnRecord: true if the
  // LTX runs as one locked txn at its begin position through the RW lane
  // instead of entering this lane (docs/ltx.md, "Locked at its begin"):
  // its procedure reads only declared keys (Application::ReadsDeclared),
  // its declared read area lies inside its write area, the two hold at
  // most `max_locked_keys` keys, and (record protocol only) no LTX active
  // at this position has an area that meets its write area.
  // A function of the log (the record, the application, the lane's state
  // here), so every partition, replica and replay decides alike.
  bool LocksAtBegin(const Txn& begin) const;
  // The part of LocksAtBegin that the begin record alone decides (all but
  // the active LTXs' areas). The client port asks it before sequencing: a
  // begin record (LTX_BEGIN) it says no to surely counts against
  // max_active_ltx.
  static bool LockableAtBegin(const Application& app, const Txn& begin,
                              uint64_t max_locked_keys);
  // An LTX record at its place in the log (`work` stays the scheduler's,
  // but a begin's Txn is taken out of its batch: the lane keeps it).
  void OnRecord(const TxnWork& work, std::vector<Action>* actions);
  // A short RW txn at its position: true if an active LTX's WP area covers
  // one of its keys; then the caller hands it over with Defer.
  bool Covers(const TxnWork& work) const;
  void Defer(std::unique_ptr<TxnWork> work);
  // A read-only txn (its read_version set): true if it must wait for LTXs
  // to resolve (the caller hands it over with Park); otherwise its
  // overrides are filled and it runs as usual.
  bool MustPark(TxnWork* work);
  void Park(std::unique_ptr<TxnWork> work);

  // A read request for an LTX (from its origin, any partition).
  void OnReadRequest(LtxReadRequest&& request);
  // publish_epoch advanced: read tasks waiting for it go to the LTX threads.
  void OnPublish(Epoch published);
  // Locks were released: a read task waiting for its snapshot whose every
  // key (its keys and every key of its scans) has settled since
  // (RwLane::Settled) goes to the LTX threads without waiting for the
  // whole epoch's publication. Keys settle for good (every txn of the
  // snapshot's epoch or before asked for its locks already), so each task
  // is checked from where it stopped.
  void ServeSettled();
  // Whether an LTX in place whose procedure has not finished is placed at
  // or before `epoch`: that epoch's publication waits for its run, so the
  // scheduler lets read-only txns of keys that settled go before it.
  bool HoldsPublication(Epoch epoch) const;
  // The same, for locked runs only (LTXs in place whose procedure runs on
  // a worker under their install's locks, reads declared): the scheduler
  // admits further behind those (design.md, "Admission").
  bool LockedRunHoldsPublication(Epoch epoch) const;
  // Whether some unresolved LTX reads its snapshot round by round (on an
  // LTX thread, or by the record protocol): every LTX but a locked run,
  // whose reads wait only for txns of its begin epoch and before. The
  // scheduler keeps admission near publication while one is.
  bool SnapshotReaderUnresolved() const;
  // A participant's share of a long scan was served; a scan begun here
  // has its result.
  void OnScanServed(TxnId id);
  void OnScanFinished(TxnId id) { scans_here_.erase(id); }

  // Snapshots this lane's readers still need; and drops commit values and
  // resolved LTXs no reader can need any more (`read_only_snapshot`: the
  // snapshot of ROs admitted from now on).
  void CollectPins(std::vector<Epoch>* pins) const;
  void Forget(Epoch read_only_snapshot);

  // Origin: LTX `record.ltx_id` finished with this commit record, not yet
  // sequenced. Later LTXs' reads here may take its writes before it is
  // resolved (early reads: their commit records name it, and install only
  // if it does). Read-only txns and deferred short txns still wait for its
  // resolution.
  void OnFinished(std::shared_ptr<const Txn> record);

  // A reply from a participant, for an LTX or scan that started here.
  void OnReadReply(LtxReadReply&& reply) { executor_.OnReply(std::move(reply)); }
  // Partition `p` restarted (its node said hello again, or a heartbeat
  // came from a new incarnation): the requests it had not answered went
  // with it, so LTXs begun here ask it again. Any thread.
  void OnPartitionRestarted(PartitionId p) { executor_.AskAgain(p); }

  // Checkpoints (scheduler thread). SaveState: right after EndEpoch of the
  // checkpoint epoch, before the next BeginEpoch; the bytes are an
  // LtxLaneState. RestoreState: on a fresh lane, before Start and before
  // any epoch; false (with `error` saying why, and the lane left fresh) for
  // bytes that are not a state this lane can take.
  // A parked RO's reads of this partition at its snapshot go into the
  // state: call SaveState once SaveStateReady() (every parked RO's
  // snapshot is published here; true once the checkpoint epoch itself is
  // published). Before that, those ROs are saved without their reads and
  // would read the checkpoint's state after a restart (logged as an error).
  // `unread`: requests that reached the partition and that OnReadRequest
  // has not seen yet (the scheduler's inbox); the restored lane takes them up.
  bool SaveStateReady() const;
  std::string SaveState(const std::vector<LtxReadRequest>& unread = {}) const;
  bool RestoreState(const std::string& bytes, std::string* error);
  // A restarted partition (after RestoreState, or on a fresh lane when
  // there was no checkpoint): epochs <= `epoch` are replayed (they were
  // sequenced before the restart), and the first epoch after them aborts
  // what lost its procedure (AfterRestart). Without it, only the epochs up
  // to a restored checkpoint count as replayed.
  void SetReplayThrough(Epoch epoch) {
    replay_through_ = std::max(replay_through_, epoch);
    restart_pending_ = true;
  }

  // Replicated input (origin_follows_leadership): this node leads its
  // partition's group and its sequencer starts at `first_epoch` (0: it no
  // longer leads). It is the origin of the partition's LTXs begun at
  // `first_epoch` or later; at that epoch the lane sequences the abort
  // (failover, retryable) of every unresolved LTX of the partition begun
  // before it, whose procedure ran on a node that no longer leads
  // (TakeOver). Any thread (the consensus consumer's).
  void SetOrigin(Epoch first_epoch) { origin_from_.store(first_epoch); }

  // Locked run (in place, docs/ltx.md): the install `work` of an LTX that
  // runs locked holds its area's locks. True if its procedure can run now
  // (its declared reads outside its area are readable at its snapshot): the
  // install is filled in and goes to a worker. Otherwise the lane keeps it
  // and hands it over by TakeReadyInstalls once they are.
  bool LockedRunReady(TxnWork* work);
  // A locked run's install finished on its worker: its record is the LTX's
  // outcome. A commit's locks went already, once its writes were in the
  // store; the LTX counts as finished only from here.
  void OnLockedRunDone(const TxnWork& work);
  // A locked run's procedure read something it had not declared: it runs
  // on an LTX thread instead, its install keeping the locks.
  void OnGivenBack(TxnWork* work);

  // In place: the installs whose writes became known while they already
  // held their locks, for the scheduler to run now.
  void TakeReadyInstalls(std::vector<TxnWork*>* ready) {
    ready->insert(ready->end(), ready_installs_.begin(), ready_installs_.end());
    ready_installs_.clear();
  }

  // The outcomes of LTXs begun here under a client request id, for their
  // clients' retries (ltx_outcomes.h): Ask from any thread.
  LtxOutcomes& outcomes() { return outcomes_; }
  // An LTX begun at this partition under a request id, in log order, and
  // its resolution: kept for its client's retries (on every replica,
  // whether it acts or not). NoteBegan on the scheduler thread;
  // NoteResolved there too, or on the worker that ran an LTX as one locked
  // txn (calvin mode's, and paxflow's locked at its begin; the table has
  // its own lock).
  void NoteBegan(const Txn& begin);
  void NoteResolved(const Txn& begin, const TxnOutcome& outcome);

  size_t active() const { return unresolved_.size() + placed_.size(); }
  // LTXs and long scans begun at this partition, not resolved yet.
  size_t unresolved_here() const;
  size_t deferred() const { return deferred_.size(); }
  size_t parked() const { return parked_.size(); }

 private:
  // kPlaced: in place, at its serialization point (its install holds its
  // write area's locks) while its procedure has not finished.
  enum class State { kActive, kHeld, kInstalled, kAborted, kPlaced };
  struct Entry {
    TxnId id = 0;
    Epoch begin_epoch = 0;
    std::shared_ptr<const Txn> begin;
    KeyArea area;
    State state = State::kActive;
    Epoch resolved_epoch = 0;
    std::shared_ptr<const Txn> commit;
    // Into `commit`: this partition's keys, ascending, each once (the last
    // write of a key wins). A sorted vector: thousands per LTX.
    std::vector<std::pair<Key, const LtxWrite*>> local_writes;
    std::vector<TxnId> pending;  // LTXs pending for this one (after EndEpoch of its begin)
    bool pending_known = false;
    bool origin_here = false;
    // Its writes are known before it is resolved: it finished here (its
    // origin; `finished_record`), or its commit record is held. LTX
    // readers may then read them early; `local_writes` points into the
    // record that gave them, and (record protocol) they are in `written_`.
    bool finished = false;
    std::shared_ptr<const Txn> finished_record;
    // The record `local_writes` points into (`commit` or `finished_record`).
    std::shared_ptr<const Txn> writes_record;
    bool indexed = false;  // its local writes are in written_ (record protocol)
    // In place (options_.in_place, then every LTX is): its write area's
    // keys here, locked by `install` from its serialization point until its
    // writes are in.
    std::vector<Key> lock_keys;
    TxnWork* install = nullptr;  // owned by its epoch; until the writes are handed over
    // A locked run: its declared reads outside its area here (ascending),
    // and how many of them are known readable (they stay so).
    bool locked_run = false;
    std::vector<Key> declared_reads;
    size_t readable_reads = 0;
    std::string abort_reason;    // its procedure aborted (in place)
    int64_t finished_us = 0;
    int64_t commit_seen_us = 0;
  };
  // Someone waiting for LTXs to resolve: a deferred txn, a parked RO, a
  // parked LTX read task or scan share.
  struct Waiter {
    uint64_t id = 0;
    uint32_t waiting = 0;  // unresolved LTXs it waits for
  };
  struct Deferred {
    std::unique_ptr<TxnWork> work;
    uint32_t waiting = 0;
    bool guarded = false;  // a guard was sequenced for it
  };
  // A reader's request under the read rule: an RO (snapshot S: LTXs pending
  // at S), an LTX's reads (its pending list), a long scan's share (as an RO).
  struct ReadPlan {
    Epoch snapshot = 0;
    const std::vector<TxnId>* pending = nullptr;  // LTX reader; else by snapshot
  };
  struct ParkedRead {
    std::unique_ptr<TxnWork> work;          // a parked RO, or
    // A parked RO restored from a checkpoint: its reads of this partition's
    // keys at its snapshot, saved then (ascending positions).
    std::vector<ReadOverride> snapshot_reads;
    std::unique_ptr<LtxReadTask> task;      // a parked read task
    std::vector<TxnId> ltx_pending;         // the LTX reader's pending list
    uint32_t waiting = 0;
  };
  struct Guard {
    KeyArea keys;
    std::set<TxnId> waiting_on;  // LTXs begun before the guard, unresolved
  };

  // Record handlers.
  void Begin(std::shared_ptr<const Txn> begin, Epoch epoch);
  void Commit(const Txn& record, Epoch epoch, std::vector<Action>* actions);
  void Abort(TxnId id, const std::string& reason, Epoch epoch, uint64_t anchor,
             std::vector<Action>* actions);
  void ApplyGuard(const Txn& record);
  void StartScanShare(const TxnWork& work);

  // Resolution machinery: installs or aborts `entry` at (epoch, anchor,
  // chain), then releases what waited for it, then the held installs it
  // frees, each with its own releases.
  void Resolve(Entry* entry, bool install, Epoch epoch, uint64_t anchor, uint64_t* chain,
               std::vector<Action>* actions);
  void Install(Entry* entry, Epoch epoch, std::vector<Action>* actions);
  // In place: at the start of the epoch after its begin, it takes its
  // install's locks (Place); once its procedure finished, the install gets
  // the writes (or none, and the abort is reported) and runs (Settle).
  void Place(Entry* entry, Epoch epoch, std::vector<Action>* actions);
  void Settle(Entry* entry);
  // In place: whether it runs locked (options, application, its declared
  // reads), and its declared reads outside its area.
  void PlanLockedRun(Entry* entry) const;
  // In place, once its pending list is known: its procedure starts on an
  // LTX thread, unless it runs locked (from its install).
  void StartInPlace(const Entry& entry);
  // A locked run: whether every declared read outside its area is readable
  // at its snapshot (no pending LTX that covers it still runs; a pending
  // one wrote it, or it settled); and filling its install's reads.
  bool LockedReadsReady(Entry* entry);
  void PrepareLockedRun(Entry* entry);
  // Locked runs whose reads became readable go to ready_installs_.
  void RunReadyLockedRuns();
  // Its procedure runs or may still be asked to read: unresolved, or placed.
  static bool Running(const Entry& entry) {
    return Unresolved(entry) || entry.state == State::kPlaced;
  }
  // Every running LTX (unresolved_, then placed_).
  template <typename Fn>
  void ForEachRunning(Fn fn) const {
    for (TxnId id : unresolved_) fn(ltxs_.at(id));
    for (TxnId id : placed_) fn(ltxs_.at(id));
  }
  bool HeldBack(const Entry& entry) const;
  // An LTX it read early from (its commit record's read_from) was aborted
  // (or is unknown here): it must abort too. Its id into `*culprit`.
  bool ReadFromAborted(const Entry& entry, TxnId* culprit) const;
  // Installs a commit record whose install is due, or aborts it (cascade)
  // if an LTX it read early from was aborted.
  void InstallOrCascade(Entry* entry, Epoch epoch, uint64_t anchor, uint64_t* chain,
                        std::vector<Action>* actions);
  void IndexWrites(Entry* entry);
  void UnindexWrites(Entry* entry);
  void DropWrites(const Entry& entry);  // from written_, whether indexed or not
  void TakeLocalWrites(Entry* entry, std::shared_ptr<const Txn> record);
  // `entry`'s local write of `key`, or null.
  static const LtxWrite* LocalWrite(const Entry& entry, Key key);
  // Serves an LTX read task whose every covering LTX has resolved or finished.
  void ServeParkedTask(ParkedRead read);
  // Records the time since `since_us` as LTX life stage `stage`.
  void RecordWait(int stage, int64_t since_us);
  // Its writes are known (finished, or its commit record held): index them
  // and let LTX reads parked on it go on.
  void MarkFinished(Entry* entry);
  void ReportAbort(const Txn& begin, const std::string& reason, Epoch snapshot);
  void ReportLocalInstall(Entry* entry);

  // The read rule.
  bool KeyCoveredUnresolved(Key key, const ReadPlan& plan, std::vector<TxnId>* covering) const;
  bool RangeCoveredUnresolved(Key lo, Key hi, const ReadPlan& plan,
                              std::vector<TxnId>* covering) const;
  // The value a reader sees for `key` from the LTXs pending for it: false
  // if none of them wrote it (read the snapshot).
  // An LTX reader may get a value from a finished, unresolved LTX: its id
  // goes into `*read_from` (when given).
  bool ChosenValue(Key key, const ReadPlan& plan, bool* found, std::string* value,
                   std::vector<TxnId>* read_from = nullptr) const;
  // The same write itself (null: none), and the entry it belongs to.
  const LtxWrite* ChosenWrite(Key key, const ReadPlan& plan, const Entry** from,
                              std::vector<TxnId>* read_from) const;
  // Whether `entry`'s writes may be read by this reader: installed, or (for
  // an LTX reader) finished.
  bool WritesVisible(const Entry& entry, const ReadPlan& plan) const;
  // Active or held: neither installed nor aborted yet.
  static bool Unresolved(const Entry& entry) {
    return entry.state == State::kActive || entry.state == State::kHeld;
  }
  // Whether a pending `entry` still blocks this reader: unresolved and, for
  // an LTX reader, not finished.
  bool Blocks(const Entry& entry, const ReadPlan& plan) const;
  bool IsPendingFor(const Entry& entry, const ReadPlan& plan) const;
  // `snapshot_reads`: a restored RO's saved reads, for keys no LTX chose.
  void FillOverrides(TxnWork* work,
                     const std::vector<ReadOverride>* snapshot_reads = nullptr) const;
  void PrepareTask(LtxReadTask* task, const ReadPlan& plan) const;
  void ServeWhenPublished(std::unique_ptr<LtxReadTask> task);
  // Whether every key `task` reads here (its keys, every key of its scans)
  // has its final value at its snapshot (`settled_`); advances the task's
  // cursors past what settled.
  bool Settled(LtxReadTask* task) const;
  // Scans with more keys on this partition are not checked key by key:
  // they wait for publication.
  static constexpr uint64_t kMaxSettledScanKeys = uint64_t{1} << 17;
  void ParkOn(const std::vector<TxnId>& ltxs, uint64_t waiter);
  void ServeRequest(LtxReadRequest&& request);
  void ReplyError(const LtxReadRequest& request, const std::string& error);
  void ReplyError(TxnId ltx, uint32_t round, PartitionId reply_to, const std::string& error);

  // Restarts. Whether `epoch` is replayed (no procedures, records, results):
  // with a checkpoint or without one.
  bool Replaying(Epoch epoch) const { return epoch <= replay_through_; }
  // Whether this lane sequences records and reports results at `epoch`.
  // With origin_follows_leadership, only from the epoch its leadership
  // starts at (epochs before it were sequenced by another leader).
  bool Acts(Epoch epoch) const {
    if (!options_.runs_procedures || Replaying(epoch)) return false;
    if (!options_.origin_follows_leadership) return true;
    const Epoch from = origin_from_.load();
    return from != 0 && epoch >= from;
  }
  // Sequences the abort of every LTX begun here before `before` that has
  // neither a commit record nor an abort yet, with reason `reason` and
  // `why` (its procedure's state is gone, or ran on another node): the
  // first of commit and abort in the log wins. How many.
  size_t AbortOrphans(Epoch before, int reason, const std::string& why);
  // The guards the log may owe (one submitted before a restart or by a
  // deposed leader may never have been sequenced). How many.
  size_t GuardAgain();
  // Replicated input: the first epoch of this node's leadership aborts the
  // LTXs begun under earlier leaders (SetOrigin).
  void TakeOver(Epoch epoch);
  // The first epoch after the replay: abort what lost its procedure, guard
  // again, answer the reads owed from before the restart.
  void AfterRestart(Epoch epoch);
  void SubmitGuard(const Txn& txn);
  void AnswerOwedReads();
  // The snapshot reads a parked RO owes, read now (SaveState).
  void SaveSnapshotReads(const TxnWork& work, LtxStateParkedRead* out) const;
  Entry* Find(TxnId id);
  const Entry* Find(TxnId id) const;
  std::vector<Key> KeysOf(const Txn& txn) const;

  const LtxLaneOptions options_;
  const Application* const app_;
  NodeStats* const stats_;
  ResultSink* const results_;
  RecordSubmitter* const records_;
  PeerSender* const peers_;
  const size_t stats_slot_;
  LtxExecutor executor_;
  ParticipantPlanner planner_;

  std::map<TxnId, Entry> ltxs_;           // by id = begin order
  std::set<TxnId> unresolved_;            // active or held
  std::set<TxnId> placed_;                // in place, procedure not finished
  std::vector<TxnWork*> ready_installs_;  // TakeReadyInstalls
  std::set<TxnId> locked_waiting_;        // locked runs holding locks, reads not readable yet
  // The WP areas of running LTXs (record protocol only: in place nothing
  // is deferred, and a reader asks its few pending LTXs in turn).
  AreaIndex areas_;
  // For each key a known installed LTX wrote on this partition, those
  // LTXs (ascending): where readers look for the values they must see
  // (record protocol only; in place, ChosenWrite asks the pending LTXs).
  FlatKeyMap<SmallIdList> written_;
  std::map<TxnId, std::vector<uint64_t>> waiters_;  // LTX -> waiter ids (deferred, parked)
  std::map<uint64_t, Deferred> deferred_;           // waiter id -> deferred txn
  std::map<uint64_t, ParkedRead> parked_;           // waiter id -> parked reader
  uint64_t next_waiter_ = 1;
  std::vector<Guard> guards_;
  // Long scans started here, for their timeouts: the snapshot, and the
  // epoch being admitted when it was published here (0: not yet).
  struct ScanClock {
    Epoch snapshot = 0;
    Epoch readable_at = 0;
    // Ran out of time: its failure is queued for an LTX thread to report.
    // It stays listed (unresolved_here) until that report is made.
    bool failing = false;
  };
  std::map<TxnId, ScanClock> scans_here_;
  std::multiset<Epoch> scan_shares_;      // snapshots of scan shares not yet served
  std::map<TxnId, Epoch> scan_share_of_;  // scan id -> its snapshot, until served
  std::multimap<Epoch, std::unique_ptr<LtxReadTask>> unpublished_;  // by snapshot
  std::map<TxnId, std::vector<LtxReadRequest>> early_requests_;    // LTX not begun here yet
  Epoch published_ = 0;
  Epoch ended_epoch_ = 0;       // the newest epoch EndEpoch saw
  Epoch current_epoch_ = 0;
  bool resolved_this_epoch_ = false;
  std::vector<TxnId> begun_this_epoch_;
  mutable std::vector<TxnId> scratch_covering_;

  // Restarts.
  Store* const store_;
  const size_t store_slot_;       // SaveState's snapshot reads
  bool restored_ = false;         // RestoreState ran
  Epoch restored_at_ = 0;         // the checkpoint epoch: older snapshots are gone
  Epoch replay_through_ = 0;
  bool restart_pending_ = false;  // AfterRestart has not run yet
  // Replicated input: the first epoch of this node's current leadership
  // (0: it does not lead), and the one TakeOver last ran for.
  std::atomic<Epoch> origin_from_{0};
  Epoch taken_over_from_ = 0;
  struct OwedRead {
    TxnId ltx = 0;
    uint32_t round = 0;
    PartitionId reply_to = 0;
  };
  std::vector<OwedRead> owed_;    // from before the restart, not answered yet
  std::vector<LtxReadRequest> unread_;  // had reached it before the restart, not taken up yet
  std::function<bool(Key, Epoch)> settled_;
  std::function<void(Key, int)> settled_prefetch_;
  LtxOutcomes outcomes_;
};

}  // namespace paxflow
