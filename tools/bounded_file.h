// Reads a file a command-line flag names, never more than a bound: a path
// such as /dev/zero or a huge file is refused after reading bound + 1 bytes,
// a directory or an unreadable path with an error naming the flag.
#ifndef OOMGUARD_TOOLS_BOUNDED_FILE_H_
#define OOMGUARD_TOOLS_BOUNDED_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard {

// The contents of `path`, the value of `flag`. InvalidArgument naming the
// flag and the path when it cannot be read, is a directory, or holds more
// than `max_bytes` bytes.
absl::StatusOr<std::string> ReadBoundedFile(absl::string_view flag, const std::string& path,
                                            size_t max_bytes);

// The text of the `--hf-config` file at `path`: at most kMaxConfigBytes (the
// config reader's own limit) are read, and an empty file is an error (the
// job builder reads empty config text as "no config").
absl::StatusOr<std::string> ReadHfConfigFlag(const std::string& path);

}  // namespace oomguard

#endif  // OOMGUARD_TOOLS_BOUNDED_FILE_H_
