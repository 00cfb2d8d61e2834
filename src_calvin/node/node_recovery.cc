// Node, its durable side: opening and reopening the logs, a failed log,
// rebuilding the partition from a checkpoint and its log, checkpoints
// asked for by clients, heartbeats, stall reports, asking peers for missed
// batches, dropping old logs, and waiting for stragglers at the end. The
// wiring and the run are in node.cc.
#include <dirent.h>
#include <fcntl.h>
#include <glog/logging.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "checkpoint/checkpoint.h"
#include "common/clock.h"
#include "common/paths.h"
#include "common/proto_json.h"
#include "common/record_file.h"
#include "node/node.h"
#include "sequencer/node_history.h"

namespace paxflow {
namespace {

// A batch missing this long, from a peer that has sent it, is asked for
// (again).
constexpr int64_t kMissingBatchUs = 300000;

std::string Join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string joined;
  for (const std::string& part : parts) joined += (joined.empty() ? "" : separator) + part;
  return joined;
}

// The other nodes whose files `dir` holds ("node 1, node 2"), for messages.
std::string OtherNodes(const std::string& dir, NodeId self) {
  std::string others;
  for (const std::string& log : ListInputLogs(dir)) {
    InputLogReader reader;
    if (!reader.Open(log).empty() || reader.header().node_id() == self) continue;
    others += (others.empty() ? "" : ", ") + std::string("node ") +
              std::to_string(reader.header().node_id());
  }
  return others;
}

// "name=flag (recorded: value)" for every recorded parameter that differs
// from this node's.
std::vector<std::string> ParamMismatches(
    const google::protobuf::RepeatedPtrField<Param>& recorded, const NodeParams& params) {
  std::map<std::string, std::string> ours;
  for (const auto& [name, value] : params.ClusterParams()) ours[name] = value;
  std::vector<std::string> mismatches;
  for (const Param& param : recorded) {
    auto it = ours.find(param.name());
    if (it == ours.end()) {
      mismatches.push_back(param.name() + "=" + param.value() +
                           " is recorded, a parameter this binary does not know");
    } else if (it->second != param.value()) {
      mismatches.push_back("--" + param.name() + "=" + it->second + " (recorded: " +
                           param.name() + "=" + param.value() + ")");
    }
  }
  return mismatches;
}

}  // namespace

std::string FinishedPath(const std::string& dir, NodeId node) {
  return dir + "/" + NodeFileName(node) + ".finished";
}

Epoch ReadFinished(const std::string& dir, NodeId node) {
  std::string text, error;
  if (!ReadTextFile(FinishedPath(dir, node), &text, &error)) return 0;
  return std::strtoull(text.c_str(), nullptr, 10);
}


