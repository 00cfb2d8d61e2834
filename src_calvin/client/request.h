// Turning a client's bytes into a transaction the sequencer can take, with
// every check a hostile or buggy client needs: size limits, parse errors,
// unknown procedures, repeated keys, procedure-specific shape. Pure
// functions: no I/O, no threads (the fuzz target drives them directly).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "applications/application.h"
#include "client.pb.h"
#include "txn.pb.h"

namespace paxflow {

struct RequestLimits {
  size_t max_request_bytes = size_t{4} << 20;
  size_t max_keys = 10000;               // across the three key sets
  size_t max_value_bytes = size_t{1} << 20;
};

// Parses one request message.
ReplyStatus ParseRequest(std::string_view bytes, const RequestLimits& limits,
                         ClientRequest* request, std::string* error);

// Builds the txn for `request`: procedure id, key sets, args. The sequencer
// adds ids, class and origin.
ReplyStatus BuildTxn(const TxnRequest& request, const Application& app,
                     const RequestLimits& limits, Txn* txn, std::string* error);

const char* ReplyStatusName(ReplyStatus status);

}  // namespace paxflow
