// The replicated log (replication/raft_log.h): three members in this
// process on 127.0.0.1, each with its own data dir. Same order everywhere,
// leader stopped and another elected, a member restarted on its dir or on
// an empty one catching up (from a snapshot once the log is trimmed),
// proposals on a follower refused with the leader's id.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "replication/raft_log.h"
#include "test_util.h"

namespace paxflow::replication {
namespace {

using Clock = std::chrono::steady_clock;
using paxflow::testing::FreePorts;
using paxflow::testing::TempDir;
using paxflow::testing::WaitUntil;

constexpr int kTimeoutMs = 15000;

// One member and what it was handed since it last started.
struct Seat {
  RaftLogOptions options;
  std::unique_ptr<ReplicatedLog> log;
  std::vector<std::pair<uint64_t, std::string>> order;  // committed, as handed out
  uint64_t restored = 0;                                // last kRestored index
};

class Group {
 public:
  explicit Group(size_t size) {
    const std::vector<uint32_t> ports = FreePorts(size + 1);
    spare_port_ = ports[size];
    for (size_t i = 0; i < size; ++i)
      founders_.push_back({i + 1, "127.0.0.1:" + std::to_string(ports[i])});
    for (size_t i = 0; i < size; ++i) Add(founders_[i]);
  }
  // A new member (next id, a port picked with the others, its own dir),
  // not started; its index.
  size_t AddFresh() {
    return Add({members_.size() + 1, "127.0.0.1:" + std::to_string(spare_port_)});
  }
  ~Group() {
    for (Seat& member : members_)
      if (member.log) member.log->Stop();
  }

  void Start(size_t i, bool bootstrap = true) {
    Seat& member = members_[i];
    member.options.bootstrap = bootstrap;
    member.order.clear();
    member.restored = 0;
    std::string error;
    member.log = StartRaftLog(member.options, &error);
    ASSERT_TRUE(member.log) << error;
  }
  void StartAll() {
    for (size_t i = 0; i < members_.size(); ++i) Start(i);
  }
  void Stop(size_t i) {
    members_[i].log->Stop();
    members_[i].log.reset();
  }
  void Wipe(size_t i) { std::filesystem::remove_all(members_[i].options.data_dir); }
  Seat& member(size_t i) { return members_[i]; }
  bool running(size_t i) const { return members_[i].log != nullptr; }
  replication::Member fresh_member(size_t i) const { return {members_[i].options.id, Address(i)}; }

  // The member that leads (may propose), waiting for one; -1 on timeout.
  int WaitLeader(int timeout_ms = kTimeoutMs) {
    int leader = -1;
    WaitUntil(
        [&] {
          for (size_t i = 0; i < members_.size(); ++i)
            if (running(i) && members_[i].log->leadership().leading) leader = static_cast<int>(i);
          return leader >= 0;
        },
        timeout_ms);
    return leader;
  }

  // Takes member i's events until it has been handed index `index`.
  bool WaitCommitted(size_t i, uint64_t index, int timeout_ms = kTimeoutMs) {
    Seat& member = members_[i];
    const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
    while (Handed(member) < index) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      std::vector<LogEvent> events;
      member.log->NextEvents(&events, left);
      for (LogEvent& event : events) {
        if (event.kind == LogEvent::Kind::kCommitted) {
          EXPECT_GT(event.index, Handed(member)) << "member " << i + 1 << ": out of order";
          member.order.emplace_back(event.index, std::move(event.bytes));
        } else if (event.kind == LogEvent::Kind::kRestored) {
          member.restored = event.index;
        }
      }
    }
    return true;
  }
  bool WaitAllCommitted(uint64_t index) {
    for (size_t i = 0; i < members_.size(); ++i)
      if (running(i) && !WaitCommitted(i, index)) return false;
    return true;
  }

  // Proposes `count` entries on member i; the index of the last one.
  uint64_t ProposeMany(size_t i, int count, const std::string& tag) {
    uint64_t last = 0;
    for (int k = 0; k < count; ++k) {
      ProposeResult result = members_[i].log->Propose(Payload(tag, k));
      EXPECT_EQ(result.status, ProposeResult::Status::kAppended) << result.error;
      last = result.index;
    }
    return last;
  }

  static std::string Payload(const std::string& tag, int k) {
    // Sizes from empty to a few KB, content tied to the entry.
    std::string bytes = tag + "-" + std::to_string(k) + ":";
    bytes.resize(k == 0 ? 0 : (k * 997) % 4096, static_cast<char>('a' + k % 26));
    return bytes;
  }