std::string Node::InspectLogDir(Epoch* logged_through, Epoch* sequenced_through) {
  const EngineParams& engine = options_.params.engine;
  if (engine.log_dir.empty()) return "";
  const std::string& dir = engine.log_dir;
  const std::string id = std::to_string(options_.id);
  const std::string name = NodeFileName(options_.id);
  const LogExtent input = ReadLogExtent(dir, name, kInputLogFormat, EpochOfInputRecord);
  const LogExtent sequenced = ReadLogExtent(dir, name, kSequencerLogFormat, EpochOfSequencerRecord);
  const LogExtent reads = ReadLogExtent(dir, name, kReadsLogFormat, EpochOfReadsRecord);
  const std::vector<Epoch> checkpoints = ListCheckpoints(dir, options_.id);
  const std::vector<std::string> files = NodeFiles(dir, options_.id);
  const std::vector<std::string> history = HistoryOf(files, name, input, sequenced, reads);
  history_files_ = history;
  const std::string restart_hint =
      "restart it with --recover (paxflow-cluster restart --node=" + id + ")";
  if (!engine.recover) {
    if (history.empty() || engine.wipe) return "";
    std::string listed;
    for (size_t i = 0; i < history.size() && i < 6; ++i) listed += (i ? ", " : "") + history[i];
    if (history.size() > 6) listed += ", ... (" + std::to_string(history.size()) + " files)";
    return "its log directory " + dir + " holds this node's history (" + listed +
           (input.records > 0 ? "; input log through epoch " + std::to_string(input.last_epoch)
                              : std::string()) +
           "), which a start without --recover would remove; nothing was touched. To rejoin "
           "its cluster with it, " + restart_hint + " (after a crash of every node: "
           "paxflow-cluster restart --node=all); for a fresh start that removes it, add --wipe "
           "(paxflow-cluster start --wipe), or give another --log_dir";
  }
  // --recover: the directory must be this node's, of this cluster.
  if (files.empty()) {
    const std::string others = OtherNodes(dir, options_.id);
    return "--recover: " + dir + " holds no history of node " + id +
           " (no input log, checkpoint or recovery state of it" +
           (others.empty() ? std::string() : "; it holds the logs of " + others) +
           "): there is nothing to recover. Is --log_dir (or --node_id) right? A node that "
           "never ran starts fresh, without --recover, together with its whole cluster "
           "(paxflow-cluster start)";
  }
  if (!input.exists) {
    return "--recover: " + dir + " holds files of node " + id + " but not its input log (" +
           InputLogPath(dir, options_.id) + "): it cannot be rebuilt from them; nothing was "
           "touched";
  }
  const LogHeader expected = MakeLogHeader(options_.params, options_.id, self_->partition(),
                                           self_->replica(), layout_.partitions());
  const struct {
    const LogExtent* log;
    const char* what;
  } logs[] = {{&input, "input log"}, {&sequenced, "sequencer log"}, {&reads, "reads log"}};
  for (const auto& [log, what] : logs) {
    if (!log->exists) continue;
    if (!log->error.empty()) {
      return "--recover: its " + std::string(what) + " cannot be read: " + log->error;
    }
    LogHeader header;
    if (!header.ParseFromString(log->header)) {
      return "--recover: its " + std::string(what) + " in " + dir + " has an unreadable header";
    }
    if (header.node_id() != options_.id || header.partition() != self_->partition() ||
        header.replica() != self_->replica() || header.partitions() != layout_.partitions() ||
        header.sequencers() != expected.sequencers()) {
      return "--recover: the " + std::string(what) + " " + name + " in " + dir +
             " was written by node " + std::to_string(header.node_id()) + " (partition " +
             std::to_string(header.partition()) + " of " + std::to_string(header.partitions()) +
             ", replica " + std::to_string(header.replica()) + ", " +
             std::to_string(header.sequencers()) + " sequencers); this is node " + id +
             " (partition " + std::to_string(self_->partition()) + " of " +
             std::to_string(layout_.partitions()) + ", replica " +
             std::to_string(self_->replica()) + ", " + std::to_string(expected.sequencers()) +
             " sequencers): not its history";
    }
    const std::vector<std::string> mismatches = ParamMismatches(header.param(), options_.params);
    if (!mismatches.empty()) {
      std::string listed;
      for (const std::string& m : mismatches) listed += (listed.empty() ? "" : ", ") + m;
      return "--recover: this node's parameters differ from those its " + std::string(what) +
             " in " + dir + " was written with: " + listed +
             ". A node rejoins with its cluster's parameters: give the recorded values "
             "(paxflow-cluster restart reuses start's flags); nothing was touched";
    }
  }
  for (Epoch epoch : checkpoints) {
    const std::string path = CheckpointPath(dir, options_.id, epoch);
    CheckpointHeader header;
    const std::string error = ReadCheckpointHeader(path, &header);
    if (!error.empty()) continue;  // a damaged one: RestorePartition says so if it is needed
    if (header.node_id() != options_.id || header.partition() != self_->partition() ||
        header.partitions() != layout_.partitions()) {
      return "--recover: " + path + " is a checkpoint of node " +
             std::to_string(header.node_id()) + " (partition " +
             std::to_string(header.partition()) + " of " + std::to_string(header.partitions()) +
             "), not of node " + id;
    }
    std::vector<std::string> mismatches = ParamMismatches(header.param(), options_.params);
    if (header.mode() != ModeName(options_.params.engine.mode)) {
      mismatches.push_back(std::string("--mode=") + ModeName(options_.params.engine.mode) +
                           " (recorded: mode=" + header.mode() + ")");
    }
    if (!mismatches.empty()) {
      std::string listed;
      for (const std::string& m : mismatches) listed += (listed.empty() ? "" : ", ") + m;
      return "--recover: this node's parameters differ from those " + path +
             " was written with: " + listed + "; nothing was touched";
    }
  }
  *logged_through = input.last_epoch;
  *sequenced_through = sequenced.last_epoch;
  return "";
}

void Node::MakeLogWriters() {
  const EngineParams& engine = options_.params.engine;
  if (engine.log_dir.empty()) return;
  log_ = std::make_unique<InputLogWriter>();
  reads_log_ = std::make_unique<SegmentedLogWriter>();
  reads_log_->SetSyncDirectory(engine.log_fsync);
  // The sequencer log (what peers fetch when they restart) holds one
  // sequencer's batches; with several per node the input log still serves
  // replays, but no node of the cluster can restart (EngineParams::Validate).
  if ((self_->replica() == 0 || engine.replicated_input) && engine.sequencers_per_node == 1) {
    sequencer_log_ = std::make_unique<SegmentedLogWriter>();
    sequencer_log_->SetSyncDirectory(engine.log_fsync);
  }
}

