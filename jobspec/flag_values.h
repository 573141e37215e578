// The values of one Megatron-LM flag occurrence and how they are read:
// integers, bounded reals and enum words (argparse `choices`), and how a
// real is written back. Every error is InvalidArgument naming the flag as
// written and the value, quoted, escaped and cut short (the input may be
// hostile).
#ifndef OOMGUARD_JOBSPEC_FLAG_VALUES_H_
#define OOMGUARD_JOBSPEC_FLAG_VALUES_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/quoted_value.h"

namespace oomguard {

// One occurrence of a flag with the values it took.
struct FlagUse {
  std::string display;  // The flag as written, without "=value".
  std::vector<absl::string_view> values;
  // Parallel to `values` (or empty): the variable a value holds the value of,
  // as the hook read it ("$(WANDB_API_KEY)", "$MBS"); empty for a literal
  // value. See ShownWord.
  std::vector<absl::string_view> sources = {};

  absl::string_view value() const { return values.front(); }
};

// How an error message shows an argument `word`: quoted (Quote in
// common/quoted_value.h), or, when it holds a variable's value (`source`,
// MegatronJob.argv_sources), "the value of $(NAME)": a value from the
// environment may be a secret, so it is never echoed. The one rule for
// every message about an argument's value.
std::string ShownWord(absl::string_view word, absl::string_view source);

// "<flag>: expected <expected>, got <value>", the value (one of the flag's
// values or a part of one) shown by ShownWord.
absl::Status BadValue(const FlagUse& flag, absl::string_view expected, absl::string_view value);

// Whether `text` is one or more decimal digits.
bool IsDigits(absl::string_view text);

// The flag's value as an integer in [0, 4294967295]; a larger one is
// refused as out of that range, anything else as not a non-negative integer.
absl::StatusOr<uint32_t> ParseUint32(const FlagUse& flag);
// The same for `word`, one of the flag's values.
absl::StatusOr<uint32_t> ParseUint32(const FlagUse& flag, absl::string_view word);

// An allowed interval for a floating-point flag.
struct Range {
  double low;
  bool low_open;
  double high;
  bool high_open;
  absl::string_view expected;  // For the error message.
};

inline constexpr Range kProbability = {0.0, false, 1.0, true, "a number in [0, 1)"};
inline constexpr Range kFraction = {0.0, false, 1.0, false, "a number in [0, 1]"};
inline constexpr Range kPositive = {0.0, true, std::numeric_limits<double>::max(), false,
                                    "a positive number"};

// The flag's value as a finite number in `range`.
absl::StatusOr<double> ParseReal(const FlagUse& flag, const Range& range);

// `value` as Python writes a float, which ParseReal reads back as the same
// number: the shortest decimal that does, with ".0" when it is whole ("1.0",
// "0.5", "1e-05").
std::string FormatReal(double value);

// One enum word a flag takes (case-sensitive, as argparse `choices`) and the
// enum value it stands for.
struct FlagWord {
  absl::string_view word;
  int value;
};

// The value of `word` (one of the flag's values) in `words`.
absl::StatusOr<int> ParseWord(const FlagUse& flag, absl::string_view word,
                              const std::vector<FlagWord>& words);

// The first of `words` that stands for `value` (a flag lists a value's main
// word first: "rope" before "yarn"); nullopt when none does.
std::optional<absl::string_view> WordFor(const std::vector<FlagWord>& words, int value);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_FLAG_VALUES_H_
