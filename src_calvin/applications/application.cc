#include "applications/application.h"

namespace paxflow {

void ReadValues::Reset(size_t positions) {
  arena_.clear();
  offset_.assign(positions, 0);
  length_.assign(positions, 0);
  state_.assign(positions, kUnset);
  filled_ = 0;
}

void ReadValues::Set(size_t position, std::string_view value) {
  if (state_[position] == kUnset) ++filled_;
  offset_[position] = static_cast<uint32_t>(arena_.size());
  length_[position] = static_cast<uint32_t>(value.size());
  state_[position] = kFound;
  arena_.append(value.data(), value.size());
}

void ReadValues::SetMissing(size_t position) {
  if (state_[position] == kUnset) ++filled_;
  length_[position] = 0;
  state_[position] = kMissing;
}

bool LtxReads::Get(Key key, bool* found, std::string_view* value) const {
  auto it = points_.find(key);
  if (it == points_.end()) return false;
  *found = it->second.first;
  *value = it->second.second;
  return true;
}

void LtxReads::SetPoint(Key key, bool found, std::string_view value) {
  points_[key] = {found, found ? std::string(value) : std::string()};
}

}  // namespace paxflow
