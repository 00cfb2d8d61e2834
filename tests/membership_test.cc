// Membership (node/membership.h): which nodes may be removed, that a
// removal is remembered across restarts, that a damaged file is refused,
// and that removed nodes stop holding back the stable checkpoint.
#include <gtest/gtest.h>

#include <fstream>

#include "common/membership.h"
#include "node/peer_monitor.h"
#include "tests/test_util.h"

namespace paxflow {
namespace {

using testing::MakeConfig;
using testing::TempDir;

TEST(MembershipTest, OnlyADeadReplicasNodeWithAnotherOfItsPartitionMayGo) {
  const ClusterConfig two_by_two = MakeConfig("m", 2, 2, "inproc");  // id = replica * 2 + partition
  EXPECT_EQ(Membership::CheckRemovable(two_by_two, 3, {}), "");
  EXPECT_EQ(Membership::CheckRemovable(two_by_two, 2, {}), "");
  EXPECT_NE(Membership::CheckRemovable(two_by_two, 1, {}).find("replica 0"), std::string::npos);
  EXPECT_NE(Membership::CheckRemovable(two_by_two, 7, {}).find("not in the config"),
            std::string::npos);
  const ClusterConfig two_by_one = MakeConfig("m", 2, 1, "inproc");
  EXPECT_NE(Membership::CheckRemovable(two_by_one, 1, {}).find("only node of partition 1"),
            std::string::npos);
}

TEST(MembershipTest, RemovalIsRememberedAndADamagedFileRefused) {
  TempDir dir;
  const ClusterConfig config = MakeConfig("m", 2, 2, "inproc");
  {
    Membership membership(config, 0, dir.path());
    ASSERT_EQ(membership.Load(), "");
    EXPECT_FALSE(membership.Removed(3));
    EXPECT_NE(membership.Remove(0), "");  // itself
    EXPECT_NE(membership.Remove(1), "");  // replica 0
    ASSERT_EQ(membership.Remove(3), "");
    EXPECT_EQ(membership.Remove(3), "");  // again: nothing new
    EXPECT_TRUE(membership.Removed(3));
  }
  Membership again(config, 0, dir.path());
  ASSERT_EQ(again.Load(), "");
  EXPECT_EQ(again.List(), std::vector<NodeId>{3});
  // A peer's list: itself and invalid nodes are ignored, valid ones taken.
  Membership other(config, 2, dir.path());
  EXPECT_EQ(other.Adopt({2, 1, 3}), std::vector<NodeId>{3});
  EXPECT_FALSE(other.Removed(2));
  EXPECT_FALSE(other.Removed(1));

  std::ofstream(Membership::Path(dir.path(), 0)) << "\xff\xff\xff garbage";
  Membership damaged(config, 0, dir.path());
  EXPECT_NE(damaged.Load().find("is damaged"), std::string::npos);
}

TEST(MembershipTest, RemovedNodesDoNotHoldBackTheStableCheckpoint) {
  const ClusterConfig config = MakeConfig("m", 2, 2, "inproc");
  Membership membership(config, 0, "");
  PeerMonitor monitor(config, 0, nullptr, 1000000, &membership);
  for (NodeId node : {1u, 2u}) {
    Heartbeat heartbeat;
    heartbeat.set_node_id(node);
    heartbeat.set_incarnation(1);
    heartbeat.add_checkpoints(100);
    heartbeat.add_checkpoints(200);
    monitor.OnHeartbeat(heartbeat);
  }
  Heartbeat dead;
  dead.set_node_id(3);
  dead.set_incarnation(1);
  dead.add_checkpoints(100);
  monitor.OnHeartbeat(dead);
  EXPECT_EQ(monitor.StableCheckpoint({100, 200}), 100u);
  ASSERT_EQ(membership.Remove(3), "");
  EXPECT_EQ(monitor.StableCheckpoint({100, 200}), 200u);
}

}  // namespace
}  // namespace paxflow
