// libFuzzer target: arbitrary bytes through the client request path a node
// runs on every message (parse, build the txn, check it against the
// application), then through the procedure with nothing read, as an
// adversarial client could arrange. Must never crash, hang or leak.
//   make fuzz   (a short run; see README for a long one)
#include <cstddef>
#include <cstdint>
#include <memory>

#include "applications/workload.h"
#include "client/request.h"

namespace {

struct Apps {
  std::unique_ptr<paxflow::Application> ycsb, bank;
  Apps() {
    paxflow::WorkloadParams params;
    params.records = 1000;
    ycsb = paxflow::MakeApplication(params);
    params.application = "bank";
    bank = paxflow::MakeApplication(params);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Apps apps;  // built once: the fuzzer calls this millions of times
  paxflow::RequestLimits limits;
  limits.max_request_bytes = 1 << 16;
  limits.max_keys = 512;
  paxflow::ClientRequest request;
  std::string error;
  if (paxflow::ParseRequest(std::string_view(reinterpret_cast<const char*>(data), size), limits,
                            &request, &error) != paxflow::OK ||
      !request.has_txn()) {
    return 0;
  }
  for (const paxflow::Application* app : {apps.ycsb.get(), apps.bank.get()}) {
    paxflow::Txn txn;
    if (paxflow::BuildTxn(request.txn(), *app, limits, &txn, &error) != paxflow::OK) continue;
    paxflow::ReadValues reads;
    reads.Reset(static_cast<size_t>(txn.read_set_size() + txn.read_write_set_size()));
    paxflow::WriteSet writes;
    paxflow::TxnOutcome outcome;
    app->Execute(txn, reads, &writes, &outcome);
  }
  return 0;
}
