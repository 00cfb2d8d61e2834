#include "applications/bom.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "common/hash.h"
#include "common/key_area.h"
#include "common/random.h"

namespace paxflow {

BomLayout::BomLayout(const WorkloadParams& params)
    : levels_(params.bom_levels), fanout_(params.bom_fanout), products_(params.bom_products) {
  uint64_t size = 1, base = 0;
  for (uint32_t l = 0; l < levels_; ++l, size *= fanout_) {
    size_.push_back(size);
    base_.push_back(base);
    base += size;
  }
  base_.push_back(base);
}

bool BomLayout::DecodePart(Key key, uint64_t* product, uint32_t* level, uint64_t* index) const {
  const uint64_t local = key / products_;
  if (local >= base_[levels_]) return false;
  *product = key % products_;
  uint32_t l = 0;
  while (base_[l + 1] <= local) ++l;
  *level = l;
  *index = local - base_[l];
  return true;
}

uint64_t BomLayout::Word(std::string_view value, uint32_t i) {
  uint64_t word = 0;
  if (value.size() >= 8 * (i + 1)) std::memcpy(&word, value.data() + 8 * i, 8);
  return word;
}

void BomLayout::SetWord(std::string* value, uint32_t i, uint64_t word) {
  if (value->size() < 8 * (i + 1)) value->resize(8 * (i + 1), '\0');
  std::memcpy(value->data() + 8 * i, &word, 8);
}

std::string BomLayout::InitialPart(uint64_t product, uint32_t level, uint64_t index) const {
  std::string value(value_size(), '\0');
  const Key key = PartKey(product, level, index);
  const bool leaf = level + 1 == levels_;
  SetWord(&value, 0, 1 + Mix64(key + 1) % (leaf ? 100 : 10));
  if (!leaf) {
    for (uint32_t j = 0; j < fanout_; ++j) {
      SetWord(&value, 1 + j, PartKey(product, level + 1, index * fanout_ + j));
    }
  }
  return value;
}

namespace {

class BomGenerator : public TxnGenerator {
 public:
  BomGenerator(const WorkloadParams& params, PartitionId partition, uint32_t partitions,
               uint64_t seed)
      : params_(params), layout_(params), partition_(partition), partitions_(partitions),
        rng_(seed) {}

  void Next(Txn* txn) override {
    // The products of this partition: partition, partition + partitions, ...
    const uint64_t own = layout_.products() / partitions_;
    if (params_.ltx_fraction > 0 && rng_.UnitDouble() < params_.ltx_fraction) {
      const uint64_t product = partition_ + rng_.Uniform(own) * partitions_;
      txn->set_txn_class(LTX);
      txn->set_procedure(BomApplication::kRollup);
      txn->set_args(BomApplication::RollupArgs(layout_.PartKey(product, 0, 0)));
      LtxRecord* ltx = txn->mutable_ltx();
      ltx->set_kind(LTX_BEGIN);
      // Its write area: the product's roll-up keys. Its reads are not
      // declared (paxflow reads its snapshot); calvin mode's generator adds
      // them from a reconnaissance.
      // Roll-up keys of one product are `products` apart: one range each,
      // in level order (the procedure writes them in that order).
      for (uint32_t l = 0; l < layout_.levels(); ++l) {
        KeyRange* one = ltx->add_write_area();
        one->set_lo(layout_.RollupKey(product, l));
        one->set_hi(one->lo());
      }
      return;
    }
    // A short txn: ops_per_rw_txn distinct parts of this partition, each
    // re-linked (one child pointer, to any part of the next level here) or,
    // for a leaf, given a new cost.
    txn->set_procedure(BomApplication::kUpdate);
    keys_.clear();
    changes_.clear();
    const uint64_t parts = layout_.tree_parts() * own;
    while (keys_.size() < params_.ops_per_rw_txn) {
      const uint64_t pick = rng_.Uniform(parts);
      const uint64_t product = partition_ + (pick / layout_.tree_parts()) * partitions_;
      uint64_t local = pick % layout_.tree_parts();
      uint32_t level = 0;
      while (local >= layout_.level_size(level)) local -= layout_.level_size(level++);
      const Key key = layout_.PartKey(product, level, local);
      if (std::find(keys_.begin(), keys_.end(), key) != keys_.end()) continue;
      keys_.push_back(key);
      if (level + 1 == layout_.levels()) {
        changes_.emplace_back(BomApplication::kSetCost, 1 + rng_.Uniform(100));
      } else {
        const uint64_t slot = rng_.Uniform(layout_.fanout());
        const uint64_t to = partition_ + rng_.Uniform(own) * partitions_;
        const uint64_t child = rng_.Uniform(layout_.level_size(level + 1));
        changes_.emplace_back(slot, layout_.PartKey(to, level + 1, child));
      }
    }
    txn->mutable_read_write_set()->Add(keys_.begin(), keys_.end());
    txn->set_args(BomApplication::UpdateArgs(changes_));
  }

