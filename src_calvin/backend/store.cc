#include "backend/store.h"

#include "common/hash.h"

namespace paxflow {

uint64_t Store::Digest(size_t slot, Epoch epoch) {
  uint64_t digest = 0;
  Scan(slot, epoch, [&](Key key, std::string_view value) { digest += DigestTerm(key, value); });
  return digest;
}

}  // namespace paxflow
