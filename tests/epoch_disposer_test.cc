// EpochDisposer: finished epochs are freed on its thread once started, at
// once before that and after Stop, and nothing handed over is lost.
#include "scheduler/epoch_disposer.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

namespace paxflow {
namespace {

// An epoch whose one adopted install holds `record`: the epoch's freeing
// drops the last reference, and the deleter notes the thread it ran on.
struct Tracked {
  std::thread::id freed_on;
  bool freed = false;
};

std::unique_ptr<EpochWork> EpochHolding(Tracked* tracked, Epoch epoch) {
  auto work = std::make_unique<EpochWork>();
  work->epoch = epoch;
  work->batches.push_back(std::make_unique<Batch>());
  work->batches.back()->add_txns()->set_id(epoch);
  work->txns.resize(3);
  auto install = std::make_unique<TxnWork>();
  install->install = std::make_unique<LtxInstall>();
  install->install->record = std::shared_ptr<const Txn>(new Txn, [tracked](const Txn* txn) {
    tracked->freed_on = std::this_thread::get_id();
    tracked->freed = true;
    delete txn;
  });
  work->adopted.push_back(std::move(install));
  return work;
}

TEST(EpochDisposerTest, BeforeStartAnEpochIsFreedAtOnceOnTheCallersThread) {
  EpochDisposer disposer;
  Tracked tracked;
  std::vector<std::unique_ptr<EpochWork>> finished;
  finished.push_back(EpochHolding(&tracked, 1));
  disposer.Dispose(&finished);
  EXPECT_TRUE(finished.empty());
  EXPECT_TRUE(tracked.freed);
  EXPECT_EQ(tracked.freed_on, std::this_thread::get_id());
}

TEST(EpochDisposerTest, StartedItFreesOnItsOwnThreadAndStopDrainsTheQueue) {
  EpochDisposer disposer;
  disposer.Start();
  std::vector<Tracked> tracked(50);
  for (Epoch e = 0; e < tracked.size(); e += 5) {
    std::vector<std::unique_ptr<EpochWork>> finished;
    for (Epoch i = e; i < e + 5; ++i) finished.push_back(EpochHolding(&tracked[i], i + 1));
    disposer.Dispose(&finished);
    EXPECT_TRUE(finished.empty());  // handed over, whether or not freed yet
  }
  disposer.Stop();  // joins its thread once every handed-over epoch is freed
  for (const Tracked& t : tracked) {
    EXPECT_TRUE(t.freed);
    EXPECT_NE(t.freed_on, std::this_thread::get_id());
  }
}

TEST(EpochDisposerTest, AfterStopAnEpochIsFreedAtOnceAndStartDoesNotRestart) {
  EpochDisposer disposer;
  disposer.Start();
  disposer.Stop();
  disposer.Start();
  Tracked tracked;
  std::vector<std::unique_ptr<EpochWork>> finished;
  finished.push_back(EpochHolding(&tracked, 7));
  disposer.Dispose(&finished);
  EXPECT_TRUE(tracked.freed);
  EXPECT_EQ(tracked.freed_on, std::this_thread::get_id());
}

TEST(EpochDisposerTest, DestroyedWhileStartedItFreesWhatItHolds) {
  std::vector<Tracked> tracked(4);
  {
    EpochDisposer disposer;
    disposer.Start();
    std::vector<std::unique_ptr<EpochWork>> finished;
    for (size_t i = 0; i < tracked.size(); ++i) finished.push_back(EpochHolding(&tracked[i], i + 1));
    disposer.Dispose(&finished);
  }
  for (const Tracked& t : tracked) EXPECT_TRUE(t.freed);
}

}  // namespace
}  // namespace paxflow