 private:
  const WorkloadParams params_;
  const BomLayout layout_;
  PartitionId partition_;
  uint32_t partitions_;
  SplitMix64 rng_;
  std::vector<Key> keys_;
  std::vector<std::pair<uint64_t, uint64_t>> changes_;
};

}  // namespace

std::string BomApplication::RollupArgs(Key root) {
  return std::string(reinterpret_cast<const char*>(&root), 8);
}

std::string BomApplication::UpdateArgs(
    const std::vector<std::pair<uint64_t, uint64_t>>& changes) {
  std::string args;
  for (const auto& [slot, word] : changes) {
    args.append(reinterpret_cast<const char*>(&slot), 8);
    args.append(reinterpret_cast<const char*>(&word), 8);
  }
  return args;
}

uint64_t BomApplication::DenseKeys() const { return BomLayout(params_).dense_keys(); }

void BomApplication::Load(PartitionId partition, uint32_t partitions, Loader* loader) const {
  const BomLayout layout(params_);
  const std::string zero(8, '\0');
  for (uint64_t product = partition; product < layout.products(); product += partitions) {
    for (uint32_t level = 0; level < layout.levels(); ++level) {
      for (uint64_t i = 0; i < layout.level_size(level); ++i) {
        loader->Put(layout.PartKey(product, level, i), layout.InitialPart(product, level, i));
      }
    }
    for (uint32_t level = 0; level < layout.levels(); ++level) {
      loader->Put(layout.RollupKey(product, level), zero);
    }
  }
}

void BomApplication::Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
                             TxnOutcome* outcome) const {
  // bom-update (a rollup run short goes through ExecuteLong, never here).
  const std::string& args = txn.args();
  if (txn.procedure() != kUpdate ||
      args.size() != 16 * static_cast<size_t>(txn.read_write_set_size()) ||
      txn.read_set_size() > 0) {
    outcome->committed = false;
    outcome->detail = "malformed bom-update";
    return;
  }
  uint64_t checksum = 0;
  std::string value;
  for (int i = 0; i < txn.read_write_set_size(); ++i) {
    uint64_t slot, word;
    std::memcpy(&slot, args.data() + 16 * i, 8);
    std::memcpy(&word, args.data() + 16 * i + 8, 8);
    value.assign(reads.Found(i) ? reads.Get(i) : std::string_view());
    checksum = Mix64(checksum ^ HashBytes(value));
    if (value.size() < 8u * (1 + params_.bom_fanout)) value.resize(8u * (1 + params_.bom_fanout), '\0');
    if (slot == kSetCost) {
      BomLayout::SetWord(&value, 0, word);
    } else if (slot < params_.bom_fanout) {
      BomLayout::SetWord(&value, 1 + static_cast<uint32_t>(slot), word);
    }
    writes->Put(txn.read_write_set(i), value);
  }
  outcome->checksum = checksum;
}

