#include "service/prometheus_client.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "httplib.h"

namespace oomguard::service {
namespace {

absl::Status BadUrl(absl::string_view flag, absl::string_view url, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(flag, " = ", url, ": ", why));
}

// The time left until `deadline`, at least a millisecond, as httplib takes it.
std::chrono::microseconds Left(absl::Time deadline) {
  return absl::ToChronoMicroseconds(std::max(deadline - absl::Now(), absl::Milliseconds(1)));
}

}  // namespace

absl::StatusOr<PrometheusUrl> ParsePrometheusUrl(absl::string_view flag, absl::string_view url) {
  absl::string_view rest = url;
  std::string scheme;
  if (absl::ConsumePrefix(&rest, "http://")) {
    scheme = "http";
  } else if (absl::ConsumePrefix(&rest, "https://")) {
    scheme = "https";
  } else {
    return BadUrl(flag, url, "expected http://host:port or https://host:port");
  }
  if (rest.find_first_of("?#") != absl::string_view::npos) {
    return BadUrl(flag, url, "a query or fragment has no place in Prometheus's base URL");
  }
  const size_t slash = rest.find('/');
  const absl::string_view authority = rest.substr(0, slash);
  absl::string_view path = slash == absl::string_view::npos ? "" : rest.substr(slash);
  // The port follows the last ':' outside an IPv6 address's brackets.
  const size_t bracket = authority.rfind(']');
  const size_t colon = authority.rfind(':');
  const bool has_port =
      colon != absl::string_view::npos && (bracket == absl::string_view::npos || colon > bracket);
  const absl::string_view host = has_port ? authority.substr(0, colon) : authority;
  if (host.empty() || host == "[]") return BadUrl(flag, url, "no host");
  if (authority.find_first_of("@ ") != absl::string_view::npos) {
    return BadUrl(flag, url, "expected host[:port] after the scheme");
  }
  if (has_port) {
    int port = 0;
    if (!absl::SimpleAtoi(authority.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return BadUrl(flag, url, "the port must be a number in 1..65535");
    }
  }
  while (absl::ConsumeSuffix(&path, "/")) {
  }
  return PrometheusUrl{.scheme_host_port = absl::StrCat(scheme, "://", authority),
                       .path_prefix = std::string(path)};
}

PrometheusClient::PrometheusClient(PrometheusUrl url, size_t max_answer_bytes)
    : url_(std::move(url)),
      max_answer_bytes_(max_answer_bytes),
      client_(std::make_unique<httplib::Client>(url_.scheme_host_port)) {}

PrometheusClient::~PrometheusClient() = default;

absl::StatusOr<std::unique_ptr<PrometheusClient>> PrometheusClient::Create(
    absl::string_view flag, absl::string_view url, size_t max_answer_bytes) {
  absl::StatusOr<PrometheusUrl> parsed = ParsePrometheusUrl(flag, url);
  if (!parsed.ok()) return parsed.status();
  std::unique_ptr<PrometheusClient> client(
      new PrometheusClient(*std::move(parsed), max_answer_bytes));
  if (!client->client_->is_valid()) {
    return BadUrl(flag, url, "not a URL the HTTP client can reach");
  }
  client->client_->set_keep_alive(true);
  return client;
}

absl::StatusOr<std::string> PrometheusClient::Query(absl::string_view promql, absl::Time deadline) {
  // Marked before stopped_ is read: Stop sees either the mark or its own
  // stopped_ here.
  in_flight_.store(true);
  absl::Cleanup done = [this] { in_flight_.store(false); };
  if (stopped_.load()) return absl::CancelledError("prometheus: the reader is stopping");
  const std::string where = absl::StrCat(url_.scheme_host_port, url_.path_prefix, "/api/v1/query");
  client_->set_connection_timeout(Left(deadline));
  client_->set_read_timeout(Left(deadline));
  client_->set_write_timeout(Left(deadline));
  int http_status = 0;
  std::string body;
  bool too_long = false;
  bool too_late = false;
  httplib::Result result = client_->Get(
      absl::StrCat(url_.path_prefix, "/api/v1/query"),
      httplib::Params{{"query", std::string(promql)}},
      httplib::Headers{{"Accept", "application/json"}},
      [&](const httplib::Response& response) {
        http_status = response.status;
        return true;
      },
      [&](const char* data, size_t size) {
        if (body.size() + size > max_answer_bytes_) {
          too_long = true;
          return false;
        }
        body.append(data, size);
        too_late = absl::Now() > deadline;
        return !too_late && !stopped_.load();
      });
  if (stopped_.load()) return absl::CancelledError("prometheus: the reader is stopping");
  if (too_long) {
    return absl::ResourceExhaustedError(
        absl::StrCat("prometheus: ", where, " answered more than ", max_answer_bytes_, " bytes"));
  }
  if (too_late) {
    return absl::UnavailableError(absl::StrCat("prometheus: ", where, " did not answer in time"));
  }
  if (!result) {
    return absl::UnavailableError(
        absl::StrCat("prometheus: ", where, ": ", httplib::to_string(result.error())));
  }
  if (http_status != 200 && http_status != 400 && http_status != 422 && http_status != 503) {
    return absl::UnavailableError(
        absl::StrCat("prometheus: ", where, " answered HTTP ", http_status));
  }
  return body;
}

void PrometheusClient::Stop() {
  stopped_.store(true);
  // httplib's stop shuts the socket of a request in flight; a query that
  // has not opened its socket yet when it is called opens it after, so it
  // is called again until the query is over.
  client_->stop();
  while (in_flight_.load()) {
    absl::SleepFor(absl::Milliseconds(5));
    client_->stop();
  }
}

}  // namespace oomguard::service
