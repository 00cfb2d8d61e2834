#include "common/proto_json.h"

#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/record_file.h"

namespace paxflow {

std::string MessageToJson(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.add_whitespace = pretty;
  std::string out;
  // Printing a well-formed message cannot fail.
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

std::string JsonToMessage(const std::string& text, google::protobuf::Message* message) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto status = google::protobuf::util::JsonStringToMessage(text, message, options);
  if (status.ok()) return "";
  const std::string problem(status.message());
  return problem.empty() ? "not valid JSON" : problem;
}

bool ReadTextFile(const std::string& path, std::string* text, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *error = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  *text = buffer.str();
  return true;
}

std::string WriteFileAtomically(const std::string& path, const std::string& text, bool sync) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << text;
    if (!file.flush()) return "cannot write " + temporary + ": " + std::strerror(errno);
  }
  if (sync) {
    // Else a power loss after the rename can leave `path` empty or torn.
    std::string error = SyncFile(temporary);
    if (!error.empty()) return error;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return "cannot write " + path + ": " + std::strerror(errno);
  }
  return sync ? SyncDirectory(DirectoryOf(path)) : "";
}

}  // namespace paxflow
