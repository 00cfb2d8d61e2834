#include "common/paths.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace paxflow {

std::string Absolute(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) ? resolved : path;
}

std::string SelfDirectory() {
  char path[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return ".";
  path[n] = '\0';
  std::string self(path);
  return self.substr(0, self.rfind('/'));
}

bool MakeDirectories(const std::string& dir) {
  // Component by component, without a shell: any character may appear in
  // a path, and errno stays meaningful for the caller's message.
  std::string partial;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if ((i == dir.size() || dir[i] == '/') && !partial.empty() &&
        mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return false;
    }
    if (i < dir.size()) partial.push_back(dir[i]);
  }
  struct stat info;
  return stat(dir.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace paxflow
