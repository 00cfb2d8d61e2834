#include "tests/ltx_harness.h"

#include <gtest/gtest.h>

#include "applications/kv_procedures.h"
#include "applications/ycsb.h"
#include "common/clock.h"
#include "partition/partition_setup.h"
#include "sequencer/sequencer.h"
#include "tests/serial_reference.h"

namespace paxflow::testing {

LtxBench::LtxBench(const LtxBenchOptions& options) : options_(options) {
  NodeParams params;
  WorkloadParams& workload = params.workload;
  workload.application = "ycsb";
  workload.records = options.records;
  workload.value_size = 16;
  workload.distribution = "uniform";
  workload_ = workload;
  app_ = MakeApplication(workload);
  EngineParams& engine = params.engine;
  engine.mode = options.mode;
  engine.workers = 1;
  engine.ltx_workers = 1;
  engine.ltx_timeout = options.ltx_timeout;
  engine.max_active_ltx = options.max_active_ltx;
  engine.ltx_max_deferrals = options.ltx_max_deferrals;
  engine.ltx_in_place = options.ltx_in_place;
  engine.ltx_locked_run = options.ltx_locked_run;
  engine.gc = options.gc;
  params_ = params;
  sequenced_.resize(options.partitions);
  for (PartitionId p = 0; p < options.partitions; ++p) {
    partitions_.push_back(MakePartition(p, /*load=*/true));
  }
}

LtxBench::~LtxBench() {
  for (auto& partition : partitions_) partition->scheduler->Stop();
}

std::unique_ptr<LtxBench::Partition> LtxBench::MakePartition(PartitionId p, bool load) {
  auto partition = std::make_unique<Partition>();
  partition->store = MakeStore(params_.engine, p, options_.partitions, *app_,
                               params_.workload.value_size);
  if (load) LoadPartition(*app_, p, options_.partitions, partition->store.get());
  partition->owner_slot = partition->store->RegisterThread();
  SchedulerOptions options = SchedulerOptionsFor(params_.engine, p, options_.partitions, 1);
  options.runs_procedures = true;
  if (options_.max_locked_ltx_keys > 0) options.max_locked_ltx_keys = options_.max_locked_ltx_keys;
  if (!options_.bound_admission) {
    options.max_unpublished_epochs = 0;
    options.max_unpublished_epochs_wide = 0;
  }
  partition->stats = std::make_unique<NodeStats>(options.stats_slots());
  partition->scheduler = std::make_unique<Scheduler>(options, partition->store.get(), app_.get(),
                                                     this, partition->stats.get(), &results_,
                                                     this);
  Partition* self = partition.get();
  partition->scheduler->SetBeforeExecute([self](const MergedEpoch& epoch) {
    self->admitted.push_back(epoch.epoch);  // the scheduler thread: the test's
    return true;
  });
  return partition;
}

LtxCheckpoint LtxBench::Checkpoint(PartitionId p) {
  Partition& partition = *partitions_[p];
  const SchedulerStatus status = partition.scheduler->Status();
  LtxCheckpoint checkpoint;
  checkpoint.partition = p;
  checkpoint.epoch = status.admitted_epoch;
  checkpoint.read_only_snapshot = status.read_only_snapshot;
  Store& store = *partition.store;
  store.EnterSnapshot(partition.owner_slot);
  store.ScanAt(partition.owner_slot, 0, UINT64_MAX, checkpoint.epoch,
               [&](Key key, std::string_view value) {
                 checkpoint.rows.emplace_back(key, std::string(value));
               });
  store.ExitSnapshot(partition.owner_slot);
  checkpoint.lane_state_ready = partition.scheduler->LtxLaneStateReady();
  checkpoint.lane_state = partition.scheduler->SaveLtxLaneState();
  return checkpoint;
}

std::string LtxBench::Restart(const LtxCheckpoint& checkpoint, Epoch replay_through,
                              const std::string* lane_state) {
  const PartitionId p = checkpoint.partition;
  auto partition = MakePartition(p, /*load=*/false);
  for (const auto& [key, value] : checkpoint.rows) partition->store->Load(key, value);
  // What Node::RestorePartition and Node::Start do: the scheduler goes on
  // right after the checkpoint epoch (its merger, publish epoch and RO
  // snapshot set from the checkpoint, not from epochs fed again).
  SnapshotInfo info;
  info.ok = true;
  info.epoch = checkpoint.epoch;
  info.last_rw_epoch = checkpoint.read_only_snapshot;
  info.lane_state = lane_state ? *lane_state : checkpoint.lane_state;
  std::string error;
  if (!partition->scheduler->RestoreAt(info, &error)) return error;
  partition->scheduler->SetRecoveredThrough(std::max(replay_through, checkpoint.epoch));
  Replace(p, std::move(partition));
  return "";
}

void LtxBench::RestartWithoutCheckpoint(PartitionId p, Epoch replay_through) {
  auto partition = MakePartition(p, /*load=*/true);
  partition->scheduler->SetRecoveredThrough(replay_through);
  Replace(p, std::move(partition));
}

void LtxBench::Replace(PartitionId p, std::unique_ptr<Partition> partition) {
  partitions_[p]->scheduler->Stop();
  stopped_.push_back(std::move(partitions_[p]));
  partitions_[p] = std::move(partition);
  // Txns begun at p with no result yet: their clients went with it.
  for (auto& [id, needs_result] : submitted_) {
    ResultLog::Result result;
    auto it = origins_.find(id);
    if (it != origins_.end() && it->second == p && !results_.Find(id, &result)) {
      needs_result = false;
    }
  }
  partitions_[p]->scheduler->Step();
  // The others hear of it (hello, heartbeat) and ask again what it owed.
  for (PartitionId other = 0; announce_restarts_ && other < options_.partitions; ++other) {
    if (other != p) partitions_[other]->scheduler->PartitionRestarted(p);
  }
}

std::vector<Epoch> LtxBench::AdmittedEpochs(PartitionId p) const {
  return partitions_[p]->admitted;
}

void LtxBench::Redeliver(PartitionId p, Epoch from, Epoch to) {
  for (auto it = sequenced_[p].lower_bound(from); it != sequenced_[p].end() && it->first <= to;
       ++it) {
    partitions_[p]->scheduler->DeliverBatch(std::make_unique<Batch>(it->second));
  }
}

void LtxBench::SendRemoteReads(PartitionId to, const RemoteReads& reads) {
  RemoteReads copy = reads;
  partitions_[to]->scheduler->DeliverRemoteReads(std::move(copy));
}

void LtxBench::SendLtxReadRequest(PartitionId to, const LtxReadRequest& request) {
  LtxReadRequest copy = request;
  partitions_[to]->scheduler->DeliverLtxReadRequest(std::move(copy));
}

void LtxBench::SendLtxReadReply(PartitionId to, const LtxReadReply& reply) {
  LtxReadReply copy = reply;
  partitions_[to]->scheduler->DeliverLtxReadReply(std::move(copy));
}

Txn LtxBench::Rmw(std::vector<Key> keys, std::vector<Key> reads) {
  Txn txn;
  txn.set_procedure(YcsbApplication::kReadModifyWrite);
  txn.mutable_read_set()->Add(reads.begin(), reads.end());
  txn.mutable_read_write_set()->Add(keys.begin(), keys.end());
  return txn;
}

Txn LtxBench::Read(std::vector<Key> keys) {
  Txn txn;
  txn.set_procedure(YcsbApplication::kReadOnly);
  txn.mutable_read_set()->Add(keys.begin(), keys.end());
  return txn;
}

Txn LtxBench::Long(std::vector<Key> reads, std::vector<Key> rmw) {
  Txn txn;
  txn.set_txn_class(LTX);
  txn.set_procedure(YcsbApplication::kLong);
  txn.mutable_read_set()->Add(reads.begin(), reads.end());
  txn.mutable_read_write_set()->Add(rmw.begin(), rmw.end());
  LtxRecord* ltx = txn.mutable_ltx();
  ltx->set_kind(LTX_BEGIN);
  for (Key key : rmw) {
    KeyRange* range = ltx->add_write_area();
    range->set_lo(key);
    range->set_hi(key);
  }
  for (Key key : reads) {
    KeyRange* range = ltx->add_read_area();
    range->set_lo(key);
    range->set_hi(key);
  }
  return txn;
}

Txn LtxBench::LongKv(std::vector<Key> reads, std::vector<std::pair<Key, std::string>> writes,
                     std::vector<std::pair<Key, Key>> write_area) {
  Txn txn;
  txn.set_txn_class(LTX);
  txn.set_procedure(WithKvProcedures::kLongKv);
  txn.mutable_read_set()->Add(reads.begin(), reads.end());
  KvArgs args;
  for (const auto& [key, value] : writes) {
    txn.add_read_write_set(key);
    args.add_values(value);
  }
  txn.set_args(args.SerializeAsString());
  LtxRecord* ltx = txn.mutable_ltx();
  ltx->set_kind(LTX_BEGIN);
  for (const auto& [lo, hi] : write_area) {
    KeyRange* range = ltx->add_write_area();
    range->set_lo(lo);
    range->set_hi(hi);
  }
  return txn;
}

Txn LtxBench::Scan(Key lo, Key hi) {
  Txn txn;
  txn.set_txn_class(LTX);
  txn.set_procedure(YcsbApplication::kScan);
  LtxRecord* ltx = txn.mutable_ltx();
  ltx->set_kind(LTX_SCAN);
  KeyRange* range = ltx->add_read_area();
  range->set_lo(lo);
  range->set_hi(hi);
  return txn;
}

Txn LtxBench::Report(Key lo, Key hi, Key summary_lo, Key summary_hi) {
  Txn txn;
  txn.set_txn_class(LTX);
  txn.set_procedure(YcsbApplication::kReport);
  LtxRecord* ltx = txn.mutable_ltx();
  ltx->set_kind(LTX_BEGIN);
  KeyRange* range = ltx->add_read_area();
  range->set_lo(lo);
  range->set_hi(hi);
  KeyRange* summary = ltx->add_write_area();
  summary->set_lo(summary_lo);
  summary->set_hi(summary_hi);
  return txn;
}

Txn LtxBench::Insert(std::vector<Key> keys) {
  Txn txn;
  txn.set_procedure(YcsbApplication::kInsert);
  txn.mutable_write_set()->Add(keys.begin(), keys.end());
  return txn;
}

std::vector<TxnId> LtxBench::Sequence(Epoch epoch, std::vector<Txn> txns, PartitionId origin) {
  const uint32_t partitions = options_.partitions;
  std::vector<std::unique_ptr<Batch>> out(partitions);
  bool has_rw = false;
  std::vector<TxnId> ids;
  for (PartitionId p = 0; p < partitions; ++p) {
    out[p] = std::make_unique<Batch>();
    out[p]->set_epoch(epoch);
    out[p]->set_sequencer(0);
    out[p]->set_partition(p);
    out[p]->set_close_time_us(NowMicros());
  }
  uint32_t position = 0;
  for (Txn& txn : txns) {
    txn.set_id(MakeTxnId(epoch, 0, position++));
    txn.set_txn_class(Sequencer::Classify(txn));
    // Records the LTX lanes made keep the origin they name.
    const bool record = txn.txn_class() == LTX && txn.ltx().kind() != LTX_BEGIN &&
                        txn.ltx().kind() != LTX_SCAN;
    if (!record) {
      txn.set_origin_partition(origin);
      submitted_[txn.id()] = true;
      origins_[txn.id()] = origin;
    }
    txn.set_submit_time_us(NowMicros());
    has_rw |= txn.txn_class() == RW;
    ids.push_back(txn.id());
    if (txn.txn_class() == LTX) {
      Sequencer::SplitLtxRecord(txn, partitions, &out);
      continue;
    }
    std::vector<bool> touched(partitions, false);
    touched[txn.origin_partition()] = true;
    for (Key key : txn.read_set()) touched[PartitionOf(key, partitions)] = true;
    for (Key key : txn.read_write_set()) touched[PartitionOf(key, partitions)] = true;
    for (Key key : txn.write_set()) touched[PartitionOf(key, partitions)] = true;
    for (PartitionId p = 0; p < partitions; ++p) {
      if (touched[p]) *out[p]->add_txns() = txn;
    }
  }
  for (PartitionId p = 0; p < partitions; ++p) {
    out[p]->set_has_rw(has_rw);
    sequenced_[p][epoch] = *out[p];
    scheduler(p).DeliverBatch(std::move(out[p]));
  }
  return ids;
}

void LtxBench::Drain(bool ltx_threads) { DrainAll(ltx_threads, 0); }

void LtxBench::DrainHolding(TxnId held) { DrainAll(true, held); }

void LtxBench::DrainAll(bool ltx_threads, TxnId held) {
  // Each pass moves every partition as far as it goes; messages between
  // partitions land in inboxes that the next pass reads.
  for (int pass = 0; pass < 50; ++pass) {
    for (PartitionId p = 0; p < options_.partitions; ++p) {
      Scheduler& scheduler = *partitions_[p]->scheduler;
      scheduler.Step();
      scheduler.RunQueuedWork();
      if (ltx_threads) scheduler.RunQueuedLtxWork(held);
      scheduler.Step();
    }
  }
}

std::vector<Txn> LtxBench::TakeRecords() {
  std::lock_guard<std::mutex> lock(records_mu_);
  std::vector<Txn> records;
  records.swap(records_);
  return records;
}

uint64_t LtxBench::Digest(Epoch epoch) {
  uint64_t digest = 0;
  for (PartitionId p = 0; p < options_.partitions; ++p) {
    digest += partitions_[p]->store->Digest(partitions_[p]->owner_slot, epoch);
  }
  return digest;
}

bool LtxBench::ValueAt(PartitionId p, Key key, Epoch epoch, std::string* value) {
  Partition& partition = *partitions_[p];
  Store& store = *partition.store;
  store.EnterSnapshot(partition.owner_slot);
  std::string_view view;
  const bool found = store.ReadAt(partition.owner_slot, key, epoch, &view);
  if (found) value->assign(view);
  store.ExitSnapshot(partition.owner_slot);
  return found;
}

uint64_t LtxBench::ChecksumReading(const Txn& ltx, const std::map<Key, std::string>& values) const {
  // Every key the procedure may ask for is answered, as the lane answers a
  // round: with the value given, or absent.
  LtxReads reads;
  std::vector<Key> keys(ltx.read_set().begin(), ltx.read_set().end());
  keys.insert(keys.end(), ltx.read_write_set().begin(), ltx.read_write_set().end());
  for (Key key : keys) {
    auto it = values.find(key);
    reads.SetPoint(key, it != values.end(), it != values.end() ? it->second : std::string_view());
  }
  LtxRound round;
  app_->ExecuteLong(ltx, /*round=*/1, reads, &round);
  return round.outcome.checksum;
}

Epoch LtxBench::Published() const {
  Epoch published = UINT64_MAX;
  for (PartitionId p = 0; p < options_.partitions; ++p) {
    published = std::min(published, partitions_[p]->scheduler->Status().published_epoch);
  }
  return published;
}

std::string LtxBench::CheckSerialOrder(uint64_t* serial_digest) {
  OrderResult order =
      ExecuteInPositionOrder(workload_, options_.partitions, results_.all(), &submitted_);
  if (!order.error.empty()) return order.error;
  const uint64_t live = Digest(Published());
  if (serial_digest) *serial_digest = order.digest;
  if (order.digest != live) {
    return "the serial execution in position order ends at digest " + std::to_string(order.digest) +
           ", the engine at " + std::to_string(live);
  }
  return "";
}

void LtxBench::SubmitRecord(Txn record) {
  std::lock_guard<std::mutex> lock(records_mu_);
  records_.push_back(std::move(record));
}

TwiceDeferred DeferTwiceOnKey5(LtxBench* bench) {
  TwiceDeferred out;
  bench->Sequence(1, {LtxBench::LongKv({}, {{5, "a"}}, {{5, 5}})});
  out.starving = bench->Sequence(2, {LtxBench::Rmw({5}),
                                     LtxBench::LongKv({}, {{5, "b"}}, {{5, 5}})})[0];
  bench->Drain();
  std::vector<Txn> commits = bench->TakeRecords();
  if (commits.size() != 2) {
    out.error = std::to_string(commits.size()) + " records, expected the two commits";
    return out;
  }
  if (commits[1].ltx().ltx_id() < commits[0].ltx().ltx_id()) std::swap(commits[0], commits[1]);
  bench->Sequence(3, {commits[0]});  // releases the txn, which the second LTX defers again
  bench->Drain();
  out.second_commit = commits[1];
  return out;
}

Txn OnlyRecord(LtxBench* bench, LtxRecordKind kind) {
  std::vector<Txn> records = bench->TakeRecords();
  EXPECT_EQ(records.size(), 1u);
  if (records.empty()) return Txn();
  EXPECT_EQ(records[0].ltx().kind(), kind) << records[0].ShortDebugString();
  return records[0];
}

}  // namespace paxflow::testing
