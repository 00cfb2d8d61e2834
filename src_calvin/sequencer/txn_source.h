// Where a sequencer's txns come from: the embedded generator here, real
// clients later. Each source is polled by its sequencer's thread only.
#pragma once
#include <cstddef>
#include <cstdint>

#include "txn.pb.h"

namespace paxflow {

class TxnSource {
 public:
  virtual ~TxnSource() = default;
  // Appends at most `max` txns to `batch` (procedure, key sets, args,
  // submit time, client fields); the sequencer assigns ids and classes.
  virtual size_t Fill(size_t max, int64_t now_us, Batch* batch) = 0;
};

}  // namespace paxflow
