#include "common/hash.h"

#include <array>

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

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  static const std::array<uint32_t, 256> kTable = MakeCrcTable();  // immutable once built
  const auto* bytes = static_cast<const uint8_t*>(data);
  crc ^= 0xffffffffu;
  for (size_t i = 0; i < size; ++i) crc = kTable[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

uint32_t Crc32c(const void* data, size_t size) { return Crc32cExtend(0, data, size); }

}  // namespace paxflow
