// The service's Prometheus metrics (prometheus-cpp): request counts and
// latency per method and status code, verdict counts, the distribution of
// estimated peaks, and the build info. Label sets are small and fixed:
// `method` is an RPC's name from the table of the service's methods
// (methods.h) or "Webhook" (the admission webhook's reviews).
// `transport` says how a request came: "grpc" (the gRPC API) or "http" (the
// HTTP/JSON API, http/, and the admission webhook); `code` is the canonical
// status code the handler answered with, whatever the transport turned it
// into (an HTTP status for http).
//
//   oomguard_requests_total{method,code,transport}            counter
//   oomguard_request_duration_seconds{method,transport}       histogram
//   oomguard_verdicts_total{verdict}                counter
//   oomguard_estimated_peak_bytes                   histogram
//   oomguard_build_info{version}                    gauge, always 1
// The Check caches' series come from cache_metrics.h, read at each scrape.
#ifndef OOMGUARD_SERVICE_METRICS_H_
#define OOMGUARD_SERVICE_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "oomguard/v1/admission.pb.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace oomguard::service {

// How a request reached the service.
enum class Transport { kGrpc, kHttp };
inline constexpr int kNumTransports = 2;

// "grpc" or "http": the metric label.
absl::string_view TransportName(Transport transport);

// Thread-safe; recording costs a few atomic operations.
class ServiceMetrics {
 public:
  // The series of every RPC in RpcMethods() (methods.h) and of the webhook.
  explicit ServiceMetrics(absl::string_view version);

  // `method`: the name of one of those RPCs, or kWebhookMethod.
  void RecordRequest(absl::string_view method, Transport transport, grpc::StatusCode code,
                     absl::Duration latency);
  // One successful Check (RPC or webhook).
  void RecordVerdict(v1::Verdict verdict);
  // The worst rank's peak of one successful Estimate or Check.
  void RecordEstimatedPeak(uint64_t peak_device_bytes);

  // What the /metrics endpoint serves.
  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  static constexpr int kNumCodes = 17;  // gRPC status codes 0..16.

  // The series of one method over one transport.
  struct MethodSeries {
    prometheus::Histogram* duration = nullptr;
    // Created on first use so that only codes that happened are exported.
    std::array<std::atomic<prometheus::Counter*>, kNumCodes> requests{};
  };
  // The series of one method, by transport.
  struct Method {
    absl::string_view name;
    std::array<MethodSeries, kNumTransports> series;
  };

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_family_;
  // The RPCs', in the table's order, then the webhook's; fixed at start.
  std::vector<Method> methods_;
  std::array<prometheus::Counter*, v1::Verdict_ARRAYSIZE> verdicts_{};
  prometheus::Histogram* estimated_peak_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_METRICS_H_
