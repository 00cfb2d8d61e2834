#include "replay/replay.h"

#include <glog/logging.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <thread>

#include "applications/workload.h"
#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "partition/local_partitions.h"
#include "partition/partition_setup.h"
#include "scheduler/scheduler.h"
#include "sequencer/input_log.h"

namespace paxflow {
namespace {

struct OpenLogs {
  std::map<PartitionId, std::unique_ptr<InputLogReader>> by_partition;
  std::map<PartitionId, NodeId> nodes;  // whose log each is
  uint32_t partitions = 0;
  uint32_t sequencers = 0;
};

// The newest epoch at which every partition's node holds a checkpoint (0:
// none in common).
Epoch CommonCheckpoint(const std::string& dir, const OpenLogs& logs) {
  std::vector<Epoch> common;
  bool first = true;
  for (const auto& [partition, node] : logs.nodes) {
    const std::vector<Epoch> held = ListCheckpoints(dir, node);
    if (first) {
      common = held;
      first = false;
      continue;
    }
    std::vector<Epoch> both;
    std::set_intersection(common.begin(), common.end(), held.begin(), held.end(),
                          std::back_inserter(both));
    common.swap(both);
  }
  return common.empty() ? 0 : common.back();
}

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
    logs->nodes[header.partition()] = header.node_id();
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

  // Where to start: the newest checkpoint every partition holds, else the
  // initial state (if the logs still begin at epoch 1).
  const Epoch start_epoch = CommonCheckpoint(dir, logs);
  result.start_epoch = start_epoch;

  // Pass 1: the last epoch every partition's log holds whole. Epochs after
  // it cannot run: some partition would wait for reads that were never logged.
  Epoch cut = ~Epoch{0};
  for (auto& [partition, reader] : logs.by_partition) {
    Epoch last = 0, first = 0;
    LogEpoch epoch;
    // A damaged closed segment is a hole, not an end: never replayed over.
    reader->log().StopAtDamage();
    while (reader->Next(&epoch)) {
      if (first == 0) first = epoch.epoch();
      last = epoch.epoch();
    }
    if (reader->log().damaged()) {
      result.error = "the log of partition " + std::to_string(partition) + " is damaged: " +
                     reader->log().damage() + "; epochs " + std::to_string(last + 1) + ".." +
                     std::to_string(reader->log().damaged_segment().last_epoch) +
                     " are missing from it";
      return result;
    }
    result.truncated |= reader->truncated();
    cut = std::min(cut, last);
    if (first > start_epoch + 1) {
      result.error = "the log of partition " + std::to_string(partition) + " begins at epoch " +
                     std::to_string(first) + ", but " +
                     (start_epoch ? "the newest checkpoint every partition holds is at epoch " +
                                        std::to_string(start_epoch)
                                  : std::string("the partitions hold no common checkpoint")) +
                     ": nothing to start from";
      return result;
    }
    std::string error = reader->Open(reader->path());
    if (!error.empty()) {
      result.error = error;
      return result;
    }
  }

  std::unique_ptr<Application> app = MakeApplication(params.workload);
  // A replay never re-runs an LTX: it installs from the logged commit records.
  LocalPartitions engine(params, app.get(), partitions, logs.sequencers, nullptr,
                         /*runs_procedures=*/false, {}, /*load=*/start_epoch == 0);
  for (PartitionId p = 0; start_epoch > 0 && p < partitions; ++p) {
    const std::string path = CheckpointPath(dir, logs.nodes[p], start_epoch);
    CheckpointHeader header;
    CheckpointStats stats;
    result.error = LoadCheckpoint(path, &engine.store(p), engine.owner_slot(p), &header, &stats);
    if (!result.error.empty()) return result;
    if (!engine.scheduler(p).RestoreAt(SnapshotFromCheckpoint(header), &result.error)) {
      result.error = path + ": " + result.error;
      return result;
    }
  }
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
      // Epochs the checkpoint holds already are skipped.
      bool got = reader->Next(&epoch);
      while (got && epoch.epoch() <= start_epoch) got = reader->Next(&epoch);
      if (!got || epoch.epoch() > cut) continue;
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
  // Stuck (a log that lacks an epoch another has) is an error, not a hang.
  constexpr int kStuckSeconds = 30;
  for (PartitionId p = 0; p < partitions; ++p) {
    Epoch seen = engine.scheduler(p).Status().admitted_epoch;
    int still = 0;
    while (!engine.scheduler(p).WaitFinished(1000)) {
      const SchedulerStatus status = engine.scheduler(p).Status();
      still = status.admitted_epoch == seen ? still + 1 : 0;
      seen = status.admitted_epoch;
      if (still >= kStuckSeconds) {
        result.error = "replay stuck at epoch " + std::to_string(seen) + " of partition " +
                       std::to_string(p) + " for " + std::to_string(kStuckSeconds) + " s (" +
                       status.waiting_for + ")";
        engine.Stop();
        return result;
      }
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
