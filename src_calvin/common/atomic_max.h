// RaiseTo: a maximum that several threads move forward without a lock
// (an epoch reached, a planning hint). Header-only; any thread.
#pragma once
#include <atomic>

namespace paxflow {

// Raises `value` to `to` unless it already holds as much; never lowers it.
template <typename T>
inline void RaiseTo(std::atomic<T>* value, T to,
                    std::memory_order order = std::memory_order_seq_cst) {
  T seen = value->load(order);
  while (seen < to && !value->compare_exchange_weak(seen, to, order)) {
  }
}

}  // namespace paxflow
