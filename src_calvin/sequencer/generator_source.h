// The embedded load generator (Calvin's way of reaching peak throughput):
// fills each batch from the application's generator. A node's generators
// (one per sequencer) share one InflightWindow, which keeps the node's
// generated txns that have not finished below a bound, so queues stay
// bounded when the engine is slower than the offered load.
#pragma once
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "applications/application.h"
#include "sequencer/txn_source.h"

namespace paxflow {

// Threads: Claim from any sequencer thread.
class InflightWindow {
 public:
  // `limit`: most unfinished generated txns (0: unbounded); `completed`
  // returns how many of the node's generated txns have finished so far
  // (empty: the window counts them itself, as its owner calls Finished);
  // while `behind` (if given) returns true, the window has no room
  // whatever its limit: the engine that runs these txns is behind.
  // `takes_room` (if given) says which txns the window holds at all: the
  // others pass without a claim, and their results must not be counted.
  InflightWindow(uint64_t limit, std::function<uint64_t()> completed,
                 std::function<bool()> behind = {},
                 std::function<bool(const Txn&)> takes_room = {});
  // Room for at most `want` more txns: how many the caller may generate.
  size_t Claim(size_t want);
  bool behind() const { return behind_ && behind_(); }
  bool TakesRoom(const Txn& txn) const { return !takes_room_ || takes_room_(txn); }
  // Claimed but not generated after all: room again.
  void Release(size_t count);
  // One txn that took room has finished (a window without `completed`;
  // any thread).
  void Finished() { finished_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t limit() const { return limit_; }

 private:
  uint64_t Done() const;

  const uint64_t limit_;
  std::function<uint64_t()> completed_;
  std::function<bool()> behind_;
  std::function<bool(const Txn&)> takes_room_;
  std::atomic<uint64_t> generated_{0};
  std::atomic<uint64_t> finished_{0};
};

// Generated txns to submit again: OLLP resubmits a txn whose reads at its
// position differed from its reconnaissance (calvin mode's dependent LTXs,
// short dependent txns in both modes). Any thread.
class ResubmitQueue {
 public:
  void Push(Txn txn) {
    std::lock_guard<std::mutex> lock(mu_);
    txns_.push_back(std::move(txn));
  }
  bool Pop(Txn* txn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (txns_.empty()) return false;
    txn->Swap(&txns_.front());
    txns_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::deque<Txn> txns_;
};

// Txns in `resubmit` (OLLP restarts) are sequenced again before new ones;
// planning a dependent txn (its reconnaissance) is PlanningSource's, which
// wraps this one as it wraps the client port. Used by its sequencer's
// thread only.
class GeneratorSource : public TxnSource {
 public:
  // `window` (shared by the node's generators; null: unbounded), `resubmit`
  // (null: none), `ltx_window` (the node's generated LTXs and long scans;
  // null: unbounded) and `ltx_share_window` (those of them it says take
  // its room; null: none) outlive this. An LTX drawn while either window
  // is full (or behind) is held back, in the order drawn, and goes once
  // there is room in both; with kMaxHeld held the generator stops until
  // there is. So the mix stays the one asked for, and when LTXs come
  // faster than the LTX lane runs them the whole load slows to its pace,
  // instead of the lane's queue growing without bound.
  GeneratorSource(std::unique_ptr<TxnGenerator> generator, InflightWindow* window,
                  ResubmitQueue* resubmit = nullptr, InflightWindow* ltx_window = nullptr,
                  InflightWindow* ltx_share_window = nullptr);
  size_t Fill(size_t max, int64_t now_us, Batch* batch) override;

  static constexpr size_t kMaxHeld = 16;

  // Fills that stopped with kMaxHeld LTXs held (an LTX window full), and
  // of those, the ones that stopped while the window was behind
  // (InflightWindow::behind): how often the LTX lane's pace bounded the
  // load. Written by the sequencer's thread, read by any.
  uint64_t ltx_window_full() const { return ltx_window_full_.load(std::memory_order_relaxed); }
  uint64_t ltx_lane_behind() const { return ltx_lane_behind_.load(std::memory_order_relaxed); }

 private:
  // Room for `txn` in every LTX window that holds it, or none taken.
  bool ClaimLtxRoom(const Txn& txn);

  std::unique_ptr<TxnGenerator> generator_;
  InflightWindow* const window_;
  ResubmitQueue* const resubmit_;
  InflightWindow* const ltx_window_;
  InflightWindow* const ltx_share_window_;
  std::deque<Txn> held_;  // LTXs drawn while an LTX window was full, oldest first
  std::atomic<uint64_t> ltx_window_full_{0};
  std::atomic<uint64_t> ltx_lane_behind_{0};
};

}  // namespace paxflow
