// The HTTP/JSON API and the page (see http_api_server.h).
#include "http/http_api_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <exception>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "http/json_transcoding.h"
#include "http/page_assets.h"
#include "webhook/guarded_http_server.h"

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

}  // namespace

absl::Status SplitHttpAddress(const std::string& address, absl::string_view flag, std::string* host,
                              int* port) {
  const size_t colon = address.rfind(':');
  const std::string port_text = colon == std::string::npos ? address : address.substr(colon + 1);
  if (colon == 0 || !absl::SimpleAtoi(port_text, port) || *port < 0 || *port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " = ", address, ": expected host:port or a port"));
  }
  if (colon == std::string::npos) {
    *host = "127.0.0.1";
    return absl::OkStatus();
  }
  absl::string_view h(address.data(), colon);
  if (absl::ConsumePrefix(&h, "[") && !absl::ConsumeSuffix(&h, "]")) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " = ", address, ": unbalanced '['"));
  }
  *host = std::string(h);
  return absl::OkStatus();
}

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
  std::string host;
  int port = 0;
  OOMGUARD_RETURN_IF_ERROR(SplitHttpAddress(options.address, "http_address", &host, &port));
  if (options.threads < 1 || options.max_waiting < 0 || options.max_connections < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http threads = ", options.threads, ", max_waiting = ", options.max_waiting,
        ", max_connections = ", options.max_connections, ": need >= 1, >= 0 and >= 1"));
  }
  if (options.request_timeout <= absl::ZeroDuration() ||
      options.header_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "http request_timeout = ", absl::FormatDuration(options.request_timeout),
        ", header_timeout = ", absl::FormatDuration(options.header_timeout), ": must be > 0"));
  }
  const bool tls = !options.tls.cert_chain.empty() || !options.tls.key.empty();
  if (tls && (options.tls.cert_chain.empty() || options.tls.key.empty())) {
    return absl::InvalidArgumentError("tls_cert/tls_key: TLS needs both a certificate and a key");
  }
  if (!tls && !options.tls.client_ca.empty()) {
    return absl::InvalidArgumentError(
        "tls_client_ca: client certificates need TLS: set tls_cert and tls_key too");
  }
  std::unique_ptr<HttpApiServer> server(new HttpApiServer(options, handlers));
  const webhook::ConnectionLimits limits{.max_connections = options.max_connections,
                                         .header_timeout = options.header_timeout,
                                         .max_header_bytes = options.max_header_bytes,
                                         .io_timeout = options.io_timeout,
                                         .keep_alive_timeout = options.keep_alive_timeout};
  std::function<bool(SSL_CTX&)> configure_tls;
  if (tls) {
    configure_tls = [pem = options.tls](SSL_CTX& ctx) { return ConfigureTls(pem, ctx); };
  }
  server->server_ = std::make_unique<webhook::GuardedHttpServer>(limits, configure_tls);
  if (!server->server_->is_valid()) {
    return absl::InvalidArgumentError(
        "tls_cert/tls_key/tls_client_ca: the HTTP API cannot use them (a PEM that does not "
        "parse, or a key that does not match the certificate)");
  }

  httplib::Server& http = *server->server_;
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would
  // let a second server share (and steal requests from) the port.
  http.set_socket_options([](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  http.set_payload_max_length(options.max_body_bytes);
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
        self->endpoints_.Serve(ApiRequest{method, request.path, request.body, deadline, peer});
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
  // request it cannot read) gets a google.rpc.Status body too.
  http.set_error_handler(
      [max_body = options.max_body_bytes](const httplib::Request&, httplib::Response& response) {
        if (!response.body.empty()) return;
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

  server->port_ = server->server_->Bind(host, port);
  if (server->port_ <= 0) {
    return absl::UnavailableError(
        absl::StrCat("http_address = ", options.address, ": cannot listen there"));
  }
  server->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  // stop() is a no-op until the loop runs: wait for it, so that a Stop()
  // right after Start() is never lost.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!http.is_running() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  return server;
}

void HttpApiServer::Stop() {
  if (server_ == nullptr) return;
  server_->stop();
  server_->CloseConnections();
}

void HttpApiServer::Wait() {
  if (thread_.joinable()) thread_.join();
  if (server_ != nullptr) server_->WaitForConnections();
}

HttpApiServer::~HttpApiServer() {
  Stop();
  Wait();
}

}  // namespace oomguard::http
