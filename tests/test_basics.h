// The helpers the in-process engine suites need, and nothing that starts a
// node or a process: temporary directories, small test parameters and case
// names. Kept apart from test_util.h so that the ThreadSanitizer build
// compiles only the engine's folders, not the node, client and network code.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "base/params.h"

namespace paxflow::testing {

// A directory under /tmp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Small, fast parameters for tests: few records, short epochs, no progress lines.
NodeParams TestParams(const std::string& preset, Mode mode, uint64_t run_epochs);

// A parameterized test's name from its parts: joined by '_', with the
// characters GoogleTest does not take in names ('-') made '_'.
std::string CaseName(std::initializer_list<std::string> parts);

}  // namespace paxflow::testing
