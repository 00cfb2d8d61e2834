#include "client/request.h"

#include <unordered_set>

#include "applications/kv_procedures.h"

namespace paxflow {

const char* ReplyStatusName(ReplyStatus status) {
  switch (status) {
    case OK: return "OK";
    case BAD_REQUEST: return "BAD_REQUEST";
    case UNKNOWN_PROCEDURE: return "UNKNOWN_PROCEDURE";
    case TOO_LARGE: return "TOO_LARGE";
    case SHUTTING_DOWN: return "SHUTTING_DOWN";
    case NOT_LEADER: return "NOT_LEADER";
    case OVERLOADED: return "OVERLOADED";
    case UNAVAILABLE: return "UNAVAILABLE";
    default: return "UNKNOWN_STATUS";
  }
}

ReplyStatus ParseRequest(std::string_view bytes, const RequestLimits& limits,
                         ClientRequest* request, std::string* error) {
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
  return OK;
}

ReplyStatus BuildTxn(const TxnRequest& request, const Application& app,
                     const RequestLimits& limits, Txn* txn, std::string* error) {
  int64_t procedure = -1;
  std::string known;
  for (const auto& [name, id] : app.Procedures()) {
    if (name == request.procedure()) procedure = id;
    known += (known.empty() ? "" : ", ") + name;
  }
  if (procedure < 0) {
    *error = "unknown procedure '" + request.procedure() + "' (this node runs: " + known + ")";
    return UNKNOWN_PROCEDURE;
  }
  const size_t keys = static_cast<size_t>(request.read_set_size()) + request.write_set_size() +
                      request.read_write_set_size();
  if (keys > limits.max_keys) {
    *error = std::to_string(keys) + " keys exceed the limit of " + std::to_string(limits.max_keys);
    return TOO_LARGE;
  }
  std::unordered_set<Key> seen;
  seen.reserve(keys);
  for (const auto* set : {&request.read_set(), &request.write_set(), &request.read_write_set()}) {
    for (Key key : *set) {
      if (!seen.insert(key).second) {
        *error = "key " + std::to_string(key) +
                 " appears twice (a key read and written goes in read_write_set only)";
        return BAD_REQUEST;
      }
    }
  }
  const bool generic_write =
      procedure == WithKvProcedures::kPut || procedure == WithKvProcedures::kKv;
  if (generic_write) {
    if (request.values_size() != request.write_set_size()) {
      *error = request.procedure() + " needs one value per write_set key (" +
               std::to_string(request.write_set_size()) + " keys, " +
               std::to_string(request.values_size()) + " values)";
      return BAD_REQUEST;
    }
  } else if (request.values_size() > 0) {
    *error = request.procedure() + " takes no values";
    return BAD_REQUEST;
  }
  for (const std::string& value : request.values()) {
    if (value.size() > limits.max_value_bytes) {
      *error = "a value of " + std::to_string(value.size()) + " bytes exceeds the limit of " +
               std::to_string(limits.max_value_bytes);
      return TOO_LARGE;
    }
  }
  txn->Clear();
  txn->set_procedure(static_cast<uint32_t>(procedure));
  txn->mutable_read_set()->CopyFrom(request.read_set());
  txn->mutable_write_set()->CopyFrom(request.write_set());
  txn->mutable_read_write_set()->CopyFrom(request.read_write_set());
  if (generic_write) {
    KvArgs args;
    args.mutable_values()->CopyFrom(request.values());
    txn->set_args(args.SerializeAsString());
  } else {
    txn->set_args(request.args());
  }
  const std::string problem = app.CheckClientTxn(*txn);
  if (!problem.empty()) {
    *error = request.procedure() + ": " + problem;
    return BAD_REQUEST;
  }
  return OK;
}

}  // namespace paxflow
