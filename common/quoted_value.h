// Values taken from a request, a file or a command line, made safe to echo
// in an error message or a note: escaped (quotes, backslashes, control and
// non-ASCII bytes as \xNN) and cut to kMaxEchoedChars characters, so that a
// hostile 10,000-character name cannot make a status message overflow a
// client's gRPC metadata limit (RESOURCE_EXHAUSTED instead of the error).
#ifndef OOMGUARD_COMMON_QUOTED_VALUE_H_
#define OOMGUARD_COMMON_QUOTED_VALUE_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace oomguard {

// How many characters of a value an error message shows.
inline constexpr size_t kMaxEchoedChars = 80;

// `text` escaped and cut to kMaxEchoedChars characters, "..." appended when
// cut. Escapes '"', '\\' and `quote`.
inline std::string EscapedValue(absl::string_view text, char quote = '"') {
  constexpr char kHex[] = "0123456789abcdef";
  std::string escaped;
  for (const char c : text.substr(0, kMaxEchoedChars)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\' || c == quote) {
      escaped.push_back('\\');
      escaped.push_back(c);
    } else if (byte < 0x20 || byte >= 0x7f) {
      escaped.append({'\\', 'x', kHex[byte >> 4], kHex[byte & 0xf]});
    } else {
      escaped.push_back(c);
    }
  }
  if (text.size() > kMaxEchoedChars) escaped.append("...");
  return escaped;
}

// EscapedValue(text) between `quote` marks: "value" or 'value'.
inline std::string Quote(absl::string_view text, char quote = '"') {
  return quote + EscapedValue(text, quote) + quote;
}

}  // namespace oomguard

#endif  // OOMGUARD_COMMON_QUOTED_VALUE_H_