 private:
  size_t Add(const RaftMember& self) {
    members_.emplace_back();
    RaftLogOptions& options = members_.back().options;
    options.id = self.id;
    options.members = founders_;
    if (self.id > founders_.size()) options.members.push_back(self);
    options.data_dir = dir_.path() + "/member-" + std::to_string(self.id);
    // Short timeouts keep the suite quick; the bench measures the defaults.
    options.election_timeout_ms = 300;
    options.heartbeat_ms = 50;
    options.connect_retry_ms = 50;
    return members_.size() - 1;
  }
  std::string Address(size_t i) const {
    for (const RaftMember& m : members_[i].options.members)
      if (m.id == members_[i].options.id) return m.address;
    return "";
  }
  static uint64_t Handed(const Seat& member) {
    return member.order.empty() ? member.restored : member.order.back().first;
  }
  TempDir dir_;
  std::vector<RaftMember> founders_;
  uint32_t spare_port_ = 0;
  std::vector<Seat> members_;
};

// Committed entries agree: the same bytes at every index both have.
void ExpectAgree(const Seat& a, const Seat& b) {
  std::map<uint64_t, std::string> in_a(a.order.begin(), a.order.end());
  size_t common = 0;
  for (const auto& [index, bytes] : b.order) {
    auto it = in_a.find(index);
    if (it == in_a.end()) continue;
    ++common;
    EXPECT_TRUE(it->second == bytes) << "members " << a.options.id << " and " << b.options.id
                                 << " differ at index " << index;
  }
  EXPECT_GT(common, 0u);
}

TEST(ReplicationTest, CommitsInTheSameOrderOnEveryMember) {
  Group group(3);
  group.StartAll();
  const int leader = group.WaitLeader();
  ASSERT_GE(leader, 0);
  // Two proposing threads: the leader's order is whatever it appended, and
  // every member must be handed exactly that.
  std::map<uint64_t, std::string> appended;
  std::mutex mu;
  auto propose = [&](const std::string& tag) {
    for (int k = 0; k < 60; ++k) {
      std::string bytes = Group::Payload(tag, k);
      ProposeResult result = group.member(leader).log->Propose(bytes);
      ASSERT_EQ(result.status, ProposeResult::Status::kAppended) << result.error;
      std::lock_guard<std::mutex> lock(mu);
      appended[result.index] = bytes;
    }
  };
  std::thread a(propose, "a"), b(propose, "b");
  a.join();
  b.join();
  ASSERT_EQ(appended.size(), 120u);
  ASSERT_TRUE(group.WaitAllCommitted(appended.rbegin()->first));
  for (size_t i = 0; i < 3; ++i) {
    const Seat& member = group.member(i);
    std::vector<std::pair<uint64_t, std::string>> mine;
    for (const auto& entry : member.order)
      if (appended.count(entry.first)) mine.push_back(entry);
    const std::vector<std::pair<uint64_t, std::string>> expected(appended.begin(), appended.end());
    EXPECT_TRUE(mine == expected) << "member " << i + 1;
    EXPECT_TRUE(member.order == group.member(0).order) << "member " << i + 1;
  }
}

TEST(ReplicationTest, FollowerRefusesProposalsNamingTheLeader) {
  Group group(3);
  group.StartAll();
  const int leader = group.WaitLeader();
  ASSERT_GE(leader, 0);
  const size_t follower = (leader + 1) % 3;
  const uint64_t leader_id = group.member(leader).options.id;
  ASSERT_TRUE(WaitUntil(
      [&] { return group.member(follower).log->leadership().leader == leader_id; }, kTimeoutMs));
  EXPECT_FALSE(group.member(follower).log->leadership().leading);
  ProposeResult result = group.member(follower).log->Propose("not here");
  EXPECT_EQ(result.status, ProposeResult::Status::kNotLeader);
  EXPECT_EQ(result.leader, leader_id);
  group.Stop(follower);
  EXPECT_EQ(group.member(leader).log->Propose("still here").status,
            ProposeResult::Status::kAppended);  // 2 of 3 still commit
}

// The leader stopped (its process gone, as far as the others can tell):
// another is elected and goes on committing; the old one, restarted on its
// data dir, catches up. Five rounds; the election times are printed.
TEST(ReplicationTest, AnotherLeaderTakesOverAndTheOldOneCatchesUp) {
  Group group(3);
  group.StartAll();
  std::vector<double> elections_ms;
  uint64_t last = 0;
  for (int round = 0; round < 5; ++round) {
    const int leader = group.WaitLeader();
    ASSERT_GE(leader, 0);
    last = group.ProposeMany(leader, 10, "before-" + std::to_string(round));
    ASSERT_TRUE(group.WaitAllCommitted(last));
    group.Stop(leader);
    const auto stopped = Clock::now();
    const int next = group.WaitLeader();
    ASSERT_GE(next, 0);
    ASSERT_NE(next, leader);
    elections_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - stopped).count());
    last = group.ProposeMany(next, 10, "after-" + std::to_string(round));
    ASSERT_TRUE(group.WaitAllCommitted(last));
    group.Start(leader);  // on its data dir
    ASSERT_TRUE(group.WaitCommitted(leader, last)) << "member " << leader + 1 << " never caught up";
    for (size_t i = 0; i < 3; ++i) ExpectAgree(group.member(leader), group.member(i));
  }
  std::sort(elections_ms.begin(), elections_ms.end());
  std::printf("elections (election timeout 300 ms): min %.0f ms, median %.0f ms, max %.0f ms\n",
              elections_ms.front(), elections_ms[elections_ms.size() / 2], elections_ms.back());
  // libraft randomizes the timeout to 300-600 ms; a pre-vote round, a vote
  // and the new leader's barrier follow. Generous for a loaded machine.
  EXPECT_LT(elections_ms.back(), 3000.0);
}

