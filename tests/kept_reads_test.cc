// The sequencing node's local read-only txns, kept out of what its
// replicas are sent (node/kept_reads.h): taken out by kind and partition,
// put back at their places, and only by the process that kept them.
#include "node/kept_reads.h"

#include <gtest/gtest.h>

#include <vector>

#include "common/types.h"

namespace paxflow {
namespace {

// Two partitions: even keys on 0, odd keys on 1.
Key OnPartition(PartitionId p, uint64_t i) {
  for (Key key = i * 7;; ++key) {
    if (PartitionOf(key, 2) == p) return key;
  }
}

Txn MakeTxn(TxnId id, TxnClass cls, std::vector<Key> reads, std::vector<Key> writes = {}) {
  Txn txn;
  txn.set_id(id);
  txn.set_txn_class(cls);
  for (Key key : reads) txn.add_read_set(key);
  for (Key key : writes) txn.add_read_write_set(key);
  return txn;
}

std::vector<TxnId> Ids(const Batch& batch) {
  std::vector<TxnId> ids;
  for (const Txn& txn : batch.txns()) ids.push_back(txn.id());
  return ids;
}

// Partition 0's batch: only its local read-only txns are taken; a read of
// another partition's key, a write and an LTX record stay; putting them
// back restores the batch as cut.
TEST(KeptReadsTest, TakesLocalReadsOnlyAndPutsThemBackInPlace) {
  Batch batch;
  *batch.add_txns() = MakeTxn(1, RO, {OnPartition(0, 1), OnPartition(0, 2)});
  *batch.add_txns() = MakeTxn(2, RW, {}, {OnPartition(0, 3)});
  *batch.add_txns() = MakeTxn(3, RO, {OnPartition(0, 4), OnPartition(1, 5)});
  *batch.add_txns() = MakeTxn(4, RO, {OnPartition(0, 6)});
  *batch.add_txns() = MakeTxn(5, LTX, {});
  const Batch cut = batch;
  std::vector<Txn> taken;
  EXPECT_EQ(TakeLocalReads(0, 2, &batch, &taken), 2u);
  EXPECT_EQ(Ids(batch), (std::vector<TxnId>{2, 3, 5}));
  ASSERT_EQ(taken.size(), 2u);
  EXPECT_EQ(taken[0].id(), 1u);
  EXPECT_EQ(taken[1].id(), 4u);
  PutBackById(&taken, &batch);
  EXPECT_TRUE(taken.empty());
  EXPECT_EQ(batch.SerializeAsString(), cut.SerializeAsString());
}

// One partition: every read-only txn is local, and a batch of nothing but
// reads is emptied and filled again.
TEST(KeptReadsTest, OnePartitionKeepsEveryReadOnlyTxn) {
  Batch batch;
  for (TxnId id = 1; id <= 3; ++id) *batch.add_txns() = MakeTxn(id, RO, {id});
  const Batch cut = batch;
  std::vector<Txn> taken;
  EXPECT_EQ(TakeLocalReads(0, 1, &batch, &taken), 3u);
  EXPECT_EQ(batch.txns_size(), 0);
  PutBackById(&taken, &batch);
  EXPECT_EQ(batch.SerializeAsString(), cut.SerializeAsString());
}

// What an epoch kept goes back only into the entry its process proposed
// (another leader's entry of the same epoch gets nothing); a commit forgets
// every earlier epoch's kept txns (entries that never came); a second
// proposal of an epoch replaces the first's; Forget drops everything.
TEST(KeptReadsTest, PutsBackOnlyIntoItsOwnEntryAndForgetsEarlierEpochs) {
  KeptReads kept(0, 1);
  auto cut = [](TxnId first) {
    Batch batch;
    *batch.add_txns() = MakeTxn(first, RO, {1});
    *batch.add_txns() = MakeTxn(first + 1, RW, {}, {2});
    return batch;
  };
  Batch five = cut(50), six = cut(60), seven = cut(70);  // as cut, with their reads
  EXPECT_EQ(kept.Keep(5, &five), 1u);
  EXPECT_EQ(kept.Keep(6, &six), 1u);
  Batch six_again = cut(65);
  EXPECT_EQ(kept.Keep(6, &six_again), 1u);  // proposed again (re-elected)
  EXPECT_EQ(kept.Keep(7, &seven), 1u);
  EXPECT_EQ(kept.epochs(), 3u);

  kept.PutBack(6, /*ours=*/true, &six_again);
  EXPECT_EQ(Ids(six_again), (std::vector<TxnId>{65, 66}));  // the second proposal's
  EXPECT_EQ(kept.epochs(), 1u);  // 5 (never committed) and 6 forgotten, 7 kept

  Batch other = cut(90);  // another leader's entry for epoch 7
  other.mutable_txns()->DeleteSubrange(0, 1);
  kept.PutBack(7, /*ours=*/false, &other);
  EXPECT_EQ(Ids(other), (std::vector<TxnId>{91}));
  EXPECT_EQ(kept.epochs(), 0u);

  Batch eight = cut(80);
  kept.Keep(8, &eight);
  kept.Forget();
  kept.PutBack(8, /*ours=*/true, &eight);
  EXPECT_EQ(Ids(eight), (std::vector<TxnId>{81}));
}

}  // namespace
}  // namespace paxflow
