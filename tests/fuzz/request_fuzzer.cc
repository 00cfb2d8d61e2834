// libFuzzer target: arbitrary bytes through the client request path a node
// runs on every message (parse, build each txn of a single request or a
// batch, LTXs included, check it against the application), then through
// the procedure with made-up reads, as an adversarial client could arrange,
// and through the reply encoder, whose output must parse back to what was
// encoded. Must never crash, hang or leak.
//   make fuzz   (a short run; see README for a long one)
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "applications/workload.h"
#include "client/reply.h"
#include "client/request.h"

namespace {

struct App {
  std::unique_ptr<paxflow::Application> app;
  std::unique_ptr<paxflow::ProcedureTable> procedures;
};

struct Apps {
  App ycsb, bank;
  Apps() {
    paxflow::WorkloadParams params;
    params.records = 1000;
    ycsb.app = paxflow::MakeApplication(params);
    ycsb.procedures = std::make_unique<paxflow::ProcedureTable>(*ycsb.app);
    params.application = "bank";
    bank.app = paxflow::MakeApplication(params);
    bank.procedures = std::make_unique<paxflow::ProcedureTable>(*bank.app);
  }
};

// Runs the txn's procedure over made-up reads and encodes its result; the
// encoding must parse back with the same reads.
void RunAndEncode(const paxflow::Application& app, const paxflow::Txn& txn) {
  const size_t positions = static_cast<size_t>(txn.read_set_size() + txn.read_write_set_size());
  paxflow::ReadValues reads;
  reads.Reset(positions);
  for (size_t i = 0; i < positions; ++i) {
    if (i % 3 == 1) reads.SetMissing(i);
    else reads.Set(i, std::string(i % 7, static_cast<char>('a' + i % 26)));
  }
  paxflow::WriteSet writes;
  paxflow::TxnOutcome outcome;
  app.Execute(txn, reads, &writes, &outcome);
  paxflow::ReplyWriter writer;
  paxflow::ResultTiming timing;
  for (bool with_keys : {false, true}) {
    paxflow::ByteBuffer bytes;
    writer.AppendResult(42, txn, outcome, timing, reads, with_keys, &bytes);
    paxflow::ClientReply reply;
    if (!reply.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
        reply.results_size() != 1) {
      abort();
    }
    const paxflow::ReadsView view(reply.results(0).txn());
    if (view.malformed() || view.size() != positions) abort();
    for (size_t i = 0; i < positions; ++i) {
      if (view.found(i) != reads.Found(i)) abort();
      if (reads.Found(i) && view.value(i) != reads.Get(i)) abort();
    }
  }
}

void Build(const App& app, paxflow::TxnRequest* txn_request, paxflow::LtxRequest* ltx_request,
           const paxflow::RequestLimits& limits) {
  static paxflow::RequestScratch scratch(limits);  // the fuzzer runs on one thread
  paxflow::Txn txn;
  std::string error;
  const paxflow::ReplyStatus status =
      txn_request ? paxflow::BuildTxn(txn_request, *app.app, *app.procedures, limits, &scratch,
                                      &txn, &error)
                  : paxflow::BuildLtxTxn(ltx_request, *app.app, *app.procedures, limits,
                                         &scratch, &txn, &error);
  if (status == paxflow::OK) RunAndEncode(*app.app, txn);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Apps apps;  // built once: the fuzzer calls this millions of times
  paxflow::RequestLimits limits;
  limits.max_request_bytes = 1 << 16;
  limits.max_keys = 512;
  limits.max_batch_txns = 64;
  paxflow::ClientRequest request;
  std::string error;
  if (paxflow::ParseRequest(std::string_view(reinterpret_cast<const char*>(data), size), limits,
                            &request, &error) != paxflow::OK) {
    return 0;
  }
  for (const App* app : {&apps.ycsb, &apps.bank}) {
    // Building moves fields out of the request: each app gets its own copy.
    paxflow::ClientRequest copy = request;
    if (copy.has_txn()) Build(*app, copy.mutable_txn(), nullptr, limits);
    if (copy.has_ltx()) Build(*app, nullptr, copy.mutable_ltx(), limits);
    for (paxflow::BatchedTxn& item : *copy.mutable_batch()->mutable_txns()) {
      if (item.has_txn()) Build(*app, item.mutable_txn(), nullptr, limits);
      if (item.has_ltx()) Build(*app, nullptr, item.mutable_ltx(), limits);
    }
  }
  return 0;
}
