#include "base/params.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <sstream>

#include "common/hash.h"

namespace paxflow {
namespace {

std::string Number(double x) {
  std::ostringstream out;
  out.precision(17);
  out << x;
  return out.str();
}

}  // namespace

std::vector<std::pair<std::string, std::string>> NodeParams::ClusterParams() const {
  const WorkloadParams& w = workload;
  std::vector<std::pair<std::string, std::string>> params = {
      {"mode", ModeName(engine.mode)},
      {"epoch_ms", std::to_string(engine.epoch_ms)},
      {"max_batch", std::to_string(engine.max_batch)},
      {"sequencers_per_node", std::to_string(engine.sequencers_per_node)},
      {"seed", std::to_string(engine.seed)},
      {"ltx_timeout", std::to_string(engine.ltx_timeout)},
      {"max_active_ltx", std::to_string(engine.max_active_ltx)},
      {"ltx_max_deferrals", std::to_string(engine.ltx_max_deferrals)},
      {"ltx_in_place", engine.ltx_in_place ? "true" : "false"},
      {"checkpoint_every", Number(engine.checkpoint_every_s)},
      {"workload", w.workload},
      {"application", w.application},
      {"records", std::to_string(w.records)},
      {"value_size", std::to_string(w.value_size)},
      {"ro_fraction", Number(w.ro_fraction)},
      {"ops_per_ro_txn", std::to_string(w.ops_per_ro_txn)},
      {"ops_per_rw_txn", std::to_string(w.ops_per_rw_txn)},
      {"read_proportion", Number(w.read_proportion)},
      {"distribution", w.distribution},
      {"zipfian_constant", Number(w.zipfian_constant)},
      {"hot_records", std::to_string(w.hot_records)},
      {"multi_partition_pct", Number(w.multi_partition_pct)},
      {"ltx_fraction", Number(w.ltx_fraction)},
      {"long_kind", w.long_kind},
      {"ltx_ops", std::to_string(w.ltx_ops)},
      {"scan_length", std::to_string(w.scan_length)},
      {"bank_accounts", std::to_string(w.bank_accounts)},
      {"bank_initial_balance", std::to_string(w.bank_initial_balance)},
      {"bank_ltx_read_outside", w.bank_ltx_read_outside ? "true" : "false"},
      {"audit_fraction", Number(w.audit_fraction)},
      {"report_fraction", Number(w.report_fraction)},
      {"report_range_writes", std::to_string(w.report_range_writes)},
      {"bom_products", std::to_string(w.bom_products)},
      {"bom_fanout", std::to_string(w.bom_fanout)},
      {"bom_levels", std::to_string(w.bom_levels)},
      {"warehouses", std::to_string(w.warehouses)},
      {"ch_streams", std::to_string(w.ch_streams)},
  };
  // Listed only when on: logs and fingerprints of clusters without it stay
  // what they were (old logs recover, replays match).
  if (engine.replicated_input) params.emplace_back("replicated_input", "true");
  if (w.tpcc_delivery_ltx) params.emplace_back("tpcc_delivery_ltx", "true");
  return params;
}

uint64_t EngineParams::CheckpointEpochs() const {
  if (checkpoint_every_s <= 0) return 0;
  const double epochs = checkpoint_every_s * 1000.0 / epoch_ms;
  return epochs < 1 ? 1 : static_cast<uint64_t>(epochs + 0.5);
}

namespace {

// The node id written in text[begin, end), which the caller checked is
// decimal digits; false if it does not fit in 32 bits (node ids do).
bool NodeIdAt(const std::string& text, size_t begin, size_t end, uint32_t* id) {
  if (end - begin > 10) return false;
  const uint64_t value = std::strtoull(text.c_str() + begin, nullptr, 10);
  if (value > UINT32_MAX) return false;
  *id = static_cast<uint32_t>(value);
  return true;
}

// "ID:EPOCH" (--fault_pause_sequencer), EPOCH at least 1.
bool ParseSequencerPause(const std::string& text, uint32_t* node, Epoch* epoch) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() ||
      text.find_first_not_of("0123456789:") != std::string::npos ||
      text.find(':', colon + 1) != std::string::npos) {
    return false;
  }
  if (!NodeIdAt(text, 0, colon, node)) return false;
  *epoch = std::strtoull(text.c_str() + colon + 1, nullptr, 10);
  return *epoch > 0;
}

