// Replicated input: who leads each partition's consensus group and how far
// each member is, from the status replies of its nodes (paxflow-cli status,
// paxflow-cluster status). Pure formatting; any thread.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "client.pb.h"

namespace paxflow {

struct GroupMemberStatus {
  uint32_t node = 0;
  uint32_t partition = 0;
  bool answered = false;  // `status` holds its reply
  StatusReply status;
};

// One line per partition with a group ("partition 0: leader node 2 (term
// 3, committed epoch 812); followers: node 0 at epoch 810 (2 behind), node
// 1 recovering at epoch 540 (272 behind); node 5 does not answer"), in
// partition order; none when no answering node has replicated input.
std::vector<std::string> GroupStatusLines(const std::vector<GroupMemberStatus>& members);

}  // namespace paxflow
