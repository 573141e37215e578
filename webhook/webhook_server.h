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
// answer). Bodies over `max_body_bytes` get 413; slow clients are cut off by
// `io_timeout`.
#ifndef OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_
#define OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "admission/gpu_catalog.h"
#include "service/metrics.h"
#include "service/oomguard_service.h"
#include "webhook/webhook_tls.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace oomguard::webhook {

struct WebhookServerOptions {
  // host:port; port 0 picks a free one. Empty = no webhook.
  std::string address;
  // PEM files of the certificate chain and its key: required unless
  // insecure_http.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Plain HTTP, for tests only (the API server only calls HTTPS).
  bool insecure_http = false;
  int threads = 4;
  size_t max_body_bytes = size_t{4} << 20;
  absl::Duration check_timeout = absl::Seconds(2);
  absl::Duration io_timeout = absl::Seconds(5);
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

  WebhookServerOptions options_;
  GpuCatalog catalog_ = GpuCatalog::Builtin();
  service::OomguardService* service_ = nullptr;
  service::ServiceMetrics* metrics_ = nullptr;
  std::unique_ptr<CertificateReloader> certificates_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_WEBHOOK_SERVER_H_