std::string Node::OpenLogs(Epoch* logged_through, Epoch* sequenced_through) {
  // Only after the peers agreed (WaitForPeers) and InspectLogDir allowed
  // it: the first change this start makes to the log directory.
  const EngineParams& engine = options_.params.engine;
  if (engine.log_dir.empty()) return "";
  if (!MakeDirectories(engine.log_dir)) {
    return "cannot create the log directory " + engine.log_dir + ": " + std::strerror(errno);
  }
  const std::string& dir = engine.log_dir;
  const std::string name = NodeFileName(options_.id);
  LogHeader header = MakeLogHeader(options_.params, options_.id, self_->partition(),
                                   self_->replica(), layout_.partitions());
  const std::string serialized = header.SerializeAsString();
  std::string error;
  if (engine.recover) {
    RemoveUnfinishedCheckpoints(dir, options_.id);
    error = log_->Reopen(InputLogPath(dir, options_.id), header, engine.log_fsync, logged_through);
    Epoch ignored = 0;
    if (error.empty()) {
      error = reads_log_->Reopen(dir, name, kReadsLogFormat, serialized, EpochOfReadsRecord,
                                 &ignored);
    }
    std::string last;
    if (error.empty() && sequencer_log_) {
      error = sequencer_log_->Reopen(dir, name, kSequencerLogFormat, serialized,
                                     EpochOfSequencerRecord, sequenced_through, &last);
    }
    SequencedEpoch record;
    if (!last.empty() && record.ParseFromString(last) && record.batches_size() > 0 &&
        record.batches(0).final()) {
      // It had stopped cleanly: its sequencer's part of the run is over.
      sequencer_finished_ = true;
    }
  } else {
    // A fresh start the peers agreed to: what an earlier run of this node
    // left is removed (InspectLogDir refused if that is history, unless
    // --wipe), each file named.
    if (!history_files_.empty()) {
      Print("[node " + std::to_string(options_.id) + "] --wipe: every peer agreed on a fresh "
            "start; removing this node's history from " + dir + " (" +
            std::to_string(history_files_.size()) + " files)");
    }
    for (const std::string& file : history_files_) {
      const std::string path = dir + "/" + file;
      if (unlink(path.c_str()) == 0) {
        Print("[node " + std::to_string(options_.id) + "]   removed " + path);
      } else if (errno != ENOENT) {
        return "--wipe: cannot remove " + path + ": " + std::strerror(errno);
      }
    }
    RemoveAllCheckpoints(dir, options_.id);
    error = log_->Open(InputLogPath(dir, options_.id), header, engine.log_fsync);
    if (error.empty()) error = reads_log_->Create(dir, name, kReadsLogFormat, serialized);
    if (error.empty() && sequencer_log_) {
      error = sequencer_log_->Create(dir, name, kSequencerLogFormat, serialized);
    }
    if (error.empty()) error = SyncDirectory(dir);
  }
  if (!error.empty()) return error;
  scheduler_->SetBeforeExecute([this](const MergedEpoch& epoch) { return AppendToInputLog(epoch); });
  return "";
}

std::string Node::RecordFinished(Epoch epoch) {
  const std::string& dir = options_.params.engine.log_dir;
  const std::string path = FinishedPath(dir, options_.id);
  const std::string temporary = path + ".tmp";
  const std::string text = std::to_string(epoch) + "\n";
  const int fd = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            fsync(fd) == 0;
  const int saved = errno;
  if (fd >= 0) close(fd);
  if (ok && rename(temporary.c_str(), path.c_str()) != 0) ok = false;
  if (!ok) return "cannot write " + path + ": " + std::strerror(ok ? errno : saved);
  return SyncDirectory(dir);
}

Epoch Node::ResumeSequencerAfter(Epoch restored_at, Epoch* sequenced_through) {
  const std::string& dir = options_.params.engine.log_dir;
  Epoch peers_hold = 0, peers_final = 0;
  std::map<PartitionId, Epoch> held_by_partition;
  {
    std::lock_guard<std::mutex> lock(hello_mu_);
    peers_hold = peers_hold_ours_;
    peers_final = peers_saw_our_final_;
    held_by_partition = peers_hold_by_partition_;
  }
  // An epoch in its input log or checkpoint was admitted, so its sequencer
  // had cut it; an epoch a peer holds a batch of, too.
  const Epoch logged = *sequenced_through;
  const Epoch reach = std::max({logged, logged_through_, restored_at, peers_hold});
  Epoch finished = std::max({ReadFinished(dir, options_.id), peers_final, checkpoint_says_finished_});
  if (sequencer_finished_) finished = std::max(finished, logged);
  const std::string node = "[node " + std::to_string(options_.id) + "] ";
  // Its batches of epochs after its sequencer log's end come from the
  // nodes that hold them; those for a partition none of whose nodes (that
  // answered) holds them are lost: nobody can run them again, and cutting
  // them again would contradict what other partitions ran.
  // (A finished sequencer cut nothing after its final epoch, whatever
  // its peers ran since.)
  const Epoch cut_through = finished > 0 ? finished : reach;
  const PartitionId own = self_->partition();
  held_by_partition[own] = std::max({held_by_partition[own], logged_through_, restored_at});
  for (PartitionId p = 0; p < layout_.partitions(); ++p) {
    const Epoch held = std::max(logged, held_by_partition[p]);
    if (held >= cut_through) continue;
    lost_.push_back({p, held + 1, cut_through});
    LOG(ERROR) << "node " << options_.id << ": " << LostEpochsText(lost_.back());
    Print(node + "LOST EPOCHS: " + LostEpochsText(lost_.back()) +
          (finished > 0 ? std::string("; its sequencer had finished")
                        : "; it resumes at epoch " + std::to_string(cut_through + 1)) +
          " and cuts none of them again");
  }
  if (finished > 0) {
    sequencer_finished_ = true;
    *sequenced_through = std::max(reach, finished);
    return finished;
  }
  if (reach > logged) {
    // Its own partition's batches after its input log come from the others.
    const Epoch own_from = std::max(logged, logged_through_) + 1;
    Print(node + "its sequencer log ends at epoch " + std::to_string(logged) +
          " but its sequencer had cut epochs through " + std::to_string(reach) +
          " (its input log, checkpoint or peers hold them; the log's tail was lost): it resumes "
          "at epoch " + std::to_string(reach + 1) + " and cuts none of those again" +
          (own_from <= reach ? "; its own batches of epochs " + std::to_string(own_from) + ".." +
                                   std::to_string(reach) +
                                   " come from the other replicas of its partition"
                             : std::string()));
  }
  *sequenced_through = reach;
  return 0;
}

