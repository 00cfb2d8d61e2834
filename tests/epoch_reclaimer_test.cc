// EpochReclaimer: what a reader inside keeps, and what goes, in which order.
#include "backend/epoch_reclaimer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace paxflow {
namespace {

// Records which pointers were freed, in order; the "pointers" are indexes.
struct FreedLog {
  std::vector<size_t> freed;
  static void Delete(void* context, size_t /*slot*/, void* pointer) {
    static_cast<FreedLog*>(context)->freed.push_back(reinterpret_cast<size_t>(pointer));
  }
};

void* Item(size_t i) { return reinterpret_cast<void*>(i); }

TEST(EpochReclaimerTest, WithoutReadersEverythingRetiredGoesInRetirementOrder) {
  FreedLog log;
  EpochReclaimer reclaimer(2, &log);
  for (size_t i = 1; i <= 1000; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
  reclaimer.Collect(0);
  ASSERT_EQ(log.freed.size(), 1000u);
  for (size_t i = 0; i < log.freed.size(); ++i) ASSERT_EQ(log.freed[i], i + 1);
  EXPECT_EQ(reclaimer.freed(), 1000u);
}

// A reader that stays inside keeps everything retired since it entered (it
// may hold any of it), across many collects, while what was retired before
// it entered goes; once it leaves, the rest goes too, each item once.
TEST(EpochReclaimerTest, ALongReaderKeepsWhatWasRetiredAfterItEnteredAndNothingElse) {
  FreedLog log;
  EpochReclaimer reclaimer(2, &log);
  const size_t kBefore = 300, kDuring = 5000;
  for (size_t i = 1; i <= kBefore; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
  reclaimer.Enter(1);  // the long reader, on its own slot
  for (size_t i = kBefore + 1; i <= kBefore + kDuring; ++i) {
    reclaimer.Retire(0, Item(i), &FreedLog::Delete);
  }
  reclaimer.Collect(0);
  // Retire collects every 128 items and moves the epoch on: the reader
  // entered at an epoch no earlier than the first kBefore / 128 * 128 items'.
  EXPECT_GE(log.freed.size(), kBefore / 128 * 128);
  EXPECT_LE(log.freed.size(), kBefore);
  const size_t freed_while_inside = log.freed.size();
  for (size_t i = 0; i < freed_while_inside; ++i) ASSERT_EQ(log.freed[i], i + 1);
  reclaimer.Exit(1);
  reclaimer.Collect(0);
  ASSERT_EQ(log.freed.size(), kBefore + kDuring);
  for (size_t i = 0; i < log.freed.size(); ++i) ASSERT_EQ(log.freed[i], i + 1);
  EXPECT_EQ(reclaimer.freed(), kBefore + kDuring);
}

// A reader that enters while a slot's list has a prefix it cannot reach
// and a rest it may: a collect frees exactly that prefix and keeps its
// place in the list; later collects go on from there (the list compacted
// on the way), and the reclaimer's end frees the rest, each item once.
TEST(EpochReclaimerTest, ACollectFreesExactlyThePrefixNoReaderCanReach) {
  FreedLog log;
  {
    EpochReclaimer reclaimer(3, &log);
    for (size_t i = 1; i <= 5; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
    // Another slot's 128 retirements move the epoch on (and free them).
    for (size_t i = 1001; i <= 1128; ++i) reclaimer.Retire(2, Item(i), &FreedLog::Delete);
    reclaimer.Enter(1);  // may hold anything retired from here on
    for (size_t i = 6; i <= 20; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
    log.freed.clear();
    reclaimer.Collect(0);
    ASSERT_EQ(log.freed, (std::vector<size_t>{1, 2, 3, 4, 5}));
    reclaimer.Collect(0);
    EXPECT_EQ(log.freed.size(), 5u) << "nothing more while the reader is inside";
    reclaimer.Exit(1);
    for (size_t i = 21; i <= 30; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
    for (size_t i = 2001; i <= 2128; ++i) reclaimer.Retire(2, Item(i), &FreedLog::Delete);
    log.freed.erase(std::remove_if(log.freed.begin(), log.freed.end(),
                                   [](size_t item) { return item > 1000; }),
                    log.freed.end());
    reclaimer.Enter(1);  // in a later epoch than 6-30's
    for (size_t i = 31; i <= 40; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
    reclaimer.Collect(0);  // 6-30 go now, 31-40 stay
    for (size_t i = 0; i < log.freed.size(); ++i) ASSERT_EQ(log.freed[i], i + 1);
    EXPECT_EQ(log.freed.size(), 30u);
    reclaimer.Exit(1);
  }
  // 31-40 were still kept when the reclaimer went: freed then, after the rest.
  ASSERT_EQ(log.freed.size(), 40u);
  for (size_t i = 0; i < log.freed.size(); ++i) ASSERT_EQ(log.freed[i], i + 1);
}

// What a slot still keeps when the reclaimer goes is freed then, once.
TEST(EpochReclaimerTest, DestructionFreesWhatIsStillKept) {
  FreedLog log;
  {
    EpochReclaimer reclaimer(2, &log);
    reclaimer.Enter(1);
    for (size_t i = 1; i <= 700; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
    reclaimer.Exit(1);
  }
  ASSERT_EQ(log.freed.size(), 700u);
  std::vector<bool> seen(701, false);
  for (size_t item : log.freed) {
    ASSERT_FALSE(seen[item]) << "item " << item << " freed twice";
    seen[item] = true;
  }
}

// The same after a collect that freed only a prefix: the end frees what
// follows it, not the prefix again.
TEST(EpochReclaimerTest, DestructionAfterAPartialCollectFreesOnlyTheRest) {
  FreedLog log;
  {
    EpochReclaimer reclaimer(3, &log);
    for (size_t i = 1; i <= 5; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
    for (size_t i = 1001; i <= 1128; ++i) reclaimer.Retire(2, Item(i), &FreedLog::Delete);
    reclaimer.Enter(1);
    for (size_t i = 6; i <= 20; ++i) reclaimer.Retire(0, Item(i), &FreedLog::Delete);
    reclaimer.Collect(0);
    reclaimer.Exit(1);
  }
  log.freed.erase(std::remove_if(log.freed.begin(), log.freed.end(),
                                 [](size_t item) { return item > 1000; }),
                  log.freed.end());
  ASSERT_EQ(log.freed.size(), 20u);
  for (size_t i = 0; i < log.freed.size(); ++i) ASSERT_EQ(log.freed[i], i + 1);
}

}  // namespace
}  // namespace paxflow
