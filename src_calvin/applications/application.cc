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

size_t LtxReads::Slot(Key key) const {
  const size_t mask = table_.size() - 1;
  size_t slot = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
  while (table_[slot].used && table_[slot].key != key) slot = (slot + 1) & mask;
  return slot;
}

void LtxReads::Grow(size_t points) {
  size_t size = table_.empty() ? 16 : table_.size();
  while (size < 2 * points) size *= 2;
  if (size == table_.size()) return;
  std::vector<Point> old(size);
  old.swap(table_);
  for (const Point& point : old) {
    if (point.used) table_[Slot(point.key)] = point;
  }
}

bool LtxReads::Get(Key key, bool* found, std::string_view* value) const {
  if (table_.empty()) return false;
  const Point& point = table_[Slot(key)];
  if (!point.used) return false;
  *found = point.found;
  *value = std::string_view(data_).substr(point.offset, point.size);
  return true;
}

void LtxReads::SetPoint(Key key, bool found, std::string_view value) {
  Grow(count_ + 1);
  Point& point = table_[Slot(key)];
  if (!point.used) ++count_;
  point.key = key;
  point.used = true;
  point.found = found;
  point.offset = data_.size();
  point.size = found ? static_cast<uint32_t>(value.size()) : 0;
  if (found) data_.append(value.data(), value.size());
}

void Application::ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                              LtxRound* out) const {
  const size_t declared = static_cast<size_t>(txn.read_set_size() + txn.read_write_set_size());
  if (round == 0 && declared > 0) {
    out->reads.assign(txn.read_set().begin(), txn.read_set().end());
    out->reads.insert(out->reads.end(), txn.read_write_set().begin(),
                      txn.read_write_set().end());
    return;
  }
  // Its reads in the order Execute expects them: read_set, then read_write_set.
  ReadValues values;
  values.Reset(declared);
  size_t position = 0;
  auto fill = [&](Key key) {
    bool found = false;
    std::string_view value;
    if (reads.Get(key, &found, &value) && found) {
      values.Set(position, value);
    } else {
      values.SetMissing(position);
    }
    ++position;
  };
  for (Key key : txn.read_set()) fill(key);
  for (Key key : txn.read_write_set()) fill(key);
  Execute(txn, values, &out->writes, &out->outcome);
  if (!out->outcome.committed) out->writes.Clear();
  out->deletes = out->writes.deletes();
}

}  // namespace paxflow