bool Node::AppendToInputLog(const MergedEpoch& epoch) {
  // A recovering node runs again epochs its log holds already.
  if (epoch.epoch <= logged_through_) return true;
  const std::string error = log_->Append(epoch);
  if (error.empty()) return true;
  LogFailed(error);
  return false;
}

void Node::LogFailed(const std::string& error) {
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (!log_failure_.empty()) return;
    log_failure_ = error;
  }
  LOG(ERROR) << "node " << options_.id << ": " << error
             << "; this node stops: it admits no txns and acknowledges none whose epoch is "
                "not in its log";
  Print("[node " + std::to_string(options_.id) + "] STOPPED: " + error +
        " (it admits no txns and acknowledges none whose epoch is not logged)");
  // The sequencer stops too (its gate stays shut), without a final batch:
  // the others wait for this node rather than run on without it.
  log_failed_.store(true);
  // Replicated input: a leader that stopped would hold its group (it still
  // answers the others' heartbeats): another member is elected instead.
  if (replicated_) replicated_->Resign();
  if (clients_) clients_->FailWaiting("node " + std::to_string(options_.id) + "'s log failed (" +
                                      error + ")");
}

std::string Node::RestorePartition(Epoch* restored_at) {
  const std::string& dir = options_.params.engine.log_dir;
  const std::vector<Epoch> held = ListCheckpoints(dir, options_.id);
  const Epoch stable = Checkpointer::ReadStable(dir, options_.id);
  *restored_at = 0;
  if (held.empty()) {
    if (stable > 0) {
      return "its log directory " + dir + " has no checkpoint, but its logs before epoch " +
             std::to_string(stable) + " were removed: it cannot be rebuilt";
    }
    LoadPartition(*app_, self_->partition(), layout_.partitions(), store_.get());
    return "";
  }
  // The newest whole one: every log segment after it is kept, here and at
  // the peers. A damaged newer one (checked before anything is loaded: a
  // failed load leaves the store half filled) gives way to an older one.
  std::string path, damaged;
  Epoch chosen = 0;
  CheckpointHeader header;
  CheckpointStats stats;
  for (auto it = held.rbegin(); it != held.rend() && path.empty(); ++it) {
    const std::string candidate = CheckpointPath(dir, options_.id, *it);
    // With one only, the load checks it (and nothing else could be used).
    const std::string problem =
        held.size() > 1 ? CheckCheckpoint(candidate, &header) : std::string();
    if (problem.empty()) {
      path = candidate;
      chosen = *it;
    } else {
      Print("[node " + std::to_string(options_.id) + "] cannot use a checkpoint: " + problem);
      damaged += (damaged.empty() ? "" : "; ") + problem;
    }
  }
  if (path.empty()) {
    return "cannot recover: no whole checkpoint (" + damaged +
           "); the files are kept as they are for inspection";
  }
  if (chosen < stable) {
    return "cannot recover: its newer checkpoints are damaged (" + damaged +
           "), and the one at epoch " + std::to_string(chosen) +
           " is older than the stable checkpoint at epoch " + std::to_string(stable) +
           ", after which logs were removed";
  }
  if (!damaged.empty()) {
    Print("[node " + std::to_string(options_.id) + "] recovers from the older checkpoint " +
          path + " instead");
  }
  std::string error = LoadCheckpoint(path, store_.get(), store_slot_, &header, &stats);
  if (!error.empty()) return "cannot recover from its checkpoint: " + error;
  if (header.node_id() != options_.id || header.partition() != self_->partition() ||
      header.partitions() != layout_.partitions()) {
    return path + " is a checkpoint of node " + std::to_string(header.node_id()) +
           " (partition " + std::to_string(header.partition()) + " of " +
           std::to_string(header.partitions()) + "), not of this one";
  }
  if (header.mode() != ModeName(options_.params.engine.mode)) {
    return path + " was written in " + header.mode() + " mode; this node runs " +
           ModeName(options_.params.engine.mode);
  }
  const SnapshotInfo info = SnapshotFromCheckpoint(header);
  for (const auto& [sequencer, at] : info.finished_sequencers) {
    if (self_->replica() == 0 &&
        sequencer == SequencerId(self_->partition(), 0, options_.params.engine.sequencers_per_node)) {
      checkpoint_says_finished_ = at;
    }
  }
  if (!scheduler_->RestoreAt(info, &error)) return path + ": " + error;
  *restored_at = info.epoch;
  restored_window_ = header.request_window();
  char seconds[32];
  snprintf(seconds, sizeof(seconds), "%.2f", stats.seconds);
  Print("[node " + std::to_string(options_.id) + "] loaded the checkpoint at epoch " +
        std::to_string(info.epoch) + ": " + std::to_string(stats.keys) + " keys in " + seconds +
        " s (" + path + ")");
  return "";
}

void Node::WaitForReplayRoom(Epoch epoch) {
  // No more than it can run soon: epochs are admitted as fast as they
  // come, and each holds its txns until it is done.
  const Epoch room = options_.params.engine.max_epochs_ahead;
  while (!replay_stop_.load() && epoch > scheduler_->Status().published_epoch + room) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // flow control, not sync
  }
}

