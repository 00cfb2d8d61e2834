// SingleWriterAdd: a counter one thread writes and others only read
// (progress lines, summaries, metrics). Header-only.
#pragma once
#include <atomic>

namespace paxflow {

// Adds `n` to `counter` as its only writer: a plain load and store, no
// locked read-modify-write, and still a whole value for concurrent readers.
template <typename T>
inline void SingleWriterAdd(std::atomic<T>& counter, typename std::atomic<T>::value_type n = 1) {
  counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

}  // namespace paxflow
