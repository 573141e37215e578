// The admission webhook's HTTPS endpoint (see webhook_server.h).
#include "webhook/webhook_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "common/wait_until.h"
#include "service/request_log.h"
#include "webhook/admission_webhook.h"
#include "webhook/guarded_http_server.h"

namespace oomguard::webhook {

using service::FormatEventLine;
using service::Method;
using service::OomguardService;
using service::ServiceMetrics;
using service::WriteLogLine;
namespace {

// "host:port" or "[v6]:port" -> host and port.
absl::Status SplitAddress(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), port) || *port < 0 || *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook_address = ", address, ": expected host:port"));
  }
  absl::string_view h(address.data(), colon);
  if (absl::ConsumePrefix(&h, "[") && !absl::ConsumeSuffix(&h, "]")) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook_address = ", address, ": unbalanced '['"));
  }
  *host = std::string(h);
  return absl::OkStatus();
}

// How long a check may take: the configured limit, less when the API
// server's `timeout` parameter (a Go duration, e.g. "3s") leaves less; a
// quarter of that is kept for answering.
absl::Duration CheckBudget(const httplib::Request& request, absl::Duration limit) {
  absl::Duration timeout;
  if (request.has_param("timeout") &&
      absl::ParseDuration(request.get_param_value("timeout"), &timeout) &&
      timeout > absl::ZeroDuration()) {
    return std::min(limit, timeout * 3 / 4);
  }
  return limit;
}

}  // namespace

absl::StatusOr<std::unique_ptr<WebhookServer>> WebhookServer::Start(WebhookServerOptions options,
                                                                    GpuCatalog catalog,
                                                                    OomguardService* service,
                                                                    ServiceMetrics* metrics) {
  std::string host;
  int port = 0;
  OOMGUARD_RETURN_IF_ERROR(SplitAddress(options.address, &host, &port));
  if (options.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook threads = ", options.threads, ": must be >= 1"));
  }
  if (options.check_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "webhook_check_timeout = ", absl::FormatDuration(options.check_timeout), ": must be > 0"));
  }
  if (options.max_connections < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook max_connections = ", options.max_connections, ": must be >= 1"));
  }
  if (options.header_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook header_timeout = ", absl::FormatDuration(options.header_timeout),
                     ": must be > 0"));
  }
  std::unique_ptr<WebhookServer> server(new WebhookServer);
  const ConnectionLimits limits{.max_connections = options.max_connections,
                                .header_timeout = options.header_timeout,
                                .max_header_bytes = options.max_header_bytes,
                                .io_timeout = options.io_timeout,
                                .keep_alive_timeout = options.keep_alive_timeout};
  if (options.insecure_http) {
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          "webhook_insecure_http_for_testing: cannot be combined with "
          "webhook_tls_cert/key");
    }
    server->server_ = std::make_unique<GuardedHttpServer>(limits, nullptr);
  } else {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("webhook_address = ", options.address,
                       ": the webhook needs webhook_tls_cert and webhook_tls_key (the API "
                       "server only calls HTTPS)"));
    }
    OOMGUARD_ASSIGN_OR_RETURN(
        server->certificates_,
        CertificateReloader::Create(options.tls_cert_file, options.tls_key_file,
                                    options.tls_reload_interval));
    CertificateReloader* reloader = server->certificates_.get();
    server->server_ = std::make_unique<GuardedHttpServer>(
        limits, [reloader](SSL_CTX& ctx) { return reloader->Configure(ctx); });
  }
  if (!server->server_->is_valid()) {
    return absl::InternalError("webhook: cannot set up the TLS context");
  }
  server->options_ = std::move(options);
  server->catalog_ = std::move(catalog);
  server->service_ = service;
  server->metrics_ = metrics;

  httplib::Server& http = *server->server_;
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would
  // let a second server share (and steal requests from) the port.
  http.set_socket_options([](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_payload_max_length(server->options_.max_body_bytes);
  WebhookServer* self = server.get();
  http.Post("/validate", [self](const httplib::Request& request, httplib::Response& response) {
    self->HandleValidate(request, response);
  });
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("ok\n", "text/plain");
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
        response.status = 500;
        response.set_content("internal error\n", "text/plain");
      });

  server->port_ = server->server_->Bind(host, port);
  if (server->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("webhook_address = ", server->options_.address, ": cannot listen there"));
  }
  server->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  // stop() is a no-op until the loop runs: wait for it, so that a Stop()
  // right after Start() is never lost.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!http.is_running() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  return server;
}

void WebhookServer::HandleValidate(const httplib::Request& request, httplib::Response& response) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + CheckBudget(request, options_.check_timeout);
  const AdmissionAnswer answer = ReviewAdmission(
      request.body, catalog_, deadline,
      [this](const v1::CheckRequest& check, absl::Time check_deadline, v1::CheckResponse* checked) {
        return RunCheck(check, check_deadline, checked);
      });
  response.status = answer.http_status;
  response.set_content(
      answer.body, answer.http_status == 200 ? "application/json" : "text/plain; charset=utf-8");
  const absl::Duration latency = absl::Now() - start;

  const AdmissionOutcome& o = answer.outcome;
  metrics_->RecordRequest(Method::kWebhook, service::Transport::kHttp,
                          static_cast<grpc::StatusCode>(o.code), latency);
  if (o.judged) {
    metrics_->RecordVerdict(o.verdict);
    metrics_->RecordEstimatedPeak(o.peak_bytes);
  }
  if (!options_.log_requests) return;
  std::vector<std::pair<std::string, std::string>> fields = {
      {"http_status", absl::StrCat(answer.http_status)},
      {"code", absl::StatusCodeToString(o.code)},
      {"latency_ms", absl::StrFormat("%.3f", absl::ToDoubleMilliseconds(latency))},
      {"uid", o.uid},
      {"operation", o.operation},
      {"kind", o.kind},
      {"namespace", o.namespace_name},
      {"name", o.name},
      {"dry_run", o.dry_run ? "true" : "false"},
      {"allowed", o.allowed ? "true" : "false"}};
  if (o.judged) {
    fields.emplace_back("verdict", absl::StripPrefix(v1::Verdict_Name(o.verdict), "VERDICT_"));
    fields.emplace_back("peak_bytes", absl::StrCat(o.peak_bytes));
  } else if (!o.reason.empty()) {
    fields.emplace_back("reason", o.reason);
  }
  fields.emplace_back("peer", absl::StrCat(request.remote_addr, ":", request.remote_port));
  WriteLogLine(FormatEventLine("admission", fields, absl::Now()));
}

absl::Status WebhookServer::RunCheck(const v1::CheckRequest& check, absl::Time deadline,
                                     v1::CheckResponse* checked) {
  {
    std::unique_lock<std::mutex> lock(checks_mu_);
    if (!WaitUntil(check_turn_freed_, lock, deadline,
                   [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return CheckTurnFree(); })) {
      return absl::DeadlineExceededError(
          absl::StrCat("no check turn free (threads = ", options_.threads, ")"));
    }
    ++checks_running_;
  }
  absl::Status status = service_->RunCheck(check, deadline, checked);
  {
    std::lock_guard<std::mutex> lock(checks_mu_);
    --checks_running_;
  }
  check_turn_freed_.notify_one();
  return status;
}

void WebhookServer::Stop() {
  if (server_ == nullptr) return;
  server_->stop();
  server_->CloseConnections();
}

void WebhookServer::Wait() {
  if (thread_.joinable()) thread_.join();
  if (server_ != nullptr) server_->WaitForConnections();
}

WebhookServer::~WebhookServer() {
  Stop();
  Wait();
}

}  // namespace oomguard::webhook
