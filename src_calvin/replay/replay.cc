#include "replay/replay.h"

#include <glog/logging.h>

#include <map>
#include <memory>
#include <thread>

#include "applications/workload.h"
#include "common/clock.h"
#include "partition/local_partitions.h"
#include "partition/partition_setup.h"
#include "scheduler/scheduler.h"
#include "sequencer/input_log.h"

namespace paxflow {
namespace {

struct OpenLogs {
  std::map<PartitionId, std::unique_ptr<InputLogReader>> by_partition;
  uint32_t partitions = 0;
  uint32_t sequencers = 0;
};

std::string OpenReplicaLogs(const std::string& dir, uint32_t replica, OpenLogs* logs) {
  std::vector<std::string> paths = ListInputLogs(dir);
  if (paths.empty()) return "no input logs (node-*.log) in " + dir;
  for (const std::string& path : paths) {
    auto reader = std::make_unique<InputLogReader>();
    std::string error = reader->Open(path);
    if (!error.empty()) return error;
    const LogHeader& header = reader->header();
    if (header.replica() != replica) continue;
    if (logs->partitions == 0) {
      logs->partitions = header.partitions();
      logs->sequencers = header.sequencers();
    } else if (header.partitions() != logs->partitions) {
      return path + " was recorded with " + std::to_string(header.partitions()) +
             " partitions, other logs with " + std::to_string(logs->partitions);
    }
    if (logs->by_partition.count(header.partition())) {
      return "two logs of partition " + std::to_string(header.partition()) + " for replica " +
             std::to_string(replica) + " in " + dir;
    }
    logs->by_partition[header.partition()] = std::move(reader);
  }
  if (logs->by_partition.empty()) {
    return "no input log of replica " + std::to_string(replica) + " in " + dir;
  }
  for (PartitionId p = 0; p < logs->partitions; ++p) {
    if (!logs->by_partition.count(p)) {
      return "the log of partition " + std::to_string(p) + " (replica " +
             std::to_string(replica) + ") is missing from " + dir;
    }
  }
  return "";
}

}  // namespace

std::string ReadLogParams(const std::string& dir,
                          std::vector<std::pair<std::string, std::string>>* params,
                          uint32_t* partitions) {
  std::vector<std::string> paths = ListInputLogs(dir);
  if (paths.empty()) return "no input logs (node-*.log) in " + dir;
  InputLogReader reader;
  std::string error = reader.Open(paths.front());
  if (!error.empty()) return error;
  for (const Param& param : reader.header().param()) {
    params->emplace_back(param.name(), param.value());
  }
  *partitions = reader.header().partitions();
  return "";
}

ReplayResult ReplayLogs(const std::string& dir, uint32_t replica, const NodeParams& params) {
  ReplayResult result;
  OpenLogs logs;
  result.error = OpenReplicaLogs(dir, replica, &logs);
  if (!result.error.empty()) return result;
  const uint32_t partitions = logs.partitions;
  result.error = params.Validate(partitions);
  if (!result.error.empty()) return result;

  // Pass 1: the last epoch every partition's log holds whole. Epochs after
  // it cannot run: some partition would wait for reads that were never logged.
  Epoch cut = ~Epoch{0};
  for (auto& [partition, reader] : logs.by_partition) {
    Epoch last = 0;
    LogEpoch epoch;
    while (reader->Next(&epoch)) last = epoch.epoch();
    result.truncated |= reader->truncated();
    cut = std::min(cut, last);
    std::string error = reader->Open(reader->path());
    if (!error.empty()) {
      result.error = error;
      return result;
    }
  }

  std::unique_ptr<Application> app = MakeApplication(params.workload);
  // A replay never re-runs an LTX: it installs from the logged commit records.
  LocalPartitions engine(params, app.get(), partitions, logs.sequencers, nullptr,
                         /*runs_procedures=*/false);
  const int64_t start = NowMicros();
  engine.Start();

  // Pass 2: feed the epochs up to the cut, all partitions in step, keeping
  // only a bounded number of epochs queued ahead of execution.
  constexpr Epoch kMaxAhead = 64;
  std::vector<bool> finished_sequencer(logs.sequencers, false);
  bool more = true;
  while (more) {
    more = false;
    Epoch fed = 0;
    for (auto& [partition, reader] : logs.by_partition) {
      LogEpoch epoch;
      if (!reader->Next(&epoch) || epoch.epoch() > cut) continue;
      more = true;
      fed = epoch.epoch();
      for (Batch& batch : *epoch.mutable_batch()) {
        if (batch.final()) finished_sequencer[batch.sequencer()] = true;
        auto owned = std::make_unique<Batch>();
        owned->Swap(&batch);
        engine.scheduler(partition).DeliverBatch(std::move(owned));
      }
    }
    for (PartitionId p = 0; p < partitions; ++p) {
      Scheduler& scheduler = engine.scheduler(p);
      while (fed > scheduler.Status().admitted_epoch + kMaxAhead && !scheduler.finished()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));  // flow control, not sync
      }
    }
  }
  // Sequencers still running when the log ends stop here.
  for (uint32_t s = 0; s < logs.sequencers; ++s) {
    if (finished_sequencer[s]) continue;
    for (PartitionId p = 0; p < partitions; ++p) {
      auto batch = std::make_unique<Batch>();
      batch->set_epoch(cut + 1);
      batch->set_sequencer(s);
      batch->set_partition(p);
      batch->set_final(true);
      engine.scheduler(p).DeliverBatch(std::move(batch));
    }
  }
  for (PartitionId p = 0; p < partitions; ++p) {
    while (!engine.scheduler(p).WaitFinished(1000)) {
      LOG(INFO) << "replay: waiting, " << engine.scheduler(p).Status().waiting_for;
    }
  }
  result.seconds = (NowMicros() - start) / 1e6;
  engine.Stop();
  for (PartitionId p = 0; p < partitions; ++p) {
    result.epoch = std::max(result.epoch, engine.scheduler(p).last_epoch());
  }
  for (PartitionId p = 0; p < partitions; ++p) {
    const uint64_t digest = engine.Digest(p, result.epoch);
    result.partition_digests.push_back(digest);
    result.digest += digest;
  }
  result.txns = engine.Committed();
  return result;
}

}  // namespace paxflow
