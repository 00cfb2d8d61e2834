// An application: its stored procedures, its initial data and its embedded
// load generator. Procedures are deterministic functions of (txn, values
// read); that is what lets every replica and every replay agree.
// Applications are immutable after construction and shared by all threads.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/types.h"
#include "txn.pb.h"

namespace paxflow {

// Values read by a txn, by position: its read_set, then its read_write_set.
// Filled by the engine (local reads, then remote ones); owned by one thread.
class ReadValues {
 public:
  void Reset(size_t positions);
  void Set(size_t position, std::string_view value);
  void SetMissing(size_t position);
  bool Has(size_t position) const { return state_[position] != kUnset; }
  bool Found(size_t position) const { return state_[position] == kFound; }
  std::string_view Get(size_t position) const {
    return std::string_view(arena_.data() + offset_[position], length_[position]);
  }
  size_t size() const { return state_.size(); }
  size_t filled() const { return filled_; }

 private:
  enum : uint8_t { kUnset = 0, kFound = 1, kMissing = 2 };
  std::string arena_;
  std::vector<uint32_t> offset_, length_;
  std::vector<uint8_t> state_;
  size_t filled_ = 0;
};

// Writes a procedure makes, in the order it made them (last one wins),
// and the keys it deletes (applied after every write).
class WriteSet {
 public:
  void Clear() {
    keys_.clear();
    offset_.clear();
    arena_.clear();
    deletes_.clear();
  }
  void Delete(Key key) { deletes_.push_back(key); }
  const std::vector<Key>& deletes() const { return deletes_; }
  void Put(Key key, std::string_view value) {
    keys_.push_back(key);
    offset_.push_back(static_cast<uint32_t>(arena_.size()));
    arena_.append(value.data(), value.size());
  }
  // Reserves `size` bytes for the value of `key` and returns them to fill.
  char* PutUninitialized(Key key, size_t size) {
    keys_.push_back(key);
    offset_.push_back(static_cast<uint32_t>(arena_.size()));
    arena_.resize(arena_.size() + size);
    return arena_.data() + offset_.back();
  }
  size_t size() const { return keys_.size(); }
  Key key(size_t i) const { return keys_[i]; }
  std::string_view value(size_t i) const {
    size_t end = i + 1 < offset_.size() ? offset_[i + 1] : arena_.size();
    return std::string_view(arena_.data() + offset_[i], end - offset_[i]);
  }

 private:
  std::vector<Key> keys_;
  std::vector<uint32_t> offset_;
  std::string arena_;
  std::vector<Key> deletes_;
};

// A read of a recent state outside the order (OLLP's reconnaissance):
// false if `key` has no value, or cannot be read here.
using ReconRead = std::function<bool(Key key, std::string* value)>;
// Visits every (key, value) of a partition's state.
using StateScan = std::function<void(const std::function<void(Key, std::string_view)>&)>;

// A txn's place in the serialization order, compared lexicographically
// (txn.proto's Position): (e, id, 0, 0) for a txn at its own place in epoch
// e; (N + 1, 0, 0, begin id) for an LTX begun in N; (E, anchor, chain, id)
// for a txn released by a resolution in epoch E.
struct SerialPosition {
  uint64_t epoch = 0, anchor = 0, chain = 0, txn = 0;
  bool operator<(const SerialPosition& o) const {
    if (epoch != o.epoch) return epoch < o.epoch;
    if (anchor != o.anchor) return anchor < o.anchor;
    if (chain != o.chain) return chain < o.chain;
    return txn < o.txn;
  }
  bool operator==(const SerialPosition& o) const {
    return epoch == o.epoch && anchor == o.anchor && chain == o.chain && txn == o.txn;
  }
};

// What a procedure reports besides its writes, and what the engine adds
// about where and how the txn ran.
struct TxnOutcome {
  bool committed = true;        // false: the procedure's own logic declined (no writes)
  bool invariant_ok = true;     // false: an application check failed (e.g. bank audit)
  uint64_t checksum = 0;        // order-sensitive fold of the values read
  std::string detail;           // for clients and error logs
  // Set by the engine.
  bool aborted = false;         // LTX lane: the txn did not run to commit (see abort_reason)
  std::string abort_reason;
  bool retryable = false;       // submitting it again may succeed (busy, timeout, restart)
  SerialPosition position;
  uint32_t deferrals = 0;       // short txns: times deferred by an LTX's write area
};

// What a long txn's procedure has read in its earlier rounds (the LTX
// lane's procedures read in rounds: each round asks for reads, the engine
// gathers them at the LTX's snapshot, and the next round sees them).
// Filled by the engine; owned by one thread at a time.
class LtxReads {
 public:
  // A point read: false if the key was never asked for.
  bool Get(Key key, bool* found, std::string_view* value) const;
  // Scans in the order they were asked for, across rounds: the keys of the
  // range holding a value, ascending, with their values.
  using Rows = std::vector<std::pair<Key, std::string>>;
  size_t scans() const { return scans_.size(); }
  const Rows& Scan(size_t i) const { return scans_[i]; }