void Node::ReplayOwnLog(Epoch from, Epoch through) {
  const std::string path = InputLogPath(options_.params.engine.log_dir, options_.id);
  InputLogReader reader;
  reader.log().StopAtDamage();
  std::string error = reader.Open(path, from);
  Epoch last_read = 0;  // the newest epoch read, before `from` too
  LogEpoch epoch;
  while (error.empty() && !replay_stop_.load()) {
    if (!reader.Next(&epoch)) {
      if (!reader.log().damaged()) break;
      // Epochs after the last whole record, through the segment's last.
      const Epoch first = std::max(last_read + 1, from);
      const Epoch last = std::min(reader.log().damaged_segment().last_epoch, through);
      if (first > last) {  // none that recovery needs
        reader.log().Resume();
        continue;
      }
      error = reader.log().damage();
      from = first;
      through = last;
      break;
    }
    last_read = epoch.epoch();
    if (epoch.epoch() < from) continue;
    if (epoch.epoch() > through) break;
    WaitForReplayRoom(epoch.epoch());
    for (Batch& batch : *epoch.mutable_batch()) {
      auto owned = std::make_unique<Batch>();
      owned->Swap(&batch);
      DeliverBatch(std::move(owned));
    }
  }
  if (error.empty() || replay_stop_.load()) return;
  // Recovery stops at the damage; the batches of those epochs (and of the
  // later ones, which the peers send as to any node that lags) are asked
  // of the nodes whose sequencers cut them (AskForMissedBatches), once
  // this thread is done.
  const std::string epochs = std::to_string(from) + ".." + std::to_string(through);
  LOG(ERROR) << "node " << options_.id << ": its input log is damaged: " << error
             << "; epochs " << epochs << " are missing";
  Print("[node " + std::to_string(options_.id) + "] its input log is DAMAGED: " + error +
        "; epochs " + epochs + " are missing from it: recovery stops there and asks its peers "
        "for them");
  auto damage = std::make_unique<LogDamage>();
  damage->what = error;
  damage->first = from;
  damage->last = through;
  damage->since_us = NowMicros();
  std::lock_guard<std::mutex> lock(damage_mu_);
  damage_ = std::move(damage);
}

void Node::WatchLogDamage() {
  std::lock_guard<std::mutex> lock(damage_mu_);
  if (!damage_) return;
  LogDamage& damage = *damage_;
  const std::string node = "[node " + std::to_string(options_.id) + "] ";
  const std::string epochs = std::to_string(damage.first) + ".." + std::to_string(damage.last);
  const SchedulerStatus status = scheduler_->Status();
  if (status.admitted_epoch >= damage.last || scheduler_->finished()) {
    Print(node + "got epochs " + epochs + ", lost from its input log (" + damage.what +
          "), from its peers");
    damage_.reset();
    return;
  }
  const int64_t now = NowMicros();
  if (status.next_epoch != damage.waiting_epoch) {
    damage.waiting_epoch = status.next_epoch;
    damage.since_us = now;
  }
  // Who can send them: the sequencer log of each sequencer missing, unless
  // its node dropped that part of it (its stable checkpoint is past it).
  std::vector<std::string> nowhere;
  bool silent = false;
  for (uint32_t sequencer : status.missing_sequencers) {
    const NodeId holder = monitor_->NodeOfSequencer(sequencer, layout_.NodeOf(0, sequencer));
    Heartbeat heartbeat;
    if (holder == options_.id) {
      if (!sequencer_log_) nowhere.push_back("this node keeps no sequencer log");
    } else if (monitor_->Silent(holder, now) || !monitor_->Latest(holder, &heartbeat)) {
      silent = true;
    } else if (heartbeat.stable_checkpoint() >= status.next_epoch) {
      nowhere.push_back("node " + std::to_string(holder) + " removed its logs through epoch " +
                        std::to_string(heartbeat.stable_checkpoint()));
    }
  }
  if (silent) damage.since_us = now;  // it may send them once back: wait, reported as a stall
  // Peers send what they hold within moments; a long silence from live
  // ones means their logs do not hold it either (damaged, or removed).
  const int64_t patience =
      std::max<int64_t>(10000000, int64_t{options_.params.engine.peer_timeout_ms} * 10000);
  if (nowhere.empty() && now - damage.since_us > patience) {
    nowhere.push_back("no peer sent epoch " + std::to_string(status.next_epoch) + " within " +
                      PeerMonitor::Seconds(patience));
  }
  if (nowhere.empty()) return;
  const std::string what = damage.what;
  damage_.reset();
  LogFailed("its input log is damaged (" + what + ") and epochs " + epochs +
            " can be had nowhere else (" + Join(nowhere, "; ") +
            "): it cannot recover; keep its log directory for inspection, and rebuild the "
            "node from a replica's or start the cluster afresh");
}

void Node::MakeCheckpointer() {
  if (!log_) return;
  const EngineParams& engine = options_.params.engine;
  CheckpointerOptions options;
  options.dir = engine.log_dir;
  CheckpointHeader& header = options.header;
  header.set_node_id(options_.id);
  header.set_partition(self_->partition());
  header.set_replica(self_->replica());
  header.set_partitions(layout_.partitions());
  header.set_mode(ModeName(engine.mode));
  for (const auto& [name, value] : options_.params.ClusterParams()) {
    Param* param = header.add_param();
    param->set_name(name);
    param->set_value(value);
  }
  options.every_epochs = engine.CheckpointEpochs();
  options.single_version = !store_->multi_version();
  options.sync = engine.log_fsync;
  options.stall_nth = engine.fault_stall_checkpoint;
  options.store = store_.get();
  options.scheduler = scheduler_.get();
  options.logs = {&log_->log(), reads_log_.get()};
  if (sequencer_log_) options.logs.push_back(sequencer_log_.get());
  options.print = [this](const std::string& line) { Print(line); };
  if (engine.replicated_input) {
    // The request-id window goes with the state: the consensus log is
    // trimmed at checkpoints (node_replication.cc restores it).
    options.annotate = [this](CheckpointHeader* header) {
      if (replicated_) replicated_->SaveWindow(header->mutable_request_window());
    };
  }
  checkpointer_ = std::make_unique<Checkpointer>(options);
}

