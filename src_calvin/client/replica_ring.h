// Which replica of a partition a failover client (FailoverClient,
// paxflow-load's LoadClient) tries next, and whether it believes a
// redirect. One policy for both:
// - a refusal without a leader named, or silence, goes to the next replica
//   in the round, past one that went silent recently (if there are others);
// - followers name a killed leader until their own election timeout, so a
//   redirect to the replica that went silent is not believed for two
//   attempt timeouts.
//
// Owns: the endpoints, the round's position, the last silent endpoint.
// Threads: one owner thread (no locking).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace paxflow {

class ReplicaRing {
 public:
  // `endpoints`: every replica's client endpoint; the round starts after
  // the first. `attempt_timeout_ms`: how long one try waits for a reply.
  ReplicaRing(std::vector<std::string> endpoints, int attempt_timeout_ms);

  bool empty() const { return endpoints_.empty(); }
  const std::string& first() const;  // empty if there are no endpoints
  // `endpoint` gave no reply in time, at `now_us`.
  void MarkSilent(const std::string& endpoint, int64_t now_us);
  // Whether a redirect to `leader` is believed at `now_us` (not the one that
  // went silent within two attempt timeouts).
  bool Believe(const std::string& leader, int64_t now_us) const;
  // The next replica of the round at `now_us`, past a recently silent one
  // when there are others. Empty if there are no endpoints.
  std::string Next(int64_t now_us);

 private:
  bool RecentlySilent(const std::string& endpoint, int64_t now_us) const;

  const std::vector<std::string> endpoints_;
  const int64_t distrust_us_;  // two attempt timeouts
  size_t next_index_ = 1;      // endpoints_: tried next
  std::string silent_;         // the last endpoint that did not answer in time
  int64_t silent_us_ = 0;      // when
};

}  // namespace paxflow
