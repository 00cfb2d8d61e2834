// The replicated log (replication/raft_log.h, libraft) on this machine:
// three members in one process on 127.0.0.1, default timeouts, committing
// epoch-sized batches (10 KB, 100 KB, 1 MB).
//
//  - paced: one batch per 10 ms epoch, as a partition's sequencer would
//    propose; latency = Propose on the leader until the leader is handed
//    the entry as committed (a majority has it on disk);
//  - back to back: as fast as it goes, up to 8 batches in flight.
// Each on disk (/tmp: libraft writes its segments with O_DSYNC) and on
// tmpfs (/dev/shm: the same writes, durable nowhere), so the difference is
// what durability costs. Counters: p50_ms, p99_ms; bytes_per_second.
//
// BM_ReplicationFailover: 20 times, the leader is stopped and the time
// until another member leads (elected, its barrier committed) is measured;
// the stopped one restarts on its data dir and catches up before the next.
#include <benchmark/benchmark.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "replication/raft_log.h"

namespace paxflow::replication {
namespace {

using Clock = std::chrono::steady_clock;

uint32_t FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address));
  socklen_t length = sizeof(address);
  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  close(fd);
  return ntohs(address.sin_port);
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * values.size()))];
}

// Three members; a thread per member takes its events and records when
// each index was handed out and who leads.
class BenchGroup {
 public:
  explicit BenchGroup(const std::string& root) {
    char pattern[256];
    std::snprintf(pattern, sizeof(pattern), "%s/paxflow-raft-bench-XXXXXX", root.c_str());
    dir_ = mkdtemp(pattern) ? pattern : "";
    std::vector<RaftMember> list;
    for (uint64_t id = 1; id <= 3; ++id)
      list.push_back({id, "127.0.0.1:" + std::to_string(FreePort())});
    for (uint64_t id = 1; id <= 3; ++id) {
      options_[id - 1].id = id;
      options_[id - 1].members = list;
      options_[id - 1].data_dir = dir_ + "/member-" + std::to_string(id);
      Start(id - 1);
    }
  }
  ~BenchGroup() {
    for (size_t i = 0; i < 3; ++i) Stop(i);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  bool ok() const { return !dir_.empty() && error_.empty(); }
  const std::string& error() const { return error_; }

  void Start(size_t i) {
    logs_[i] = StartRaftLog(options_[i], &error_);
    if (!logs_[i]) return;
    running_[i] = true;
    readers_[i] = std::thread([this, i, log = logs_[i].get()] {
      std::vector<LogEvent> events;
      for (;;) {
        if (!log->NextEvents(&events, std::chrono::milliseconds(1000))) {
          if (!running_[i]) break;  // stopped: the queue is closed and drained
          continue;
        }
        std::lock_guard<std::mutex> lock(mu_);
        for (const LogEvent& event : events)
          if (event.kind == LogEvent::Kind::kCommitted) handed_[i] = event.index;
        events.clear();
        cv_.notify_all();  // leadership events too
      }
    });
  }
  void Stop(size_t i) {
    if (!logs_[i]) return;
    running_[i] = false;
    logs_[i]->Stop();  // closes the queue: the reader ends
    readers_[i].join();
    logs_[i].reset();
  }

  // The member leading, waiting for one; -1 after `timeout`.
  int WaitLeader(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::unique_lock<std::mutex> lock(mu_);
    while (Clock::now() < deadline) {
      for (size_t i = 0; i < 3; ++i)
        if (logs_[i] && logs_[i]->leadership().leading) return static_cast<int>(i);
      cv_.wait_for(lock, std::chrono::milliseconds(5));  // leadership events wake it
    }
    return -1;
  }
  bool WaitHanded(size_t i, uint64_t index, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return handed_[i] >= index; });
  }
  ReplicatedLog& log(size_t i) { return *logs_[i]; }

 private:
  std::string dir_, error_;
  RaftLogOptions options_[3];
  std::unique_ptr<ReplicatedLog> logs_[3];
  std::thread readers_[3];
  std::atomic<bool> running_[3] = {false, false, false};
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t handed_[3] = {0, 0, 0};
};

