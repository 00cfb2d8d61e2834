// The outcomes of the LTXs begun at this partition under a client request
// id, so that a client's retry of one (the committed log dropped it: the
// request id had begun that LTX already, node/request_dedup.h) is told
// what happened to the first attempt: committed, or aborted with its
// reason and whether a new attempt may succeed. Never "applied" for an
// LTX that aborted, and nothing runs twice.
//
// What it holds is a function of the log: the LTX lane of every replica
// notes the same begins in log order (Began) and the same resolutions
// (Resolved: the first of commit and abort, timeouts, busy, cascades, an
// in-place procedure's result, the run of an LTX locked at its begin), so every member that may come to lead
// answers a retry alike. It is saved with the lane's state at a
// checkpoint (Save, Load) and rebuilt by the replay after it, so a member
// restored from a checkpoint answers as the others do.
//
// Bounds: the last `limit` LTXs begun with a request id (by begin order:
// the same ones on every replica, whatever the timing of resolutions); an
// older one is forgotten and a retry of it is told so (kForgotten), as is
// a retry of an LTX a restored lane never heard of (its checkpoint
// predates this table). Waiters: one per retry being answered, gone once
// answered (an LTX always resolves: its commit or abort record, the log's
// timeout, a failover's abort, or its procedure in place).
//
// Threads: Began, Resolved, EpochEnded and Save/Load on the scheduler
// thread (the lane), Resolved also on the worker that ran an LTX locked
// at its begin; Ask on any (the consensus consumer's). One mutex;
// answers are called outside it, on the thread that resolved the question.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "applications/application.h"
#include "common/types.h"
#include "ltx_state.pb.h"

namespace paxflow {

class LtxOutcomes {
 public:
  enum class Known {
    kResolved,   // `outcome` is the LTX's
    kForgotten,  // older than the table keeps, or before a restored checkpoint knew
  };
  using Answer = std::function<void(Known known, const TxnOutcome& outcome)>;

  explicit LtxOutcomes(size_t limit = kDefaultLimit) : limit_(limit ? limit : 1) {}
  static constexpr size_t kDefaultLimit = size_t{1} << 16;

  // Scheduler thread, log order: LTX `ltx` began here under a request id.
  void Began(TxnId ltx);
  // Scheduler thread: `ltx` resolved with `outcome` (committed, or aborted
  // with its reason). Later calls for the same LTX are ignored: the first
  // resolution is the one.
  void Resolved(TxnId ltx, const TxnOutcome& outcome);
  // Scheduler thread: every begin of epochs through `epoch` was seen.
  void EpochEnded(Epoch epoch);
  // Any thread: answers (once) with the outcome of `ltx` when it is known:
  // at once if resolved or forgotten, else when it resolves.
  void Ask(TxnId ltx, Answer answer);

  // Scheduler thread (the lane's SaveState / RestoreState).
  void Save(LtxLaneState* out) const;
  // Replaces the table (waiters kept); an error if `in` is damaged.
  std::string Load(const LtxLaneState& in);

  size_t size() const;
  size_t waiting() const;

 private:
  struct Entry {
    bool resolved = false;
    TxnOutcome outcome;
  };
  std::vector<std::pair<Answer, TxnOutcome>> TakeWaitersLocked(TxnId ltx,
                                                               const TxnOutcome& outcome);

  const size_t limit_;
  mutable std::mutex mu_;
  std::map<TxnId, Entry> ltxs_;  // by begin order; at most limit_
  Epoch ended_ = 0;              // every begin through it was seen
  std::unordered_map<TxnId, std::vector<Answer>> waiters_;
};

// An abort reason (its name, then ": " and why; its code is types.h's
// LtxAbortReasonOf): whether a new attempt may succeed, and the outcome
// the LTX's client is told (by the lane's report, and to a retry of the
// same request id).
bool LtxAbortRetryable(int code);
TxnOutcome LtxAbortOutcome(const std::string& reason);

}  // namespace paxflow
