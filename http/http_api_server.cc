// The HTTP/JSON API and the page (see http_api_server.h).
#include "http/http_api_server.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <exception>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "http/json_transcoding.h"
#include "http/page_assets.h"
#include "net/guarded_http_server.h"

namespace oomguard::http {
namespace {

// The page loads its own script, style sheet and API only.
constexpr char kContentSecurityPolicy[] =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'";

void Send(const HttpAnswer& answer, httplib::Response& response) {
  response.status = answer.status;
  if (!answer.allow.empty()) response.set_header("Allow", answer.allow);
  response.set_content(answer.body, answer.content_type.c_str());
}

// The subject common name of the client certificate the connection's TLS
// verified; empty without TLS, a certificate or a common name.
std::string VerifiedClientName(const SSL* ssl) {
  if (ssl == nullptr || SSL_get_verify_result(ssl) != X509_V_OK) return "";
  X509* certificate = SSL_get_peer_certificate(ssl);
  if (certificate == nullptr) return "";
  char name[256] = {};
  const int length = X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName,
                                               name, sizeof(name));
  X509_free(certificate);
  return length > 0 ? std::string(name, static_cast<size_t>(length)) : "";
}

}  // namespace

std::optional<absl::Time> GrpcTimeoutDeadline(absl::string_view value, absl::Time now) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  int64_t amount = 0;
  if (!absl::SimpleAtoi(value.substr(0, value.size() - 1), &amount) || amount < 0) {
    return std::nullopt;
  }
  switch (value.back()) {
    case 'H':
      return now + absl::Hours(amount);
    case 'M':
      return now + absl::Minutes(amount);
    case 'S':
      return now + absl::Seconds(amount);
    case 'm':
      return now + absl::Milliseconds(amount);
    case 'u':
      return now + absl::Microseconds(amount);
    case 'n':
      return now + absl::Nanoseconds(amount);
    default:
      return std::nullopt;
  }
}

HttpApiServer::HttpApiServer(const HttpApiOptions& options, service::RequestHandlers* handlers)
    : options_(options),
      limiter_(options.threads, options.max_waiting),
      endpoints_(handlers, &limiter_) {}

absl::StatusOr<std::unique_ptr<HttpApiServer>> HttpApiServer::Start(
    HttpApiOptions options, service::RequestHandlers* handlers) {
  if (options.threads < 1 || options.max_waiting < 0) {
    return absl::InvalidArgumentError(absl::StrCat("http threads = ", options.threads,
                                                   ", max_waiting = ", options.max_waiting,
                                                   ": need >= 1 and >= 0"));
  }
  if (options.request_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http_request_timeout = ", absl::FormatDuration(options.request_timeout), ": must be > 0"));
  }
  OOMGUARD_RETURN_IF_ERROR(net::ValidateLimits("http", options.limits));
  const bool tls = !options.tls.cert_chain.empty() || !options.tls.key.empty();
  if (tls && (options.tls.cert_chain.empty() || options.tls.key.empty())) {
    return absl::InvalidArgumentError("tls_cert/tls_key: TLS needs both a certificate and a key");
  }
  if (!tls && !options.tls.client_ca.empty()) {
    return absl::InvalidArgumentError(
        "tls_client_ca: client certificates need TLS: set tls_cert and tls_key too");
  }
  std::unique_ptr<HttpApiServer> server(new HttpApiServer(options, handlers));
  if (tls) {
    OOMGUARD_ASSIGN_OR_RETURN(server->tls_,
                              net::ServerTls::FromPem(options.tls, {.cert_chain = "tls_cert",
                                                                    .key = "tls_key",
                                                                    .client_ca = "tls_client_ca"}));
  }
  server->server_ = std::make_unique<net::GuardedHttpServer>(options.limits, server->tls_.get());
  if (!server->server_->is_valid()) {
    return absl::InternalError("http: cannot set up the TLS context");
  }

  httplib::Server& http = *server->server_;
  http.set_default_headers({{"X-Content-Type-Options", "nosniff"},
                            {"Content-Security-Policy", kContentSecurityPolicy},
                            {"Referrer-Policy", "no-referrer"},
                            {"Cache-Control", "no-store"}});
  HttpApiServer* self = server.get();
  const auto route = [self](const httplib::Request& request, httplib::Response& response) {
    const absl::Time now = absl::Now();
    absl::Time deadline = now + self->options_.request_timeout;
    if (request.has_header("Grpc-Timeout")) {
      const std::optional<absl::Time> asked =
          GrpcTimeoutDeadline(request.get_header_value("Grpc-Timeout"), now);
      if (asked && *asked < deadline) deadline = *asked;
    }
    const std::string peer = absl::StrCat("http:", request.remote_addr, ":", request.remote_port);
    const std::string method = request.method == "HEAD" ? "GET" : request.method;
    std::optional<HttpAnswer> answer =
        UnsupportedContentType(request.get_header_value("Content-Type"));
    if (!answer) {
      answer = self->endpoints_.Serve(
          ApiRequest{method,
                     request.path,
                     request.body,
                     deadline,
                     peer,
                     {.authorization = request.get_header_value("Authorization"),
                      .client_identity = VerifiedClientName(request.ssl)}});
    }
    if (!answer) {
      if (const PageAsset* asset = FindPageAsset(request.path)) {
        if (method == "GET") {
          answer.emplace();
          answer->content_type = std::string(asset->content_type);
          answer->body = std::string(asset->body);
        } else {
          answer = MethodNotAllowed(method, request.path, "GET");
        }
      } else {
        answer = NotFound(request.path);
      }
    }
    Send(*answer, response);
  };
  for (const std::string pattern : {".*"}) {
    http.Get(pattern, route);
    http.Post(pattern, route);
    http.Put(pattern, route);
    http.Patch(pattern, route);
    http.Delete(pattern, route);
    http.Options(pattern, route);
  }
  // What httplib answers itself (413 for a body over the limit, 400 for a
  // request it cannot read) gets a google.rpc.Status body too. A form's body
  // over 8 KiB is a 413 to httplib (it parses it as fields): 415, as for a
  // smaller one.
  http.set_error_handler([max_body = options.limits.max_body_bytes](const httplib::Request& request,
                                                                    httplib::Response& response) {
    if (!response.body.empty()) return;
    if (response.status == 413) {
      if (std::optional<HttpAnswer> form =
              UnsupportedContentType(request.get_header_value("Content-Type"))) {
        Send(*form, response);
        return;
      }
    }
    const grpc::Status status =
        response.status == 413
            ? grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                           absl::StrCat("request body: larger than ", max_body, " bytes"))
            : grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                           absl::StrCat("HTTP ", response.status, ": malformed request"));
    response.set_content(ErrorJson(status), "application/json");
  });
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& response, std::exception_ptr) {
        response.status = 500;
        response.set_content(ErrorJson(grpc::Status(grpc::StatusCode::INTERNAL, "internal error")),
                             "application/json");
      });

  OOMGUARD_ASSIGN_OR_RETURN(server->port_, server->server_->Start("http_address", options.address));
  return server;
}

void HttpApiServer::Stop() {
  if (server_ != nullptr) server_->Stop();
}

void HttpApiServer::Wait() {
  if (server_ != nullptr) server_->Wait();
}

HttpApiServer::~HttpApiServer() {
  Stop();
  Wait();
}

}  // namespace oomguard::http
