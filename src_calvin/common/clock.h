// Monotonic time in microseconds, the unit of every latency we report.
#pragma once
#include <chrono>
#include <cstdint>

namespace paxflow {

inline int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace paxflow
