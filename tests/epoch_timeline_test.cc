#include "node/epoch_timeline.h"

#include <gtest/gtest.h>

namespace paxflow {
namespace {

struct Stages {
  Histogram h[kInputStages];
};

Stages Read(const EpochTimeline& timeline) {
  Stages stages;
  timeline.Fill(stages.h);
  return stages;
}

TEST(EpochTimelineTest, ReplicatedEpochIsTimedStageByStage) {
  EpochTimeline timeline;
  timeline.Cut(7, 1000);
  timeline.Proposed(7, 3000);          // propose: 2 ms
  timeline.Committed(7, 8000, 9000);   // commit: 5 ms, hand-out: 1 ms
  timeline.Delivered(7, 9500);         // deliver: 0.5 ms; cut to scheduler 8.5 ms
  const Stages s = Read(timeline);
  for (int stage = 0; stage < kInputStages; ++stage) EXPECT_EQ(s.h[stage].count(), 1u) << stage;
  EXPECT_NEAR(s.h[kInputPropose].Quantile(0.5), 2000, 100);
  EXPECT_NEAR(s.h[kInputCommit].Quantile(0.5), 5000, 200);
  EXPECT_NEAR(s.h[kInputHandOut].Quantile(0.5), 1000, 50);
  EXPECT_NEAR(s.h[kInputDeliver].Quantile(0.5), 500, 20);
  EXPECT_NEAR(s.h[kInputTotal].Quantile(0.5), 8500, 300);
}

TEST(EpochTimelineTest, WithoutReplicationOnlyDeliveryIsTimed) {
  EpochTimeline timeline;
  timeline.Cut(3, 1000);
  timeline.Delivered(3, 1400);
  const Stages s = Read(timeline);
  EXPECT_EQ(s.h[kInputPropose].count(), 0u);
  EXPECT_EQ(s.h[kInputCommit].count(), 0u);
  EXPECT_EQ(s.h[kInputDeliver].count(), 1u);
  EXPECT_NEAR(s.h[kInputTotal].Quantile(0.5), 400, 20);
}

// A follower's epochs, or an earlier leader's, were not cut here: none of
// their stages is counted, and a delivered epoch is counted once.
TEST(EpochTimelineTest, EpochsNotCutHereAreNotCounted) {
  EpochTimeline timeline;
  timeline.Committed(5, 2000, 2500);
  timeline.Delivered(5, 3000);
  timeline.Cut(6, 1000);
  timeline.Delivered(6, 2000);
  timeline.Delivered(6, 5000);
  timeline.Cut(6 + 1024, 9000);  // a lap later: its slot is reused
  timeline.Delivered(6, 9500);
  const Stages s = Read(timeline);
  EXPECT_EQ(s.h[kInputCommit].count(), 0u);
  EXPECT_EQ(s.h[kInputTotal].count(), 1u);
}

}  // namespace
}  // namespace paxflow
