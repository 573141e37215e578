// The server's lifecycle (see server.h).
#include "server/server.h"

#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "service/request_log.h"
#include "store/store_url.h"

namespace oomguard::server {

using service::CallLoop;
using service::OomguardService;
using service::ServiceMetrics;
using webhook::WebhookServer;
namespace {

#ifndef OOMGUARD_VERSION
#define OOMGUARD_VERSION "unknown"
#endif

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& options) {
  const bool tls = !options.tls_cert_pem.empty() || !options.tls_key_pem.empty();
  if (!tls) {
    if (!options.tls_client_ca_pem.empty()) {
      return absl::InvalidArgumentError(
          "tls_client_ca: client certificates need TLS: set tls_cert and tls_key too");
    }
    return grpc::InsecureServerCredentials();
  }
  if (options.tls_cert_pem.empty() || options.tls_key_pem.empty()) {
    return absl::InvalidArgumentError("tls_cert/tls_key: TLS needs both a certificate and a key");
  }
  grpc::SslServerCredentialsOptions ssl(
      options.tls_client_ca_pem.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = options.tls_client_ca_pem;
  ssl.pem_key_cert_pairs.push_back({options.tls_key_pem, options.tls_cert_pem});
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Start(ServerOptions options) {
  if (options.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("threads = ", options.threads, ": must be >= 1"));
  }
  if (options.max_request_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_request_bytes = ", options.max_request_bytes, ": must be >= 1"));
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = Credentials(options);
  if (!credentials.ok()) return credentials.status();

  std::unique_ptr<Server> server(new Server);
  server->threads_ = options.threads;
  if (!options.store_url.empty()) {
    absl::StatusOr<store::StoreUrl> url = store::ParseStoreUrl(options.store_url);
    if (!url.ok()) return url.status();
    absl::StatusOr<std::unique_ptr<store::CheckStore>> opened =
        store::OpenCheckStore(*url, options.store);
    if (!opened.ok()) return opened.status();
    server->store_ = *std::move(opened);
    if (options.store_maintenance_interval <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "store_maintenance_interval = ", absl::FormatDuration(options.store_maintenance_interval),
          ": must be > 0"));
    }
    server->maintenance_ =
        std::thread(&Server::MaintainStore, server.get(), options.store_maintenance_interval);
  }
  options.service.store = server->store_.get();
  options.service.version = OOMGUARD_VERSION;
  const GpuCatalog webhook_catalog = options.service.catalog;
  options.http.tls = {.cert_chain = options.tls_cert_pem,
                      .key = options.tls_key_pem,
                      .client_ca = options.tls_client_ca_pem};
  options.http.threads = options.threads;
  options.http.limits.max_body_bytes = static_cast<size_t>(options.max_request_bytes);
  options.webhook.log_requests = options.service.log_requests;
  server->metrics_ = std::make_unique<ServiceMetrics>(OOMGUARD_VERSION);
  server->service_ =
      std::make_unique<OomguardService>(std::move(options.service), server->metrics_.get());

  // Both must run before the builder exists.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.grpc_address, *credentials, &server->grpc_port_);
  builder.RegisterService(&server->async_service_);
  builder.SetMaxReceiveMessageSize(options.max_request_bytes);
  // A second server on the same port must fail, not share it.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // One queue shared by all workers: any idle worker takes the next call
  // (measured as fast as a queue per worker with h2load on 2 cores).
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues;
  queues.push_back(builder.AddCompletionQueue());
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || server->grpc_port_ == 0) {
    return absl::UnavailableError(
        absl::StrCat("grpc_address = ", options.grpc_address, ": cannot listen there"));
  }
  server->call_loop_ = std::make_unique<CallLoop>(&server->async_service_, server->service_.get(),
                                                  std::move(queues), options.threads);
  server->server_->GetHealthCheckService()->SetServingStatus(v1::Oomguard::service_full_name(),
                                                             true);

  if (!options.metrics_address.empty()) {
    try {
      server->exposer_ = std::make_unique<prometheus::Exposer>(options.metrics_address);
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat("metrics_address = ", options.metrics_address,
                                                 ": cannot listen there: ", e.what()));
    }
    server->exposer_->RegisterCollectable(server->metrics_->registry());
    // exposer_ goes before service_, whose handlers hold the caches.
    server->exposer_->RegisterCollectable(server->service_->handlers().cache_metrics());
    const std::vector<int> ports = server->exposer_->GetListeningPorts();
    server->metrics_port_ = ports.empty() ? 0 : ports.front();
  }
  if (!options.webhook.address.empty()) {
    absl::StatusOr<std::unique_ptr<WebhookServer>> webhook =
        WebhookServer::Start(std::move(options.webhook), webhook_catalog,
                             &server->service_->handlers(), server->metrics_.get());
    if (!webhook.ok()) return webhook.status();
    server->webhook_ = *std::move(webhook);
  }
  if (!options.http.address.empty()) {
    absl::StatusOr<std::unique_ptr<http::HttpApiServer>> http =
        http::HttpApiServer::Start(std::move(options.http), &server->service_->handlers());
    if (!http.ok()) return http.status();
    server->http_ = *std::move(http);
  }
  return server;
}

void Server::MaintainStore(absl::Duration interval) {
  do {
    const absl::StatusOr<int64_t> removed = store_->ApplyRetention(absl::Now());
    if (!removed.ok()) {
      service::WriteLogLine(service::FormatEventLine(
          "store retention failed", {{"error", removed.status().ToString()}}, absl::Now()));
    } else if (*removed > 0) {
      service::WriteLogLine(service::FormatEventLine(
          "store retention", {{"removed", absl::StrCat(*removed)}}, absl::Now()));
    }
  } while (!stop_maintenance_.WaitForNotificationWithTimeout(interval));
}

void Server::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  if (server_ == nullptr) {  // Start failed before the gRPC server existed.
    StopStore();
    return;
  }
  server_->GetHealthCheckService()->SetServingStatus(false);
  if (webhook_ != nullptr) webhook_->Stop();
  if (http_ != nullptr) http_->Stop();
  const absl::Time grace_end = absl::Now() + grace;
  // Calls still working when the grace period ends stop there (their loops
  // check it) instead of holding the exit until they finish.
  service_->StopWorkAt(grace_end);
  server_->Shutdown(absl::ToChronoTime(grace_end));
  server_->Wait();
  call_loop_.reset();
  if (webhook_ != nullptr) webhook_->Wait();
  if (http_ != nullptr) http_->Wait();
  StopStore();
}

void Server::StopStore() {
  if (maintenance_.joinable()) {
    stop_maintenance_.Notify();
    maintenance_.join();
  }
  if (store_ != nullptr) {
    if (const absl::Status flushed = store_->Flush(); !flushed.ok()) {
      service::WriteLogLine(service::FormatEventLine("store flush at shutdown failed",
                                                     {{"error", flushed.ToString()}}, absl::Now()));
    }
  }
}

Server::~Server() { Shutdown(absl::ZeroDuration()); }

}  // namespace oomguard::server
