#include "backend/huge_buffer.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <utility>

namespace paxflow {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

HugeBuffer::HugeBuffer(size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  // Buffers of a huge page or more start on a huge-page boundary, so every
  // whole 2 MiB of them can be backed by one: map a huge page more than
  // needed and give back the unaligned ends.
  const size_t slack = bytes >= kHugePage ? kHugePage : 0;
  void* memory =
      mmap(nullptr, bytes + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  char* start = static_cast<char*>(memory);
  if (slack) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(start);
    char* aligned = start + ((kHugePage - address % kHugePage) % kHugePage);
    if (aligned > start) munmap(start, static_cast<size_t>(aligned - start));
    const size_t tail = static_cast<size_t>(start + bytes + slack - (aligned + bytes));
    if (tail) munmap(aligned + bytes, tail);
    start = aligned;
  }
  madvise(start, bytes, MADV_HUGEPAGE);  // a hint: fine if refused
  data_ = start;
}

HugeBuffer::~HugeBuffer() {
  if (data_) munmap(data_, size_);
}

HugeBuffer::HugeBuffer(HugeBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugeBuffer& HugeBuffer::operator=(HugeBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace paxflow
