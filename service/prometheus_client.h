// Prometheus's HTTP API as the DCGM reader (dcgm_reader.h) uses it: one
// instant query (GET <url>/api/v1/query?query=...) answered within a
// deadline and a size bound, over cpp-httplib (http or https; https verifies
// the server against the system's CAs). The body is returned as Prometheus
// wrote it, its errors included (HTTP 400, 422, 503 carry a JSON
// {"status":"error",...}), for dcgm_query.h to read.
#ifndef OOMGUARD_SERVICE_PROMETHEUS_CLIENT_H_
#define OOMGUARD_SERVICE_PROMETHEUS_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace httplib {
class Client;
}  // namespace httplib

namespace oomguard::service {

// A --prometheus_url: "http[s]://host[:port][/path prefix]" (the prefix of
// a Prometheus served under --web.route-prefix or behind a proxy).
struct PrometheusUrl {
  std::string scheme_host_port;  // "http://host:port", as httplib takes it.
  std::string path_prefix;       // "" or "/prefix", without a trailing '/'.
};

// `url`, the value of flag `flag`. InvalidArgument "flag = url: ..." for a
// scheme other than http or https, no host, a port that is not a number in
// 1..65535, a query or a fragment.
absl::StatusOr<PrometheusUrl> ParsePrometheusUrl(absl::string_view flag, absl::string_view url);

class PrometheusClient {
 public:
  // `url` as ParsePrometheusUrl reads it (for flag `flag`); answers longer
  // than `max_answer_bytes` are refused.
  static absl::StatusOr<std::unique_ptr<PrometheusClient>> Create(absl::string_view flag,
                                                                  absl::string_view url,
                                                                  size_t max_answer_bytes);
  ~PrometheusClient();

  // The body of the answer to the instant query `promql` (evaluated now):
  // for HTTP 200, and for 400, 422 and 503 (Prometheus's error answers).
  // Unavailable naming the URL when Prometheus cannot be reached, answers
  // another status, or the answer is not complete by `deadline`;
  // ResourceExhausted for an answer over the size bound; Cancelled once
  // Stop was called. One query at a time (the reader's thread).
  absl::StatusOr<std::string> Query(absl::string_view promql, absl::Time deadline);

  // Ends a query in flight at once and refuses every later one. Any thread.
  void Stop();

 private:
  PrometheusClient(PrometheusUrl url, size_t max_answer_bytes);

  const PrometheusUrl url_;
  const size_t max_answer_bytes_;
  std::unique_ptr<httplib::Client> client_;
  std::atomic<bool> stopped_{false};
  std::atomic<bool> in_flight_{false};  // A Query runs.
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_PROMETHEUS_CLIENT_H_
