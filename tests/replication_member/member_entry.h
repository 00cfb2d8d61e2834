// What a replication_member proposes while it leads, shared by the member
// (tests/replication_member/member_main.cc) and the test that waits for its
// entries (tests/replication_cluster_test.cc). The term makes each entry
// unique across leaderships and across the member's restarts (n counts
// from 0 in each term), so a wait for one never matches an earlier life's.
#pragma once
#include <cstdint>
#include <string>

namespace paxflow {

inline std::string MemberEntry(uint64_t id, uint64_t term, uint64_t n) {
  return "from-" + std::to_string(id) + "-" + std::to_string(term) + "-" + std::to_string(n);
}

}  // namespace paxflow
