#include "common/hash.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace paxflow {
namespace {

std::array<uint32_t, 256> MakeCrcTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (0x82f63b78u ^ (c >> 1)) : (c >> 1);
    table[i] = c;
  }
  return table;
}

// A byte at a time: the portable way, about a cycle per byte.
uint32_t Crc32cTable(uint32_t crc, const uint8_t* bytes, size_t size) {
  static const std::array<uint32_t, 256> kTable = MakeCrcTable();  // immutable once built
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
// SSE4.2's crc32 instruction computes this very crc32c (same polynomial,
// same bit order), 8 bytes at a time: the logs every epoch's input goes
// through (the sequencer and input logs, three times over with replicated
// input) spent a tenth of a busy node's CPU in the table loop above.
__attribute__((target("sse4.2"))) uint32_t Crc32cHardware(uint32_t crc, const uint8_t* bytes,
                                                           size_t size) {
  uint64_t crc64 = crc;
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, bytes, 8);
    crc64 = _mm_crc32_u64(crc64, word);
    bytes += 8;
    size -= 8;
  }
  crc = static_cast<uint32_t>(crc64);
  for (; size > 0; --size) crc = _mm_crc32_u8(crc, *bytes++);
  return crc;
}

bool HasCrcInstruction() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  crc ^= 0xffffffffu;
#if defined(__x86_64__)
  if (HasCrcInstruction()) return Crc32cHardware(crc, bytes, size) ^ 0xffffffffu;
#endif
  return Crc32cTable(crc, bytes, size) ^ 0xffffffffu;
}

uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

}  // namespace paxflow
