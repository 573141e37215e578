// The flags of estimate and check (see command_flags.h).
#include "tools/command_flags.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace oomguard {

bool IsFlag(const std::string& a, absl::string_view name) {
  return a == name || absl::StartsWith(a, absl::StrCat(name, "="));
}

absl::StatusOr<std::string> TakeFlagValue(const std::vector<std::string>& args, size_t& i,
                                          absl::string_view name) {
  const std::string& a = args[i];
  if (absl::StartsWith(a, absl::StrCat(name, "="))) return a.substr(name.size() + 1);
  if (i + 1 >= args.size())
    return absl::InvalidArgumentError(absl::StrCat(name, ": missing value"));
  return args[++i];
}

}  // namespace oomguard
