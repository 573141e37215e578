// The bounds of a guarded HTTP server's connections (see connection_limits.h).
#include "net/connection_limits.h"

#include "absl/strings/str_cat.h"

namespace oomguard::net {

absl::Status ValidateLimits(absl::string_view server, const ConnectionLimits& limits) {
  if (limits.max_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(server, " max_connections = ", limits.max_connections, ": must be >= 1"));
  }
  if (limits.max_connections_per_source < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(server, " max_connections_per_source = ", limits.max_connections_per_source,
                     ": must be >= 1"));
  }
  if (limits.header_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(server, " header_timeout = ", absl::FormatDuration(limits.header_timeout),
                     ": must be > 0"));
  }
  return absl::OkStatus();
}

}  // namespace oomguard::net