// "NODE:FROM:FILE" (--fault_deaf_to_hellos).
bool ParseDeafToHellos(const std::string& text, uint32_t* node, uint32_t* from,
                       std::string* file) {
  const size_t first = text.find(':');
  const size_t second = first == std::string::npos ? first : text.find(':', first + 1);
  if (second == std::string::npos || first == 0 || second == first + 1 ||
      second + 1 == text.size() ||
      text.substr(0, second).find_first_not_of("0123456789:") != std::string::npos) {
    return false;
  }
  // A node deaf to itself would test nothing.
  if (!NodeIdAt(text, 0, first, node) || !NodeIdAt(text, first + 1, second, from) ||
      *node == *from) {
    return false;
  }
  *file = text.substr(second + 1);
  return true;
}

}  // namespace

std::string EngineParams::HellosIgnoredWhile(uint32_t node, uint32_t from) const {
  uint32_t deaf = 0, heard = 0;
  std::string file;
  if (!ParseDeafToHellos(fault_deaf_to_hellos, &deaf, &heard, &file) || deaf != node ||
      heard != from) {
    return "";
  }
  return file;
}

Epoch EngineParams::SequencerPauseAfter(uint32_t node) const {
  uint32_t paused = 0;
  Epoch after = 0;
  if (!ParseSequencerPause(fault_pause_sequencer, &paused, &after) || paused != node) return 0;
  return after;
}

uint64_t EngineParams::LtxShare(uint32_t partitions) const {
  if (mode == Mode::kCalvin) return 0;
  return std::max<uint64_t>(1, max_active_ltx / std::max<uint32_t>(1, partitions));
}

int64_t EngineParams::ReadsRetryMs() const {
  if (reads_retry_ms != 0) return reads_retry_ms;
  return std::max<int64_t>(2 * int64_t{heartbeat_ms}, 20 * int64_t{epoch_ms});
}

std::string ParseChannelList(const std::string& text, std::vector<Channel>* channels) {
  std::stringstream in(text);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) continue;
    Channel channel;
    if (!Channel_Parse(name, &channel) || channel == CHANNEL_UNSPECIFIED) {
      return "fault_drop_channels: '" + name + "' is not a channel (e.g. BATCH, REMOTE_READS, " +
             "READS_REQUEST, BATCH_REQUEST, HEARTBEAT)";
    }
    channels->push_back(channel);
  }
  return "";
}

uint64_t NodeParams::LargestPeerMessageBytes() const {
  const WorkloadParams& w = workload;
  // Per key: the key, its op and framing (~24 bytes), and a value where
  // the message may carry one (writes, reads sent to another partition).
  const uint64_t per_key = 24 + uint64_t{w.value_size};
  uint64_t ops = std::max<uint64_t>({w.ops_per_ro_txn, w.ops_per_rw_txn, 1});
  if (w.ltx_fraction > 0) ops = std::max<uint64_t>(ops, w.ltx_ops);
  if (w.application == "bank") ops = std::max<uint64_t>(ops, w.bank_accounts);
  const uint64_t batch = uint64_t{engine.max_batch} * (64 + ops * per_key);
  uint64_t scanned = w.scan_length;
  if (w.long_kind == "report") {
    scanned = std::max<uint64_t>(scanned, static_cast<uint64_t>(w.report_fraction * w.records) + 1);
  }
  if (w.application == "bom") {
    // A bom LTX's reads of one level (fanout^(levels-1) parts at most).
    uint64_t level = 1;
    for (uint32_t l = 1; l < w.bom_levels; ++l) level *= w.bom_fanout;
    scanned = std::max<uint64_t>(scanned, level * (16 + 8 * uint64_t{w.bom_fanout}) / per_key + 1);
  }
  const uint64_t scan = w.ltx_fraction > 0 ? scanned * per_key + 4096 : 0;
  return std::max(batch, scan);
}

uint64_t NodeParams::PeerMaxMessageBytes() const {
  if (engine.peer_max_message_mb > 0) return uint64_t{engine.peer_max_message_mb} << 20;
  // No log record exceeds 1 GiB (record_file.cc), so neither does anything
  // a peer needs from another; client txns may be larger than generated ones.
  return std::min<uint64_t>(std::max<uint64_t>(4 * LargestPeerMessageBytes(), uint64_t{256} << 20),
                            uint64_t{1} << 30);
}

