// A pushed-down scan's summary (Application::SummarizeScans) as it travels
// from a partition to the procedure: its fields as little-endian 64-bit
// words, written and read in one order. Used by CH's queries and by the
// YCSB report. Header-only; no state beyond the string being built or read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace paxflow {

class SummaryWriter {
 public:
  void Word(uint64_t word) { out_.append(reinterpret_cast<const char*>(&word), sizeof(word)); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class SummaryReader {
 public:
  explicit SummaryReader(const std::string& in) : in_(in) {}
  // False once the summary ran out (the word is then 0).
  bool Word(uint64_t* word) {
    *word = 0;
    if (in_.size() - at_ < sizeof(*word)) return ok_ = false;
    std::memcpy(word, in_.data() + at_, sizeof(*word));
    at_ += sizeof(*word);
    return true;
  }
  // Every word read, and nothing left over.
  bool ok() const { return ok_ && at_ == in_.size(); }

 private:
  const std::string& in_;
  size_t at_ = 0;
  bool ok_ = true;
};

}  // namespace paxflow
