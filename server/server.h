// The server's lifecycle: open the store of checks (--store; a
// maintenance thread applies its retention hourly; flushed at shutdown),
// build the gRPC server (the Oomguard service,
// health, reflection, TLS, thread pool, size limit), the /metrics endpoint,
// the optional Kubernetes admission webhook (webhook_server.h), the optional
// HTTP/JSON API and web page (http/http_api_server.h), and a graceful
// shutdown that drains in-flight calls within a deadline.
#ifndef OOMGUARD_SERVER_SERVER_H_
#define OOMGUARD_SERVER_SERVER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpcpp/server.h"
#include "http/http_api_server.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "prometheus/exposer.h"
#include "service/call_loop.h"
#include "service/metrics.h"
#include "service/oomguard_service.h"
#include "store/check_store.h"
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
  // The store of checks (store/store_url.h: sqlite:PATH or
  // postgresql://...); empty = none. Opened at start (the server does not
  // start when it cannot be); service.store is set to it.
  std::string store_url;
  store::StoreOptions store;
  // How often the store's retention is applied (the first time at start).
  absl::Duration store_maintenance_interval = absl::Hours(1);
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
  // The service's handlers (the in-process callers': the store's readers).
  service::RequestHandlers& handlers() { return service_->handlers(); }
  // The store; nullptr without --store.
  store::CheckStore* store() { return store_.get(); }

  // Stops accepting calls (health turns NOT_SERVING; the webhook and the
  // HTTP API stop accepting connections), lets in-flight calls finish for up
  // to `grace`, cancels the rest, and returns when done (webhook reviews and
  // HTTP calls in progress are answered: each is bounded by its timeout),
  // after the store has committed every record it queued.
  void Shutdown(absl::Duration grace);

 private:
  Server() = default;

  // Applies the store's retention every `interval` until stop_maintenance_.
  void MaintainStore(absl::Duration interval);
  // Stops the maintenance and waits for the store's queued writes.
  void StopStore();

  // Destroyed bottom-up: the loop and the server go before the handlers,
  // the handlers before the store they write to.
  std::unique_ptr<store::CheckStore> store_;
  absl::Notification stop_maintenance_;
  std::thread maintenance_;  // Joined at Shutdown.
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