void Node::ServeCheckpoint(Epoch wait_epoch,
                          std::function<void(const CheckpointReply&, const std::string&)> done) {
  if (state_.load() == State::kStarting) {
    done(CheckpointReply(), "node " + std::to_string(options_.id) + " is starting");
    return;
  }
  if (wait_epoch > 0) {
    // Another node asked for it: this one only says when its own is written.
    checkpointer_->AddWaiter(wait_epoch, std::move(done));
    return;
  }
  if (!Sequences()) {
    done(CheckpointReply(), "node " + std::to_string(options_.id) +
                                " does not sequence (a replica); ask its partition's sequencing node");
    return;
  }
  const std::string problem = Problem();
  if (!problem.empty()) {
    done(CheckpointReply(), problem);
    return;
  }
  // The next batch this node's sequencer cuts carries the request to every
  // node; this one answers once its own checkpoint there is written.
  checkpointer_->AddWaiter(LastSequencedEpoch() + 1, std::move(done));
  checkpoint_asked_.store(true);
}

std::string Node::Problem() const {
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    if (!log_failure_.empty()) return "its log failed: " + log_failure_;
  }
  std::lock_guard<std::mutex> lock(problem_mu_);
  return stall_;
}

void Node::HeartbeatLoop() {
  const auto period = std::chrono::milliseconds(options_.params.engine.heartbeat_ms);
  std::unique_lock<std::mutex> lock(heartbeat_mu_);
  while (!heartbeat_cv_.wait_for(lock, period, [&] { return heartbeat_stop_; })) {
    lock.unlock();
    SendHeartbeats();
    WatchLogDamage();
    NoteReadOnlyLogDir();
    UpdateProblems();
    KeepSequencerInStep();
    AskForMissedBatches();
    read_exchange_->StandIns();  // a silent peer's reads from a live replica of it
    read_exchange_->AskAgain();  // reads lost on the way
    if (checkpointer_) {
      checkpointer_->Retain(monitor_->StableCheckpoint(checkpointer_->Held()));
      // The consensus log keeps only what no checkpoint covers.
      if (replicated_) replicated_->TrimCoveredBy(checkpointer_->Stable());
    }
    if (state_.load() == State::kRecovering &&
        scheduler_->Status().admitted_epoch >= rejoin_epoch_) {
      state_ = State::kRunning;
      Print("[node " + std::to_string(options_.id) + "] recovered: rejoined the cluster at epoch " +
            std::to_string(scheduler_->Status().admitted_epoch) + " after " +
            PeerMonitor::Seconds(NowMicros() - incarnation_));
    }
    lock.lock();
  }
}

void Node::SendHeartbeats() {
  const SchedulerStatus status = scheduler_->Status();
  Heartbeat heartbeat;
  heartbeat.set_node_id(options_.id);
  heartbeat.set_incarnation(incarnation_);
  heartbeat.set_admitted_epoch(status.admitted_epoch);
  heartbeat.set_published_epoch(status.published_epoch);
  heartbeat.set_freed_epoch(status.freed_epoch);
  if (Sequences()) {
    heartbeat.set_sequenced_epoch(LastSequencedEpoch());
    const uint32_t per_node = options_.params.engine.sequencers_per_node;
    for (uint32_t index = 0; index < per_node; ++index) {
      heartbeat.add_sequencers(SequencerId(self_->partition(), index, per_node));
    }
  }
  if (checkpointer_) {
    for (Epoch epoch : checkpointer_->Held()) heartbeat.add_checkpoints(epoch);
    heartbeat.set_stable_checkpoint(checkpointer_->Stable());
  }
  heartbeat.set_recovering(state_.load() == State::kRecovering);
  if (heartbeat.recovering()) heartbeat.set_rejoin_epoch(rejoin_epoch_);
  for (NodeId node : membership_->List()) heartbeat.add_removed(node);
  {
    std::lock_guard<std::mutex> lock(failure_mu_);
    heartbeat.set_problem(log_failure_.empty() ? "" : "its log failed: " + log_failure_);
  }
  // Told to the nodes that wait for those batches, which say it too.
  if (heartbeat.problem().empty()) heartbeat.set_problem(LostEpochsProblem());
  const std::string bytes = heartbeat.SerializeAsString();
  for (const NodeConfig& node : options_.config.node()) {
    if (node.id() != options_.id) transport_->Send(node.id(), HEARTBEAT, bytes);
  }
}

void Node::KeepSequencerInStep() {
  if (!Sequences()) return;
  const int64_t now = NowMicros();
  Epoch ahead = 0;
  for (uint32_t p = 0; p < layout_.partitions(); ++p) {
    const NodeId peer = layout_.NodeOf(0, p);
    Heartbeat heartbeat;
    if (peer == options_.id || monitor_->Silent(peer, now) || !monitor_->Latest(peer, &heartbeat)) {
      continue;
    }
    ahead = std::max<Epoch>(ahead, heartbeat.sequenced_epoch());
  }
  for (auto& runner : runners_) runner->CatchUpTo(ahead);
}

