// Running a long (LTX lane) procedure to its end where every read it asks
// for can be answered at once: calvin mode, which locks an LTX's declared
// areas and reads them up front, and the tests' serial oracle.
//
// Stateless functions; any thread.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "applications/application.h"
#include "txn.pb.h"

namespace paxflow {

// Answers one round's reads into `reads`; returns why it cannot (empty: ok).
using LtxFetch = std::function<std::string(const std::vector<Key>& keys,
                                           const std::vector<KeyRange>& scans, LtxReads* reads)>;

// Runs `txn`'s rounds until the procedure ends. `last` holds its final
// round (writes, deletes, outcome); on an abort, `abort_reason` says why,
// starting with the reason's name ("procedure: ...").
void RunLongProcedure(const Application& app, const Txn& txn, const LtxFetch& fetch,
                      LtxRound* last, std::string* abort_reason);

// Calvin mode's OLLP reconnaissance (the Calvin paper's answer to
// dependent txns): runs `begin`'s procedure over the values `read` gives
// (a recent state, read outside the order, without locks; false: the key
// has no value) and declares every key it read as `begin`'s read area,
// marking it `recon`. The locked run at its position then checks that it
// read exactly those keys. Returns how many keys it declared.
size_t Reconnoiter(const Application& app, Txn* begin, const ReconRead& read);

// Calvin mode: `expanded` is `begin` with every key of its declared areas
// in read_set (read area) and read_write_set (write area), all locked and
// read into `reads`. Runs the procedure over them: a read outside the
// declared areas or a write (or delete) outside the write area aborts it;
// for a `recon` begin, reading other keys than its declared read area
// aborts it with reason recon (retryable).
// Fills `writes` (a committed LTX's writes and deletes) and `outcome`.
void ExecuteLongLocked(const Application& app, const Txn& begin, const Txn& expanded,
                       const ReadValues& reads, WriteSet* writes, TxnOutcome* outcome);

}  // namespace paxflow
