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

int LtxAbortReasonOf(const std::string& text) {
  for (int code = 0; code < kLtxAbortReasons; ++code) {
    const std::string name = LtxAbortReasonName(code);
    if (text.compare(0, name.size(), name) == 0 &&
        (text.size() == name.size() || text[name.size()] == ':')) {
      return code;
    }
  }
  return kAbortProcedure;
}

const char* LtxAbortReasonName(int reason) {
  switch (reason) {
    case kAbortBusy: return "busy";
    case kAbortTimeout: return "timeout";
    case kAbortWriteArea: return "write-area";
    case kAbortProcedure: return "procedure";
    case kAbortRestart: return "restart";
    case kAbortGuard: return "guard";
    case kAbortRecon: return "recon";
    case kAbortCascade: return "cascade";
    case kAbortFailover: return "failover";
    default: return "unknown";
  }
}

}  // namespace paxflow