TEST(ReplicationTest, StoppedFollowerRestartedOnItsDirCatchesUp) {
  Group group(3);
  group.StartAll();
  const int leader = group.WaitLeader();
  ASSERT_GE(leader, 0);
  const size_t follower = (leader + 1) % 3;
  uint64_t last = group.ProposeMany(leader, 20, "first");
  ASSERT_TRUE(group.WaitAllCommitted(last));
  group.Stop(follower);
  last = group.ProposeMany(leader, 50, "while-down");
  ASSERT_TRUE(group.WaitAllCommitted(last));
  group.Start(follower);
  ASSERT_TRUE(group.WaitCommitted(follower, last));
  // Handed everything again from the start of its log, then the entries it
  // missed: equal to the leader's.
  EXPECT_EQ(group.member(follower).restored, 0u);
  ExpectAgree(group.member(follower), group.member(leader));
  EXPECT_EQ(group.member(follower).order.back().first, group.member(leader).order.back().first);
}

// A group that committed entries (the first 30 covered by a checkpoint,
// and trimmed there if `trim`), then lost a follower's disk: the member
// is stopped and its data dir removed, and the group went on.
struct LostDisk {
  int leader = -1;
  size_t lost = 0;
  uint64_t checkpointed = 0;
};
void LoseAFollowersDisk(Group& group, bool trim, LostDisk* out) {
  group.StartAll();
  const int leader = group.WaitLeader();
  ASSERT_GE(leader, 0);
  const size_t lost = (leader + 1) % 3;
  const uint64_t checkpointed = group.ProposeMany(leader, 30, "covered");
  uint64_t last = group.ProposeMany(leader, 10, "uncovered");
  ASSERT_TRUE(group.WaitAllCommitted(last));
  if (trim) {
    for (size_t i = 0; i < 3; ++i) group.member(i).log->Trim(checkpointed);
  }
  last = group.ProposeMany(leader, 5, "after-trim");  // the trim happens at a commit
  ASSERT_TRUE(group.WaitAllCommitted(last));
  group.Stop(lost);
  group.Wipe(lost);
  group.ProposeMany(leader, 5, "while-down");
  *out = {leader, lost, checkpointed};
}

// A member whose disk is lost is replaced by a new one on an empty disk
// (a new id: Replace). The new member is sent the whole log, or, once the
// log is trimmed, a snapshot and the entries after it.
void NewMemberCatchesUp(bool trim) {
  Group group(3);
  LostDisk state;
  LoseAFollowersDisk(group, trim, &state);
  if (::testing::Test::HasFatalFailure()) return;
  const int leader = state.leader;
  const size_t lost = state.lost;
  const uint64_t checkpointed = state.checkpointed;
  uint64_t last = 0;
  const size_t fresh = group.AddFresh();
  ProposeResult change =
      group.member(leader).log->Replace(group.member(lost).options.id, group.fresh_member(fresh));
  ASSERT_EQ(change.status, ProposeResult::Status::kAppended) << change.error;
  group.Start(fresh, /*bootstrap=*/false);
  last = group.ProposeMany(leader, 5, "after-replace");
  ASSERT_TRUE(group.WaitAllCommitted(last));
  const Seat& seat = group.member(fresh);
  if (trim) {
    // Nothing a checkpoint covers came back as an entry.
    EXPECT_GE(seat.restored, checkpointed);
    ASSERT_FALSE(seat.order.empty());
    EXPECT_GT(seat.order.front().first, seat.restored);
  } else {
    EXPECT_EQ(seat.restored, 0u);
    EXPECT_EQ(seat.order.front().first, group.member(leader).order.front().first);
  }
  ExpectAgree(seat, group.member(leader));
  EXPECT_EQ(seat.order.back().first, group.member(leader).order.back().first);
  // Refused where it makes no sense.
  EXPECT_EQ(group.member(leader).log->Replace(group.member(leader).options.id,
                                               group.fresh_member(fresh)).status,
            ProposeResult::Status::kFailed);
  EXPECT_EQ(group.member(fresh).log->Replace(1, group.fresh_member(fresh)).status,
            ProposeResult::Status::kNotLeader);
}

