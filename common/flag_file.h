// Reads the file a server flag names (TLS certificates and keys, the GPU
// catalog override), with an error that names the flag, the path and why.
#ifndef OOMGUARD_COMMON_FLAG_FILE_H_
#define OOMGUARD_COMMON_FLAG_FILE_H_

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace oomguard {

// The contents of `path`, the value of flag `flag`; an empty path gives an
// empty string. InvalidArgument "flag = path: cannot read: reason".
inline absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag, const std::string& path) {
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

}  // namespace oomguard

#endif  // OOMGUARD_COMMON_FLAG_FILE_H_
