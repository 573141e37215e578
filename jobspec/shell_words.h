// Splits an argument line into words the way a POSIX shell does, without
// expanding anything: how a Megatron-LM argument line given as one string
// (gRPC MegatronArgs.args, a benchmark's line) becomes argv.
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

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_SHELL_WORDS_H_
