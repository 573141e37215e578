// Splits an argument line into words the way a POSIX shell does, without
// expanding anything: how a Megatron-LM argument line given as one string
// (gRPC MegatronArgs.args, a benchmark's line) becomes argv; and the
// reverse, words joined into a line a shell splits back into them (how
// written arguments are shown).
#ifndef OOMGUARD_JOBSPEC_SHELL_WORDS_H_
#define OOMGUARD_JOBSPEC_SHELL_WORDS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace oomguard {

// Splits an argument line the way a POSIX shell splits words, without
// expanding anything: single and double quotes, backslash escapes and
// backslash-newline continuations. Never executes or substitutes
// ($(...), backticks and ${...} stay literal text). InvalidArgument on an
// unterminated quote or a line over 1 MiB.
absl::StatusOr<std::vector<std::string>> SplitArgumentLine(std::string_view line);

// `words` joined by spaces, each that a shell would not keep as one word
// as it is (empty, or with a character other than letters, digits and
// `_-.,:/=+@%`) in single quotes: SplitArgumentLine gives `words` back.
std::string JoinShellWords(const std::vector<std::string>& words);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_SHELL_WORDS_H_
