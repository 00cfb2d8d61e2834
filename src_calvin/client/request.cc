#include "client/request.h"

#include <algorithm>
#include <vector>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include "applications/kv_procedures.h"

namespace paxflow {
namespace {

std::string RangeText(const KeyRange& range) {
  return "[" + std::to_string(range.lo()) + ", " + std::to_string(range.hi()) + "]";
}

// The procedure by name, or UNKNOWN_PROCEDURE naming what the node runs.
ReplyStatus ResolveProcedure(const std::string& name, const ProcedureTable& procedures,
                             uint32_t* id, std::string* error) {
  const int64_t found = procedures.Find(name);
  if (found < 0) {
    *error = "unknown procedure '" + name + "' (this node runs: " + procedures.names() + ")";
    return UNKNOWN_PROCEDURE;
  }
  *id = static_cast<uint32_t>(found);
  return OK;
}

// No key twice across the sets: a key read and written goes in
// read_write_set only, and the engine locks each key once.
template <typename... Sets>
ReplyStatus CheckDistinct(RequestScratch* scratch, std::string* error, const Sets&... sets) {
  scratch->seen.Clear((static_cast<size_t>(sets.size()) + ...));
  for (const auto* set : {&sets...}) {
    for (Key key : *set) {
      if (!scratch->seen.Insert(key)) {
        *error = "key " + std::to_string(key) +
                 " appears twice (a key read and written goes in read_write_set only)";
        return BAD_REQUEST;
      }
    }
  }
  return OK;
}

// A request id (client.proto) is both halves or neither.
ReplyStatus CheckRequestId(uint64_t client_id, uint64_t client_seq, std::string* error) {
  if ((client_id == 0) == (client_seq == 0)) return OK;
  *error = "client_id and client_seq go together (a request id): both set or both 0";
  return BAD_REQUEST;
}

ReplyStatus CheckKeyCount(size_t keys, const RequestLimits& limits, std::string* error) {
  if (keys > limits.max_keys) {
    *error = std::to_string(keys) + " keys exceed the limit of " + std::to_string(limits.max_keys);
    return TOO_LARGE;
  }
  return OK;
}

ReplyStatus CheckWithApplication(const Txn& txn, const Application& app,
                                 const std::string& procedure, std::string* error) {
  const std::string problem = app.CheckClientTxn(txn);
  if (!problem.empty()) {
    *error = procedure + ": " + problem;
    return BAD_REQUEST;
  }
  return OK;
}

// Ranges must not be inverted; in a write area they must not overlap
// either (each key belongs to one range, so the LTX lane can tell which).
ReplyStatus CheckRanges(const google::protobuf::RepeatedPtrField<KeyRange>& ranges,
                        const char* area, bool disjoint, std::string* error) {
  for (const KeyRange& range : ranges) {
    if (range.lo() > range.hi()) {
      *error = std::string(area) + " range " + RangeText(range) + " is inverted (lo > hi)";
      return BAD_REQUEST;
    }
  }
  if (!disjoint || ranges.size() < 2) return OK;
  std::vector<const KeyRange*> sorted;
  sorted.reserve(ranges.size());
  for (const KeyRange& range : ranges) sorted.push_back(&range);
  std::sort(sorted.begin(), sorted.end(),
            [](const KeyRange* a, const KeyRange* b) { return a->lo() < b->lo(); });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i]->lo() <= sorted[i - 1]->hi()) {
      *error = std::string(area) + " ranges " + RangeText(*sorted[i - 1]) + " and " +
               RangeText(*sorted[i]) + " overlap";
      return BAD_REQUEST;
    }
  }
  return OK;
}

}  // namespace

ProcedureTable::ProcedureTable(const Application& app) {
  for (const auto& [name, id] : app.Procedures()) {
    ids_.emplace(name, id);
    names_ += (names_.empty() ? "" : ", ") + name;
  }
}

int64_t ProcedureTable::Find(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : static_cast<int64_t>(it->second);
}

const char* ReplyStatusName(ReplyStatus status) {
  switch (status) {
    case OK: return "OK";
    case BAD_REQUEST: return "BAD_REQUEST";
    case UNKNOWN_PROCEDURE: return "UNKNOWN_PROCEDURE";
    case TOO_LARGE: return "TOO_LARGE";
    case SHUTTING_DOWN: return "SHUTTING_DOWN";
    case NOT_LEADER: return "NOT_LEADER";
    case BUSY: return "BUSY";
    case UNAVAILABLE: return "UNAVAILABLE";
    case FORBIDDEN: return "FORBIDDEN";
    default: return "UNKNOWN_STATUS";
  }
}

bool PeekRequest(std::string_view bytes, uint64_t* request_id, bool* carries_txns) {
  using google::protobuf::internal::WireFormatLite;
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  *request_id = 0;
  *carries_txns = false;
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) return in.CurrentPosition() == static_cast<int>(bytes.size());
    const int field = WireFormatLite::GetTagFieldNumber(tag);
    if (field == ClientRequest::kRequestIdFieldNumber &&
        WireFormatLite::GetTagWireType(tag) == WireFormatLite::WIRETYPE_VARINT) {
      if (!in.ReadVarint64(request_id)) return false;
      continue;
    }
    if (field == ClientRequest::kTxnFieldNumber || field == ClientRequest::kLtxFieldNumber ||
        field == ClientRequest::kBatchFieldNumber) {
      *carries_txns = true;
    }
    if (!WireFormatLite::SkipField(&in, tag)) return false;
  }
}

