// A large zero-filled allocation backed by transparent huge pages where the
// kernel allows (madvise): the store's random reads over hundreds of MB
// otherwise spend much of their time in TLB misses.
// Owned by one object; not copyable.
#pragma once
#include <cstddef>

namespace paxflow {

class HugeBuffer {
 public:
  HugeBuffer() = default;
  explicit HugeBuffer(size_t bytes);
  ~HugeBuffer();
  HugeBuffer(HugeBuffer&& other) noexcept;
  HugeBuffer& operator=(HugeBuffer&& other) noexcept;
  HugeBuffer(const HugeBuffer&) = delete;
  HugeBuffer& operator=(const HugeBuffer&) = delete;

  char* data() const { return data_; }
  size_t size() const { return size_; }
  bool Contains(const void* p) const {
    return p >= data_ && p < data_ + size_;
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace paxflow
