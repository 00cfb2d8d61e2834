// ReplicaRing: the replica-choice policy FailoverClient and paxflow-load's
// LoadClient share (round past a silent replica, distrust a redirect to a
// recently silent one for two attempt timeouts).
#include <gtest/gtest.h>

#include "client/replica_ring.h"

namespace paxflow {
namespace {

TEST(ReplicaRingTest, RoundsTheReplicasAfterTheFirst) {
  ReplicaRing ring({"a", "b", "c"}, 1000);
  EXPECT_EQ(ring.first(), "a");
  EXPECT_EQ(ring.Next(0), "b");
  EXPECT_EQ(ring.Next(0), "c");
  EXPECT_EQ(ring.Next(0), "a");
  EXPECT_EQ(ring.Next(0), "b");
}

TEST(ReplicaRingTest, SkipsARecentlySilentReplicaAndDistrustsRedirectsToIt) {
  ReplicaRing ring({"a", "b", "c"}, 1000);  // distrusted for 2 s
  const int64_t t = 10'000'000;
  ring.MarkSilent("b", t);
  EXPECT_FALSE(ring.Believe("b", t + 1'999'999));
  EXPECT_TRUE(ring.Believe("c", t));
  EXPECT_EQ(ring.Next(t + 1000), "c");  // b skipped
  EXPECT_EQ(ring.Next(t + 1000), "a");
  EXPECT_EQ(ring.Next(t + 1000), "c");
  // Two attempt timeouts later it is trusted and tried again.
  EXPECT_TRUE(ring.Believe("b", t + 2'000'000));
  EXPECT_EQ(ring.Next(t + 2'000'000), "a");
  EXPECT_EQ(ring.Next(t + 2'000'000), "b");
}

TEST(ReplicaRingTest, ASingleSilentReplicaIsStillTried) {
  ReplicaRing one({"a"}, 1000);
  one.MarkSilent("a", 0);
  EXPECT_EQ(one.Next(1), "a");
  ReplicaRing none({}, 1000);
  EXPECT_TRUE(none.empty());
  EXPECT_EQ(none.first(), "");
  EXPECT_EQ(none.Next(0), "");
  EXPECT_TRUE(none.Believe("", 0));
}

}  // namespace
}  // namespace paxflow
