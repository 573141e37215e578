// The admission webhook's HTTPS endpoint (see webhook_server.h).
#include "webhook/webhook_server.h"

#include <httplib.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "net/guarded_http_server.h"
#include "service/methods.h"
#include "service/request_log.h"
#include "webhook/admission_webhook.h"

namespace oomguard::webhook {

using service::FormatEventLine;
using service::RequestHandlers;
using service::ServiceMetrics;
using service::WriteLogLine;
namespace {

// The log line of a certificate reload (OK) or of new files not taken.
void LogReload(const absl::Status& reloaded, const std::string& cert_file) {
  if (reloaded.ok()) {
    WriteLogLine(
        FormatEventLine("webhook certificate reloaded", {{"cert_file", cert_file}}, absl::Now()));
  } else {
    WriteLogLine(FormatEventLine("webhook certificate not reloaded",
                                 {{"error", std::string(reloaded.message())}}, absl::Now()));
  }
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

WebhookServer::WebhookServer(WebhookServerOptions options, GpuCatalog catalog,
                             RequestHandlers* handlers, ServiceMetrics* metrics)
    : options_(std::move(options)),
      catalog_(std::move(catalog)),
      handlers_(handlers),
      metrics_(metrics),
      check_turns_(options_.threads, options_.limits.max_connections) {}

absl::StatusOr<std::unique_ptr<WebhookServer>> WebhookServer::Start(WebhookServerOptions options,
                                                                    GpuCatalog catalog,
                                                                    RequestHandlers* handlers,
                                                                    ServiceMetrics* metrics) {
  if (options.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("webhook threads = ", options.threads, ": must be >= 1"));
  }
  if (options.check_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "webhook_check_timeout = ", absl::FormatDuration(options.check_timeout), ": must be > 0"));
  }
  OOMGUARD_RETURN_IF_ERROR(net::ValidateLimits("webhook", options.limits));
  std::unique_ptr<net::ServerTls> tls;
  if (options.insecure_http) {
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          "webhook_insecure_http_for_testing: cannot be combined with "
          "webhook_tls_cert/key");
    }
  } else {
    if (options.tls_cert_file.empty() || options.tls_key_file.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("webhook_address = ", options.address,
                       ": the webhook needs webhook_tls_cert and webhook_tls_key (the API "
                       "server only calls HTTPS)"));
    }
    OOMGUARD_ASSIGN_OR_RETURN(
        tls, net::ServerTls::FromFiles({.cert_flag = "webhook_tls_cert",
                                        .cert_file = options.tls_cert_file,
                                        .key_flag = "webhook_tls_key",
                                        .key_file = options.tls_key_file},
                                       options.tls_reload_interval,
                                       [cert_file = options.tls_cert_file](const absl::Status& s) {
                                         LogReload(s, cert_file);
                                       }));
  }
  std::unique_ptr<WebhookServer> server(
      new WebhookServer(std::move(options), std::move(catalog), handlers, metrics));
  server->tls_ = std::move(tls);
  server->server_ =
      std::make_unique<net::GuardedHttpServer>(server->options_.limits, server->tls_.get());
  if (!server->server_->is_valid()) {
    return absl::InternalError("webhook: cannot set up the TLS context");
  }

  httplib::Server& http = *server->server_;
  WebhookServer* self = server.get();
  http.Post("/validate", [self](const httplib::Request& request, httplib::Response& response) {
    self->HandleReview(request, response, AdmissionMode::kValidate);
  });
  http.Post("/mutate", [self](const httplib::Request& request, httplib::Response& response) {
    self->HandleReview(request, response, AdmissionMode::kMutate);
  });
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& response) {
    response.set_content("ok\n", "text/plain");
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
        response.status = 500;
        response.set_content("internal error\n", "text/plain");
      });
  OOMGUARD_ASSIGN_OR_RETURN(server->port_,
                            server->server_->Start("webhook_address", server->options_.address));
  return server;
}

void WebhookServer::HandleReview(const httplib::Request& request, httplib::Response& response,
                                 AdmissionMode mode) {
  const absl::Time start = absl::Now();
  const absl::Time deadline = start + CheckBudget(request, options_.check_timeout);
  const AdmissionAnswer answer = ReviewAdmission(
      request.body, catalog_, deadline,
      [this](const v1::CheckRequest& check, const v1::JobHandle& handle, absl::Time check_deadline,
             v1::CheckResponse* checked) {
        return RunCheck(check, handle, check_deadline, checked);
      },
      mode);
  response.status = answer.http_status;
  response.set_content(
      answer.body, answer.http_status == 200 ? "application/json" : "text/plain; charset=utf-8");
  const absl::Duration latency = absl::Now() - start;

  const AdmissionOutcome& o = answer.outcome;
  metrics_->RecordRequest(service::kWebhookMethod, service::Transport::kHttp,
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
    if (!o.check_id.empty()) fields.emplace_back("check_id", o.check_id);
    if (mode == AdmissionMode::kMutate)
      fields.emplace_back("patched", o.patched ? "true" : "false");
  } else if (!o.reason.empty()) {
    fields.emplace_back("reason", o.reason);
  }
  fields.emplace_back("peer", absl::StrCat(request.remote_addr, ":", request.remote_port));
  WriteLogLine(FormatEventLine("admission", fields, absl::Now()));
}

absl::Status WebhookServer::RunCheck(const v1::CheckRequest& check, const v1::JobHandle& handle,
                                     absl::Time deadline, v1::CheckResponse* checked) {
  OOMGUARD_RETURN_IF_ERROR(check_turns_.Acquire(deadline));
  const absl::Cleanup release = [this] { check_turns_.Release(); };
  return handlers_->RunCheck(check, deadline, checked, handle);
}

void WebhookServer::Stop() {
  if (server_ != nullptr) server_->Stop();
}

void WebhookServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

WebhookServer::~WebhookServer() {
  Stop();
  Wait();
}

}  // namespace oomguard::webhook