  // A later SetPoint may move the bytes a Get returned: a procedure's round
  // reads them, the next round's reads arrive after it.
  void SetPoint(Key key, bool found, std::string_view value);
  void Reserve(size_t points, size_t bytes = 0) {
    Grow(count_ + points);
    data_.reserve(data_.size() + bytes);
  }
  void AddScan(Rows rows) { scans_.push_back(std::move(rows)); }
  size_t points() const { return count_; }
  // Pushed-down scans (Application::SummarizesScans): one summary per
  // partition that summarized its share, in partition order. Its rows are
  // then not in Scan(i).
  void AddSummary(std::string summary) { summaries_.push_back(std::move(summary)); }
  const std::vector<std::string>& summaries() const { return summaries_; }

 private:
  // Values live back to back in `data_` (an LTX reads thousands of keys:
  // one allocation for all of them, not one each), and the points in one
  // open-addressing table (a node each, as in a std::unordered_map, cost
  // the LTX thread thousands of small frees per LTX, which glibc then
  // consolidated on its next large allocation).
  struct Point {
    Key key = 0;
    bool used = false;
    bool found = false;
    uint32_t size = 0;
    size_t offset = 0;
  };
  // The slot holding `key`, or the empty slot where it would go.
  size_t Slot(Key key) const;
  // Room for `points` points at most half full.
  void Grow(size_t points);
  std::vector<Point> table_;  // size a power of two, or empty
  size_t count_ = 0;
  std::string data_;
  std::vector<Rows> scans_;
  std::vector<std::string> summaries_;
};

// A share of a long scan's rows, for Application::SummarizeScans: visit(i,
// from, to, row) calls row(key, value) for each row of scan i (of the
// declared ranges) in the share whose key is in [from, to], ascending (so
// a summary skips unread what it knows cannot matter, and may read a range
// piece by piece); the value is valid during the call only. Each call
// costs a positioning in the store: a few per range, not one per row.
using ScanRow = std::function<void(Key key, std::string_view value)>;
using ScanVisit = std::function<void(size_t scan, Key from, Key to, const ScanRow& row)>;

// What a partition keeps from one summary of its share to the next
// (Application::SummarizeScans), so that rows the application knows can no
// longer change are not read again. Its content is the application's; the
// engine only keeps it (one per partition) and says which snapshot a share
// is.
class ScanMemo {
 public:
  virtual ~ScanMemo() = default;
};
struct ScanMemoUse {
  // Null: no memo (rows gathered elsewhere: calvin mode, the oracle, replay).
  std::unique_ptr<ScanMemo>* memo = nullptr;
  // The share is the committed state after this epoch: a memo learnt at an
  // epoch up to it holds for it.
  Epoch snapshot = 0;
  // False: some of the share's values were chosen from LTXs not yet
  // resolved (they may still abort), so the memo must not learn from it.
  bool may_learn = false;
};

// One round of a long txn's procedure: more reads, or the end (writes and
// deletes, or an abort, with what to tell the client).
struct LtxRound {
  std::vector<Key> reads;        // non-empty (or scans): another round follows
  std::vector<KeyRange> scans;   // inclusive ranges
  WriteSet writes;               // in order; the last write of a key wins
  std::vector<Key> deletes;      // applied after every write
  bool abort = false;            // the procedure gives up: nothing is written
  // With abort: what its plan (a reconnaissance, OLLP) declared went stale;
  // it is planned again and resubmitted (a "recon" abort, retryable).
  bool restart = false;
  std::string reason;
  TxnOutcome outcome;            // checksum, detail, invariant_ok
  bool done() const { return reads.empty() && scans.empty(); }
};

// Fills one generated txn at a time; one per sequencer, used by its thread only.
class TxnGenerator {
 public:
  virtual ~TxnGenerator() = default;
  // Sets procedure, class-relevant key sets and args; the sequencer sets ids.
  virtual void Next(Txn* txn) = 0;
};

// Receives the initial data of one partition.
class Loader {
 public:
  virtual ~Loader() = default;
  virtual void Put(Key key, std::string_view value) = 0;
};

class Application {
 public:
  virtual ~Application() = default;
  virtual const char* name() const = 0;
  // Keys [0, DenseKeys()) exist from the start; stores index them densely.
  virtual uint64_t DenseKeys() const = 0;
  virtual void Load(PartitionId partition, uint32_t partitions, Loader* loader) const = 0;
  virtual void Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
                       TxnOutcome* outcome) const = 0;
  virtual std::unique_ptr<TxnGenerator> NewGenerator(PartitionId partition,
                                                     uint32_t partitions,
                                                     uint64_t seed) const = 0;
  // Name of a procedure id, for logs, summaries and clients.
  virtual const char* ProcedureName(uint32_t procedure) const = 0;
  // The procedures clients may call by name, and their ids.
  virtual std::vector<std::pair<std::string, uint32_t>> Procedures() const = 0;
  // Empty if `txn` (from a client; keys already checked distinct) is a
  // well-formed call of its procedure, else what is wrong with it.
  virtual std::string CheckClientTxn(const Txn& txn) const = 0;

