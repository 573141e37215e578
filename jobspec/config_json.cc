// config.json text to a JSON object: the bounds first (size, emptiness,
// nesting depth, in one linear pass), then nlohmann/json's parser, which is
// iterative and linear.
#include "jobspec/config_json.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/quoted_value.h"

namespace oomguard {
namespace {

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

// The position (counted from 1) of the bracket that opens level
// kMaxConfigDepth + 1 of `text`, or 0 when none does. Brackets inside
// strings do not count. On malformed text the count may be off, but only
// after the point where the parser stops anyway.
size_t FirstTooDeep(std::string_view text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // The escaped character cannot end the string.
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxConfigDepth) return i + 1;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return 0;
}

// An exception's message without its "[json.exception.parse_error.101] "
// prefix.
absl::string_view WithoutExceptionId(const nlohmann::json::exception& error) {
  absl::string_view text = error.what();
  if (const size_t end = text.find("] "); end != absl::string_view::npos) {
    text.remove_prefix(end + 2);
  }
  return text;
}

// The parser's message. The "; last read: '<token>'" a lexer error ends
// with can be the whole input (a long string), so it is dropped: the line
// and column stay.
std::string ParseErrorText(const nlohmann::json::parse_error& error) {
  const absl::string_view text = WithoutExceptionId(error);
  return std::string(text.substr(0, text.find("; last read: ")));
}

}  // namespace

absl::StatusOr<nlohmann::json> ReadConfigJson(std::string_view text) {
  if (text.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "config.json: %d bytes exceeds the limit of %d bytes", text.size(), kMaxConfigBytes));
  }
  // nlohmann/json skips the byte order mark itself (and counts it in its
  // columns); the checks below look past it.
  std::string_view body = text;
  if (body.starts_with(kUtf8ByteOrderMark)) body.remove_prefix(kUtf8ByteOrderMark.size());
  const size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    return absl::InvalidArgumentError("config.json: the file is empty; expected a JSON object");
  }
  if (body[first] != '{') {
    return absl::InvalidArgumentError("config.json: the top level must be a JSON object");
  }
  if (const size_t at = FirstTooDeep(body); at != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("config.json: nesting deeper than %d levels at byte %d", kMaxConfigDepth,
                        at + (text.size() - body.size())));
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& error) {
    return absl::InvalidArgumentError(absl::StrCat("config.json: ", ParseErrorText(error)));
  } catch (const nlohmann::json::exception& error) {
    // A number too large for a double ("number overflow parsing '1e400'").
    return absl::InvalidArgumentError(
        absl::StrCat("config.json: ", EscapedValue(WithoutExceptionId(error))));
  }
}

}  // namespace oomguard
