// Reads the file a server flag names (TLS certificates and keys, the GPU
// catalog override), with an error that names the flag, the path and why.
#ifndef OOMGUARD_SERVICE_FLAG_FILE_H_
#define OOMGUARD_SERVICE_FLAG_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard::service {

// The contents of `path`, the value of flag `flag`; an empty path gives an
// empty string. InvalidArgument "flag = path: cannot read: reason".
absl::StatusOr<std::string> ReadFlagFile(absl::string_view flag, const std::string& path);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_FLAG_FILE_H_
