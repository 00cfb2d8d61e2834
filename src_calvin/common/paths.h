// File-system paths for the launchers' main()s (paxflow-cluster,
// paxflow-bench): absolute paths to hand to processes that run elsewhere,
// where this binary lives (its sibling binaries), and directory creation.
// Owns: no state. Threads: any.
#pragma once
#include <string>

namespace paxflow {

// `path` resolved to an absolute one (realpath); `path` as is if it does
// not exist.
std::string Absolute(const std::string& path);

// The directory of the running executable; "." if it cannot be told.
std::string SelfDirectory();

// `mkdir -p dir` (no shell); false, with errno set, if that failed.
bool MakeDirectories(const std::string& dir);

}  // namespace paxflow
