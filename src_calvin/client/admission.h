// Admission control of a node's client port: how many client txns the node
// takes on before it answers BUSY instead of queueing.
//
// Two bounds. Node-wide, txns admitted whose result is not yet produced:
// that is the engine's backlog from clients, and by Little's law the
// latency of an admitted txn under overload is about this bound divided by
// the node's throughput. Per connection, txns admitted whose reply the
// connection has not yet taken, and the reply bytes waiting for it: a
// client that sends faster than it reads its replies is refused once it
// holds that much, and costs the node no more memory than that.
//
// Owns: the node-wide count. Threads: Admit on the client service thread;
// Produced on result threads (atomic).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace paxflow {

struct AdmissionLimits {
  uint64_t max_admitted = 4000;             // node-wide; see DefaultAdmitLimit
  uint64_t max_admitted_per_client = 4000;  // per connection, until its reply is sent
  size_t max_unsent_bytes_per_client = size_t{16} << 20;
  uint32_t retry_after_ms = 10;             // the hint in BUSY replies (an epoch)
};

// The default node-wide bound: `epochs` epochs' worth of full batches from
// this node's sequencers (at least 256). A sequencer takes at most
// max_batch txns an epoch, so admitting more only makes txns wait longer,
// not the node faster: with the default of one epoch, an admitted txn
// waits about an epoch to be sequenced when the engine keeps up, and under
// overload about bound / throughput (a few epochs) in all.
uint64_t DefaultAdmitLimit(uint32_t max_batch, uint32_t sequencers, uint32_t epochs = 1);

class Admission {
 public:
  enum Verdict { kAdmitted, kNodeFull, kClientFull, kClientNotReading };

  explicit Admission(const AdmissionLimits& limits) : limits_(limits) {}

  // One more txn from a connection that holds `client_admitted` unanswered
  // txns and `client_unsent_bytes` of replies it has not taken: admitted
  // (counted) or refused, and why. Cheap: it runs before the txn is
  // decoded, so that refusing costs next to nothing under overload.
  Verdict Admit(uint64_t client_admitted, size_t client_unsent_bytes);
  // The verdict Admit would give, without admitting or counting anything.
  Verdict Check(uint64_t client_admitted, size_t client_unsent_bytes) const;
  // Why a txn was refused, for its BUSY reply.
  std::string Explain(Verdict verdict, uint64_t client_admitted,
                      size_t client_unsent_bytes) const;
  // The result of an admitted txn was produced (or it will never run).
  void Produced(uint64_t n = 1) { admitted_.fetch_sub(n, std::memory_order_relaxed); }

  uint64_t admitted() const { return admitted_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_; }  // service thread
  const AdmissionLimits& limits() const { return limits_; }

 private:
  const AdmissionLimits limits_;
  std::atomic<uint64_t> admitted_{0};
  uint64_t refused_ = 0;
};

}  // namespace paxflow