void Node::NoteReadOnlyLogDir() {
  // A file system that aborts on an I/O error and turns read-only (ext4's
  // errors=remount-ro) fails the write or sync in flight with EIO and
  // refuses every write a moment later (EROFS; the mount may still say
  // rw): the failure then says what the disk has become. A file created
  // and removed at once tells; tried for a few heartbeats after a failure.
  const std::string& dir = options_.params.engine.log_dir;
  if (!log_failed_.load() || read_only_probes_ >= 50 || dir.empty()) return;
  ++read_only_probes_;
  const std::string probe = dir + "/.read-only-probe";
  const int fd = open(probe.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0600);
  if (fd >= 0) {
    close(fd);
    unlink(probe.c_str());
    return;
  }
  if (errno != EROFS) return;
  read_only_probes_ = 50;  // told
  std::lock_guard<std::mutex> lock(failure_mu_);
  if (log_failure_.find("Read-only file system") == std::string::npos) {
    log_failure_ += "; its log directory " + dir + " is read-only now";
  }
}

void Node::UpdateProblems() {
  const int64_t now = NowMicros();
  const SchedulerStatus status = scheduler_->Status();
  std::vector<std::string> stalls;
  std::vector<NodeId> waited_for;
  if (!scheduler_->finished()) {
    // The first epoch a batch is missing for, not only the next to admit:
    // admission may wait at max_unpublished_epochs for an epoch whose
    // publication waits on the same silent node (its reads).
    for (uint32_t sequencer : status.incomplete_missing) {
      if (FromOwnGroup(sequencer)) continue;  // its group's log: replicated_->Problem()
      const NodeId node = monitor_->NodeOfSequencer(sequencer, layout_.NodeOf(0, sequencer));
      if (node == options_.id) continue;  // its own lost batches: LostEpochsProblem
      Heartbeat heartbeat;
      const bool heard = monitor_->Latest(node, &heartbeat);
      std::string why;
      if (monitor_->Silent(node, now)) {
        why = ", silent for " + PeerMonitor::Seconds(monitor_->SilentForUs(node, now));
      } else if (heard && !heartbeat.problem().empty()) {
        why = ", which cannot go on: " + heartbeat.problem();
      } else if (heard) {
        why = AlivePeerProblem(node, heartbeat, now);
        if (why.empty()) continue;  // alive and moving: its batch is on its way
      } else {
        continue;
      }
      stalls.push_back("waiting for " + monitor_->Describe(node) + why + " (epoch " +
                       std::to_string(status.incomplete_epoch) + ")");
      waited_for.push_back(node);
    }
  }
  const std::string lost = LostEpochsProblem();
  if (!lost.empty()) stalls.push_back(lost);
  const std::string leaderless = replicated_ ? replicated_->Problem() : "";
  if (!leaderless.empty()) stalls.push_back(leaderless);
  {
    std::lock_guard<std::mutex> lock(damage_mu_);
    if (damage_) {
      stalls.push_back("fetching epochs " + std::to_string(damage_->first) + ".." +
                       std::to_string(damage_->last) + " from peers: its input log lost them (" +
                       damage_->what + ")");
    }
  }
  std::vector<std::string> silent = monitor_->SilentPeers(now, waited_for);
  for (std::string& kept : KeptLogsWarnings(now)) silent.push_back(std::move(kept));
  std::lock_guard<std::mutex> lock(problem_mu_);
  stall_ = Join(stalls, "; ");
  warnings_ = Join(silent, "; ");
}

std::string Node::LostEpochsText(const LostEpochs& lost) const {
  const std::string epochs = lost.first == lost.last
                                 ? "epoch " + std::to_string(lost.first)
                                 : "epochs " + std::to_string(lost.first) + ".." +
                                       std::to_string(lost.last);
  const std::string partition = "partition " + std::to_string(lost.partition);
  return "the batches of sequencer " +
         std::to_string(SequencerId(self_->partition(), 0,
                                    options_.params.engine.sequencers_per_node)) +
         " (node " + std::to_string(options_.id) + ") for " + partition + " of " + epochs +
         " are lost: no node holds them (its sequencer log lost them with its unsynced tail, "
         "it ends at epoch " + std::to_string(sequencer_log_through_) + ", and no node of " +
         partition + " that answered node " + std::to_string(options_.id) +
         " at its restart had them). Partition " + std::to_string(lost.partition) +
         " cannot run " + epochs + ", so the cluster cannot go past epoch " +
         std::to_string(lost.first - 1) + "; restore the cluster from a backup, or start it "
         "afresh (--log_fsync keeps sequencer logs whole through a power loss)";
}

std::string Node::LostEpochsProblem() const {
  std::vector<std::string> lost;
  for (const LostEpochs& epochs : lost_) {
    // Reported until a node of the partition gets past them: one had them
    // after all (then the others fetch them from it).
    bool past = false;
    for (uint32_t replica = 0; replica < layout_.replicas() && !past; ++replica) {
      const NodeId node = layout_.NodeOf(replica, epochs.partition);
      Heartbeat heartbeat;
      past = node == options_.id ? scheduler_->Status().admitted_epoch >= epochs.first
                                 : monitor_->Latest(node, &heartbeat) &&
                                       heartbeat.admitted_epoch() >= epochs.first;
    }
    if (!past) lost.push_back(LostEpochsText(epochs));
  }
  return Join(lost, "; ");
}

