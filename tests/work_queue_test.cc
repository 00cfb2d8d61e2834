// WorkQueue: workers take read-write work a few items at a time, never
// more than their share of what is queued, read-only work one item at a
// time and only after every read-write item, in the order pushed.
#include "scheduler/work_queue.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/stats.h"
#include "scheduler/txn_work.h"
#include "scheduler/worker.h"

namespace paxflow {
namespace {

// Items that point at `works`, so that a taken item names its place.
std::vector<WorkItem> ItemsOf(std::vector<TxnWork>* works, size_t from, size_t count) {
  std::vector<WorkItem> items;
  for (size_t i = from; i < from + count; ++i) items.push_back(WorkItem{&(*works)[i]});
  return items;
}

std::vector<size_t> PlacesOf(const std::vector<TxnWork>& works, const std::vector<WorkItem>& items) {
  std::vector<size_t> places;
  for (const WorkItem& item : items) places.push_back(static_cast<size_t>(item.work - works.data()));
  return places;
}

TEST(WorkQueueTest, ReadWriteWorkIsTakenInOrderUpToMaxAndNoMoreThanATakersShare) {
  std::vector<TxnWork> works(20);
  WorkQueue queue;
  queue.PushReadWrite(ItemsOf(&works, 0, 20));
  std::vector<WorkItem> taken;
  // Two takers: each takes at most half of what is queued, and at most 8.
  const std::vector<size_t> expected_sizes = {8, 6, 3, 2, 1};
  size_t next = 0;
  for (size_t size : expected_sizes) {
    ASSERT_TRUE(queue.TryPop(true, /*takers=*/2, /*max_take=*/8, &taken));
    ASSERT_EQ(taken.size(), size) << "after " << next << " taken";
    for (size_t place : PlacesOf(works, taken)) EXPECT_EQ(place, next++);
  }
  EXPECT_FALSE(queue.TryPop(true, 2, 8, &taken));
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(queue.Size(), 0u);
}

// Long items (an LTX's install, a calvin-mode LTX) are taken on their own,
// and a take of short ones stops before one.
TEST(WorkQueueTest, AnItemThatRunsAloneIsTakenOnItsOwn) {
  std::vector<TxnWork> works(8);
  works[2].kind = kKindLong;
  works[5].kind = kKindLong;
  std::vector<WorkItem> items = ItemsOf(&works, 0, 8);
  for (WorkItem& item : items) item.alone = WorkerPool::RunsAlone(*item.work);
  WorkQueue queue;
  queue.PushReadWrite(items);
  std::vector<WorkItem> taken;
  std::vector<std::vector<size_t>> takes;
  while (queue.TryPop(true, /*takers=*/1, /*max_take=*/8, &taken)) {
    takes.push_back(PlacesOf(works, taken));
  }
  EXPECT_EQ(takes, (std::vector<std::vector<size_t>>{{0, 1}, {2}, {3, 4}, {5}, {6, 7}}));
}

TEST(WorkQueueTest, ReadOnlyWorkGoesOneAtATimeAfterReadWriteAndOnlyToWorkersThatMayRunIt) {
  std::vector<TxnWork> works(6);
  WorkQueue queue;
  queue.PushReadOnly(ItemsOf(&works, 0, 3));
  queue.PushReadWrite(ItemsOf(&works, 3, 2));
  queue.PushReadWriteFirst(ItemsOf(&works, 5, 1));  // a chain's link: ahead of the rest
  std::vector<WorkItem> taken;
  ASSERT_TRUE(queue.TryPop(/*may_run_read_only=*/false, /*takers=*/1, /*max_take=*/8, &taken));
  EXPECT_EQ(PlacesOf(works, taken), (std::vector<size_t>{5, 3, 4}));
  // Only read-only work is left: a worker restricted to read-write gets none.
  EXPECT_FALSE(queue.TryPop(false, 1, 8, &taken));
  for (size_t place = 0; place < 3; ++place) {
    ASSERT_TRUE(queue.TryPop(true, 1, 8, &taken));
    EXPECT_EQ(PlacesOf(works, taken), (std::vector<size_t>{place}));
  }
  EXPECT_FALSE(queue.TryPop(true, 1, 8, &taken));
}

TEST(WorkQueueTest, ABlockedWorkerTakesWhatIsPushedAndStopsOnceClosedAndDrained) {
  std::vector<TxnWork> works(3);
  WorkQueue queue;
  std::vector<std::vector<size_t>> takes;
  std::thread worker([&] {
    std::vector<WorkItem> taken;
    while (queue.Pop(true, /*takers=*/1, /*max_take=*/8, &taken)) {
      takes.push_back(PlacesOf(works, taken));
    }
  });
  queue.PushReadWrite(ItemsOf(&works, 0, 3));
  queue.Close();
  worker.join();
  // The worker may have woken for the push before or after Close, and may
  // have taken the items at once or not: all of them, in order, once.
  std::vector<size_t> all;
  for (const auto& take : takes) all.insert(all.end(), take.begin(), take.end());
  EXPECT_EQ(all, (std::vector<size_t>{0, 1, 2}));
  EXPECT_EQ(queue.Size(), 0u);
}

}  // namespace
}  // namespace paxflow
