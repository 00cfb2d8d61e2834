#include "applications/ycsb.h"

#include <cstring>

#include "applications/key_picker.h"
#include "common/hash.h"
#include "common/random.h"

namespace paxflow {
namespace {

uint64_t FirstWord(std::string_view value) {
  uint64_t word = 0;
  if (!value.empty()) std::memcpy(&word, value.data(), value.size() < 8 ? value.size() : 8);
  return word;
}

// A value's share of a txn's checksum. Every write stamps a value's first
// word with a hash of the writing txn, so first word, last word and size
// pin down which write a read saw; hashing all bytes would cost more than
// the read itself.
uint64_t ValueFold(std::string_view value) {
  uint64_t last = 0;
  if (value.size() >= 8) std::memcpy(&last, value.data() + value.size() - 8, 8);
  return Mix64(FirstWord(value) ^ (last * 0x9e3779b97f4a7c15ULL) ^ value.size());
}

class YcsbGenerator : public TxnGenerator {
 public:
  YcsbGenerator(const WorkloadParams& params, PartitionId partition, uint32_t partitions,
                uint64_t seed)
      : params_(params),
        partition_(partition),
        partitions_(partitions),
        rng_(seed),
        picker_(params.records, partitions, Distribution(params),
                std::max(params.ops_per_ro_txn, params.ops_per_rw_txn)) {
    keys_.reserve(std::max(params.ops_per_ro_txn, params.ops_per_rw_txn));
  }

  void Next(Txn* txn) override {
    const bool read_only = rng_.UnitDouble() < params_.ro_fraction;
    const uint32_t ops = read_only ? params_.ops_per_ro_txn : params_.ops_per_rw_txn;
    keys_.clear();
    picker_.StartTxn();
    const bool multi = partitions_ > 1 && ops > 1 &&
                       rng_.UnitDouble() * 100.0 < params_.multi_partition_pct;
    if (multi) {
      PartitionId other =
          (partition_ + 1 + static_cast<PartitionId>(rng_.Uniform(partitions_ - 1))) %
          partitions_;
      picker_.Pick(partition_, ops - ops / 2, rng_, &keys_);
      picker_.Pick(other, ops / 2, rng_, &keys_);
    } else {
      picker_.Pick(partition_, ops, rng_, &keys_);
    }
    if (read_only) {
      txn->set_procedure(YcsbApplication::kReadOnly);
      txn->mutable_read_set()->Add(keys_.begin(), keys_.end());
      return;
    }
    txn->set_procedure(YcsbApplication::kReadModifyWrite);
    for (Key key : keys_) {
      if (params_.read_proportion > 0 && rng_.UnitDouble() < params_.read_proportion) {
        txn->add_read_set(key);
      } else {
        txn->add_read_write_set(key);
      }
    }
  }

 private:
  static KeyDistribution Distribution(const WorkloadParams& params) {
    KeyDistribution d;
    d.kind = params.distribution == "hot"       ? KeyDistribution::kHot
             : params.distribution == "zipfian" ? KeyDistribution::kZipfian
                                                : KeyDistribution::kUniform;
    d.hot_records = params.hot_records;
    d.zipfian_constant = params.zipfian_constant;
    return d;
  }

  const WorkloadParams params_;  // a copy: generators may outlive their application
  PartitionId partition_;
  uint32_t partitions_;
  SplitMix64 rng_;
  KeyPicker picker_;
  std::vector<Key> keys_;
};

}  // namespace

void YcsbApplication::InitialValue(Key key, uint32_t size, std::string* out) {
  out->resize(size);
  SplitMix64 rng(key * 0x2545f4914f6cdd1dULL + 7);
  for (uint32_t i = 0; i < size; i += 8) {
    uint64_t word = rng.Next();
    std::memcpy(out->data() + i, &word, size - i < 8 ? size - i : 8);
  }
}

void YcsbApplication::Load(PartitionId partition, uint32_t partitions, Loader* loader) const {
  std::string value;
  for (Key key = partition; key < params_.records; key += partitions) {
    InitialValue(key, params_.value_size, &value);
    loader->Put(key, value);
  }
}

void YcsbApplication::Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
                              TxnOutcome* outcome) const {
  // The checksum folds the values read in position order, so it names the
  // exact snapshot a txn saw; tests compare it against a serial execution.
  uint64_t checksum = 0;
  const size_t plain_reads = static_cast<size_t>(txn.read_set_size());
  for (size_t i = 0; i < plain_reads; ++i) {
    checksum = Mix64(checksum ^ (reads.Found(i) ? ValueFold(reads.Get(i)) : 0));
  }
  for (int j = 0; j < txn.read_write_set_size(); ++j) {
    const size_t position = plain_reads + j;
    std::string_view old = reads.Found(position) ? reads.Get(position) : std::string_view();
    checksum = Mix64(checksum ^ ValueFold(old));
    // New value: the old one with its first word re-hashed with the txn id,
    // so the final state depends on the order writers ran in.
    const size_t size = old.empty() ? params_.value_size : old.size();
    char* out = writes->PutUninitialized(txn.read_write_set(j), size);
    if (!old.empty()) std::memcpy(out, old.data(), size);
    else std::memset(out, 0, size);
    uint64_t stamp = Mix64(FirstWord(old) ^ txn.id());
    std::memcpy(out, &stamp, size < 8 ? size : 8);
  }
  outcome->checksum = checksum;
}

std::unique_ptr<TxnGenerator> YcsbApplication::NewGenerator(PartitionId partition,
                                                            uint32_t partitions,
                                                            uint64_t seed) const {
  return std::make_unique<YcsbGenerator>(params_, partition, partitions, seed);
}

std::vector<std::pair<std::string, uint32_t>> YcsbApplication::Procedures() const {
  return {{"ycsb-read", kReadOnly}, {"ycsb-rmw", kReadModifyWrite}};
}

std::string YcsbApplication::CheckClientTxn(const Txn& txn) const {
  if (txn.write_set_size() > 0) return "ycsb procedures take no blind writes (write_set)";
  if (txn.read_set_size() + txn.read_write_set_size() == 0) return "no keys";
  if (txn.procedure() == kReadOnly && txn.read_write_set_size() > 0) {
    return "ycsb-read only reads (read_set)";
  }
  return "";
}

const char* YcsbApplication::ProcedureName(uint32_t procedure) const {
  switch (procedure) {
    case kReadOnly: return "ycsb-read";
    case kReadModifyWrite: return "ycsb-rmw";
    default: return "unknown";
  }
}

}  // namespace paxflow
