// Turning a client's bytes into transactions the sequencer can take, with
// every check a hostile or buggy client needs: size limits, parse errors,
// unknown procedures, repeated keys, malformed key ranges, procedure-specific
// shape. Pure functions: no I/O, no threads (the fuzz target drives them
// directly).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "applications/application.h"
#include "applications/key_picker.h"
#include "client.pb.h"
#include "txn.pb.h"

namespace paxflow {

struct RequestLimits {
  size_t max_request_bytes = size_t{4} << 20;
  size_t max_keys = 10000;               // per txn, across its key sets and ranges
  size_t max_value_bytes = size_t{1} << 20;
  size_t max_batch_txns = 10000;         // txns in one TxnBatch
};

// The procedures clients may call by name, resolved once (not per txn).
class ProcedureTable {
 public:
  explicit ProcedureTable(const Application& app);
  // The procedure's id, or -1 if the application has none by that name.
  int64_t Find(const std::string& name) const;
  // "get, put, ..." for error messages.
  const std::string& names() const { return names_; }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::string names_;
};

// Reads only the request id of a request message and whether it asks for
// txns (a txn, an LTX or a batch), skipping everything else undecoded.
// False if the bytes are not a well-formed top level of a ClientRequest.
bool PeekRequest(std::string_view bytes, uint64_t* request_id, bool* carries_txns);

// Parses one request message.
ReplyStatus ParseRequest(std::string_view bytes, const RequestLimits& limits,
                         ClientRequest* request, std::string* error);

// Scratch of the checks below, reused from txn to txn by one thread.
struct RequestScratch {
  explicit RequestScratch(const RequestLimits& limits) : seen(limits.max_keys) {}
  DistinctKeySet seen;  // sized for max_keys
};

// Builds the txn for `request`: procedure id, key sets, args. The sequencer
// adds ids, class and origin. Key sets and args are moved out of `request`
// (it is left valid but unspecified).
ReplyStatus BuildTxn(TxnRequest* request, const Application& app,
                     const ProcedureTable& procedures, const RequestLimits& limits,
                     RequestScratch* scratch, Txn* txn, std::string* error);

// Builds the begin record of a long txn: txn_class LTX, ltx.kind LTX_BEGIN
// (LTX_SCAN when the write area is empty: a long read-only scan), the areas
// copied into `ltx`. Refuses an inverted range, write ranges that overlap
// each other, an unknown procedure, and what the application's
// CheckClientTxn refuses.
ReplyStatus BuildLtxTxn(LtxRequest* request, const Application& app,
                        const ProcedureTable& procedures, const RequestLimits& limits,
                        RequestScratch* scratch, Txn* txn, std::string* error);

const char* ReplyStatusName(ReplyStatus status);

}  // namespace paxflow
