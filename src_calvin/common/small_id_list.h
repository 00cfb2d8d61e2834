// SmallIdList: an ascending list of txn ids, held inline up to two and on
// the heap beyond. A per-key list of the LTXs that wrote the key is nearly
// always one long: inline, indexing an LTX's 4,000 writes allocates nothing.
//
// Owns: its ids. Threads: one at a time.
#pragma once
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>

#include "common/types.h"

namespace paxflow {

class SmallIdList {
 public:
  SmallIdList() = default;
  SmallIdList(SmallIdList&& other) noexcept { *this = std::move(other); }
  SmallIdList& operator=(SmallIdList&& other) noexcept {
    std::copy(other.inline_, other.inline_ + kInline, inline_);
    heap_ = std::move(other.heap_);
    heap_capacity_ = other.heap_capacity_;
    size_ = other.size_;
    other.heap_capacity_ = 0;
    other.size_ = 0;
    return *this;
  }

  const TxnId* begin() const { return heap_ ? heap_.get() : inline_; }
  const TxnId* end() const { return begin() + size_; }
  uint32_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Inserts `id` in ascending order (after any equal one).
  void Insert(TxnId id) {
    if (size_ == Capacity()) Grow();
    TxnId* ids = Data();
    TxnId* at = std::upper_bound(ids, ids + size_, id);
    std::move_backward(at, ids + size_, ids + size_ + 1);
    *at = id;
    ++size_;
  }
  // Removes every `id`.
  void Remove(TxnId id) {
    TxnId* ids = Data();
    size_ = static_cast<uint32_t>(std::remove(ids, ids + size_, id) - ids);
  }

 private:
  static constexpr uint32_t kInline = 2;
  uint32_t Capacity() const { return heap_ ? heap_capacity_ : kInline; }
  TxnId* Data() { return heap_ ? heap_.get() : inline_; }
  void Grow() {
    const uint32_t capacity = Capacity() * 2;
    auto grown = std::make_unique<TxnId[]>(capacity);
    std::copy(begin(), end(), grown.get());
    heap_ = std::move(grown);
    heap_capacity_ = capacity;
  }

  TxnId inline_[kInline] = {};
  std::unique_ptr<TxnId[]> heap_;
  uint32_t heap_capacity_ = 0;
  uint32_t size_ = 0;
};

}  // namespace paxflow
