// The admission webhook's HTTPS endpoint: a cpp-httplib server on its own
// port and threads, beside the gRPC server.
//
//   POST /validate  an admission.k8s.io/v1 AdmissionReview (see
//                   admission_webhook.h), answered with the in-process
//                   Check of service::OomguardService; counted in the metrics as
//                   method="Webhook" and logged as msg=admission.
//   GET  /healthz   "ok".
//
// TLS (1.2 or later) from PEM files, re-read when they change (checked at
// most every `tls_reload_interval`, on a handshake): a rotated Secret
// (cert-manager) is picked up without a restart; a broken new pair is logged
// and the old one kept. A check gets at most `check_timeout`, less when the
// API server's `?timeout=` leaves less (a quarter of it is kept for the
// answer). Bodies over `max_body_bytes` get 413. Connections held open by
// slow or silent clients cannot keep reviews waiting: each connection has a
// thread of its own, a total deadline for its handshake and headers, and
// their number is bounded (guarded_http_server.h).
#ifndef OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_
#define OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_

#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "admission/gpu_catalog.h"
#include "service/metrics.h"
#include "service/oomguard_service.h"
#include "webhook/webhook_tls.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace oomguard::webhook {

class GuardedHttpServer;

struct WebhookServerOptions {
  // host:port; port 0 picks a free one. Empty = no webhook.
  std::string address;
  // PEM files of the certificate chain and its key: required unless
  // insecure_http.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Plain HTTP, for tests only (the API server only calls HTTPS).
  bool insecure_http = false;
  // Reviews checked at once; more wait for a turn within their deadline.
  int threads = 4;
  // Connections open at once. Each is served on a thread of its own, so a
  // connection that is slow to send holds up no other. At the limit, a new
  // connection closes the one that has waited longest without a request in
  // progress (in its TLS handshake, its headers, or idle between kept-alive
  // requests); only when every one has a request in progress is the new one
  // closed at once.
  int max_connections = 512;
  // From its accept, a connection's TLS handshake and its first request's
  // line and headers must arrive within this, in total: bytes trickling in
  // do not extend it. A later request on a kept-alive connection gets as long
  // from its first byte.
  absl::Duration header_timeout = absl::Seconds(2);
  // A request line and headers longer than this close the connection.
  size_t max_header_bytes = size_t{64} << 10;
  // Larger bodies get 413.
  size_t max_body_bytes = size_t{4} << 20;
  absl::Duration check_timeout = absl::Seconds(2);
  // A body must arrive within this of its headers, in total; each write of
  // an answer gets as long.
  absl::Duration io_timeout = absl::Seconds(5);
  // An idle kept-alive connection is closed after this.
  absl::Duration keep_alive_timeout = absl::Seconds(5);
  absl::Duration tls_reload_interval = absl::Seconds(30);
  bool log_requests = true;
};

class WebhookServer {
 public:
  // Binds and starts serving. `service` and `metrics` must outlive the
  // server. InvalidArgument for bad options or unreadable/mismatched PEM
  // files, Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<WebhookServer>> Start(WebhookServerOptions options,
                                                              GpuCatalog catalog,
                                                              service::OomguardService* service,
                                                              service::ServiceMetrics* metrics);

  ~WebhookServer();  // Stop() and Wait().

  int port() const { return port_; }

  // Stops accepting connections; returns at once.
  void Stop();
  // Returns once the requests in progress are answered and the threads are
  // gone (after Stop()).
  void Wait();

 private:
  WebhookServer() = default;
  void HandleValidate(const httplib::Request& request, httplib::Response& response);
  // The in-process Check, once one of the `threads` turns is free (DeadlineExceeded when none is
  // by `deadline`).
  absl::Status RunCheck(const v1::CheckRequest& check, absl::Time deadline,
                        v1::CheckResponse* checked);
  bool CheckTurnFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(checks_mu_) {
    return checks_running_ < options_.threads;
  }

  WebhookServerOptions options_;
  GpuCatalog catalog_ = GpuCatalog::Builtin();
  service::OomguardService* service_ = nullptr;
  service::ServiceMetrics* metrics_ = nullptr;
  std::unique_ptr<CertificateReloader> certificates_;
  std::unique_ptr<GuardedHttpServer> server_;
  // std::mutex, not absl::Mutex: Debian's Abseil is not built with
  // ThreadSanitizer annotations, so TSan (CI's server tests) could not see
  // an absl::Mutex and would report every access it guards.
  std::mutex checks_mu_;
  std::condition_variable check_turn_freed_;
  int checks_running_ ABSL_GUARDED_BY(checks_mu_) = 0;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_
