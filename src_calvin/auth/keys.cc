#include "auth/keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/curve.h"

namespace paxflow {
namespace {

// The file's one key: its first line that is not blank or a comment.
std::string ReadKeyFile(const std::string& path, const char* what, std::string* key) {
  std::ifstream in(path);
  if (!in) {
    return std::string("cannot read ") + what + " file " + path + ": " + std::strerror(errno) +
           " (make one with: paxflow-cli keygen --out=PREFIX)";
  }
  std::string line;
  while (std::getline(in, line)) {
    const size_t begin = line.find_first_not_of(" \t\r");
    if (begin == std::string::npos || line[begin] == '#') continue;
    const size_t end = line.find_last_not_of(" \t\r");
    *key = line.substr(begin, end - begin + 1);
    if (!IsZ85Key(*key)) {
      return path + " does not hold a " + what + " (40 Z85 characters, as paxflow-cli keygen "
             "writes)";
    }
    return "";
  }
  return path + " is empty: expected a " + what + " (paxflow-cli keygen --out=PREFIX)";
}

std::string WriteFileWithMode(const std::string& path, const std::string& text, mode_t mode,
                              bool exclusive) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC),
                      mode);
  if (fd < 0) {
    return "cannot create " + path + ": " + std::strerror(errno) +
           (errno == EEXIST ? " (a secret key is never overwritten; remove it first)" : "");
  }
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool closed = close(fd) == 0;
  if (!ok || !closed) return "cannot write " + path + ": " + std::strerror(errno);
  return "";
}

}  // namespace

CurveKeyPair GenerateKeyPair(std::string* error) {
  char public_key[41], secret_key[41];
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    *error = std::string("zmq_curve_keypair failed: ") + zmq_strerror(zmq_errno()) +
             " (is libzmq built with CURVE?)";
    return {};
  }
  return {public_key, secret_key};
}

std::string WriteKeyPair(const std::string& prefix, const CurveKeyPair& keys) {
  std::string error = WriteFileWithMode(
      prefix + ".key",
      "# PaxFlow CURVE secret key (keep it on its host only; paxflow-cli keygen)\n" +
          keys.secret_key + "\n",
      0600, true);
  if (!error.empty()) return error;
  return WriteFileWithMode(prefix + ".pub",
                           "# PaxFlow CURVE public key\n" + keys.public_key + "\n", 0644, false);
}

std::string ReadSecretKeyFile(const std::string& path, CurveKeyPair* keys) {
  std::string error = ReadKeyFile(path, "secret key", &keys->secret_key);
  if (!error.empty()) return error;
  struct stat info {};
  if (stat(path.c_str(), &info) == 0 && (info.st_mode & 077) != 0) {
    return "secret key file " + path + " is readable by others (mode " +
           std::to_string(info.st_mode & 0777) + " octal " +
           [&] { std::ostringstream o; o << std::oct << (info.st_mode & 0777); return o.str(); }() +
           "); chmod 600 it";
  }
  char public_key[41];
  if (zmq_curve_public(public_key, keys->secret_key.c_str()) != 0) {
    return "cannot derive the public key of " + path + ": " + zmq_strerror(zmq_errno());
  }
  keys->public_key = public_key;
  return "";
}

std::string ReadPublicKeyFile(const std::string& path, std::string* key) {
  return ReadKeyFile(path, "public key", key);
}

}  // namespace paxflow
