// The admission webhook's HTTPS endpoint: a cpp-httplib server on its own
// port and threads, beside the gRPC server.
//
//   POST /validate  an admission.k8s.io/v1 AdmissionReview (see
//                   admission_webhook.h), answered with the in-process
//                   Check of the service's transport-free handlers
//                   (service/request_handlers.h, as the HTTP/JSON API calls
//                   them); counted in the metrics as method="Webhook",
//                   transport="http" and logged as msg=admission.
//   POST /mutate    the same review, judged alike, whose answer admitting a
//                   checked job also patches the check's id into it
//                   (check_id_patch.h), for a MutatingWebhookConfiguration;
//                   a cluster registers one of the two, never both.
//   GET  /healthz   "ok".
//
// TLS (1.2 or later) from PEM files, re-read when they change (checked at
// most every `tls_reload_interval`, on a handshake; net/server_tls.h): a
// rotated Secret (cert-manager) is picked up without a restart; a broken new
// pair is logged and the old one kept. A check gets at most `check_timeout`,
// less when the API server's `?timeout=` leaves less (a quarter of it is kept
// for the answer). Bodies over `limits.max_body_bytes` get 413. Connections
// held open by slow or silent clients cannot keep reviews waiting: each
// connection has a thread of its own, a total deadline for its handshake and
// headers, and their number is bounded (net/guarded_http_server.h).
#ifndef OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_
#define OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "admission/gpu_catalog.h"
#include "net/call_limiter.h"
#include "net/connection_limits.h"
#include "net/server_tls.h"
#include "service/metrics.h"
#include "service/request_handlers.h"
#include "webhook/admission_webhook.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace oomguard::net {
class GuardedHttpServer;
}  // namespace oomguard::net

namespace oomguard::webhook {

struct WebhookServerOptions {
  // host:port, or a bare port (loopback: 127.0.0.1; net/host_port.h); port 0
  // picks a free one. Empty = no webhook.
  std::string address;
  // PEM files of the certificate chain and its key: required unless
  // insecure_http.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Plain HTTP, for tests only (the API server only calls HTTPS).
  bool insecure_http = false;
  // Reviews checked at once; more wait for a turn within their deadline.
  int threads = 4;
  // Connections, headers, bodies (larger ones get 413) and their timeouts.
  net::ConnectionLimits limits = {.max_connections = 512,
                                  .max_connections_per_source = 128,
                                  .header_timeout = absl::Seconds(2),
                                  .max_header_bytes = size_t{64} << 10,
                                  .max_body_bytes = size_t{4} << 20,
                                  .io_timeout = absl::Seconds(5),
                                  .keep_alive_timeout = absl::Seconds(5)};
  absl::Duration check_timeout = absl::Seconds(2);
  absl::Duration tls_reload_interval = absl::Seconds(30);
  bool log_requests = true;
};

class WebhookServer {
 public:
  // Binds and starts serving. `handlers` and `metrics` must outlive the
  // server. InvalidArgument for bad options or unreadable/mismatched PEM
  // files, Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<WebhookServer>> Start(WebhookServerOptions options,
                                                              GpuCatalog catalog,
                                                              service::RequestHandlers* handlers,
                                                              service::ServiceMetrics* metrics);

  ~WebhookServer();  // Stop() and Wait().

  int port() const { return port_; }

  // Stops accepting connections; returns at once.
  void Stop();
  // Returns once the requests in progress are answered and the threads are
  // gone (after Stop()).
  void Wait();

 private:
  WebhookServer(WebhookServerOptions options, GpuCatalog catalog,
                service::RequestHandlers* handlers, service::ServiceMetrics* metrics);
  void HandleReview(const httplib::Request& request, httplib::Response& response,
                    AdmissionMode mode);
  // The in-process Check, kept with `handle`, once one of the `threads`
  // turns is free (DeadlineExceeded when none is by `deadline`).
  absl::Status RunCheck(const v1::CheckRequest& check, const v1::JobHandle& handle,
                        absl::Time deadline, v1::CheckResponse* checked);

  const WebhookServerOptions options_;
  const GpuCatalog catalog_;
  service::RequestHandlers* const handlers_;
  service::ServiceMetrics* const metrics_;
  // Every connection may wait for a turn: a review is never refused for
  // want of one, only timed out.
  net::CallLimiter check_turns_;
  std::unique_ptr<net::ServerTls> tls_;
  std::unique_ptr<net::GuardedHttpServer> server_;
  int port_ = 0;
};

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_
