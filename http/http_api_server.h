// The HTTP/JSON API and the web page, on a port of their own beside the gRPC
// server: the guarded HTTP server the webhook also runs on
// (net/guarded_http_server.h: a thread per connection, total deadlines for
// the handshake and headers, a bounded number of connections).
//
//   /v1/...          the API (api_endpoints.h)
//   GET /            the page; GET /page.css, /page.js its files (page_assets.h)
//   anything else    404; a known path with another method 405
//
// Bodies over `limits.max_body_bytes` get 413. A call's deadline is
// `request_timeout`, less when the request's `Grpc-Timeout` header (as
// grpc-gateway reads it: "500m", "2S") leaves less. Every answer carries
// X-Content-Type-Options: nosniff and a Content-Security-Policy that lets the
// page load only its own files (no inline script, nothing from elsewhere);
// there are no CORS headers, so other origins' pages cannot read answers.
// TLS (and mutual TLS) from the gRPC server's PEM contents (net/server_tls.h).
#ifndef OOMGUARD_HTTP_HTTP_API_SERVER_H_
#define OOMGUARD_HTTP_HTTP_API_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "http/api_endpoints.h"
#include "net/call_limiter.h"
#include "net/connection_limits.h"
#include "net/server_tls.h"
#include "service/request_handlers.h"

namespace oomguard::net {
class GuardedHttpServer;
}  // namespace oomguard::net

namespace oomguard::http {

struct HttpApiOptions {
  // host:port, or a bare port (loopback: 127.0.0.1; net/host_port.h); port 0
  // picks a free one. Empty = no HTTP API.
  std::string address;
  // PEM contents; a certificate and key turn on TLS, a client CA requires
  // and verifies client certificates.
  net::TlsPem tls;
  // Calls run at once; `max_waiting` more wait for a turn; beyond, 503.
  int threads = 4;
  int max_waiting = 64;
  absl::Duration request_timeout = absl::Seconds(10);
  // Connections, headers, bodies (larger ones get 413) and their timeouts.
  net::ConnectionLimits limits = {.max_connections = 512,
                                  .max_connections_per_source = 128,
                                  .header_timeout = absl::Seconds(5),
                                  .max_header_bytes = size_t{64} << 10,
                                  .max_body_bytes = size_t{1} << 20,
                                  .io_timeout = absl::Seconds(10),
                                  .keep_alive_timeout = absl::Seconds(5)};
};

class HttpApiServer {
 public:
  // Binds and starts serving. `handlers` must outlive the server.
  // InvalidArgument for bad options or PEM contents, Unavailable when the
  // address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpApiServer>> Start(HttpApiOptions options,
                                                              service::RequestHandlers* handlers);

  ~HttpApiServer();  // Stop() and Wait().

  int port() const { return port_; }

  // Stops accepting connections; returns at once.
  void Stop();
  // Returns once the requests in progress are answered and the threads are
  // gone (after Stop()).
  void Wait();

 private:
  HttpApiServer(const HttpApiOptions& options, service::RequestHandlers* handlers);

  const HttpApiOptions options_;
  net::CallLimiter limiter_;
  ApiEndpoints endpoints_;
  std::unique_ptr<net::ServerTls> tls_;
  std::unique_ptr<net::GuardedHttpServer> server_;
  int port_ = 0;
};

// The deadline a `Grpc-Timeout` header value sets from `now` (grpc-gateway's
// reading: digits and a unit H, M, S, m, u or n); nullopt when it does not
// parse.
std::optional<absl::Time> GrpcTimeoutDeadline(absl::string_view value, absl::Time now);

}  // namespace oomguard::http

#endif  // OOMGUARD_HTTP_HTTP_API_SERVER_H_
