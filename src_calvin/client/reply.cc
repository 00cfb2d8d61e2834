#include "client/reply.h"

#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <cstring>

#include "common/types.h"

namespace paxflow {
namespace {

using google::protobuf::io::CodedOutputStream;

// Field numbers this file writes by hand; static_asserts keep them in step
// with client.proto.
constexpr int kResultsField = ClientReply::kResultsFieldNumber;
constexpr int kResultTxnField = TxnResult::kTxnFieldNumber;
constexpr int kReadValuesField = TxnReply::kReadValuesFieldNumber;
static_assert(kResultsField == 7 && kResultTxnField == 4 && kReadValuesField == 16,
              "client.proto field numbers changed: update reply.cc");

uint32_t LengthDelimitedTag(int field) { return static_cast<uint32_t>(field) << 3 | 2; }

size_t HeaderSize(int field, size_t length) {
  return CodedOutputStream::VarintSize32(LengthDelimitedTag(field)) +
         CodedOutputStream::VarintSize64(length);
}

uint8_t* WriteHeader(int field, size_t length, uint8_t* at) {
  at = CodedOutputStream::WriteVarint32ToArray(LengthDelimitedTag(field), at);
  return CodedOutputStream::WriteVarint64ToArray(length, at);
}

const char* ClassName(TxnClass c) { return c == RO ? "RO" : c == LTX ? "LTX" : "RW"; }

}  // namespace

void ByteBuffer::Grow(size_t needed) {
  const size_t capacity = std::max<size_t>({needed, 2 * capacity_, 4096});
  std::unique_ptr<char[]> grown(new char[capacity]);
  if (size_) std::memcpy(grown.get(), data_.get(), size_);
  data_ = std::move(grown);
  capacity_ = capacity;
}

size_t ReplyWriter::ReadPositions(const Txn& txn, const ReadValues& reads) const {
  const size_t keys = static_cast<size_t>(txn.read_set_size()) + txn.read_write_set_size();
  return std::min(keys, reads.size());
}

void ReplyWriter::Fill(const Txn& txn, const TxnOutcome& outcome, const ResultTiming& timing,
                       TxnReply* reply) const {
  reply->Clear();
  reply->set_txn_id(txn.id());
  reply->set_epoch(TxnEpoch(txn.id()));
  reply->set_read_version(timing.read_version);
  reply->set_txn_class(ClassName(txn.txn_class()));
  reply->set_committed(outcome.committed && !outcome.aborted);
  reply->set_invariant_ok(outcome.invariant_ok);
  reply->set_detail(outcome.detail);
  reply->set_checksum(outcome.checksum);
  reply->set_server_latency_us(timing.server_latency_us);
  if (timing.visibility_us >= 0) reply->set_visibility_us(timing.visibility_us);
  if (outcome.aborted) {
    reply->set_aborted(true);
    reply->set_abort_reason(outcome.abort_reason);
    reply->set_retryable(outcome.retryable);
  }
  const SerialPosition& p = outcome.position;
  if (p.epoch || p.anchor || p.chain || p.txn) {
    Position* position = reply->mutable_position();
    position->set_epoch(p.epoch);
    position->set_anchor(p.anchor);
    position->set_chain(p.chain);
    position->set_txn(p.txn);
  }
  reply->set_deferrals(outcome.deferrals);
  if (timing.already_applied) reply->set_already_applied(true);
}

void ReplyWriter::AddKeyValues(const Txn& txn, const ReadValues& reads, TxnReply* reply) const {
  const size_t positions = ReadPositions(txn, reads);
  size_t bytes = 0;
  for (size_t i = 0; i < positions; ++i) bytes += reads.Found(i) ? reads.Get(i).size() : 0;
  if (bytes > max_values_bytes_) {
    reply->set_detail(reply->detail() + (reply->detail().empty() ? "" : "; ") + "reads omitted: " +
                      std::to_string(bytes) + " bytes of values exceed the reply limit");
    return;
  }
  size_t position = 0;
  for (const auto* set : {&txn.read_set(), &txn.read_write_set()}) {
    for (Key key : *set) {
      if (position >= positions) return;
      KeyValue* read = reply->add_reads();
      read->set_key(key);
      if (reads.Found(position)) {
        read->set_found(true);
        const std::string_view value = reads.Get(position);
        read->set_value(value.data(), value.size());
      }
      ++position;
    }
  }
}

size_t ReplyWriter::PrepareResult(uint64_t id, const Txn& txn, const TxnOutcome& outcome,
                                 const ResultTiming& timing, const ReadValues& reads,
                                 bool reads_with_keys) {
  Fill(txn, outcome, timing, &reply_);
  reads_ = &reads;
  positions_ = ReadPositions(txn, reads);
  values_bytes_ = 0;
  if (reads_with_keys) {
    AddKeyValues(txn, reads, &reply_);
  } else {
    for (size_t i = 0; i < positions_; ++i) {
      values_bytes_ += reads.Found(i) ? reads.Get(i).size() : 0;
    }
    if (values_bytes_ > max_values_bytes_) {
      reply_.set_detail(reply_.detail() + (reply_.detail().empty() ? "" : "; ") +
                        "reads omitted: " + std::to_string(values_bytes_) +
                        " bytes of values exceed the reply limit");
      values_bytes_ = 0;
    } else {
      auto* sizes = reply_.mutable_read_sizes();
      sizes->Reserve(static_cast<int>(positions_));
      for (size_t i = 0; i < positions_; ++i) {
        sizes->AddAlreadyReserved(reads.Found(i) ? static_cast<int32_t>(reads.Get(i).size())
                                                 : -1);
      }
    }
  }
  head_.Clear();
  head_.set_id(id);
  // ClientReply.results entry = TxnResult{id, txn: TxnReply{..., read_values}},
  // with read_values written last, straight from the read buffer (parsers
  // take fields in any order).
  const size_t reply_size = reply_.ByteSizeLong();
  txn_size_ = reply_size +
              (values_bytes_ ? HeaderSize(kReadValuesField, values_bytes_) + values_bytes_ : 0);
  result_size_ = head_.ByteSizeLong() + HeaderSize(kResultTxnField, txn_size_) + txn_size_;
  return HeaderSize(kResultsField, result_size_) + result_size_;
}

void ReplyWriter::AppendPrepared(ByteBuffer* out) {
  uint8_t* at = reinterpret_cast<uint8_t*>(
      out->Append(HeaderSize(kResultsField, result_size_) + result_size_));
  at = WriteHeader(kResultsField, result_size_, at);
  at = head_.SerializeWithCachedSizesToArray(at);
  at = WriteHeader(kResultTxnField, txn_size_, at);
  at = reply_.SerializeWithCachedSizesToArray(at);
  if (values_bytes_) {
    at = WriteHeader(kReadValuesField, values_bytes_, at);
    for (size_t i = 0; i < positions_; ++i) {
      if (!reads_->Found(i)) continue;
      const std::string_view value = reads_->Get(i);
      std::memcpy(at, value.data(), value.size());
      at += value.size();
    }
  }
}

void ReplyWriter::AppendError(uint64_t id, ReplyStatus status, const std::string& error,
                              uint32_t retry_after_ms, ByteBuffer* out,
                              const LeaderHint* leader) {
  head_.Clear();
  head_.set_id(id);
  head_.set_status(status);
  head_.set_error(error);
  if (retry_after_ms) head_.set_retry_after_ms(retry_after_ms);
  if (leader && !leader->address.empty()) {
    head_.set_leader_node(leader->node);
    head_.set_leader_address(leader->address);
  }
  const size_t size = head_.ByteSizeLong();
  uint8_t* at = reinterpret_cast<uint8_t*>(out->Append(HeaderSize(kResultsField, size) + size));
  head_.SerializeWithCachedSizesToArray(WriteHeader(kResultsField, size, at));
}

void ReplyWriter::SingleResult(uint64_t request_id, const Txn& txn, const TxnOutcome& outcome,
                               const ResultTiming& timing, const ReadValues& reads,
                               std::string* out) {
  single_.Clear();
  single_.set_request_id(request_id);
  TxnReply* reply = single_.mutable_txn();
  Fill(txn, outcome, timing, reply);
  AddKeyValues(txn, reads, reply);
  single_.SerializeToString(out);
}

ReadsView::ReadsView(const TxnReply& reply) : reply_(reply) {
  packed_ = reply.reads_size() == 0;
  if (!packed_) {
    size_ = static_cast<size_t>(reply.reads_size());
    return;
  }
  size_ = static_cast<size_t>(reply.read_sizes_size());
  offsets_.resize(size_);
  uint64_t offset = 0;
  for (size_t i = 0; i < size_; ++i) {
    offsets_[i] = static_cast<uint32_t>(offset);
    const int32_t size = reply.read_sizes(static_cast<int>(i));
    if (size > 0) offset += static_cast<uint64_t>(size);
  }
  if (offset != reply.read_values().size()) {
    malformed_ = true;
    size_ = 0;
  }
}

bool ReadsView::found(size_t i) const {
  return packed_ ? reply_.read_sizes(static_cast<int>(i)) >= 0
                 : reply_.reads(static_cast<int>(i)).found();
}

std::string_view ReadsView::value(size_t i) const {
  if (!packed_) return reply_.reads(static_cast<int>(i)).value();
  const int32_t size = reply_.read_sizes(static_cast<int>(i));
  if (size <= 0) return {};
  return std::string_view(reply_.read_values().data() + offsets_[i], static_cast<size_t>(size));
}

}  // namespace paxflow
