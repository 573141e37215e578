#include "jobspec/flag_values.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oomguard {

std::string Quote(absl::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string quoted = "\"";
  for (const char c : text.substr(0, kMaxShown)) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      absl::StrAppend(&quoted, "\\", absl::string_view(&c, 1));
    } else if (byte < 0x20 || byte >= 0x7f) {
      absl::StrAppend(&quoted, "\\x", absl::Hex(byte, absl::kZeroPad2));
    } else {
      quoted.push_back(c);
    }
  }
  if (text.size() > kMaxShown) quoted.append("...");
  quoted.push_back('"');
  return quoted;
}

absl::Status BadValue(const FlagUse& flag, absl::string_view expected, absl::string_view value) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag.display, ": expected ", expected, ", got ", Quote(value)));
}

bool IsDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

absl::StatusOr<uint32_t> ParseUint32(const FlagUse& flag) {
  uint32_t out = 0;
  if (!IsDigits(flag.value()) || !absl::SimpleAtoi(flag.value(), &out)) {
    return BadValue(flag, "a non-negative integer", flag.value());
  }
  return out;
}

absl::StatusOr<double> ParseReal(const FlagUse& flag, const Range& range) {
  double out = 0;
  const bool in_range = absl::SimpleAtod(flag.value(), &out) && std::isfinite(out) &&
                        (range.low_open ? out > range.low : out >= range.low) &&
                        (range.high_open ? out < range.high : out <= range.high);
  if (!in_range) return BadValue(flag, range.expected, flag.value());
  return out;
}

absl::StatusOr<int> ParseWord(const FlagUse& flag, absl::string_view word,
                              const std::vector<FlagWord>& words) {
  for (const FlagWord& entry : words) {
    if (word == entry.word) return entry.value;
  }
  std::vector<absl::string_view> names;
  for (const FlagWord& entry : words) names.push_back(entry.word);
  return BadValue(flag, absl::StrCat("one of ", absl::StrJoin(names, "|")), word);
}

}  // namespace oomguard
