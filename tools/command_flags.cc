#include "tools/command_flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace oomguard {

bool IsFlag(const std::string& a, absl::string_view name) {
  return a == name || absl::StartsWith(a, absl::StrCat(name, "="));
}

bool TakeFlagValue(const std::vector<std::string>& args, size_t& i, absl::string_view name,
                   std::string& value, std::string& err) {
  const std::string& a = args[i];
  if (absl::StartsWith(a, absl::StrCat(name, "="))) {
    value = a.substr(name.size() + 1);
    return true;
  }
  if (i + 1 >= args.size()) {
    err = absl::StrCat(name, ": missing value");
    return false;
  }
  value = args[++i];
  return true;
}

}  // namespace oomguard
