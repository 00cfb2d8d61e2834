// One member of a replicated log in a process of its own, for the tests
// that kill members with SIGKILL (tests/replication_cluster_test.cc).
// While it leads it proposes "from-<id>-<term>-<n>" (n counts from 0 in each
// term) every --propose_ms; it prints one line per event, flushed:
// "commit <index> <bytes>", "leading <term>", "restored <index>". It runs
// until it is killed.
#include <gflags/gflags.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>

#include "replication/raft_log.h"
#include "tests/replication_member/member_entry.h"

DEFINE_uint64(id, 0, "this member's id (> 0)");
DEFINE_string(members, "", "every member of the group: id=127.0.0.1:port,...");
DEFINE_string(dir, "", "this member's data directory");
DEFINE_uint32(propose_ms, 20, "while leading, propose one entry every this many ms");

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  using namespace paxflow::replication;
  RaftLogOptions options;
  options.id = FLAGS_id;
  options.data_dir = FLAGS_dir;
  options.election_timeout_ms = 300;
  options.heartbeat_ms = 50;
  options.connect_retry_ms = 50;
  std::stringstream list(FLAGS_members);
  for (std::string item; std::getline(list, item, ',');) {
    const size_t equals = item.find('=');
    if (equals == std::string::npos) {
      std::fprintf(stderr, "--members: '%s' is not id=host:port\n", item.c_str());
      return 2;
    }
    options.members.push_back({std::stoull(item.substr(0, equals)), item.substr(equals + 1)});
  }
  std::string error;
  std::unique_ptr<ReplicatedLog> log = StartRaftLog(options, &error);
  if (!log) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  std::thread([&log] {
    for (uint64_t term = 0, n = 0;;) {
      const Leadership now = log->leadership();
      if (now.term != term) {
        term = now.term;
        n = 0;
      }
      if (now.leading && log->Propose(paxflow::MemberEntry(FLAGS_id, term, n)).status ==
                             ProposeResult::Status::kAppended)
        ++n;
      std::this_thread::sleep_for(std::chrono::milliseconds(FLAGS_propose_ms));  // the epoch clock
    }
  }).detach();
  for (std::vector<LogEvent> events;; events.clear()) {
    if (!log->NextEvents(&events, std::chrono::seconds(1))) continue;
    for (const LogEvent& event : events) {
      if (event.kind == LogEvent::Kind::kCommitted)
        std::printf("commit %llu %s\n", static_cast<unsigned long long>(event.index),
                    event.bytes.c_str());
      else if (event.kind == LogEvent::Kind::kRestored)
        std::printf("restored %llu\n", static_cast<unsigned long long>(event.index));
      else if (event.leadership.leading)
        std::printf("leading %llu\n", static_cast<unsigned long long>(event.leadership.term));
    }
    std::fflush(stdout);
  }
}
