#include "node/read_exchange.h"

#include <glog/logging.h>

#include <algorithm>

#include "common/clock.h"
#include "scheduler/remote_reads.h"

namespace paxflow {
namespace {

// Most txns one request names (a partition far behind has many parked).
constexpr size_t kMaxTxnsPerRequest = 1024;
// Log lines about lost or re-requested messages, at most this often.
constexpr int64_t kLogEveryUs = 5000000;

// `resent = true` (RemoteReads field 8, varint) appended to a serialized
// message: protobuf keeps the last value of a repeated scalar field, so this
// marks the kept bytes as sent again without parsing them.
constexpr char kResentTrue[] = {0x40, 0x01};

bool Due(std::atomic<int64_t>* last_us) {
  const int64_t now = NowMicros();
  int64_t last = last_us->load(std::memory_order_relaxed);
  return now - last >= kLogEveryUs && last_us->compare_exchange_strong(last, now);
}

std::string ResentCopy(std::string bytes) {
  bytes.append(kResentTrue, sizeof(kResentTrue));
  return bytes;
}

}  // namespace

ReadExchange::ReadExchange(ReadExchangeOptions options)
    : options_(std::move(options)),
      kept_(options_.layout->partitions()),
      stand_in_for_(options_.layout->partitions()),
      stand_in_asked_(options_.layout->partitions(), 0) {}

void ReadExchange::SendOrNote(NodeId to, Channel channel, const std::string& bytes) {
  if (!options_.transport->Send(to, channel, bytes)) NoteUnsent(channel, to);
}

void ReadExchange::SetSentBefore(Epoch epoch) {
  std::lock_guard<std::mutex> lock(mu_);
  for (PartitionKept& kept : kept_) kept.evicted_through = std::max(kept.evicted_through, epoch);
}

void ReadExchange::Send(PartitionId to, const RemoteReads& reads) {
  const NodeId peer = options_.layout->NodeOf(options_.replica, to);
  std::string bytes = reads.SerializeAsString();
  // Sent first, kept after: a request served in between finds nothing and
  // sends nothing, so a copy sent again never overtakes the original (one
  // queue per peer keeps the order), and the receiver takes the original.
  SendOrNote(peer, REMOTE_READS, bytes);
  if (to >= kept_.size()) return;
  // Kept, and the stand-ins read, under one lock: a stand-in request
  // served before gets these bytes from the kept ones, one served after
  // from here.
  std::vector<NodeId> stand_in_for;
  std::string copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stand_in_for_[to].empty()) {
      const int64_t now = NowMicros();
      for (const auto& [node, renewed_us] : stand_in_for_[to]) {
        if (Renewed(renewed_us, now)) stand_in_for.push_back(node);
      }
      if (!stand_in_for.empty()) copy = ResentCopy(bytes);
    }
    KeepLocked(to, reads, std::move(bytes));
  }
  for (NodeId node : stand_in_for) {
    SendOrNote(node, REMOTE_READS, copy);
  }
  stood_in_.fetch_add(stand_in_for.size(), std::memory_order_relaxed);
}

void ReadExchange::KeepLocked(PartitionId to, const RemoteReads& reads, std::string&& bytes) {
  const Epoch epoch = RunEpochOf(reads);
  PartitionKept& kept = kept_[to];
  if (epoch <= kept.forgotten_through) return;  // it needs them no more
  Kept& slot = kept.by_txn[reads.txn_id()];
  if (slot.run_epoch == 0) {
    kept.by_epoch[epoch].push_back(reads.txn_id());
  } else {
    kept.bytes -= slot.bytes.size();  // sent again (a re-execution): the newest copy
  }
  slot.run_epoch = epoch;
  slot.bytes = std::move(bytes);
  kept.bytes += slot.bytes.size();
  if (kept.bytes <= options_.max_kept_bytes) return;
  // A receiver that frees nothing for this long is stuck or gone: the
  // oldest go, and a request for them goes to the reads log.
  uint64_t evicted = 0;
  while (kept.bytes > options_.max_kept_bytes && kept.by_epoch.size() > 1) {
    const Epoch oldest = kept.by_epoch.begin()->first;
    evicted += kept.by_epoch.begin()->second.size();
    kept.evicted_through = std::max(kept.evicted_through, oldest);
    ForgetThrough(&kept, oldest);
  }
  evicted_.fetch_add(evicted, std::memory_order_relaxed);
  LOG_EVERY_N(WARNING, 100) << "node " << options_.self << ": partition " << to
                            << " has not freed its epochs for long; no longer keeps the reads "
                               "sent it for epochs up to "
                            << kept.evicted_through << " (over "
                            << (options_.max_kept_bytes >> 20)
                            << " MiB; those of read-write txns are in the reads log, if any)";
}

