// JSON fields with their paths (see json_node.h).
#include "webhook/json_node.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/status_macros.h"

namespace oomguard::webhook {

using json = nlohmann::json;

JsonNode JsonNode::Get(absl::string_view key) const {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
  JsonNode child{nullptr,
                 plain ? absl::StrCat(path, path.empty() ? "" : ".", key)
                       : absl::StrCat(path, "[\"", key, "\"]"),
                 absl::StrCat(pointer, "/", absl::StrReplaceAll(key, {{"~", "~0"}, {"/", "~1"}}))};
  if (value != nullptr && value->is_object()) {
    auto it = value->find(key);
    if (it != value->end() && !it->is_null()) child.value = &*it;
  }
  return child;
}

JsonNode JsonNode::At(size_t i) const {
  return JsonNode{value != nullptr && value->is_array() ? &(*value)[i] : nullptr,
                  absl::StrCat(path, "[", i, "]"), absl::StrCat(pointer, "/", i)};
}

std::string ShowJson(const json& value) {
  std::string s = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 64) s = absl::StrCat(s.substr(0, 61), "...");
  return s;
}

absl::Status Malformed(const JsonNode& node, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat(node.path, " = ", ShowJson(*node.value), ": ", what));
}

absl::Status ExpectObject(const JsonNode& node) {
  if (node && !node.value->is_object()) return Malformed(node, "expected an object");
  return absl::OkStatus();
}

absl::Status ExpectArray(const JsonNode& node) {
  if (node && !node.value->is_array()) return Malformed(node, "expected a list");
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> ReadString(const JsonNode& node) {
  if (!node) return std::optional<std::string>();
  if (!node.value->is_string()) return Malformed(node, "expected a string");
  return std::optional<std::string>(node.value->get<std::string>());
}

absl::StatusOr<std::vector<std::string>> ReadStringList(const JsonNode& node) {
  std::vector<std::string> words;
  OOMGUARD_RETURN_IF_ERROR(ExpectArray(node));
  if (!node) return words;
  for (size_t i = 0; i < node.value->size(); ++i) {
    OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> word, ReadString(node.At(i)));
    if (!word.has_value()) return Malformed(node.At(i), "expected a string");
    words.push_back(*std::move(word));
  }
  return words;
}

std::optional<uint64_t> WholeNumber(const json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(value.get<int64_t>());
  }
  return std::nullopt;
}

}  // namespace oomguard::webhook
