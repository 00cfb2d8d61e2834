#include "applications/ycsb.h"

#include <algorithm>
#include <cstring>

#include "applications/key_picker.h"
#include "applications/summary_words.h"
#include "common/key_area.h"
#include "common/hash.h"
#include "common/random.h"

namespace paxflow {
namespace {

uint64_t FirstWord(std::string_view value) {
  uint64_t word = 0;
  if (!value.empty()) std::memcpy(&word, value.data(), value.size() < 8 ? value.size() : 8);
  return word;
}

// The value a read-modify-write of `old` by txn `id` leaves: the old one
// with its first word re-hashed with the txn id, so the final state
// depends on the order writers ran in.
void Modify(std::string_view old, TxnId id, uint32_t value_size, char* out, size_t size) {
  if (!old.empty()) std::memcpy(out, old.data(), size);
  else std::memset(out, 0, size);
  uint64_t stamp = Mix64(FirstWord(old) ^ id);
  std::memcpy(out, &stamp, size < 8 ? size : 8);
  (void)value_size;
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

// A report's summary of some of its rows (a partition's share, or rows
// gathered in one place): plain sums, so shares add up in any order.
struct ReportShare {
  uint64_t rows = 0, sum = 0, fold = 0;
  void Row(Key key, std::string_view value) {
    ++rows;
    sum += FirstWord(value);
    fold += Mix64(key ^ ValueFold(value));
  }
  void Add(const ReportShare& other) {
    rows += other.rows;
    sum += other.sum;
    fold += other.fold;
  }
  std::string Encode() const {
    SummaryWriter out;
    out.Word(rows);
    out.Word(sum);
    out.Word(fold);
    return out.Take();
  }
  // A share as Encode wrote it (anything else reads as no rows).
  static ReportShare Decode(const std::string& share) {
    ReportShare out;
    SummaryReader in(share);
    in.Word(&out.rows);
    in.Word(&out.sum);
    in.Word(&out.fold);
    return in.ok() ? out : ReportShare{};
  }
};

class YcsbGenerator : public TxnGenerator {
 public:
  YcsbGenerator(const WorkloadParams& params, PartitionId partition, uint32_t partitions,
                uint64_t seed)
      : params_(params),
        partition_(partition),
        partitions_(partitions),
        rng_(seed),
        picker_(params.records, partitions, Distribution(params),
                std::max(params.ops_per_ro_txn, params.ops_per_rw_txn)),
        long_picker_(params.records, partitions, KeyDistribution{KeyDistribution::kUniform},
                     params.ltx_fraction > 0 ? params.ltx_ops : 1) {
    keys_.reserve(std::max(params.ops_per_ro_txn, params.ops_per_rw_txn));
    // WL2 inserts new keys above the loaded ones, each on its generator's
    // partition: key = insert_base_ + r * partitions + partition.
    insert_base_ = (params.records + partitions - 1) / partitions * partitions;
    if (params.long_kind == "report" && params.report_range_writes > 0) {
      reported_ranks_ = RecordsInPartition(ReportLength(), partitions, partition);
    }
  }

  void Next(Txn* txn) override {
    if (params_.ltx_fraction > 0 && rng_.UnitDouble() < params_.ltx_fraction) {
      if (params_.long_kind == "scan") NextScan(txn);
      else if (params_.long_kind == "report") NextReport(txn);
      else NextLong(txn);
      return;
    }
    if (params_.long_kind == "scan" && rng_.UnitDouble() >= params_.ro_fraction) {
      NextInsert(txn);
      return;
    }
    const bool read_only = rng_.UnitDouble() < params_.ro_fraction;
    const uint32_t ops = read_only ? params_.ops_per_ro_txn : params_.ops_per_rw_txn;
    keys_.clear();
    picker_.StartTxn();
    // The report preset's updates of the period the reports read come first.
    if (!read_only && reported_ranks_ > 0) {
      picker_.PickAmongFirst(partition_, reported_ranks_, params_.report_range_writes, rng_,
                             &keys_);
    }
    const size_t in_reported_range = keys_.size();
    const uint32_t rest = ops - static_cast<uint32_t>(in_reported_range);
    const bool multi = partitions_ > 1 && ops > 1 &&
                       rng_.UnitDouble() * 100.0 < params_.multi_partition_pct;
    if (multi) {
      PartitionId other =
          (partition_ + 1 + static_cast<PartitionId>(rng_.Uniform(partitions_ - 1))) %
          partitions_;
      const uint32_t remote = std::min(ops / 2, rest);
      picker_.Pick(partition_, rest - remote, rng_, &keys_);
      picker_.Pick(other, remote, rng_, &keys_);
    } else {
      picker_.Pick(partition_, rest, rng_, &keys_);
    }
    if (read_only) {
      txn->set_procedure(YcsbApplication::kReadOnly);
      txn->mutable_read_set()->Add(keys_.begin(), keys_.end());
      return;
    }
    txn->set_procedure(YcsbApplication::kReadModifyWrite);
    for (size_t i = 0; i < keys_.size(); ++i) {
      const Key key = keys_[i];
      if (i >= in_reported_range && params_.read_proportion > 0 &&
          rng_.UnitDouble() < params_.read_proportion) {
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

  // WL1's long txn: ltx_ops uniform keys, half read, half read-modify-write.
  void NextLong(Txn* txn) {
    keys_.clear();
    long_picker_.StartTxn();
    const uint32_t ops = params_.ltx_ops;
    if (partitions_ > 1 && rng_.UnitDouble() * 100.0 < params_.multi_partition_pct) {
      for (PartitionId p = 0; p < partitions_; ++p) {
        const uint32_t share = ops / partitions_ + (p < ops % partitions_ ? 1 : 0);
        long_picker_.Pick(p, share, rng_, &keys_);
      }
    } else {
      long_picker_.Pick(partition_, ops, rng_, &keys_);
    }
    txn->set_txn_class(LTX);
    txn->set_procedure(YcsbApplication::kLong);
    LtxRecord* ltx = txn->mutable_ltx();
    ltx->set_kind(LTX_BEGIN);
    const size_t reads = keys_.size() / 2;
    std::vector<Key> read_keys(keys_.begin(), keys_.begin() + static_cast<long>(reads));
    std::vector<Key> write_keys(keys_.begin() + static_cast<long>(reads), keys_.end());
    txn->mutable_read_set()->Add(read_keys.begin(), read_keys.end());
    txn->mutable_read_write_set()->Add(write_keys.begin(), write_keys.end());
    // Its write set is known at begin: that is its write area. Its reads
    // are declared too, for calvin mode's locks.
    KeyArea::OfKeys(std::move(write_keys)).AppendTo(ltx->mutable_write_area());
    KeyArea::OfKeys(std::move(read_keys)).AppendTo(ltx->mutable_read_area());
  }

  // WL2's long txn: a read-only scan of scan_length consecutive keys,
  // anywhere in the loaded and the inserted keys.
  void NextScan(Txn* txn) {
    const uint64_t space = insert_base_ + params_.records * partitions_;
    const uint64_t length = std::min<uint64_t>(params_.scan_length, space);
    const Key start = rng_.Uniform(space - length + 1);
    txn->set_txn_class(LTX);
    txn->set_procedure(YcsbApplication::kScan);
    LtxRecord* ltx = txn->mutable_ltx();
    ltx->set_kind(LTX_SCAN);
    KeyRange* range = ltx->add_read_area();
    range->set_lo(start);
    range->set_hi(start + length - 1);
  }

  // The report preset's LTX: reads report_fraction of the loaded keys (a
  // range: every partition holds a share), writes kReportSummaryKeys
  // summary keys of one of kReportSlots slots above the loaded keys. The
  // range is declared (calvin mode read-locks it; paxflow reads it at its
  // snapshot); the summary keys are its write area.
  // With report_range_writes the range is always the first keys (the
  // period the short txns update).
  void NextReport(Txn* txn) {
    const uint64_t length = ReportLength();
    const Key start =
        reported_ranks_ > 0 ? 0 : rng_.Uniform(params_.records - length + 1);
    const uint64_t slot = rng_.Uniform(YcsbApplication::kReportSlots);
    txn->set_txn_class(LTX);
    txn->set_procedure(YcsbApplication::kReport);
    LtxRecord* ltx = txn->mutable_ltx();
    ltx->set_kind(LTX_BEGIN);
    KeyRange* range = ltx->add_read_area();
    range->set_lo(start);
    range->set_hi(start + length - 1);
    KeyRange* summary = ltx->add_write_area();
    summary->set_lo(insert_base_ + slot * YcsbApplication::kReportSummaryKeys);
    summary->set_hi(summary->lo() + YcsbApplication::kReportSummaryKeys - 1);
  }

  uint64_t ReportLength() const {
    return std::max<uint64_t>(
        1, std::min<uint64_t>(params_.records,
                              static_cast<uint64_t>(params_.report_fraction * params_.records)));
  }

  // WL2's short txn: ops_per_rw_txn new keys.
  void NextInsert(Txn* txn) {
    keys_.clear();
    txn->set_procedure(YcsbApplication::kInsert);
    while (keys_.size() < params_.ops_per_rw_txn) {
      const Key key = insert_base_ + rng_.Uniform(params_.records) * partitions_ + partition_;
      if (std::find(keys_.begin(), keys_.end(), key) == keys_.end()) keys_.push_back(key);
    }
    txn->mutable_write_set()->Add(keys_.begin(), keys_.end());
  }

  const WorkloadParams params_;  // a copy: generators may outlive their application
  PartitionId partition_;
  uint32_t partitions_;
  SplitMix64 rng_;
  KeyPicker picker_;
  KeyPicker long_picker_;
  Key insert_base_ = 0;
  // Keys of this partition in the range the reports read, when short txns
  // update it (report_range_writes); else 0.
  uint64_t reported_ranks_ = 0;
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
  if (txn.procedure() == kInsert) {
    // New keys get a value of their own, made from the key and the txn.
    std::string value;
    for (Key key : txn.write_set()) {
      InitialValue(Mix64(key ^ txn.id()), params_.value_size, &value);
      writes->Put(key, value);
    }
    outcome->checksum = Mix64(txn.id() ^ static_cast<uint64_t>(txn.write_set_size()));
    return;
  }
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
    const size_t size = old.empty() ? params_.value_size : old.size();
    Modify(old, txn.id(), params_.value_size, writes->PutUninitialized(txn.read_write_set(j), size),
           size);
  }
  outcome->checksum = checksum;
}

void YcsbApplication::ExecuteLong(const Txn& txn, uint32_t round, const LtxReads& reads,
                                  LtxRound* out) const {
  if (txn.procedure() == kScan) {
    if (round == 0) {
      out->scans.assign(txn.ltx().read_area().begin(), txn.ltx().read_area().end());
      return;
    }
    uint64_t checksum = 0, rows = 0;
    for (size_t s = 0; s < reads.scans(); ++s) {
      for (const auto& [key, value] : reads.Scan(s)) {
        checksum = Mix64(checksum ^ key ^ ValueFold(value));
        ++rows;
      }
    }
    out->outcome.checksum = checksum;
    out->outcome.detail = "scanned " + std::to_string(rows) + " keys";
    return;
  }
  if (txn.procedure() == kReport) {
    if (round == 0) {
      out->scans.assign(txn.ltx().read_area().begin(), txn.ltx().read_area().end());
      return;
    }
    // The summary: rows, a sum of the values' first words and a fold of
    // (key, value) pairs, one value per key of its write area (rows, sum,
    // fold, then the fold re-hashed for any further key). Shares pushed
    // down (paxflow mode) come as summaries; rows gathered here (calvin
    // mode, the oracle, replay) are summarized as one more share: the same
    // computation, and sums, so the result does not depend on the split.
    ReportShare total;
    for (const std::string& share : reads.summaries()) total.Add(ReportShare::Decode(share));
    for (size_t s = 0; s < reads.scans(); ++s) {
      for (const auto& [key, value] : reads.Scan(s)) total.Row(key, value);
    }
    const uint64_t checksum = Mix64(total.fold);
    const uint64_t rows = total.rows;
    uint64_t word[3] = {rows, total.sum, checksum};
    uint32_t index = 0;
    for (const KeyRange& range : txn.ltx().write_area()) {
      for (Key key = range.lo(); key <= range.hi() && index < 1024; ++key, ++index) {
        const uint64_t w = index < 3 ? word[index] : Mix64(checksum + index);
        char* value = out->writes.PutUninitialized(key, 16);
        std::memcpy(value, &w, 8);
        std::memcpy(value + 8, &rows, 8);
      }
    }
    out->outcome.checksum = checksum;
    out->outcome.detail = "reported on " + std::to_string(rows) + " keys";
    return;
  }
  if (txn.procedure() != kLong) {
    Application::ExecuteLong(txn, round, reads, out);  // not a long procedure
    return;
  }
  if (round == 0) {
    out->reads.assign(txn.read_set().begin(), txn.read_set().end());
    out->reads.insert(out->reads.end(), txn.read_write_set().begin(), txn.read_write_set().end());
    return;
  }
  // As a short read-modify-write txn would, over many more keys.
  uint64_t checksum = 0;
  bool found;
  std::string_view value;
  for (Key key : txn.read_set()) {
    const bool read = reads.Get(key, &found, &value) && found;
    checksum = Mix64(checksum ^ (read ? ValueFold(value) : 0));
  }
  for (Key key : txn.read_write_set()) {
    std::string_view old;
    if (reads.Get(key, &found, &value) && found) old = value;
    checksum = Mix64(checksum ^ ValueFold(old));
    const size_t size = old.empty() ? params_.value_size : old.size();
    Modify(old, txn.id(), params_.value_size, out->writes.PutUninitialized(key, size), size);
  }
  out->outcome.checksum = checksum;
}

std::string YcsbApplication::SummarizeScans(const Txn& txn, const ScanVisit& visit,
                                            const ScanMemoUse& memo) const {
  ReportShare share;
  for (size_t s = 0; s < static_cast<size_t>(txn.ltx().read_area_size()); ++s) {
    visit(s, 0, ~Key{0}, [&](Key key, std::string_view value) { share.Row(key, value); });
  }
  return share.Encode();
}

std::unique_ptr<TxnGenerator> YcsbApplication::NewGenerator(PartitionId partition,
                                                            uint32_t partitions,
                                                            uint64_t seed) const {
  return std::make_unique<YcsbGenerator>(params_, partition, partitions, seed);
}

std::vector<std::pair<std::string, uint32_t>> YcsbApplication::Procedures() const {
  return {{"ycsb-read", kReadOnly}, {"ycsb-rmw", kReadModifyWrite}, {"ycsb-ltx", kLong},
          {"ycsb-scan", kScan}, {"ycsb-insert", kInsert}, {"ycsb-report", kReport}};
}

std::string YcsbApplication::CheckClientTxn(const Txn& txn) const {
  switch (txn.procedure()) {
    case kInsert:
      if (txn.write_set_size() == 0) return "ycsb-insert needs the new keys (write_set)";
      if (txn.read_set_size() + txn.read_write_set_size() > 0) return "ycsb-insert only writes";
      return "";
    case kLong:
      if (txn.txn_class() != LTX) return "ycsb-ltx is a long txn: send it as an LTX request";
      if (txn.write_set_size() > 0) return "ycsb-ltx takes read_set and read_write_set only";
      if (txn.read_set_size() + txn.read_write_set_size() == 0) return "no keys";
      return "";
    case kScan:
      if (txn.txn_class() != LTX) return "ycsb-scan is a long txn: send it as an LTX request";
      if (txn.ltx().read_area_size() == 0) return "ycsb-scan needs the ranges to scan (read_area)";
      if (txn.ltx().write_area_size() > 0) return "ycsb-scan only reads (empty write area)";
      return "";
    case kReport:
      if (txn.txn_class() != LTX) return "ycsb-report is a long txn: send it as an LTX request";
      if (txn.ltx().read_area_size() == 0) {
        return "ycsb-report needs the ranges to report on (read_area)";
      }
      if (txn.ltx().write_area_size() == 0) {
        return "ycsb-report needs its summary keys (write_area)";
      }
      return "";
    default:
      break;
  }
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
    case kLong: return "ycsb-ltx";
    case kScan: return "ycsb-scan";
    case kInsert: return "ycsb-insert";
    case kReport: return "ycsb-report";
    default: return "unknown";
  }
}

}  // namespace paxflow
