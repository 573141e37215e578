// The service's Prometheus metrics (prometheus-cpp): request counts and
// latency per method and status code, verdict counts, the distribution of
// estimated peaks, and the build info. Label sets are small and fixed.
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

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "oomguard/v1/admission.pb.h"
#include "prometheus/counter.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace oomguard::service {

// The RPCs of oomguard.v1.Oomguard, and the Kubernetes admission webhook
// (POST /validate, webhook/webhook_server.h).
enum class Method { kEstimate, kCheck, kListPresets, kListGpus, kWebhook, kPlan };
inline constexpr int kNumMethods = 6;

// "Estimate", "Check", ...: the RPC name; "Webhook" for the webhook.
absl::string_view MethodName(Method method);

// How a request reached the service.
enum class Transport { kGrpc, kHttp };
inline constexpr int kNumTransports = 2;

// "grpc" or "http": the metric label.
absl::string_view TransportName(Transport transport);

// Thread-safe; recording costs a few atomic operations.
class ServiceMetrics {
 public:
  explicit ServiceMetrics(absl::string_view version);

  void RecordRequest(Method method, Transport transport, grpc::StatusCode code,
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

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>* requests_family_;
  std::array<std::array<MethodSeries, kNumTransports>, kNumMethods> methods_;
  std::array<prometheus::Counter*, v1::Verdict_ARRAYSIZE> verdicts_{};
  prometheus::Histogram* estimated_peak_;
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_METRICS_H_
