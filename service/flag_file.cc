#include "service/flag_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace oomguard::service {

absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag, const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " = ", path, ": cannot read: ", std::strerror(errno)));
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

}  // namespace oomguard::service
