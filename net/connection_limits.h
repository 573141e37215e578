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
  // new connection closes the one that has waited longest without its
  // request being handled: in its TLS handshake, its headers, idle between
  // kept-alive requests (waiting since its accept or its last answer), or
  // waiting for its body's bytes (since its headers came); only when every
  // one is being handled (its handler running, or its answer being written)
  // is the new one closed at once.
  //
  // The bound this keeps (issue 25, item 6): connections held open, however
  // many and from however many sources, and whatever they send, keep no new
  // connection out and delay no request on it. A request is cut short only
  // when `max_connections` newer connections arrive while its own headers
  // and body are in transit; it is refused only while every connection is
  // being handled, each for at most the handler's own deadline and
  // `io_timeout` for each write of its answer.
  int max_connections = 512;
  // Connections open at once from one source (the peer's IP address), >= 1;
  // above `max_connections` it has no effect. At the cap, a new connection
  // from that source closes that source's connection that has waited
  // longest (as above), or is closed at once when each of them is being
  // handled. So one source, however many connections it opens, holds at
  // most this many, and cannot fill the server by itself.
  int max_connections_per_source = 128;
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
// max_connections_per_source, header_timeout) for limits no server can keep.
absl::Status ValidateLimits(absl::string_view server, const ConnectionLimits& limits);

}  // namespace oomguard::net

#endif  // OOMGUARD_NET_CONNECTION_LIMITS_H_
