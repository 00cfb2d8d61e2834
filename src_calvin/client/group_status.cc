#include "client/group_status.h"

#include <map>

namespace paxflow {

std::vector<std::string> GroupStatusLines(const std::vector<GroupMemberStatus>& members) {
  std::map<uint32_t, std::vector<const GroupMemberStatus*>> by_partition;
  bool replicated = false;
  for (const GroupMemberStatus& member : members) {
    by_partition[member.partition].push_back(&member);
    replicated |= member.answered && !member.status.group_role().empty();
  }
  std::vector<std::string> lines;
  if (!replicated) return lines;
  for (const auto& [partition, group] : by_partition) {
    const GroupMemberStatus* leader = nullptr;
    for (const GroupMemberStatus* member : group) {
      if (member->answered && member->status.group_role() == "leader" &&
          (!leader || member->status.group_term() > leader->status.group_term())) {
        leader = member;
      }
    }
    std::string line = "partition " + std::to_string(partition) + ": ";
    uint64_t head = 0;
    if (leader) {
      head = leader->status.group_committed_epoch();
      line += "leader node " + std::to_string(leader->node) + " (term " +
              std::to_string(leader->status.group_term()) + ", committed epoch " +
              std::to_string(head) + ")";
    } else {
      line += "no leader (an election is under way, or a majority of its replicas is down)";
    }
    std::string followers, silent;
    for (const GroupMemberStatus* member : group) {
      if (member == leader) continue;
      if (!member->answered) {
        silent += (silent.empty() ? "" : ", ") + std::string("node ") + std::to_string(member->node);
        continue;
      }
      const StatusReply& s = member->status;
      std::string entry = "node " + std::to_string(member->node);
      if (s.state() == "recovering" || s.state() == "starting") entry += " " + s.state();
      entry += " at epoch " + std::to_string(s.group_committed_epoch());
      if (leader) {
        const uint64_t at = s.group_committed_epoch();
        entry += at >= head ? " (caught up)"
                            : " (" + std::to_string(head - at) + " behind)";
      }
      followers += (followers.empty() ? "" : ", ") + entry;
    }
    if (!followers.empty()) line += "; followers: " + followers;
    if (!silent.empty()) line += "; not answering: " + silent;
    lines.push_back(line);
  }
  return lines;
}

}  // namespace paxflow
