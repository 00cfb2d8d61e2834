#include "backend/ordered_keys.h"

#include <algorithm>

namespace paxflow {
namespace {

bool KeyLess(const OrderedKeys::Entry& a, const OrderedKeys::Entry& b) { return a.key < b.key; }

}  // namespace

OrderedKeys::OrderedKeys() { open_.reserve(kRunKeys); }

void OrderedKeys::Insert(Key key, void* record) {
  bool compact = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_.push_back(Entry{key, record});
    ++size_;
    if (open_.size() < kRunKeys) return;
    auto run = std::make_shared<Run>(std::move(open_));
    open_ = Run();
    open_.reserve(kRunKeys);
    std::sort(run->begin(), run->end(), KeyLess);
    runs_.push_back(std::move(run));
    MergeTail(kInlineMergeKeys);
    compact = runs_.size() > kMaxRuns;
  }
  if (compact) Compact();
}

OrderedKeys::RunPtr OrderedKeys::Merge(const Run& a, const Run& b) {
  auto merged = std::make_shared<Run>();
  merged->reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(*merged), KeyLess);
  return merged;
}

void OrderedKeys::MergeTail(size_t limit) {
  while (runs_.size() >= 2) {
    const Run& older = *runs_[runs_.size() - 2];
    const Run& newer = *runs_.back();
    if (older.size() > newer.size() || older.size() + newer.size() > limit) return;
    RunPtr merged = Merge(older, newer);
    runs_.pop_back();
    runs_.back() = std::move(merged);
  }
}

void OrderedKeys::Compact() {
  std::lock_guard<std::mutex> compacting(compact_mu_);
  while (true) {
    // Pick the newest adjacent pair the binary-counter rule would merge,
    // merge it without holding mu_, then swap it in if both runs are still
    // there (an inserter may have merged one of them meanwhile).
    RunPtr older, newer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = runs_.size(); i-- > 1;) {
        if (runs_[i - 1]->size() <= runs_[i]->size()) {
          older = runs_[i - 1];
          newer = runs_[i];
          break;
        }
      }
    }
    if (!older) return;
    RunPtr merged = Merge(*older, *newer);
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 1; i < runs_.size(); ++i) {
      if (runs_[i - 1] == older && runs_[i] == newer) {
        runs_[i - 1] = std::move(merged);
        runs_.erase(runs_.begin() + static_cast<long>(i));
        break;
      }
    }
  }
}

OrderedKeys::Cursor OrderedKeys::Scan(Key lo, Key hi) const {
  Cursor cursor;
  if (lo > hi) return cursor;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cursor.runs_ = runs_;
    for (const Entry& entry : open_) {
      if (entry.key >= lo && entry.key <= hi) cursor.open_.push_back(entry);
    }
  }
  std::sort(cursor.open_.begin(), cursor.open_.end(), KeyLess);
  auto add = [&](const Run& run) {
    auto first = std::lower_bound(run.begin(), run.end(), Entry{lo, nullptr}, KeyLess);
    auto last = std::upper_bound(first, run.end(), Entry{hi, nullptr}, KeyLess);
    if (first != last) cursor.sources_.push_back(Cursor::Source{&*first, &*first + (last - first)});
  };
  for (const RunPtr& run : cursor.runs_) add(*run);
  add(cursor.open_);
  return cursor;
}

bool OrderedKeys::Cursor::Next(Entry* entry) {
  if (sources_.empty()) return false;
  // A few dozen runs at most: a linear pick of the smallest head is enough.
  size_t best = 0;
  for (size_t i = 1; i < sources_.size(); ++i) {
    if (sources_[i].next->key < sources_[best].next->key) best = i;
  }
  Source& source = sources_[best];
  *entry = *source.next++;
  if (source.next == source.end) {
    sources_[best] = sources_.back();
    sources_.pop_back();
  }
  return true;
}

size_t OrderedKeys::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return size_;
}

size_t OrderedKeys::runs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return runs_.size() + (open_.empty() ? 0 : 1);
}

}  // namespace paxflow
