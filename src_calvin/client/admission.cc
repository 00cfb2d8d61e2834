#include "client/admission.h"

#include <algorithm>

namespace paxflow {

uint64_t DefaultAdmitLimit(uint32_t max_batch, uint32_t sequencers, uint32_t epochs) {
  return std::max<uint64_t>(256, uint64_t{max_batch} * std::max<uint32_t>(1, sequencers) * epochs);
}

bool Admission::Admit(uint64_t client_admitted, size_t client_unsent_bytes, std::string* why) {
  const uint64_t admitted = admitted_.load(std::memory_order_relaxed);
  if (admitted >= limits_.max_admitted) {
    *why = "busy: " + std::to_string(admitted) +
           " client txns admitted and not yet answered on this node (limit " +
           std::to_string(limits_.max_admitted) + "); retry later";
  } else if (client_admitted >= limits_.max_admitted_per_client) {
    *why = "busy: this connection has " + std::to_string(client_admitted) +
           " txns admitted and not yet answered (limit " +
           std::to_string(limits_.max_admitted_per_client) + "); read replies, then retry";
  } else if (client_unsent_bytes >= limits_.max_unsent_bytes_per_client) {
    *why = "busy: " + std::to_string(client_unsent_bytes) +
           " bytes of replies wait for this connection to read them (limit " +
           std::to_string(limits_.max_unsent_bytes_per_client) + ")";
  } else {
    admitted_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  ++refused_;
  return false;
}

}  // namespace paxflow
