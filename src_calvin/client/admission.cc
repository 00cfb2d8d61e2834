#include "client/admission.h"

#include <algorithm>

namespace paxflow {

uint64_t DefaultAdmitLimit(uint32_t max_batch, uint32_t sequencers, uint32_t epochs) {
  return std::max<uint64_t>(256, uint64_t{max_batch} * std::max<uint32_t>(1, sequencers) * epochs);
}

Admission::Verdict Admission::Check(uint64_t client_admitted, size_t client_unsent_bytes) const {
  if (admitted_.load(std::memory_order_relaxed) >= limits_.max_admitted) return kNodeFull;
  if (client_admitted >= limits_.max_admitted_per_client) return kClientFull;
  if (client_unsent_bytes >= limits_.max_unsent_bytes_per_client) return kClientNotReading;
  return kAdmitted;
}

Admission::Verdict Admission::Admit(uint64_t client_admitted, size_t client_unsent_bytes) {
  const Verdict verdict = Check(client_admitted, client_unsent_bytes);
  if (verdict == kAdmitted) {
    admitted_.fetch_add(1, std::memory_order_relaxed);
  } else {
    ++refused_;
  }
  return verdict;
}

std::string Admission::Explain(Verdict verdict, uint64_t client_admitted,
                               size_t client_unsent_bytes) const {
  switch (verdict) {
    case kNodeFull:
      return "busy: the node holds its limit of " + std::to_string(limits_.max_admitted) +
             " client txns admitted and not yet answered; retry later";
    case kClientFull:
      return "busy: this connection has " + std::to_string(client_admitted) +
             " txns admitted and not yet answered (limit " +
             std::to_string(limits_.max_admitted_per_client) + "); read replies, then retry";
    case kClientNotReading:
      return "busy: " + std::to_string(client_unsent_bytes) +
             " bytes of replies wait for this connection to read them (limit " +
             std::to_string(limits_.max_unsent_bytes_per_client) + ")";
    default:
      return "";
  }
}

}  // namespace paxflow