  // The long-transaction lane. A long procedure runs in rounds: round 0
  // sees no reads; each round either asks for reads (and scans) or ends.
  // Like Execute, a deterministic function of the txn and what it read.
  // A procedure that is not a long one runs as an LTX too, in two rounds:
  // its declared keys (read_set, read_write_set), then Execute on them.
  virtual bool IsLongProcedure(uint32_t procedure) const { return false; }
  // A long procedure whose keys come from values it reads (a dependent
  // txn): calvin mode cannot lock what it will read up front, so its
  // generator runs it first on a recent state to learn its reads (OLLP's
  // reconnaissance, long_run.h's Reconnoiter).
  // A short procedure that needs it is planned the same way in both modes
  // (PlanDependent).
  virtual bool NeedsRecon(uint32_t procedure) const { return false; }
  // A long procedure that reads only point keys of its LTX's write area and
  // of its declared read area (no scans): an LTX in place may then run it
  // under its install's locks, on a worker (docs/ltx.md, "Locked run").
  // A hint only: a procedure that reads anything else still gets it.
  virtual bool ReadsDeclared(uint32_t procedure) const { return false; }
  // OLLP for a short dependent txn (NeedsRecon, not an LTX): fills its key
  // lists, and the args its procedure will check at its position, from
  // `read` (a recent state of the generating partition). The procedure
  // declines with outcome.retryable when what it relied on changed; its
  // generator then plans and submits it again. Also called on a txn
  // planned before: it plans it afresh.
  virtual void PlanDependent(Txn* txn, const ReconRead& read) const {}
  // A long procedure whose write area, too, depends on values (TPC-C's
  // Delivery as an LTX): the generator leaves its areas empty and
  // PlanDependent declares them, in both modes (then calvin mode's
  // Reconnoiter its reads); a stale plan restarts it like any OLLP LTX.
  virtual bool PlansLtxAreas(uint32_t procedure) const { return false; }
  // The application's consistency conditions over one partition's whole
  // state (after a run): empty if they hold, else what is violated.
  virtual std::string CheckState(const StateScan& scan) const { return ""; }
  // The result of a txn this node's generator made, at its origin (closed-
  // loop generators, e.g. TPC-C's analytic streams, issue the next then).
  virtual void OnGeneratedResult(const Txn& txn, const TxnOutcome& outcome) const {}
  virtual void ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                           LtxRound* out) const;
  // Push-down: a long scan (an LTX_SCAN of one round over its declared
  // ranges) whose result combines summaries of disjoint shares of its rows.
  // In paxflow mode each partition then summarizes its own share where it
  // reads it (SummarizeScans) and replies with the summary, not the rows;
  // the procedure's round 1 finds them in LtxReads::summaries(). Engines
  // that gather rows (calvin mode, the oracle, replay) pass rows as before,
  // and the procedure summarizes them itself, so its result must not depend
  // on how its rows were split into shares. Deterministic, any thread.
  virtual bool SummarizesScans(const Txn& txn) const { return false; }
  // `memo`: what this partition kept from its earlier summaries, if any.
  virtual std::string SummarizeScans(const Txn& txn, const ScanVisit& visit,
                                     const ScanMemoUse& memo) const {
    return "";
  }
};

}  // namespace paxflow
