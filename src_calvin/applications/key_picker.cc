#include "applications/key_picker.h"

namespace paxflow {

DistinctKeySet::DistinctKeySet(size_t max_keys) {
  size_t size = 16;
  while (size < 4 * max_keys) size <<= 1;
  keys_.assign(size, 0);
  stamp_.assign(size, 0);
  full_mask_ = mask_ = size - 1;
}

bool DistinctKeySet::Insert(Key key) {
  size_t slot = (key * 0x9e3779b97f4a7c15ULL >> 20) & mask_;
  while (stamp_[slot] == generation_) {
    if (keys_[slot] == key) return false;
    slot = (slot + 1) & mask_;
  }
  stamp_[slot] = generation_;
  keys_[slot] = key;
  return true;
}

uint64_t RecordsInPartition(uint64_t records, uint32_t partitions, PartitionId partition) {
  if (partition >= records) return 0;
  return (records - partition + partitions - 1) / partitions;
}

KeyPicker::KeyPicker(uint64_t records, uint32_t partitions, const KeyDistribution& distribution,
                     size_t max_keys_per_txn)
    : records_(records),
      partitions_(partitions),
      distribution_(distribution),
      chosen_(max_keys_per_txn) {
  for (uint32_t p = 0; p < partitions; ++p) {
    per_partition_.push_back(RecordsInPartition(records, partitions, p));
  }
  if (distribution_.kind == KeyDistribution::kZipfian) {
    // Partition sizes differ by at most one; the zeta sum is costly, so build
    // one sampler per distinct size.
    for (uint32_t p = 0; p < partitions; ++p) {
      if (p > 0 && per_partition_[p] == per_partition_[p - 1]) {
        zipf_.push_back(nullptr);
        continue;
      }
      zipf_.push_back(
          std::make_unique<ZipfianSampler>(per_partition_[p], distribution_.zipfian_constant));
    }
  }
}

void KeyPicker::Pick(PartitionId partition, uint32_t count, SplitMix64& rng,
                     std::vector<Key>* out) {
  const uint64_t n = per_partition_[partition];
  auto key_of = [&](uint64_t rank) { return rank * partitions_ + partition; };
  uint32_t picked = 0;
  if (distribution_.kind == KeyDistribution::kHot && count > 0) {
    Key hot = key_of(rng.Uniform(distribution_.hot_records));
    if (chosen_.Insert(hot)) {  // else already picked (PickAmongFirst)
      out->push_back(hot);
      ++picked;
    }
  }
  const ZipfianSampler* zipf = nullptr;
  if (distribution_.kind == KeyDistribution::kZipfian) {
    for (int p = static_cast<int>(partition); p >= 0 && !zipf; --p) zipf = zipf_[p].get();
  }
  while (picked < count) {
    uint64_t rank;
    switch (distribution_.kind) {
      case KeyDistribution::kHot:
        rank = distribution_.hot_records + rng.Uniform(n - distribution_.hot_records);
        break;
      case KeyDistribution::kZipfian:
        rank = zipf->Sample(rng);
        break;
      default:
        rank = rng.Uniform(n);
    }
    Key key = key_of(rank);
    if (!chosen_.Insert(key)) continue;
    out->push_back(key);
    ++picked;
  }
}

void KeyPicker::PickAmongFirst(PartitionId partition, uint64_t ranks, uint32_t count,
                               SplitMix64& rng, std::vector<Key>* out) {
  ranks = std::min(ranks, per_partition_[partition]);
  count = static_cast<uint32_t>(std::min<uint64_t>(count, ranks));
  for (uint32_t picked = 0; picked < count;) {
    const Key key = rng.Uniform(ranks) * partitions_ + partition;
    if (!chosen_.Insert(key)) continue;
    out->push_back(key);
    ++picked;
  }
}

}  // namespace paxflow
