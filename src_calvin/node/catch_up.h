// Serves what peers missed, from this node's logs, on a thread of its own:
// the batches its sequencers cut (sequencer log; BatchRequest), another
// sequencer's batches for this partition (input log; for a replica of this
// partition whose own sequencer log lost its tail), and the
// reads of read-write txns it sent (reads log; ReadsRequest). Requests for
// this node itself (a restarted node's own batches) are served the same
// way and handed to its scheduler. Sends are paced to what the peer takes
// (Transport::SendPaced), so a big catch-up holds bounded memory.
//
// Owns: the request queue, its thread and one log cursor per requester
// (catch-ups read on from where the previous request ended).
// In: requests (any thread). Out: BATCH and REMOTE_READS messages.
// Threads: requests from any thread; serving on its own.
#pragma once
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/segmented_log.h"
#include "common/transport.h"
#include "recovery.pb.h"
#include "txn.pb.h"

namespace paxflow {

struct CatchUpOptions {
  NodeId self = 0;
  std::string log_dir;
  std::string log_name;                   // node-<id>
  Transport* transport = nullptr;
  SegmentedLogWriter* sequencer_log = nullptr;  // null: this node sequences nothing
  SegmentedLogWriter* reads_log = nullptr;
  // The input log: batches of other nodes' sequencers for this partition,
  // served to another replica of it whose sequencer log lost them.
  SegmentedLogWriter* input_log = nullptr;
  uint32_t own_sequencer = UINT32_MAX;  // the sequencer this node runs (none: UINT32_MAX)
  // A batch this node asked itself for (its own sequencer's, after a restart).
  std::function<void(std::unique_ptr<Batch>)> deliver_local;
  int send_timeout_ms = 10000;  // a peer that takes nothing this long is given up on
};

class CatchUpServer {
 public:
  explicit CatchUpServer(CatchUpOptions options);
  ~CatchUpServer();
  void Start();
  void Stop();

  void RequestBatches(NodeId from, const BatchRequest& request);
  void RequestReads(NodeId from, const ReadsRequest& request);

  uint64_t served_batches() const { return served_batches_.load(); }
  uint64_t served_reads() const { return served_reads_.load(); }

 private:
  struct Cursor {
    SegmentedLogReader reader;  // reads on from one request to the next, until the end
    Epoch last_epoch = 0;  // of the last record read
    std::string pending;   // read past the last request's range: the next one's
    bool open = false;
  };
  void Loop();
  void ServeBatches(NodeId to, const BatchRequest& request);
  void ServeFromInputLog(NodeId to, const BatchRequest& request);
  void ServeReads(NodeId to, const ReadsRequest& request);
  bool SendTo(NodeId to, Channel channel, const std::string& payload);

  const CatchUpOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stop_ = false;
  std::thread thread_;
  std::map<NodeId, Cursor> cursors_;  // server thread only
  std::atomic<uint64_t> served_batches_{0}, served_reads_{0};
};

}  // namespace paxflow
