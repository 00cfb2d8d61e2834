// Protobuf messages as JSON text, through protobuf's JSON mapping: the
// files our tools write for scripts and read back (summaries, reports,
// launcher state). Field names are the .proto names.
#pragma once
#include <google/protobuf/message.h>

#include <string>

namespace paxflow {

// `pretty`: one field per line, for files people read.
std::string MessageToJson(const google::protobuf::Message& message, bool pretty = false);
// Empty on success, else what is wrong with `text`. Fields the message does
// not know are ignored (files written by a newer version still read).
std::string JsonToMessage(const std::string& text, google::protobuf::Message* message);

// A local file's contents; false (and `error` naming the file) if unreadable.
bool ReadTextFile(const std::string& path, std::string* text, std::string* error);
// Writes `text` to `path` through a temporary file and a rename, so readers
// never see half a file. With `sync` (a file recovery relies on), the
// temporary file is fsynced before the rename and the directory after it,
// so that a power loss leaves the old file or the new one, whole. Empty on
// success, else the error naming the file.
std::string WriteFileAtomically(const std::string& path, const std::string& text,
                                bool sync = false);

}  // namespace paxflow
