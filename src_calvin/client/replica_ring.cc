#include "client/replica_ring.h"

namespace paxflow {

ReplicaRing::ReplicaRing(std::vector<std::string> endpoints, int attempt_timeout_ms)
    : endpoints_(std::move(endpoints)), distrust_us_(2000LL * attempt_timeout_ms) {}

const std::string& ReplicaRing::first() const {
  static const std::string kNone;
  return endpoints_.empty() ? kNone : endpoints_.front();
}

void ReplicaRing::MarkSilent(const std::string& endpoint, int64_t now_us) {
  silent_ = endpoint;
  silent_us_ = now_us;
}

bool ReplicaRing::RecentlySilent(const std::string& endpoint, int64_t now_us) const {
  return !silent_.empty() && endpoint == silent_ && now_us - silent_us_ < distrust_us_;
}

bool ReplicaRing::Believe(const std::string& leader, int64_t now_us) const {
  return !RecentlySilent(leader, now_us);
}

std::string ReplicaRing::Next(int64_t now_us) {
  std::string next;
  for (size_t i = 0; i < endpoints_.size(); ++i) {
    next = endpoints_[next_index_++ % endpoints_.size()];
    if (!RecentlySilent(next, now_us)) break;
  }
  return next;
}

}  // namespace paxflow
