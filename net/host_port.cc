// The address a server flag names (see host_port.h).
#include "net/host_port.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace oomguard::net {

absl::StatusOr<HostPort> ParseHostPort(absl::string_view flag, absl::string_view address) {
  const size_t colon = address.rfind(':');
  const absl::string_view port_text =
      colon == absl::string_view::npos ? address : address.substr(colon + 1);
  HostPort parsed;
  if (colon == 0 || !absl::SimpleAtoi(port_text, &parsed.port) || parsed.port < 0 ||
      parsed.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " = ", address, ": expected host:port or a port"));
  }
  if (colon == absl::string_view::npos) {
    parsed.host = kBarePortHost;
    return parsed;
  }
  absl::string_view host = address.substr(0, colon);
  if (absl::ConsumePrefix(&host, "[") && !absl::ConsumeSuffix(&host, "]")) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " = ", address, ": unbalanced '['"));
  }
  if (host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " = ", address, ": expected host:port or a port"));
  }
  parsed.host = std::string(host);
  return parsed;
}

}  // namespace oomguard::net
