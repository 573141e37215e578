// The bounds a guarded HTTP server (guarded_http_server.h) keeps on its
// connections and requests: how many connections, how long a handshake,
// headers, a body and an idle connection may take, how large headers and
// bodies may be. Each server sets its own defaults.
#ifndef OOMGUARD_NET_CONNECTION_LIMITS_H_
#define OOMGUARD_NET_CONNECTION_LIMITS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace oomguard::net {

// The bounds of a server's connections and requests.
struct ConnectionLimits {
  // Connections open at once, >= 1. Each is served on a thread of its own,
  // so a connection that is slow to send holds up no other. At the limit, a
  // new connection closes the one that has waited longest without a request
  // in progress (in its TLS handshake, its headers, or idle between
  // kept-alive requests); only when every one has a request in progress is
  // the new one closed at once.
  int max_connections = 512;
  // From its accept, a connection's TLS handshake and its first request's
  // line and headers must arrive within this, in total (> 0): bytes
  // trickling in do not extend it. A later request on a kept-alive
  // connection gets as long from its first byte.
  absl::Duration header_timeout = absl::Seconds(2);
  // A request line and headers longer than this close the connection.
  size_t max_header_bytes = size_t{64} << 10;
  // Larger bodies get 413.
  size_t max_body_bytes = size_t{1} << 20;
  // A body must arrive within this of its headers, in total; each write of
  // an answer gets as long.
  absl::Duration io_timeout = absl::Seconds(5);
  // An idle kept-alive connection is closed after this.
  absl::Duration keep_alive_timeout = absl::Seconds(5);
  // Then the connection is closed.
  int keep_alive_max_requests = 1000;
};

// InvalidArgument "`server` max_connections = 0: must be >= 1" (or
// header_timeout) for limits no server can keep.
absl::Status ValidateLimits(absl::string_view server, const ConnectionLimits& limits);

}  // namespace oomguard::net

#endif  // OOMGUARD_NET_CONNECTION_LIMITS_H_
