#include "partition/partition_setup.h"

#include "backend/multi_version_store.h"
#include "backend/single_version_store.h"
#include "common/clock.h"

namespace paxflow {

void LoadPartition(const Application& app, PartitionId partition, uint32_t partitions,
                   Store* store, const LoadProgress& progress) {
  class StoreLoader : public Loader {
   public:
    StoreLoader(Store* store, const LoadProgress& progress)
        : store_(store), progress_(progress), start_us_(NowMicros()), next_us_(start_us_ + 1000000) {}
    void Put(Key key, std::string_view value) override {
      store_->Load(key, value);
      // The clock is looked at every 64K rows only.
      if (progress_ && (++rows_ & 0xffff) == 0 && NowMicros() >= next_us_) {
        next_us_ += 1000000;
        progress_(rows_, (NowMicros() - start_us_) / 1e6, false);
      }
    }
    void Done() {
      if (progress_) progress_(rows_, (NowMicros() - start_us_) / 1e6, true);
    }

   private:
    Store* store_;
    const LoadProgress& progress_;
    const int64_t start_us_;
    int64_t next_us_;
    uint64_t rows_ = 0;
  } loader(store, progress);
  app.Load(partition, partitions, &loader);
  loader.Done();
}

LogHeader MakeLogHeader(const NodeParams& params, NodeId node, PartitionId partition,
                        uint32_t replica, uint32_t partitions) {
  LogHeader header;
  header.set_node_id(node);
  header.set_partition(partition);
  header.set_replica(replica);
  header.set_partitions(partitions);
  header.set_sequencers(partitions * params.engine.sequencers_per_node);
  for (const auto& [name, value] : params.ClusterParams()) {
    Param* param = header.add_param();
    param->set_name(name);
    param->set_value(value);
  }
  return header;
}

SchedulerOptions SchedulerOptionsFor(const EngineParams& engine, PartitionId partition,
                                     uint32_t partitions, uint32_t sequencers) {
  SchedulerOptions options;
  options.mode = engine.mode;
  options.partition = partition;
  options.partitions = partitions;
  options.sequencers = sequencers ? sequencers : partitions * engine.sequencers_per_node;
  options.workers = engine.workers;
  options.ro_workers = engine.ro_workers;
  options.ltx_workers = engine.ltx_workers;
  options.ltx_timeout = engine.ltx_timeout;
  options.max_active_ltx = engine.max_active_ltx;
  options.ltx_max_deferrals = engine.ltx_max_deferrals;
  options.ltx_in_place = engine.ltx_in_place && partitions == 1;
  options.ltx_locked_run = engine.ltx_locked_run;
  options.fault_hold_ltx_file = engine.fault_hold_ltx_file;
  // Paxflow mode admits only a few epochs past publication while an LTX that
  // reads its snapshot round by round is unresolved: a deeper queue inside
  // the scheduler adds no throughput once the workers are busy, and every
  // epoch admitted past such an LTX's snapshot makes writes keep versions
  // for it until it has read. With none unresolved (locked runs read what
  // settles at their begin epoch), or while a locked run holds publication
  // (the txns not behind its locks may run), the wide bound of old. Calvin
  // mode (a single-version store, which pins nothing) keeps that one
  // always: the yardstick stays as it was.
  options.max_unpublished_epochs_wide = 2 * engine.max_epochs_ahead;
  options.max_unpublished_epochs = engine.mode == Mode::kPaxflow
                                       ? engine.max_unpublished_epochs
                                       : options.max_unpublished_epochs_wide;
  return options;
}

SnapshotInfo SnapshotFromCheckpoint(const CheckpointHeader& header) {
  SnapshotInfo info;
  info.ok = true;
  info.epoch = header.epoch();
  info.last_rw_epoch = header.last_rw_epoch();
  info.lane_state = header.lane_state();
  for (int i = 0; i < header.finished_sequencer_size() && i < header.finished_at_size(); ++i) {
    info.finished_sequencers.emplace_back(header.finished_sequencer(i), header.finished_at(i));
  }
  return info;
}

void DescribeSnapshot(const SnapshotInfo& snapshot, CheckpointHeader* header) {
  header->set_epoch(snapshot.epoch);
  header->set_last_rw_epoch(snapshot.last_rw_epoch);
  header->set_lane_state(snapshot.lane_state);
  header->clear_finished_sequencer();
  header->clear_finished_at();
  for (const auto& [sequencer, final_epoch] : snapshot.finished_sequencers) {
    header->add_finished_sequencer(sequencer);
    header->add_finished_at(final_epoch);
  }
}

std::unique_ptr<Store> MakeStore(const EngineParams& engine, PartitionId partition,
                                 uint32_t partitions, const Application& app, uint32_t value_size) {
  if (engine.mode == Mode::kCalvin) {
    return std::make_unique<SingleVersionStore>(partition, partitions, app.DenseKeys(),
                                                value_size);
  }
  GcOptions gc;
  gc.policy = engine.gc;
  // Workers, the other engine threads, and each generator's OLLP recon.
  gc.max_threads = engine.workers + engine.sequencers_per_node + 8;
  auto store = std::make_unique<MultiVersionStore>(partition, partitions, app.DenseKeys(),
                                                   value_size, gc);
  store->StartCollector();
  return store;
}

}  // namespace paxflow
