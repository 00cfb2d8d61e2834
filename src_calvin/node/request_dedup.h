// Exactly-once client retries under replicated input: which committed txns
// carry a client request id (client_id, client_seq: client.proto
// TxnRequest) that the partition's committed log already holds, so that
// they are dropped before anything runs them.
//
// The decision is a function of the committed log alone. Every member of
// a group feeds it the same committed SequencedEpoch records in the same
// order (Node::OnCommittedEpoch, on the group's consumer thread), from the
// same empty state, so every replica drops the same txns. What it drops
// is removed from the record before the record is logged, run, or sent to
// the other partitions: the input logs, the sequencer log and every replay
// hold only what ran. Only txns that run change the window (a dropped one
// leaves it as it was, recency included), so feeding it a record already
// filtered (the sequencer log's, a peer's) leaves it in the state the
// unfiltered record did: a member restarted on its data dir rebuilds it
// from the copy saved with its checkpoint (Save, Load) and the records of
// its sequencer log after it, and filters on exactly as the others do.
//
// Bounds (memory): per client id, sequence numbers within `window` of its
// highest one (older ones are forgotten); at most `clients` client ids, the
// one seen least recently in log order forgotten first. So at most about
// window * clients remembered ids (the defaults: 1024 * 4096, each ~40
// bytes, in the worst case; a client costs what it used). A txn whose seq
// is `window` or more below its client's highest is dropped and refused
// ("too old": it may have run; a client keeps fewer than `window` txns
// unanswered). A forgotten client's retry is not recognised (it runs).
//
// Only txns that write are deduplicated: one that declares no write (a
// read-only request, e.g. an audit) runs again on a retry and is not
// remembered, so a retry after a lost answer gets its reads.
//
// LTXs (client.proto LtxRequest carries a request id too): the begin
// record of one that writes is held to the window like a txn, so a retry
// whose request id began an LTX before does not begin another. A begun LTX
// may still commit or abort, which this window cannot see: its client is
// answered with the outcome the LTX lane records (scheduler/ltx_outcomes.h).
// A long scan (LTX_SCAN) writes nothing and runs again.
//
// OLLP: a txn planned again after its reconnaissance went stale (attempt
// > 0) replaces the attempt that gave up (which wrote nothing); only
// attempt 0, a client's (re)submission, can be a duplicate.
//
// Threads: one at a time (the group's consumer thread); tests any.
#pragma once
#include <cstdint>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "recovery.pb.h"
#include "txn.pb.h"

namespace paxflow {

class RequestDedup {
 public:
  struct Limits {
    uint64_t window = 1024;   // seqs remembered per client id, below its highest
    uint32_t clients = 4096;  // client ids remembered
  };
  enum class Verdict {
    kNew,        // runs; remembered
    kDuplicate,  // its request id ran already (as txn `original`): dropped
    kTooOld,     // its seq is below the window: dropped, refused
  };
  struct Dropped {
    Txn txn;  // the copy of the first batch that held it
    Verdict verdict = Verdict::kDuplicate;
    uint64_t original = 0;  // kDuplicate: the txn id that ran it
  };

  RequestDedup() : RequestDedup(Limits{}) {}
  explicit RequestDedup(Limits limits);

  // One txn's request id, in log order. `txn_id`: its id in the order
  // (remembered as the original). kDuplicate sets *original.
  Verdict Decide(uint64_t client, uint64_t seq, uint32_t attempt, uint64_t txn_id,
                 uint64_t* original);

  // Removes from every batch of `record` the txns Decide drops (a txn that
  // several batches hold is decided once). Appends each dropped txn to
  // `dropped`; returns how many were dropped. Txns without a request id,
  // those that write nothing, and LTX records other than begins pass
  // untouched.
  size_t Filter(SequencedEpoch* record, std::vector<Dropped>* dropped);
  // Whether `txn`, given a request id, is held to the window: it writes
  // (a txn with a write or read-write key, an LTX's begin record).
  static bool HeldToWindow(const Txn& txn);

  // The whole window, into `out` (all but its epoch, which the caller
  // knows), and back: a loaded window decides as the saved one did.
  void Save(RequestWindow* out) const;
  // Replaces this window; an error (and an empty window) if `in` does not
  // hold a window (repeated ids, seqs without txn ids).
  std::string Load(const RequestWindow& in);

  size_t clients() const { return clients_.size(); }
  size_t remembered() const;  // request ids remembered, over every client
  const Limits& limits() const { return limits_; }

 private:
  struct Client {
    uint64_t highest = 0;
    uint64_t last_seen = 0;                      // log order (tick_) of its last txn
    std::unordered_map<uint64_t, uint64_t> ran;  // seq -> txn id, seqs > highest - window
  };
  void Trim(Client* client) const;

  const Limits limits_;
  uint64_t tick_ = 0;
  std::unordered_map<uint64_t, Client> clients_;
  std::set<std::pair<uint64_t, uint64_t>> by_last_seen_;  // (last_seen, client id)
  std::unordered_map<uint64_t, bool> decided_;  // Filter's scratch: txn id -> dropped
};

}  // namespace paxflow
