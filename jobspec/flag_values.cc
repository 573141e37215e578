#include "jobspec/flag_values.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace oomguard {

std::string ShownWord(absl::string_view word, absl::string_view source) {
  if (source.empty()) return Quote(word);
  return absl::StrCat("the value of ", EscapedValue(source), " (not shown)");
}

absl::Status BadValue(const FlagUse& flag, absl::string_view expected, absl::string_view value) {
  // The value the text is (a part of), by where it lies.
  absl::string_view source;
  for (size_t i = 0; i < flag.values.size() && i < flag.sources.size(); ++i) {
    const absl::string_view v = flag.values[i];
    if (value.data() >= v.data() && value.data() + value.size() <= v.data() + v.size()) {
      source = flag.sources[i];
      break;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag.display, ": expected ", expected, ", got ", ShownWord(value, source)));
}

bool IsDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c));
  });
}

absl::StatusOr<uint32_t> ParseUint32(const FlagUse& flag) {
  return ParseUint32(flag, flag.value());
}

absl::StatusOr<uint32_t> ParseUint32(const FlagUse& flag, absl::string_view word) {
  if (!IsDigits(word)) return BadValue(flag, "a non-negative integer", word);
  uint32_t out = 0;
  if (!absl::SimpleAtoi(word, &out)) return BadValue(flag, "an integer in [0, 4294967295]", word);
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

std::string FormatReal(double value) {
  std::string text;
  for (int digits = 1; digits <= 17; ++digits) {
    text = absl::StrFormat("%.*g", digits, value);
    double back = 0;
    if (absl::SimpleAtod(text, &back) && back == value) break;
  }
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
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

std::optional<absl::string_view> WordFor(const std::vector<FlagWord>& words, int value) {
  for (const FlagWord& entry : words) {
    if (entry.value == value) return entry.word;
  }
  return std::nullopt;
}

}  // namespace oomguard
