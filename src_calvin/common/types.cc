#include "common/types.h"

namespace paxflow {

std::string TxnIdString(TxnId id) {
  return "e" + std::to_string(TxnEpoch(id)) + ".s" + std::to_string(TxnSequencer(id)) +
         ".p" + std::to_string(TxnPosition(id));
}

const char* ModeName(Mode mode) { return mode == Mode::kCalvin ? "calvin" : "paxflow"; }

bool ParseMode(const std::string& text, Mode* mode) {
  if (text == "calvin") {
    *mode = Mode::kCalvin;
  } else if (text == "paxflow") {
    *mode = Mode::kPaxflow;
  } else {
    return false;
  }
  return true;
}

const char* LtxAbortReasonName(int reason) {
  switch (reason) {
    case kAbortBusy: return "busy";
    case kAbortTimeout: return "timeout";
    case kAbortWriteArea: return "write-area";
    case kAbortProcedure: return "procedure";
    case kAbortCascade: return "cascade";
    default: return "restart";
  }
}

}  // namespace paxflow