std::string NodeParams::ClusterParamsText() const {
  std::string text;
  for (const auto& [name, value] : ClusterParams()) text += name + "=" + value + "\n";
  return text;
}

uint64_t NodeParams::Fingerprint() const { return HashBytes(ClusterParamsText()); }

std::string NodeParams::Validate(uint32_t partitions) const {
  const EngineParams& e = engine;
  if (e.metrics_port < -1 || e.metrics_port > 65535) {
    return "metrics_port=" + std::to_string(e.metrics_port) +
           " is out of range (1..65535; 0: none; -1: the config's)";
  }
  if (e.epoch_ms < 1 || e.epoch_ms > 60000) {
    return "epoch_ms=" + std::to_string(e.epoch_ms) + " is out of range (1..60000)";
  }
  if (e.max_batch < 1 || e.max_batch > kMaxBatchLimit) {
    return "max_batch=" + std::to_string(e.max_batch) + " is out of range (1.." +
           std::to_string(kMaxBatchLimit) + ")";
  }
  if (e.sequencers_per_node < 1 ||
      uint64_t{e.sequencers_per_node} * partitions > kMaxSequencers) {
    return "sequencers_per_node=" + std::to_string(e.sequencers_per_node) +
           " is out of range (1.." + std::to_string(kMaxSequencers / std::max(partitions, 1u)) +
           " on " + std::to_string(partitions) + " partition(s): txn ids hold " +
           std::to_string(kMaxSequencers) + " sequencers)";
  }
  if (e.workers < 1 || e.workers > 256) {
    return "workers=" + std::to_string(e.workers) + " is out of range (1..256)";
  }
  if (e.ro_workers > e.workers) {
    return "ro_workers=" + std::to_string(e.ro_workers) + " exceeds workers=" +
           std::to_string(e.workers);
  }
  if (!(e.duration_s >= 0) || e.duration_s > 365.0 * 24 * 3600) {
    return "duration=" + Number(e.duration_s) + " is out of range (0 = until stopped, else seconds)";
  }
  if (e.peer_wait_s < 1) return "peer_wait_s must be at least 1";
  if (e.ltx_workers < 1 || e.ltx_workers > 64) {
    return "ltx_workers=" + std::to_string(e.ltx_workers) + " is out of range (1..64)";
  }
  if (e.ltx_timeout < 1 || e.ltx_timeout > 100000000) {
    return "ltx_timeout=" + std::to_string(e.ltx_timeout) + " is out of range (1..100000000 epochs)";
  }
  if (e.max_active_ltx < 1 || e.max_active_ltx > 100000) {
    return "max_active_ltx=" + std::to_string(e.max_active_ltx) + " is out of range (1..100000)";
  }
  if (e.ltx_max_deferrals < 1 || e.ltx_max_deferrals > 1000000) {
    return "ltx_max_deferrals=" + std::to_string(e.ltx_max_deferrals) +
           " is out of range (1..1000000)";
  }
  if (!(e.drain_timeout_s > 0)) return "drain_timeout_s must be positive";
  if (e.client_buffer_mb < 1 || e.client_buffer_mb > 65536) {
    return "client_buffer_mb=" + std::to_string(e.client_buffer_mb) + " is out of range (1..65536)";
  }
  if (!(e.checkpoint_every_s >= 0) || e.checkpoint_every_s > 7 * 24 * 3600.0) {
    return "checkpoint_every=" + Number(e.checkpoint_every_s) +
           " is out of range (0 = no checkpoints, else seconds up to a week)";
  }
  if (e.heartbeat_ms < 10 || e.heartbeat_ms > 10000) {
    return "heartbeat_ms=" + std::to_string(e.heartbeat_ms) + " is out of range (10..10000)";
  }
  if (e.peer_timeout_ms < 2 * e.heartbeat_ms) {
    return "peer_timeout_ms=" + std::to_string(e.peer_timeout_ms) +
           " must be at least twice heartbeat_ms=" + std::to_string(e.heartbeat_ms);
  }
  if (e.peer_queue_mb < 1 || e.peer_queue_mb > 65536) {
    return "peer_queue_mb=" + std::to_string(e.peer_queue_mb) + " is out of range (1..65536)";
  }
  if (e.max_epochs_ahead < 4 || e.max_epochs_ahead > 1000000) {
    return "max_epochs_ahead=" + std::to_string(e.max_epochs_ahead) +
           " is out of range (4..1000000)";
  }
  if (e.max_unpublished_epochs < 1 || e.max_unpublished_epochs > 1000000) {
    return "max_unpublished_epochs=" + std::to_string(e.max_unpublished_epochs) +
           " is out of range (1..1000000)";
  }
  if (e.reads_retry_ms < -1 || e.reads_retry_ms > 3600000) {
    return "reads_retry_ms=" + std::to_string(e.reads_retry_ms) +
           " is out of range (-1 = never, 0 = automatic, else ms up to an hour)";
  }
  if (!(e.fault_drop_peer_messages >= 0) || e.fault_drop_peer_messages >= 1) {
    return "fault_drop_peer_messages=" + Number(e.fault_drop_peer_messages) +
           " is out of range (a fraction, at least 0 and below 1)";
  }
  std::vector<Channel> channels;
  const std::string channel_error = ParseChannelList(e.fault_drop_channels, &channels);
  if (!channel_error.empty()) return channel_error;
  if (e.fault_drop_peer_messages > 0 &&
      std::find(channels.begin(), channels.end(), BATCH) != channels.end() &&
      (e.log_dir.empty() || e.sequencers_per_node > 1)) {
    return "fault_drop_peer_messages with BATCH among fault_drop_channels: a lost batch is "
           "fetched again from its sequencer's log, which needs --log_dir and "
           "sequencers_per_node=1 (or leave BATCH out of --fault_drop_channels)";
  }
  uint32_t paused_node = 0;
  Epoch paused_after = 0;
  if (!e.fault_pause_sequencer.empty() &&
      !ParseSequencerPause(e.fault_pause_sequencer, &paused_node, &paused_after)) {
    return "fault_pause_sequencer='" + e.fault_pause_sequencer +
           "' is not NODE_ID:EPOCH (e.g. 0:150, a 32-bit node id, an epoch of 1 or more)";
  }
  uint32_t deaf_node = 0, deaf_from = 0;
  std::string deaf_file;
  if (!e.fault_deaf_to_hellos.empty() &&
      !ParseDeafToHellos(e.fault_deaf_to_hellos, &deaf_node, &deaf_from, &deaf_file)) {
    return "fault_deaf_to_hellos='" + e.fault_deaf_to_hellos +
           "' is not NODE_ID:FROM_ID:FILE with two different 32-bit node ids (e.g. "
           "3:0:/tmp/deaf)";
  }
  if (e.peer_max_message_mb > 65536) {
    return "peer_max_message_mb=" + std::to_string(e.peer_max_message_mb) +
           " is out of range (0 = derived from the parameters, else 1..65536)";
  }
  if (e.peer_max_message_mb > 0 &&
      (uint64_t{e.peer_max_message_mb} << 20) < LargestPeerMessageBytes()) {
    return "peer_max_message_mb=" + std::to_string(e.peer_max_message_mb) +
           " is below the largest message these parameters may send (about " +
           std::to_string((LargestPeerMessageBytes() >> 20) + 1) +
           " MiB): raise it, or give 0 to derive it";
  }
  if (e.recover && e.wipe) {
    return "--recover keeps this node's history and --wipe removes it: give one of them";
  }
  if (e.wipe && e.log_dir.empty()) return "--wipe removes this node's history from --log_dir: give --log_dir too";
  if (e.recover && e.log_dir.empty()) {
    return "--recover rebuilds the node from its log directory: give --log_dir too";
  }
  if (e.election_timeout_ms < 50 || e.election_timeout_ms > 60000) {
    return "election_timeout_ms=" + std::to_string(e.election_timeout_ms) +
           " is out of range (50..60000)";
  }
  if (e.replicated_input) {
    if (e.log_dir.empty()) {
      return "replicated_input keeps each node's consensus log on disk: give --log_dir too";
    }
    if (e.sequencers_per_node != 1) {
      return "replicated_input with sequencers_per_node=" + std::to_string(e.sequencers_per_node) +
             ": a group's leader proposes one entry per epoch from one sequencer; give "
             "sequencers_per_node=1";
    }
  }
  if (e.recover && e.sequencers_per_node > 1) {
    return "--recover with sequencers_per_node=" + std::to_string(e.sequencers_per_node) +
           ": a restart rejoins through its peers' sequencer logs, which keep one sequencer "
           "per node";
  }
  return workload.Validate(partitions);
}

}  // namespace paxflow