TEST(ReplicationTest, NewMemberOnAnEmptyDiskIsSentTheLog) { NewMemberCatchesUp(false); }
TEST(ReplicationTest, NewMemberOnAnEmptyDiskIsSentASnapshotOnceTrimmed) { NewMemberCatchesUp(true); }
// A member whose disk is lost comes back under its own id (its node copied
// a peer's checkpoint: node/state_transfer.h): the leader forgets how far
// it believed its log went (Rejoin), it starts without bootstrapping and
// with a vote floor, is sent the snapshot and the entries after it, and
// votes again in a term past the floor.
TEST(ReplicationTest, AMemberBackOnAnEmptyDiskUnderItsIdIsSentTheSnapshotAndVotesPastItsFloor) {
  Group group(3);
  LostDisk state;
  ASSERT_NO_FATAL_FAILURE(LoseAFollowersDisk(group, /*trim=*/true, &state));
  const int leader = state.leader;
  const size_t lost = state.lost;
  const uint64_t checkpointed = state.checkpointed;
  uint64_t last = 0;
  const uint64_t floor = group.member(leader).log->leadership().term;
  ASSERT_EQ(group.member(leader).log->Rejoin(group.member(lost).options.id).status,
            ProposeResult::Status::kAppended);
  group.member(lost).options.vote_floor_term = floor;
  group.Start(lost, /*bootstrap=*/false);
  last = group.ProposeMany(leader, 5, "after-rejoin");
  ASSERT_TRUE(group.WaitAllCommitted(last));
  const Seat& seat = group.member(lost);
  EXPECT_GE(seat.restored, checkpointed);
  ASSERT_FALSE(seat.order.empty());
  EXPECT_GT(seat.order.front().first, seat.restored);
  ExpectAgree(seat, group.member(leader));
  EXPECT_EQ(seat.order.back().first, group.member(leader).order.back().first);
  // Only the leader takes a member back.
  const size_t other = (leader + 2) % 3;
  EXPECT_EQ(group.member(other).log->Rejoin(group.member(lost).options.id).status,
            ProposeResult::Status::kNotLeader);
  // The leader gone, the other two elect one: the member back on its empty
  // disk votes, in a term past its floor.
  group.Stop(leader);
  const int next = group.WaitLeader();
  ASSERT_GE(next, 0);
  EXPECT_NE(next, leader);
  EXPECT_GT(group.member(next).log->leadership().term, floor);
  last = group.ProposeMany(next, 5, "after-failover");
  ASSERT_TRUE(group.WaitCommitted(lost, last));
  ASSERT_TRUE(group.WaitCommitted(other, last));
  ExpectAgree(group.member(lost), group.member(other));
}

TEST(ReplicationTest, BadOptionsAreRefusedSayingWhy) {
  TempDir dir;
  const std::vector<uint32_t> ports = FreePorts(2);
  RaftLogOptions options;
  options.id = 3;
  options.members = {{1, "127.0.0.1:" + std::to_string(ports[0])},
                     {2, "127.0.0.1:" + std::to_string(ports[1])}};
  options.data_dir = dir.path() + "/m";
  std::string error;
  EXPECT_EQ(StartRaftLog(options, &error), nullptr);
  EXPECT_NE(error.find("member 3 is not in the group"), std::string::npos) << error;

  options.id = 1;
  std::unique_ptr<ReplicatedLog> first = StartRaftLog(options, &error);
  ASSERT_TRUE(first) << error;
  options.data_dir = dir.path() + "/other";  // same address: already in use
  error.clear();
  EXPECT_EQ(StartRaftLog(options, &error), nullptr);
  EXPECT_NE(error.find("member 1 at 127.0.0.1:"), std::string::npos) << error;
  first->Stop();
  EXPECT_EQ(first->Propose("x").status, ProposeResult::Status::kStopped);
}

}  // namespace
}  // namespace paxflow::replication
