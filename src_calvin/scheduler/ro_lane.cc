#include "scheduler/ro_lane.h"

#include <algorithm>

namespace paxflow {

void RoLane::Admit(TxnWork* work, Epoch published, std::vector<WorkItem>* ready) {
  if (work->read_version <= published) {
    ready->push_back(WorkItem{work, WorkItem::kExecute});
    return;
  }
  ++waited_;
  // Snapshots only grow along the global order, so this is an append,
  // except for an RO an LTX held back, whose snapshot is older.
  auto at = std::upper_bound(
      waiting_.begin(), waiting_.end(), work->read_version,
      [](Epoch version, const TxnWork* queued) { return version < queued->read_version; });
  waiting_.insert(at, work);
}

void RoLane::Release(Epoch published, std::vector<WorkItem>* ready) {
  while (!waiting_.empty() && waiting_.front()->read_version <= published) {
    ready->push_back(WorkItem{waiting_.front(), WorkItem::kExecute});
    waiting_.pop_front();
  }
}

}  // namespace paxflow