// state.range(0): batch bytes; range(1): 1 = on disk, 0 = tmpfs;
// range(2): 1 = paced (10 ms epochs), 0 = back to back.
void BM_ReplicationCommit(benchmark::State& state) {
  const size_t bytes = state.range(0);
  const bool disk = state.range(1) == 1;
  const bool paced = state.range(2) == 1;
  BenchGroup group(disk ? "/tmp" : "/dev/shm");
  if (!group.ok()) {
    state.SkipWithError(group.error().c_str());
    return;
  }
  const int leader = group.WaitLeader(std::chrono::seconds(10));
  if (leader < 0) {
    state.SkipWithError("no leader elected");
    return;
  }
  std::string batch(bytes, 'x');
  std::vector<double> latencies_ms;
  std::map<uint64_t, Clock::time_point> in_flight;
  auto settle = [&](size_t keep) {  // waits until at most `keep` are uncommitted
    while (in_flight.size() > keep) {
      auto first = in_flight.begin();
      if (!group.WaitHanded(leader, first->first, std::chrono::seconds(30))) {
        state.SkipWithError("a batch did not commit within 30 s");
        return false;
      }
      latencies_ms.push_back(
          std::chrono::duration<double, std::milli>(Clock::now() - first->second).count());
      in_flight.erase(first);
    }
    return true;
  };
  auto next_epoch = Clock::now();
  for (auto _ : state) {
    const auto proposed = Clock::now();
    ProposeResult result = group.log(leader).Propose(batch);
    if (result.status != ProposeResult::Status::kAppended) {
      state.SkipWithError(("propose failed: " + result.error).c_str());
      break;
    }
    in_flight[result.index] = proposed;
    if (!settle(paced ? 0 : 8)) break;
    if (paced) {
      next_epoch += std::chrono::milliseconds(10);
      std::this_thread::sleep_until(next_epoch);  // the sequencer's epoch clock
    }
  }
  settle(0);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
  state.counters["p50_ms"] = Percentile(latencies_ms, 0.50);
  state.counters["p99_ms"] = Percentile(latencies_ms, 0.99);
}
BENCHMARK(BM_ReplicationCommit)
    ->ArgNames({"bytes", "disk", "paced"})
    ->ArgsProduct({{10 << 10, 100 << 10, 1 << 20}, {1, 0}, {1, 0}})
    ->Iterations(200)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_ReplicationFailover(benchmark::State& state) {
  BenchGroup group("/tmp");
  if (!group.ok()) {
    state.SkipWithError(group.error().c_str());
    return;
  }
  std::vector<double> elections_ms;
  for (auto _ : state) {
    const int leader = group.WaitLeader(std::chrono::seconds(10));
    if (leader < 0) {
      state.SkipWithError("no leader elected");
      return;
    }
    ProposeResult result = group.log(leader).Propose(std::string(10 << 10, 'x'));
    for (size_t i = 0; i < 3; ++i) group.WaitHanded(i, result.index, std::chrono::seconds(10));
    group.Stop(leader);
    const auto stopped = Clock::now();
    const int next = group.WaitLeader(std::chrono::seconds(10));
    if (next < 0) {
      state.SkipWithError("no leader elected after a stop");
      return;
    }
    elections_ms.push_back(
        std::chrono::duration<double, std::milli>(Clock::now() - stopped).count());
    result = group.log(next).Propose(std::string(10 << 10, 'y'));
    group.Start(leader);  // rejoins on its data dir before the next round
    if (!group.WaitHanded(leader, result.index, std::chrono::seconds(10))) {
      state.SkipWithError("the stopped leader did not catch up");
      return;
    }
  }
  state.counters["min_ms"] = Percentile(elections_ms, 0);
  state.counters["p50_ms"] = Percentile(elections_ms, 0.5);
  state.counters["p90_ms"] = Percentile(elections_ms, 0.9);
  state.counters["max_ms"] = Percentile(elections_ms, 1.0);
}
BENCHMARK(BM_ReplicationFailover)->Iterations(20)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace paxflow::replication
