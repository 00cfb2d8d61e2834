// The tests' oracle: executes the txns recorded in input logs one at a
// time, in global order, on a plain map. A correct engine reaches the
// same state digest, and its read-only results match this execution.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "applications/workload.h"
#include "common/types.h"
#include "tests/result_log.h"

namespace paxflow::testing {

struct SerialResult {
  std::string error;
  uint64_t digest = 0;  // of the whole database after the last txn
  uint64_t txns = 0;
  Epoch last_epoch = 0;
  // Read-only txns' checksums (TxnOutcome::checksum) when executed
  // at their position in the order (Calvin's semantics)...
  std::map<TxnId, uint64_t> ro_at_position;
  // ... and at the start of their epoch (PaxFlow's: an RO of epoch e is
  // serialized before that epoch's read-write txns).
  std::map<TxnId, uint64_t> ro_at_epoch_start;
  // Digest of the database after each epoch.
  std::map<Epoch, uint64_t> digest_after_epoch;
  // Epochs that held read-write work (what ro_read_version is chosen from).
  std::vector<Epoch> epochs_with_rw;
  // ro_read_version of an RO sequenced in `epoch`: newest earlier RW epoch.
  Epoch ReadVersionFor(Epoch epoch) const;
};

// Reads every log of `replica` in `dir` (all partitions), merges their txns
// by id, and executes them serially from the application's initial data.
SerialResult SerialExecute(const std::string& dir, const WorkloadParams& workload,
                           uint32_t replica = 0);

// The serialization-order oracle: executes every committed txn (LTXs
// included) one at a time in the order of the positions the engine
// reported, from the application's initial data on `partitions`
// partitions, and checks that each read what it reported (its checksum).
struct OrderResult {
  std::string error;     // the first mismatch, or why nothing could be checked
  uint64_t digest = 0;   // of the database after the last txn
  size_t txns = 0;       // txns executed
  size_t long_txns = 0;  // of them, LTXs and long scans
};
// With `submitted` (every txn submitted, not the LTX lane's records: true
// if it must have a result, false if it may have none, its client gone with
// a crashed process), it also checks that none has two results, that each
// one that must has one, and that no result is for a txn never submitted.
OrderResult ExecuteInPositionOrder(const WorkloadParams& workload, uint32_t partitions,
                                   std::vector<ResultLog::Result> results,
                                   const std::map<TxnId, bool>* submitted = nullptr);
// What ExecuteInPositionOrder's `submitted` is for a run without restarts:
// every txn in the input logs of `replica` in `dir` but the LTX lane's
// records (commits, aborts, guards), each needing a result. Empty, with
// `error` set, if the logs cannot be read.
std::map<TxnId, bool> SubmittedTxns(const std::string& dir, uint32_t replica, std::string* error);

}  // namespace paxflow::testing
