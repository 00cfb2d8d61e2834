#include "node/state_transfer.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include "checkpoint/checkpoint.h"
#include "client/client.h"
#include "common/clock.h"
#include "common/record_file.h"
#include "partition/partition_setup.h"
#include "sequencer/input_log.h"

namespace paxflow {
namespace {

constexpr uint32_t kChunkBytes = 1 << 20;      // what a fetching member asks for
constexpr uint32_t kMaxChunkBytes = 4 << 20;   // what a peer sends at most
constexpr char kCheckpointMagic[] = "PAXFCKP2";  // checkpoint/checkpoint.cc's

std::string RejoinPath(const std::string& dir, NodeId self) {
  return dir + "/" + NodeFileName(self) + ".rejoin";
}

// Files of node `self` in `dir`: node-<id>.* and node-<id>@*.
std::vector<std::string> NodeEntries(const std::string& dir, NodeId self) {
  std::vector<std::string> names;
  const std::string name = NodeFileName(self);
  DIR* d = opendir(dir.c_str());
  if (!d) return names;
  while (dirent* entry = readdir(d)) {
    const std::string file = entry->d_name;
    if (file.size() > name.size() && file.compare(0, name.size(), name) == 0 &&
        (file[name.size()] == '.' || file[name.size()] == '@')) {
      names.push_back(file);
    }
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

// One request to `node`'s client port; empty or why it failed.
std::string Ask(const ClusterLayout& layout, NodeId node, const ClientRequest& request,
                ClientReply* reply, int timeout_ms) {
  const NodeConfig* config = layout.Node(node);
  if (!config || config->client_port() == 0) return "node " + std::to_string(node) + " has no client port";
  Client client;
  const std::string endpoint = ClientEndpoint(*config);
  std::string error = client.Connect(endpoint);
  if (error.empty()) error = client.Call(request, reply, timeout_ms);
  if (error.empty() && reply->status() != OK) error = reply->error();
  if (!error.empty()) return "node " + std::to_string(node) + " at " + endpoint + ": " + error;
  return "";
}

ClientRequest StateAsk(StateRequest::Part part, Epoch epoch, uint64_t offset = 0) {
  ClientRequest request;
  StateRequest* state = request.mutable_state();
  state->set_part(part);
  state->set_epoch(epoch);
  state->set_offset(offset);
  state->set_max_bytes(kChunkBytes);
  return request;
}

// The other replicas of `self`'s partition.
std::vector<NodeId> Peers(const ClusterLayout& layout, NodeId self) {
  std::vector<NodeId> peers;
  const NodeConfig* me = layout.Node(self);
  for (uint32_t replica = 0; replica < layout.replicas(); ++replica) {
    const NodeId node = layout.NodeOf(replica, me->partition());
    if (node != self) peers.push_back(node);
  }
  return peers;
}

// The checkpoint at `from` written again with `header` in place of its own
// (every other record byte for byte), synced, as `to`.
std::string RewriteHeader(const std::string& from, const CheckpointHeader& header,
                          const std::string& to) {
  RecordReader reader;
  std::string error = reader.Open(from, std::string_view(kCheckpointMagic, 8), "checkpoint");
  if (!error.empty()) return error;
  std::string record;
  if (!reader.Next(&record)) return from + ": no header";
  RecordWriter writer;
  error = writer.Create(to, std::string_view(kCheckpointMagic, 8));
  if (error.empty()) error = writer.Append(header.SerializeAsString());
  while (error.empty() && reader.Next(&record)) error = writer.Append(record);
  if (error.empty() && reader.truncated()) error = from + ": a record is damaged";
  const std::string closed = writer.Close(true);
  return error.empty() ? closed : error;
}

}  // namespace

bool HoldsNodeFiles(const std::string& dir, NodeId self) { return !NodeEntries(dir, self).empty(); }

uint64_t ReadVoteFloor(const std::string& dir, NodeId self) {
  std::ifstream in(RejoinPath(dir, self));
  uint64_t floor = 0;
  return in >> floor ? floor : 0;
}

std::string ServeState(const StateServer& server, const StateRequest& request, StateReply* reply) {
  const std::string who = "node " + std::to_string(server.self);
  const uint32_t max_bytes = std::min(std::max(request.max_bytes(), 4096u), kMaxChunkBytes);
  switch (request.part()) {
    case StateRequest::CHECKPOINT: {
      Epoch epoch = request.epoch();
      if (epoch == 0) {
        const std::vector<Epoch> held = ListCheckpoints(server.log_dir, server.self);
        if (held.empty()) return who + " holds no checkpoint";
        epoch = held.back();
      }
      const std::string path = CheckpointPath(server.log_dir, server.self, epoch);
      FILE* file = std::fopen(path.c_str(), "rb");
      if (!file) {
        return who + " no longer holds its checkpoint at epoch " + std::to_string(epoch) + " (" +
               std::strerror(errno) + "; a newer one replaced it): copy again";
      }
      struct stat info {};
      fstat(fileno(file), &info);
      std::string data(std::min<uint64_t>(max_bytes, info.st_size > 0 ? info.st_size : 0), '\0');
      size_t got = 0;
      if (request.offset() < static_cast<uint64_t>(info.st_size) &&
          std::fseek(file, static_cast<long>(request.offset()), SEEK_SET) == 0) {
        got = std::fread(&data[0], 1, data.size(), file);
      }
      std::fclose(file);
      data.resize(got);
      reply->set_epoch(epoch);
      reply->set_total_bytes(static_cast<uint64_t>(info.st_size));
      reply->set_data(std::move(data));
      return "";
    }
    case StateRequest::SEQUENCED: {
      SegmentedLogReader reader;
      reader.StopAtDamage();
      std::string error =
          reader.Open(server.log_dir, NodeFileName(server.self), kSequencerLogFormat, request.epoch());
      if (!error.empty()) return who + ": its sequencer log: " + error;
      std::string payload;
      SequencedEpoch record;
      size_t bytes = 0;
      Epoch next = request.epoch();
      while (bytes < max_bytes && reader.Next(&payload)) {
        if (!record.ParseFromString(payload)) return who + ": a record of its sequencer log does not parse";
        if (record.epoch() < next) continue;
        if (record.epoch() > next) break;  // committed epochs follow one another
        bytes += payload.size();
        reply->add_records(std::move(payload));
        reply->set_last_epoch(next);
        ++next;
      }
      if (reader.damaged()) return who + ": its sequencer log is damaged: " + reader.damage();
      return "";
    }
    case StateRequest::REJOIN:
      if (!server.rejoin) return who + " runs no consensus member";
      return server.rejoin(request.node());
    default:
      return who + ": unknown state request part " + std::to_string(request.part());
  }
}

std::string FetchCommitted(const ClusterLayout& layout, NodeId self, Epoch from, Epoch through,
                           const std::function<void(Epoch, const std::string&)>& each,
                           int timeout_ms) {
  std::string problems;
  Epoch next = from;
  for (NodeId peer : Peers(layout, self)) {
    while (next <= through) {
      ClientReply reply;
      const std::string error =
          Ask(layout, peer, StateAsk(StateRequest::SEQUENCED, next), &reply, timeout_ms);
      if (!error.empty()) {
        problems += (problems.empty() ? "" : "; ") + error;
        break;
      }
      if (reply.state().records_size() == 0) {
        problems += (problems.empty() ? "" : "; ") + std::string("node ") + std::to_string(peer) +
                    "'s sequencer log does not hold epoch " + std::to_string(next);
        break;
      }
      for (const std::string& record : reply.state().records()) {
        if (next > through) break;
        each(next, record);
        ++next;
      }
    }
    if (next > through) return "";
  }
  return "epochs " + std::to_string(next) + ".." + std::to_string(through) +
         " could not be fetched from a peer: " + problems;
}

std::string FetchStateFromPeer(const FetchStateOptions& options) {
  const ClusterLayout& layout = *options.layout;
  const NodeParams& params = *options.params;
  const std::string& dir = params.engine.log_dir;
  const NodeConfig* me = layout.Node(options.self);
  const std::string self = "node " + std::to_string(options.self);
  auto print = [&](const std::string& line) {
    if (options.print) options.print("[" + self + "] " + line);
  };
  const std::vector<NodeId> peers = Peers(layout, options.self);
  if (peers.empty()) return "--from_peer: partition " + std::to_string(me->partition()) +
                            " has no other replica to copy";

  // Every other member's term: this member may have voted in any of them
  // before it lost its log (see RaftLogOptions::vote_floor_term).
  uint64_t floor = 0;
  NodeId donor = peers.front();
  Epoch donor_checkpoint = 0;
  bool donor_follows = false;
  Epoch donor_committed = 0, trimmed = 0;
  std::string silent;
  for (NodeId peer : peers) {
    ClientReply reply;
    ClientRequest request;
    request.mutable_status();
    const std::string error = Ask(layout, peer, request, &reply, options.timeout_ms);
    if (!error.empty()) {
      silent += (silent.empty() ? "" : "; ") + error;
      continue;
    }
    const StatusReply& status = reply.node_status();
    floor = std::max<uint64_t>(floor, status.group_term());
    trimmed = std::max<Epoch>(trimmed, status.group_trimmed_epoch());
    const bool follows = status.group_role() != "leader";
    // The newest checkpoint; a follower's rather than the leader's, whose
    // client port is busier.
    if (status.state() == "running" &&
        (status.checkpoint_epoch() > donor_checkpoint ||
         (status.checkpoint_epoch() == donor_checkpoint && follows && !donor_follows))) {
      donor = peer;
      donor_checkpoint = status.checkpoint_epoch();
      donor_follows = follows;
      donor_committed = status.group_committed_epoch();
    }
  }
  if (!silent.empty()) {
    return "--from_peer: every other member of partition " + std::to_string(me->partition()) +
           "'s group must answer before this node copies one of them (their terms bound the "
           "votes it may have cast before it lost its log, which it must not cast again): " +
           silent + ". Start them, or wait until they answer, then restart this node again";
  }
  if (floor == 0) {
    return "--from_peer: its peers run no consensus group (is replicated_input on in the config?)";
  }

  if (donor_checkpoint < trimmed) {
    return "--from_peer: no running peer holds a checkpoint at or after epoch " +
           std::to_string(trimmed) + ", through which the group trimmed its log (the newest: " +
           std::to_string(donor_checkpoint) + "); wait for the next checkpoint "
           "(paxflow-cli checkpoint), then restart this node again";
  }

  // What this node held is kept, aside, for inspection.
  const std::vector<std::string> held = NodeEntries(dir, options.self);
  if (!held.empty()) {
    const std::string aside = dir + "/replaced-" + NodeFileName(options.self) + "-" +
                              std::to_string(NowMicros() / 1000);
    if (mkdir(aside.c_str(), 0755) != 0) {
      return "--from_peer: cannot create " + aside + ": " + std::strerror(errno);
    }
    for (const std::string& file : held) {
      if (std::rename((dir + "/" + file).c_str(), (aside + "/" + file).c_str()) != 0) {
        return "--from_peer: cannot move " + dir + "/" + file + " to " + aside + ": " +
               std::strerror(errno);
      }
    }
    print("--from_peer: moved its " + std::to_string(held.size()) + " file(s) to " + aside);
  }

  const std::string name = NodeFileName(options.self);
  Epoch epoch = 0;
  CheckpointHeader header;
  if (donor_checkpoint > 0) {
    // The checkpoint, chunk by chunk, then checked whole.
    const std::string fetched = CheckpointPath(dir, options.self, donor_checkpoint) + ".fetch";
    FILE* out = std::fopen(fetched.c_str(), "wb");
    if (!out) return "--from_peer: cannot write " + fetched + ": " + std::strerror(errno);
    uint64_t offset = 0, total = 0;
    std::string error;
    const int64_t start_us = NowMicros();
    do {
      ClientReply reply;
      error = Ask(layout, donor, StateAsk(StateRequest::CHECKPOINT, donor_checkpoint, offset),
                  &reply, options.timeout_ms);
      if (!error.empty()) break;
      const StateReply& chunk = reply.state();
      if (offset > 0 && chunk.total_bytes() != total) {
        error = "its checkpoint changed size while it was copied";
        break;
      }
      total = chunk.total_bytes();
      if (chunk.data().empty() && offset < total) {
        error = "an empty chunk at offset " + std::to_string(offset);
        break;
      }
      if (std::fwrite(chunk.data().data(), 1, chunk.data().size(), out) != chunk.data().size()) {
        error = std::string("cannot write ") + fetched + ": " + std::strerror(errno);
        break;
      }
      offset += chunk.data().size();
    } while (offset < total);
    if (std::fclose(out) != 0 && error.empty()) error = "cannot write " + fetched;
    if (error.empty()) {
      const std::string problem = CheckCheckpoint(fetched, &header);
      if (!problem.empty()) error = "the copy does not check out: " + problem;
    }
    if (!error.empty()) {
      unlink(fetched.c_str());
      return "--from_peer: copying node " + std::to_string(donor) + "'s checkpoint at epoch " +
             std::to_string(donor_checkpoint) + " failed: " + error + ". Nothing was installed; "
             "restart this node again";
    }
    if (header.partition() != me->partition() || header.partitions() != layout.partitions()) {
      unlink(fetched.c_str());
      return "--from_peer: node " + std::to_string(donor) + "'s checkpoint is of partition " +
             std::to_string(header.partition()) + ", not " + std::to_string(me->partition());
    }
    // This node's from now on: its header names it.
    header.set_node_id(options.self);
    header.set_replica(me->replica());
    const std::string final_path = CheckpointPath(dir, options.self, donor_checkpoint);
    error = RewriteHeader(fetched, header, final_path + ".tmp");
    unlink(fetched.c_str());
    if (error.empty()) error = CheckCheckpoint(final_path + ".tmp", &header);
    if (error.empty() && std::rename((final_path + ".tmp").c_str(), final_path.c_str()) != 0) {
      error = std::string("rename: ") + std::strerror(errno);
    }
    if (error.empty()) error = SyncDirectory(dir);
    if (!error.empty()) return "--from_peer: cannot install the checkpoint: " + error;
    epoch = donor_checkpoint;
    char seconds[32];
    snprintf(seconds, sizeof(seconds), "%.2f", (NowMicros() - start_us) / 1e6);
    print("copied node " + std::to_string(donor) + "'s checkpoint at epoch " +
          std::to_string(epoch) + " (" + std::to_string(total) + " bytes in " + seconds +
          " s, checked: checksums, key count, digest)");
  }

  // Its logs: the donor's committed epochs after the checkpoint, and empty
  // input and reads logs.
  const LogHeader log_header =
      MakeLogHeader(params, options.self, me->partition(), me->replica(), layout.partitions());
  const std::string serialized = log_header.SerializeAsString();
  SegmentedLogWriter sequenced;
  std::string error = sequenced.Create(dir, name, kSequencerLogFormat, serialized);
  Epoch last = epoch;
  while (error.empty()) {
    ClientReply reply;
    error = Ask(layout, donor, StateAsk(StateRequest::SEQUENCED, last + 1), &reply,
                options.timeout_ms);
    if (!error.empty() || reply.state().records_size() == 0) break;
    for (const std::string& record : reply.state().records()) {
      if (error.empty()) error = sequenced.Append(++last, record);
    }
  }
  if (error.empty()) error = sequenced.Close(true);
  if (error.empty() && last == epoch && donor_committed > epoch) {
    error = "node " + std::to_string(donor) + "'s sequencer log no longer holds epoch " +
            std::to_string(epoch + 1) + ", the first after its checkpoint (it has committed "
            "through epoch " + std::to_string(donor_committed) + ")";
  }
  if (error.empty() && header.request_window().epoch() > last) {
    error = "node " + std::to_string(donor) + "'s sequencer log ends at epoch " +
            std::to_string(last) + ", before its checkpoint's request-id window (epoch " +
            std::to_string(header.request_window().epoch()) + ")";
  }
  if (error.empty()) {
    InputLogWriter input;
    error = input.Open(InputLogPath(dir, options.self), log_header, true);
    if (error.empty()) error = input.log().Close(true);
  }
  if (error.empty()) {
    SegmentedLogWriter reads;
    error = reads.Create(dir, name, kReadsLogFormat, serialized);
    if (error.empty()) error = reads.Close(true);
  }
  if (error.empty()) {
    std::ofstream out(RejoinPath(dir, options.self));
    out << floor << "\n";
    out.close();
    if (!out) error = "cannot write " + RejoinPath(dir, options.self);
  }
  if (error.empty()) error = SyncDirectory(dir);
  if (!error.empty()) {
    return "--from_peer: cannot install node " + std::to_string(donor) + "'s logs: " + error +
           ". Restart this node again";
  }
  print("copied node " + std::to_string(donor) + "'s committed epochs " +
        std::to_string(epoch + 1) + ".." + std::to_string(last) + "; grants no vote for terms up "
        "to " + std::to_string(floor));

  // The leader forgets how far it believed this member's log went.
  const int64_t deadline = NowMicros() + 10 * int64_t{options.timeout_ms} * 1000;
  std::string refusals;
  while (NowMicros() < deadline) {
    for (NodeId peer : peers) {
      ClientRequest request = StateAsk(StateRequest::REJOIN, 0);
      request.mutable_state()->set_node(options.self);
      ClientReply reply;
      const std::string problem = Ask(layout, peer, request, &reply, options.timeout_ms);
      if (problem.empty()) {
        print("node " + std::to_string(peer) + ", its group's leader, takes it back as a "
              "follower from its log's start");
        return "";
      }
      refusals = problem;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // an election may be under way
  }
  return "--from_peer: its state is installed, but no leader of its group took it back (" +
         refusals + "); restart it again once its group has a leader (paxflow-cluster status)";
}

}  // namespace paxflow