void ReadExchange::ForgetThrough(PartitionKept* kept, Epoch epoch) {
  while (!kept->by_epoch.empty() && kept->by_epoch.begin()->first <= epoch) {
    for (TxnId id : kept->by_epoch.begin()->second) {
      auto it = kept->by_txn.find(id);
      if (it == kept->by_txn.end() || it->second.run_epoch > epoch) continue;
      kept->bytes -= it->second.bytes.size();
      kept->by_txn.erase(it);
    }
    kept->by_epoch.erase(kept->by_epoch.begin());
  }
}

void ReadExchange::Forget(PartitionId partition, Epoch freed) {
  if (partition >= kept_.size()) return;
  std::lock_guard<std::mutex> lock(mu_);
  PartitionKept& kept = kept_[partition];
  if (freed <= kept.forgotten_through) return;
  kept.forgotten_through = freed;
  ForgetThrough(&kept, freed);
}

bool ReadExchange::Serve(NodeId from, const ReadsRequest& request) {
  if (request.stand_in()) {
    StandIn(from, request);
    return true;
  }
  if (request.txns_size() == 0) return false;
  if (request.partition() >= kept_.size()) return true;  // garbage: nothing to send
  ReadsRequest rest;  // what is no longer kept here
  uint64_t sent = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    PartitionKept& kept = kept_[request.partition()];
    for (TxnId id : request.txns()) {
      auto it = kept.by_txn.find(id);
      if (it != kept.by_txn.end()) {
        // Lost again? The receiver asks again.
        SendOrNote(from, REMOTE_READS, ResentCopy(it->second.bytes));
        ++sent;
      } else if (request.after_epoch() < kept.evicted_through) {
        rest.add_txns(id);
      }
      // Otherwise this partition has not run the txn yet: its reads go when
      // it does.
    }
  }
  resent_.fetch_add(sent, std::memory_order_relaxed);
  if (rest.txns_size() > 0 && options_.serve_from_log) {
    rest.set_partition(request.partition());
    rest.set_after_epoch(request.after_epoch());
    rest.set_to_epoch(request.to_epoch());
    from_log_.fetch_add(rest.txns_size(), std::memory_order_relaxed);
    options_.serve_from_log(from, rest);
  }
  VLOG(1) << "node " << options_.self << ": node " << from << " asked again for the reads of "
          << request.txns_size() << " txn(s); sent " << sent << ", " << rest.txns_size()
          << " from the reads log";
  return true;
}

void ReadExchange::StandIn(NodeId from, const ReadsRequest& request) {
  if (request.partition() >= kept_.size() || from == options_.self) return;
  const int64_t now = NowMicros();
  std::vector<std::string> owed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = stand_in_for_[request.partition()].emplace(from, now);
    const bool lapsed = !fresh && !Renewed(it->second, now);
    it->second = now;
    if (!fresh && !lapsed) return;  // a renewal
    // New (or lapsed: what went meanwhile is owed again): every reads kept
    // for its partition that it has not run yet.
    const PartitionKept& kept = kept_[request.partition()];
    for (auto epoch = kept.by_epoch.upper_bound(request.after_epoch());
         epoch != kept.by_epoch.end(); ++epoch) {
      for (TxnId id : epoch->second) {
        auto slot = kept.by_txn.find(id);
        if (slot != kept.by_txn.end() && slot->second.run_epoch == epoch->first) {
          owed.push_back(ResentCopy(slot->second.bytes));
        }
      }
    }
  }
  stand_ins_started_.fetch_add(1, std::memory_order_relaxed);
  for (const std::string& bytes : owed) {
    SendOrNote(from, REMOTE_READS, bytes);
  }
  resent_.fetch_add(owed.size(), std::memory_order_relaxed);
  LOG(WARNING) << "node " << options_.self << ": standing in for a silent node of this replica "
               << "towards node " << from << " (partition " << request.partition()
               << "): sent it the reads of " << owed.size() << " txn(s) after epoch "
               << request.after_epoch() << ", and a copy of every reads sent that partition "
               << "from now on";
}

