// A small JSON reader and string escaper, enough for our own summaries,
// client txn files and results. Parsing is bounded (depth, size) so that
// hostile input gets an error, not a crash.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace paxflow {

struct JsonValue {
  enum Type { kNull, kBool, kNumber, kString, kArray, kObject } type = kNull;
  bool boolean = false;
  double number = 0;
  std::string text;  // kString; for kNumber, the literal as written
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  const JsonValue* Find(const std::string& key) const;
  double NumberOr(const std::string& key, double fallback) const;
  std::string StringOr(const std::string& key, const std::string& fallback) const;
};

// Empty on success, else "offset N: problem".
std::string ParseJson(const std::string& text, JsonValue* out);
std::string JsonEscape(const std::string& text);  // with the quotes

}  // namespace paxflow