void BomApplication::ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                                 LtxRound* out) const {
  if (txn.procedure() != kRollup) {
    Application::ExecuteLong(txn, round, reads, out);
    return;
  }
  if (txn.args().size() != 8) {
    out->abort = true;
    out->reason = "bom-rollup takes its product's root key (8 bytes of args)";
    return;
  }
  Key root;
  std::memcpy(&root, txn.args().data(), 8);
  const uint32_t levels = params_.bom_levels;
  // Walk again from the root over what earlier rounds read: level l's parts
  // with how many paths reach each (a DAG may share parts), in key order.
  // Round r asks for level r, named by the values of level r - 1. Sorted
  // vectors rather than a map: the leaf level has fanout^(levels-1) parts,
  // and this walk runs once per round.
  using Paths = std::vector<std::pair<Key, uint64_t>>;
  Paths level = {{root, 1}};
  Paths next;
  uint64_t checksum = 0, parts = 0;
  std::vector<uint64_t> subtotal(levels, 0);
  for (uint32_t l = 0; l < levels; ++l) {
    if (l == round) {
      out->reads.reserve(out->reads.size() + level.size());
      for (const auto& [key, paths] : level) out->reads.push_back(key);
      return;
    }
    next.clear();
    if (l + 1 < levels) next.reserve(level.size() * params_.bom_fanout);
    for (const auto& [key, paths] : level) {
      bool found = false;
      std::string_view value;
      reads.Get(key, &found, &value);
      checksum = Mix64(checksum ^ key ^ (found ? HashBytes(value) : 0));
      ++parts;
      if (!found) continue;  // a dangling pointer: a part of no cost
      subtotal[l] += paths * BomLayout::Word(value, 0);
      if (l + 1 == levels) continue;
      for (uint32_t j = 0; j < params_.bom_fanout; ++j) {
        next.emplace_back(BomLayout::Word(value, 1 + j), paths);
      }
    }
    // Each child once, its paths summed.
    std::sort(next.begin(), next.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t merged = 0;
    for (size_t i = 0; i < next.size(); ++i) {
      if (merged > 0 && next[merged - 1].first == next[i].first) {
        next[merged - 1].second += next[i].second;
      } else {
        next[merged++] = next[i];
      }
    }
    next.resize(merged);
    level.swap(next);
  }
  // Every level read: the roll-up, one key per level (the write area's keys,
  // in order), each the level's cost summed over every path to it.
  uint32_t l = 0;
  for (const KeyRange& range : txn.ltx().write_area()) {
    for (Key key = range.lo(); key <= range.hi() && l < levels; ++key, ++l) {
      out->writes.Put(key, std::string(reinterpret_cast<const char*>(&subtotal[l]), 8));
    }
  }
  for (uint64_t total : subtotal) checksum = Mix64(checksum ^ total);
  out->outcome.checksum = checksum;
  out->outcome.detail = "rolled up " + std::to_string(parts) + " parts";
}

std::unique_ptr<TxnGenerator> BomApplication::NewGenerator(PartitionId partition,
                                                           uint32_t partitions,
                                                           uint64_t seed) const {
  return std::make_unique<BomGenerator>(params_, partition, partitions, seed);
}

const char* BomApplication::ProcedureName(uint32_t procedure) const {
  switch (procedure) {
    case kUpdate: return "bom-update";
    case kRollup: return "bom-rollup";
    default: return "unknown";
  }
}

std::vector<std::pair<std::string, uint32_t>> BomApplication::Procedures() const {
  return {{"bom-update", kUpdate}, {"bom-rollup", kRollup}};
}

std::string BomApplication::CheckClientTxn(const Txn& txn) const {
  switch (txn.procedure()) {
    case kUpdate:
      if (txn.read_write_set_size() == 0) return "bom-update needs the parts to change (read_write_set)";
      if (txn.read_set_size() + txn.write_set_size() > 0) {
        return "bom-update takes read_write_set only";
      }
      if (txn.args().size() != 16 * static_cast<size_t>(txn.read_write_set_size())) {
        return "bom-update needs 16 bytes of args per part (slot or cost marker, then value)";
      }
      return "";
    case kRollup:
      if (txn.txn_class() != LTX) return "bom-rollup is a long txn: send it as an LTX request";
      if (txn.args().size() != 8) return "bom-rollup takes its product's root key (8 bytes)";
      if (txn.ltx().write_area_size() == 0) {
        return "bom-rollup needs its roll-up keys (write_area)";
      }
      return "";
    default:
      return "unknown bom procedure " + std::to_string(txn.procedure());
  }
}

}  // namespace paxflow
