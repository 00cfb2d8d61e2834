// Setting up one partition, the same way for a node, a replay and the tests'
// in-process engine: its store, its initial data, its scheduler options and
// its input log header.
//
// Owns nothing; stateless functions called on the owner's thread.
#pragma once
#include <functional>
#include <memory>

#include "applications/application.h"
#include "backend/store.h"
#include "base/params.h"
#include "config.pb.h"
#include "recovery.pb.h"
#include "scheduler/scheduler.h"

namespace paxflow {

// Loads the application's initial data of `partition` into `store`.
// `progress`, if set, is called about once a second with the rows loaded
// so far and the seconds taken, and once at the end with done = true.
using LoadProgress = std::function<void(uint64_t rows, double seconds, bool done)>;
void LoadPartition(const Application& app, PartitionId partition, uint32_t partitions,
                   Store* store, const LoadProgress& progress = nullptr);

// The scheduler settings of `partition` under `engine`: it merges the
// batches of engine.sequencers_per_node sequencers per partition unless
// `sequencers` (the total) says otherwise (replays take it from the log).
SchedulerOptions SchedulerOptionsFor(const EngineParams& engine, PartitionId partition,
                                     uint32_t partitions, uint32_t sequencers = 0);

// The first record of a node's input log: who wrote it and with what.
LogHeader MakeLogHeader(const NodeParams& params, NodeId node, PartitionId partition,
                        uint32_t replica, uint32_t partitions);

// A checkpoint's header says what the scheduler's snapshot said, and back.
SnapshotInfo SnapshotFromCheckpoint(const CheckpointHeader& header);
void DescribeSnapshot(const SnapshotInfo& snapshot, CheckpointHeader* header);

// Creates the store a mode runs on (and starts its collector).
std::unique_ptr<Store> MakeStore(const EngineParams& engine, PartitionId partition,
                                 uint32_t partitions, const Application& app, uint32_t value_size);

}  // namespace paxflow