void Node::AskForMissedBatches() {
  if (scheduler_->finished()) return;
  const SchedulerStatus status = scheduler_->Status();
  // Its own log feeds a recovering partition first.
  if (replaying_.load() && status.next_epoch <= logged_through_) return;
  const int64_t now = NowMicros();
  const Epoch window = options_.params.engine.max_epochs_ahead;
  // A partition catching up asks for no more than it can run soon.
  if (status.next_epoch > status.published_epoch + window) return;
  for (uint32_t sequencer : status.missing_sequencers) {
    if (FromOwnGroup(sequencer)) continue;  // they come from its group's log as committed
    const NodeId node = monitor_->NodeOfSequencer(sequencer, layout_.NodeOf(0, sequencer));
    Epoch sequenced = 0;
    if (node == options_.id) {
      sequenced = sequenced_epoch_.load();
    } else {
      Heartbeat heartbeat;
      if (!monitor_->Latest(node, &heartbeat) || monitor_->Silent(node, now)) continue;
      sequenced = heartbeat.sequenced_epoch();
    }
    // Ask only for batches that were cut: later ones come by themselves.
    if (sequenced < status.next_epoch) continue;
    Asked& asked = asked_[sequencer];
    if (asked.waiting_epoch != status.next_epoch) {
      // Progress (or a new wait): an answer still coming counts from now.
      asked.waiting_epoch = status.next_epoch;
      asked.since_us = now;
    }
    // A request that covers it is still being answered while the partition
    // moves; stuck for a moment, it is asked again (repeats are harmless).
    const bool covered = asked.through >= status.next_epoch &&
                         now - std::max(asked.at_us, asked.since_us) < kMissingBatchUs;
    if (covered) continue;
    // In a running cluster a batch is seldom late: give it a moment.
    if (state_.load() == State::kRunning && now - asked.since_us < kMissingBatchUs) continue;
    BatchRequest request;
    request.set_partition(self_->partition());
    request.set_from_epoch(status.next_epoch);
    request.set_to_epoch(std::min(sequenced, status.published_epoch + 2 * window));
    request.add_sequencers(sequencer);
    asked.through = request.to_epoch();
    asked.at_us = now;
    VLOG(1) << "node " << options_.id << ": asks node " << node << " for sequencer " << sequencer
            << "'s batches of epochs " << request.from_epoch() << ".." << request.to_epoch();
    if (node == options_.id && status.next_epoch > sequencer_log_through_ &&
        status.next_epoch <= resumed_after_) {
      // Its sequencer cut these before the restart, but its log lost them:
      // the other replicas of this partition hold them (their input logs).
      request.set_to_epoch(std::min<Epoch>(request.to_epoch(), resumed_after_));
      asked.through = request.to_epoch();
      for (uint32_t replica = 1; replica < layout_.replicas(); ++replica) {
        const NodeId peer = layout_.NodeOf((self_->replica() + replica) % layout_.replicas(),
                                           self_->partition());
        transport_->Send(peer, BATCH_REQUEST, request.SerializeAsString());
      }
    } else if (node == options_.id) {
      if (catch_up_) catch_up_->RequestBatches(node, request);
    } else {
      transport_->Send(node, BATCH_REQUEST, request.SerializeAsString());
      if (now - asked.since_us >= kMissingBatchUs) {
        // Still missing: the sequencer's log may have lost it (an unsynced
        // tail, after a restart); the other replicas of this partition
        // hold what they ran (served from their input logs).
        for (uint32_t replica = 1; replica < layout_.replicas(); ++replica) {
          const NodeId peer = layout_.NodeOf((self_->replica() + replica) % layout_.replicas(),
                                             self_->partition());
          transport_->Send(peer, BATCH_REQUEST, request.SerializeAsString());
        }
      }
    }
  }
}

void Node::WaitForStragglers() {
  // A peer still catching up (a replica that was down) needs this node's
  // logs and sequencer to the end: stay until every live peer has admitted
  // the run's last epoch (and those of this replica have run it), or
  // nothing moves for the drain timeout.
  const Epoch last = final_epoch_;
  const int64_t patience = static_cast<int64_t>(options_.params.engine.drain_timeout_s * 1e6);
  int64_t last_progress = NowMicros();
  Epoch slowest_seen = 0;
  while (true) {
    const int64_t now = NowMicros();
    Epoch slowest = last;
    for (const NodeConfig& node : options_.config.node()) {
      if (node.id() == options_.id || monitor_->Silent(node.id(), now)) continue;
      Heartbeat heartbeat;
      // A partition of this replica may still wait for reads from here (a
      // lost one is asked for again): stay until it has run everything.
      const Epoch done = !monitor_->Latest(node.id(), &heartbeat) ? 0
                         : node.replica() == self_->replica() ? heartbeat.freed_epoch()
                                                               : heartbeat.admitted_epoch();
      slowest = std::min(slowest, done);
    }
    if (slowest >= last) return;
    if (slowest != slowest_seen) {
      slowest_seen = slowest;
      last_progress = now;
    } else if (now - last_progress > patience) {
      LOG(WARNING) << "node " << options_.id << ": a peer is still at epoch " << slowest
                   << " of " << last << "; stopping anyway";
      return;
    }
    // Peers' progress comes with their heartbeats.
    std::this_thread::sleep_for(std::chrono::milliseconds(options_.params.engine.heartbeat_ms));
  }
}

}  // namespace paxflow
