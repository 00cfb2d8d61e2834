// EpochReclaimer: what a reader inside keeps, and what goes, in which order.
#include "backend/epoch_reclaimer.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace paxflow
