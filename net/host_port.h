// The address a server flag names (--webhook_address, --http_address): the
// one reading of "host:port", "[v6]:port" or a bare "port", which means
// loopback (127.0.0.1), so that a port alone never exposes a server to other
// hosts; port 0 picks a free one.
#ifndef OOMGUARD_NET_HOST_PORT_H_
#define OOMGUARD_NET_HOST_PORT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard::net {

// The host that a bare port listens on.
inline constexpr char kBarePortHost[] = "127.0.0.1";

struct HostPort {
  std::string host;  // Without the brackets of an IPv6 address.
  int port = 0;      // 0..65535.
};

// `address`, the value of flag `flag`. InvalidArgument "flag = address:
// expected host:port or a port" for an empty host (":80"), a port that is not
// a number in 0..65535, and "flag = address: unbalanced '['" for a bracket
// left open.
absl::StatusOr<HostPort> ParseHostPort(absl::string_view flag, absl::string_view address);

}  // namespace oomguard::net

#endif  // OOMGUARD_NET_HOST_PORT_H_
