// Reading a Kubernetes object's JSON by field: a node is a value (or its
// absence) with its path (`spec.containers[0].resources`), so every error
// names the field and the value, e.g. `spec.replicas = -1: must be in ...`.
// Absent and null fields read as absent; a field of another type is
// InvalidArgument.
#ifndef OOMGUARD_WEBHOOK_JSON_NODE_H_
#define OOMGUARD_WEBHOOK_JSON_NODE_H_

#include <cstddef>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard::webhook {

// A JSON value (nullptr: absent or null), its path, for messages, and its
// JSON Pointer (RFC 6901: "/spec/containers/0"), for a JSONPatch (RFC 6902).
struct JsonNode {
  const nlohmann::json* value = nullptr;
  std::string path;
  std::string pointer;  // "" for the document itself.

  explicit operator bool() const { return value != nullptr; }

  // The member `key` of an object (absent when this is not an object);
  // its path is `path.key`, or `path["key"]` for keys that are not plain
  // identifiers; its pointer `pointer/key` with '~' and '/' escaped.
  JsonNode Get(absl::string_view key) const;

  // The element `i` of a list (absent when this is not a list; `i` must be
  // within a list).
  JsonNode At(size_t i) const;
};

// `value` in JSON, cut short for messages.
std::string ShowJson(const nlohmann::json& value);

// InvalidArgument "PATH = VALUE: what", for a present node.
absl::Status Malformed(const JsonNode& node, absl::string_view what);

// Type checks: absent is fine (the callers decide), a value of another
// type is InvalidArgument.
absl::Status ExpectObject(const JsonNode& node);
absl::Status ExpectArray(const JsonNode& node);

// A string; nullopt when absent.
absl::StatusOr<std::optional<std::string>> ReadString(const JsonNode& node);

// A list of strings; empty when absent.
absl::StatusOr<std::vector<std::string>> ReadStringList(const JsonNode& node);

// A JSON integer >= 0 (parsed text holds them unsigned, built values
// signed); nullopt for anything else.
std::optional<uint64_t> WholeNumber(const nlohmann::json& value);

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_JSON_NODE_H_
