// Bill of materials: the LTX lane's dependent-read workload. Each product
// is a part tree of `bom_levels` levels (the product itself is level 0);
// every part above the leaves holds `bom_fanout` child pointers (keys) into
// the next level, and a walk stops at the last level whatever the pointers
// say, so it always ends (a DAG once parts are re-linked: a pointer may go
// to any part of the next level on the same partition). A part's value is
// its cost and its child pointers.
//
// - bom-update (short): for each part of read_write_set, re-link one child
//   pointer (a part above the leaves) or set its cost (a leaf), as args say.
// - bom-rollup (long): walks one product's tree level by level, the keys of
//   each level read from the values of the one above (a dependent txn), and
//   writes the cost roll-up of each level into the product's roll-up keys
//   (its write area, which no short txn touches).
//
// A tree lives on one partition, so that calvin mode's reconnaissance for
// a rollup (OLLP: applications' NeedsRecon) reads it where it is generated.
//
// Immutable after construction; any thread.
#pragma once
#include <string>
#include <vector>

#include "applications/application.h"
#include "applications/workload.h"

namespace paxflow {

// Where parts and roll-ups live, the same for any partition count: product
// g's keys are local * products + g, with local indexes 0.. for its parts,
// level by level (level l holds fanout^l of them), then its `levels`
// roll-up keys. With products a multiple of the partitions, every key of
// a product sits on partition g % partitions.
class BomLayout {
 public:
  explicit BomLayout(const WorkloadParams& params);
  uint32_t levels() const { return levels_; }
  uint32_t fanout() const { return fanout_; }
  uint64_t products() const { return products_; }
  uint64_t level_size(uint32_t level) const { return size_[level]; }  // in one tree
  uint64_t tree_parts() const { return base_[levels_]; }
  uint64_t dense_keys() const { return (base_[levels_] + levels_) * products_; }
  uint32_t value_size() const { return 8 * (1 + fanout_); }

  Key PartKey(uint64_t product, uint32_t level, uint64_t index) const {
    return (base_[level] + index) * products_ + product;
  }
  Key RollupKey(uint64_t product, uint32_t level) const {
    return (base_[levels_] + level) * products_ + product;
  }
  // False if `key` is no part; else its product, level and index.
  bool DecodePart(Key key, uint64_t* product, uint32_t* level, uint64_t* index) const;

  // Part values: word 0 its cost, words 1..fanout its children's keys.
  static uint64_t Word(std::string_view value, uint32_t i);
  static void SetWord(std::string* value, uint32_t i, uint64_t word);
  std::string InitialPart(uint64_t product, uint32_t level, uint64_t index) const;

 private:
  uint32_t levels_, fanout_;
  uint64_t products_;
  std::vector<uint64_t> size_, base_;  // by level; base_[levels_]: the roll-ups
};

class BomApplication : public Application {
 public:
  enum Procedure : uint32_t { kUpdate = 1, kRollup = 2 };

  explicit BomApplication(const WorkloadParams& params) : params_(params) {}
  const char* name() const override { return "bom"; }
  uint64_t DenseKeys() const override;
  void Load(PartitionId partition, uint32_t partitions, Loader* loader) const override;
  void Execute(const Txn& txn, const ReadValues& reads, WriteSet* writes,
               TxnOutcome* outcome) const override;
  std::unique_ptr<TxnGenerator> NewGenerator(PartitionId partition, uint32_t partitions,
                                             uint64_t seed) const override;
  const char* ProcedureName(uint32_t procedure) const override;
  std::vector<std::pair<std::string, uint32_t>> Procedures() const override;
  std::string CheckClientTxn(const Txn& txn) const override;
  bool IsLongProcedure(uint32_t procedure) const override { return procedure == kRollup; }
  bool NeedsRecon(uint32_t procedure) const override { return procedure == kRollup; }
  void ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                   LtxRound* out) const override;

  // A rollup's args: the product's level-0 key, 8 bytes.
  static std::string RollupArgs(Key root);
  // An update's args: two 8-byte words per read_write_set key: kSetCost
  // and the new cost, or a child slot and the key it now points to.
  static constexpr uint64_t kSetCost = ~uint64_t{0};
  static std::string UpdateArgs(const std::vector<std::pair<uint64_t, uint64_t>>& changes);

 private:
  WorkloadParams params_;
};

}  // namespace paxflow
