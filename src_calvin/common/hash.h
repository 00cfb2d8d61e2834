// Hashes for the state digest and the input log's checksums.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace paxflow {

inline uint64_t Mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

// 64-bit hash of a byte string, eight bytes a step.
inline uint64_t HashBytes(std::string_view bytes, uint64_t seed = 0x5bd1e9955bd1e995ULL) {
  uint64_t h = seed ^ (bytes.size() * 0x9e3779b97f4a7c15ULL);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    h = Mix64(h ^ word) * 0x9e3779b97f4a7c15ULL;
  }
  uint64_t tail = 0;
  if (i < bytes.size()) std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  return Mix64(h ^ tail ^ 0x2545f4914f6cdd1dULL);
}

// One key/value's share of a state digest. Digests are sums of these (mod
// 2^64), so they do not depend on iteration order or on partitioning.
inline uint64_t DigestTerm(uint64_t key, std::string_view value) {
  return Mix64(key * 0x9e3779b97f4a7c15ULL + 1) ^ HashBytes(value, key);
}

uint32_t Crc32c(const void* data, size_t size);
// The crc32c of A followed by `data`, given `crc` = Crc32c(A).
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

}  // namespace paxflow