void ReadExchange::StandIns() {
  if (!options_.reads_holder || !options_.scheduler) return;
  Epoch after = 0;
  bool status = false;
  for (PartitionId p = 0; p < stand_in_asked_.size(); ++p) {
    if (p == options_.partition) continue;
    const NodeId own = options_.layout->NodeOf(options_.replica, p);
    const NodeId holder = options_.reads_holder(p);
    if (holder == own || holder == options_.self) {
      if (stand_in_asked_[p] != 0) {
        LOG(WARNING) << "node " << options_.self << ": node " << own << " (partition " << p
                     << ") is heard again; node " << stand_in_asked_[p]
                     << " no longer stands in for it";
      }
      stand_in_asked_[p] = 0;  // its request lapses
      continue;
    }
    if (!status) {
      // Every reads owed for txns not run yet; repeats are dropped here.
      after = options_.scheduler->Status().published_epoch;
      status = true;
    }
    ReadsRequest request;
    request.set_partition(options_.partition);
    request.set_after_epoch(after);
    request.set_stand_in(true);
    SendOrNote(holder, READS_REQUEST, request.SerializeAsString());
    if (stand_in_asked_[p] != holder) {
      LOG(WARNING) << "node " << options_.self << ": node " << own << " (partition " << p
                   << ") is silent; asked node " << holder
                   << ", a live replica of that partition, to stand in for it (the reads it "
                   << "owes for txns after epoch " << after << ", and those to come)";
      stand_in_asked_[p] = holder;
    }
  }
}

size_t ReadExchange::standing_in() const {
  const int64_t now = NowMicros();
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& nodes : stand_in_for_) {
    for (const auto& [node, renewed_us] : nodes) n += Renewed(renewed_us, now);
  }
  return n;
}

void ReadExchange::AskAgain() {
  if (options_.retry_us < 0 || !options_.scheduler) return;
  const std::vector<OverdueReads> overdue =
      options_.scheduler->OverdueRemoteReads(NowMicros(), options_.retry_us, kMaxTxnsPerRequest);
  for (const OverdueReads& reads : overdue) {
    const NodeId peer = options_.reads_holder ? options_.reads_holder(reads.from)
                                              : options_.layout->NodeOf(options_.replica, reads.from);
    ReadsRequest request;
    request.set_partition(options_.partition);
    request.set_after_epoch(reads.first_epoch > 0 ? reads.first_epoch - 1 : 0);
    request.set_to_epoch(reads.last_epoch);
    for (TxnId id : reads.txns) request.add_txns(id);
    SendOrNote(peer, READS_REQUEST, request.SerializeAsString());
    asked_txns_.fetch_add(reads.txns.size(), std::memory_order_relaxed);
    asked_requests_.fetch_add(1, std::memory_order_relaxed);
    if (Due(&last_asked_log_us_)) {
      LOG(WARNING) << "node " << options_.self << ": " << reads.txns.size()
                   << " txn(s) of epochs " << reads.first_epoch << ".." << reads.last_epoch
                   << " waited more than " << options_.retry_us / 1000 << " ms for the reads of "
                   << "partition " << reads.from << " (node " << peer
                   << "); asked it to send them again (" << asked_txns_.load()
                   << " txn(s) asked again so far)";
    }
  }
}

void ReadExchange::NoteUnsent(Channel channel, NodeId to) {
  std::atomic<uint64_t>& counter = channel == REMOTE_READS ? unsent_reads_
                                   : channel == BATCH      ? unsent_batches_
                                                           : unsent_other_;
  counter.fetch_add(1, std::memory_order_relaxed);
  if (Due(&last_unsent_log_us_)) {
    LOG(WARNING) << "node " << options_.self << ": node " << to << " takes no more messages ("
                 << Channel_Name(channel) << " dropped: its queue is full); unsent so far: "
                 << unsent_reads_.load() << " reads, " << unsent_batches_.load()
                 << " batches, " << unsent_other_.load()
                 << " other; the receivers ask for them again";
  }
}

std::string ReadExchange::Summary() const {
  std::string summary;
  auto add = [&](const std::string& part) { summary += (summary.empty() ? "" : "; ") + part; };
  if (asked_txns_.load() > 0) {
    add("asked peers again for the reads of " + std::to_string(asked_txns_.load()) +
        " txn(s) in " + std::to_string(asked_requests_.load()) + " request(s)");
  }
  if (resent_.load() + from_log_.load() > 0) {
    add("sent reads again for " + std::to_string(resent_.load()) + " txn(s) (" +
        std::to_string(from_log_.load()) + " more asked of the reads log)");
  }
  if (unsent_reads_.load() + unsent_batches_.load() + unsent_other_.load() > 0) {
    add("unsent (queue full): " + std::to_string(unsent_reads_.load()) + " reads, " +
        std::to_string(unsent_batches_.load()) + " batches, " +
        std::to_string(unsent_other_.load()) + " other");
  }
  if (stand_ins_started_.load() > 0) {
    add("stood in for a silent node " + std::to_string(stand_ins_started_.load()) +
        " time(s) (" + std::to_string(stood_in_.load()) + " reads copied)");
  }
  if (evicted_.load() > 0) {
    add(std::to_string(evicted_.load()) + " sent reads no longer kept (over the limit)");
  }
  return summary;
}

}  // namespace paxflow