ReplyStatus ParseRequest(std::string_view bytes, const RequestLimits& limits,
                         ClientRequest* request, std::string* error) {
  request->Clear();  // nothing of an earlier request may answer for this one
  if (bytes.size() > limits.max_request_bytes) {
    *error = "request of " + std::to_string(bytes.size()) + " bytes exceeds the limit of " +
             std::to_string(limits.max_request_bytes);
    return TOO_LARGE;
  }
  if (!request->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    *error = "not a ClientRequest (garbled message)";
    return BAD_REQUEST;
  }
  if (request->body_case() == ClientRequest::BODY_NOT_SET) {
    *error = "request " + std::to_string(request->request_id()) + " asks for nothing";
    return BAD_REQUEST;
  }
  if (request->has_batch() && static_cast<size_t>(request->batch().txns_size()) >
                                  limits.max_batch_txns) {
    *error = "a batch of " + std::to_string(request->batch().txns_size()) +
             " txns exceeds the limit of " + std::to_string(limits.max_batch_txns) +
             " (split it)";
    return TOO_LARGE;
  }
  return OK;
}

ReplyStatus BuildTxn(TxnRequest* request, const Application& app,
                     const ProcedureTable& procedures, const RequestLimits& limits,
                     RequestScratch* scratch, Txn* txn, std::string* error) {
  uint32_t procedure = 0;
  ReplyStatus status = ResolveProcedure(request->procedure(), procedures, &procedure, error);
  if (status != OK) return status;
  status = CheckKeyCount(static_cast<size_t>(request->read_set_size()) +
                             request->write_set_size() + request->read_write_set_size(),
                         limits, error);
  if (status != OK) return status;
  status = CheckDistinct(scratch, error, request->read_set(), request->write_set(),
                         request->read_write_set());
  if (status != OK) return status;
  const bool generic_write =
      procedure == WithKvProcedures::kPut || procedure == WithKvProcedures::kKv;
  if (generic_write) {
    if (request->values_size() != request->write_set_size()) {
      *error = request->procedure() + " needs one value per write_set key (" +
               std::to_string(request->write_set_size()) + " keys, " +
               std::to_string(request->values_size()) + " values)";
      return BAD_REQUEST;
    }
  } else if (request->values_size() > 0) {
    *error = request->procedure() + " takes no values";
    return BAD_REQUEST;
  }
  for (const std::string& value : request->values()) {
    if (value.size() > limits.max_value_bytes) {
      *error = "a value of " + std::to_string(value.size()) + " bytes exceeds the limit of " +
               std::to_string(limits.max_value_bytes);
      return TOO_LARGE;
    }
  }
  status = CheckRequestId(request->client_id(), request->client_seq(), error);
  if (status != OK) return status;
  txn->Clear();
  txn->set_procedure(procedure);
  txn->set_client_id(request->client_id());
  txn->set_client_seq(request->client_seq());
  txn->mutable_read_set()->Swap(request->mutable_read_set());
  txn->mutable_write_set()->Swap(request->mutable_write_set());
  txn->mutable_read_write_set()->Swap(request->mutable_read_write_set());
  if (generic_write) {
    KvArgs args;
    args.mutable_values()->Swap(request->mutable_values());
    args.SerializeToString(txn->mutable_args());
  } else {
    txn->mutable_args()->swap(*request->mutable_args());
  }
  return CheckWithApplication(*txn, app, request->procedure(), error);
}

ReplyStatus BuildLtxTxn(LtxRequest* request, const Application& app,
                        const ProcedureTable& procedures, const RequestLimits& limits,
                        RequestScratch* scratch, Txn* txn, std::string* error) {
  ReplyStatus status = CheckRanges(request->write_area(), "write_area", true, error);
  if (status != OK) return status;
  status = CheckRanges(request->read_area(), "read_area", false, error);
  if (status != OK) return status;
  uint32_t procedure = 0;
  status = ResolveProcedure(request->procedure(), procedures, &procedure, error);
  if (status != OK) return status;
  status = CheckKeyCount(static_cast<size_t>(request->read_set_size()) +
                             request->read_write_set_size() + request->write_area_size() +
                             request->read_area_size(),
                         limits, error);
  if (status != OK) return status;
  status = CheckDistinct(scratch, error, request->read_set(), request->read_write_set());
  if (status != OK) return status;
  status = CheckRequestId(request->client_id(), request->client_seq(), error);
  if (status != OK) return status;
  txn->Clear();
  txn->set_procedure(procedure);
  txn->set_txn_class(LTX);
  txn->set_client_id(request->client_id());
  txn->set_client_seq(request->client_seq());
  LtxRecord* ltx = txn->mutable_ltx();
  ltx->set_kind(request->write_area_size() == 0 ? LTX_SCAN : LTX_BEGIN);
  ltx->mutable_write_area()->Swap(request->mutable_write_area());
  ltx->mutable_read_area()->Swap(request->mutable_read_area());
  txn->mutable_read_set()->Swap(request->mutable_read_set());
  txn->mutable_read_write_set()->Swap(request->mutable_read_write_set());
  txn->mutable_args()->swap(*request->mutable_args());
  return CheckWithApplication(*txn, app, request->procedure(), error);
}

}  // namespace paxflow
