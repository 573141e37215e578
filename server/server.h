// The server's lifecycle: build the gRPC server (the Oomguard service,
// health, reflection, TLS, thread pool, size limit), the /metrics endpoint,
// the optional Kubernetes admission webhook (webhook_server.h), the optional
// HTTP/JSON API and web page (http/http_api_server.h), and a graceful
// shutdown that drains in-flight calls within a deadline.
#ifndef OOMGUARD_SERVER_SERVER_H_
#define OOMGUARD_SERVER_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "http/http_api_server.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "prometheus/exposer.h"
#include "service/call_loop.h"
#include "service/metrics.h"
#include "service/oomguard_service.h"
#include "webhook/webhook_server.h"

namespace oomguard::server {

struct ServerOptions {
  // host:port of the gRPC endpoint; port 0 picks a free one.
  std::string grpc_address = "127.0.0.1:50051";
  // host:port of the Prometheus /metrics endpoint; empty = none.
  std::string metrics_address;
  // PEM contents (not paths). A certificate and key turn on TLS; a client
  // CA also requires and verifies client certificates.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string tls_client_ca_pem;
  // Worker threads running the handlers, >= 1.
  int threads = 4;
  // Largest request accepted; larger ones get RESOURCE_EXHAUSTED.
  int max_request_bytes = 1 << 20;
  service::ServiceConfig service;
  // The admission webhook; off while webhook.address is empty. It shares
  // the service (same Check, catalog, metrics); its log_requests follows
  // service.log_requests.
  webhook::WebhookServerOptions webhook;
  // The HTTP/JSON API and the page; off while http.address is empty. It
  // shares the service's handlers (same checks, cache, metrics, log); its
  // TLS PEMs, threads and body cap are the gRPC server's (tls_*_pem,
  // threads, max_request_bytes).
  http::HttpApiOptions http;
};

class Server {
 public:
  // Starts serving. InvalidArgument for bad options, Unavailable when an
  // address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Server>> Start(ServerOptions options);

  ~Server();  // Shuts down at once if Shutdown was not called.

  int grpc_port() const { return grpc_port_; }
  int metrics_port() const { return metrics_port_; }                    // 0 when none.
  int webhook_port() const { return webhook_ ? webhook_->port() : 0; }  // 0 when none.
  int http_port() const { return http_ ? http_->port() : 0; }           // 0 when none.
  int threads() const { return threads_; }
  service::ServiceMetrics& metrics() { return *metrics_; }

  // Stops accepting calls (health turns NOT_SERVING; the webhook and the
  // HTTP API stop accepting connections), lets in-flight calls finish for up
  // to `grace`, cancels the rest, and returns when done (webhook reviews and
  // HTTP calls in progress are answered: each is bounded by its timeout).
  void Shutdown(absl::Duration grace);

 private:
  Server() = default;

  // Destroyed bottom-up: the loop and the server go before the handlers.
  std::unique_ptr<service::ServiceMetrics> metrics_;
  std::unique_ptr<service::OomguardService> service_;
  service::AsyncOomguard async_service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<service::CallLoop> call_loop_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::unique_ptr<webhook::WebhookServer> webhook_;  // Uses service_ and metrics_.
  std::unique_ptr<http::HttpApiServer> http_;        // Uses service_'s handlers.
  int grpc_port_ = 0;
  int metrics_port_ = 0;
  int threads_ = 0;
  bool shut_down_ = false;
};

}  // namespace oomguard::server

#endif  // OOMGUARD_SERVER_SERVER_H_
