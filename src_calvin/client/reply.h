// The reply format both sides agree on: how a node encodes a txn's result
// (ReplyWriter, the client service) and how a client reads the values in it
// (ReadsView). Batch results are appended straight into a reply buffer as
// `ClientReply.results` entries; in the packed form the values go from the
// engine's read buffer to the wire buffer in one copy, with no per-value
// message.
//
// Threads: a ReplyWriter is used by one thread at a time (it holds scratch
// messages); ReadsView is a read-only view.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "applications/application.h"
#include "client.pb.h"
#include "txn.pb.h"

namespace paxflow {

// A growable byte buffer for reply messages built by appending: unlike a
// string's resize it never zero-fills what it hands out, and it keeps its
// capacity when cleared (buffers are pooled and reused).
class ByteBuffer {
 public:
  // Room for `n` more bytes at the end; the caller writes all of them.
  char* Append(size_t n) {
    if (size_ + n > capacity_) Grow(size_ + n);
    char* at = data_.get() + size_;
    size_ += n;
    return at;
  }
  void Append(std::string_view bytes) {
    if (!bytes.empty()) std::memcpy(Append(bytes.size()), bytes.data(), bytes.size());
  }
  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  void Clear() { size_ = 0; }

 private:
  void Grow(size_t needed);
  std::unique_ptr<char[]> data_;
  size_t size_ = 0, capacity_ = 0;
};

// Where and how a client txn ran, besides its outcome.
struct ResultTiming {
  Epoch read_version = 0;      // PaxFlow read-only txns: the snapshot read; else 0
  int64_t server_latency_us = 0;
  int64_t visibility_us = -1;  // read-only txns: end of the snapshot's epoch -> result
  bool already_applied = false;  // a retry whose request id ran already (TxnReply)
};

// NOT_LEADER replies: who leads the partition's replicas (empty address:
// nobody known).
struct LeaderHint {
  int64_t node = -1;
  std::string address;  // its client endpoint, tcp://host:port
};

class ReplyWriter {
 public:
  // Replies whose values would exceed `max_values_bytes` carry none (the
  // txn's outcome stands; `detail` says so).
  explicit ReplyWriter(size_t max_values_bytes = size_t{64} << 20)
      : max_values_bytes_(max_values_bytes) {}

  // Appends one `results` entry for a finished txn: packed reads, or
  // KeyValues when `reads_with_keys`.
  void AppendResult(uint64_t id, const Txn& txn, const TxnOutcome& outcome,
                    const ResultTiming& timing, const ReadValues& reads, bool reads_with_keys,
                    ByteBuffer* out) {
    PrepareResult(id, txn, outcome, timing, reads, reads_with_keys);
    AppendPrepared(out);
  }
  // The same in two steps, so that a caller can build the entry outside its
  // lock and append it inside: Prepare returns the entry's size; `reads`
  // must stay valid until AppendPrepared, which copies the values.
  size_t PrepareResult(uint64_t id, const Txn& txn, const TxnOutcome& outcome,
                       const ResultTiming& timing, const ReadValues& reads, bool reads_with_keys);
  void AppendPrepared(ByteBuffer* out);
  // Appends one `results` entry for a txn that did not run.
  // `leader`: NOT_LEADER's hint, or null.
  void AppendError(uint64_t id, ReplyStatus status, const std::string& error,
                   uint32_t retry_after_ms, ByteBuffer* out, const LeaderHint* leader = nullptr);
  // A whole ClientReply to a single (unbatched) txn request: reads as KeyValues.
  void SingleResult(uint64_t request_id, const Txn& txn, const TxnOutcome& outcome,
                    const ResultTiming& timing, const ReadValues& reads, std::string* out);

 private:
  void Fill(const Txn& txn, const TxnOutcome& outcome, const ResultTiming& timing,
            TxnReply* reply) const;
  // KeyValues into `reply`; false (and a note in detail) if over the limit.
  void AddKeyValues(const Txn& txn, const ReadValues& reads, TxnReply* reply) const;
  size_t ReadPositions(const Txn& txn, const ReadValues& reads) const;

  const size_t max_values_bytes_;
  // The prepared entry.
  const ReadValues* reads_ = nullptr;
  size_t positions_ = 0, values_bytes_ = 0, txn_size_ = 0, result_size_ = 0;
  TxnReply reply_;    // scratch, reused
  TxnResult head_;    // scratch, reused
  ClientReply single_;
};

// The values of a TxnReply by read position (read_set, then
// read_write_set), whichever form the reply took.
class ReadsView {
 public:
  explicit ReadsView(const TxnReply& reply);
  size_t size() const { return size_; }
  bool found(size_t i) const;
  std::string_view value(size_t i) const;  // empty if not found
  // The packed form's sizes do not add up to its bytes (a garbled reply).
  bool malformed() const { return malformed_; }

 private:
  const TxnReply& reply_;
  bool packed_ = false;
  bool malformed_ = false;
  size_t size_ = 0;
  std::vector<uint32_t> offsets_;  // packed: start of each value
};

}  // namespace paxflow
