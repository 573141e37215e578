// The service's Prometheus metrics (see metrics.h).
#include "service/metrics.h"

#include <string>

#include "absl/strings/strip.h"
#include "prometheus/gauge.h"
#include "service/methods.h"
#include "service/status_mapping.h"

namespace oomguard::service {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

prometheus::Histogram::BucketBoundaries DurationBuckets() {
  return {50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 0.1, 0.25, 1};
}

// Around the common device sizes (40, 80, 141, 192 GiB).
prometheus::Histogram::BucketBoundaries PeakBuckets() {
  prometheus::Histogram::BucketBoundaries gib = {8,  16,  24,  32,  40,  48,  64,  80,
                                                 96, 128, 141, 160, 192, 256, 512, 1024};
  for (double& b : gib) b *= kGiB;
  return gib;
}

}  // namespace

absl::string_view TransportName(Transport transport) {
  switch (transport) {
    case Transport::kGrpc:
      return "grpc";
    case Transport::kHttp:
      return "http";
  }
  return "unknown";
}

ServiceMetrics::ServiceMetrics(absl::string_view version)
    : registry_(std::make_shared<prometheus::Registry>()), methods_(RpcMethods().size() + 1) {
  requests_family_ = &prometheus::BuildCounter()
                          .Name("oomguard_requests_total")
                          .Help("Requests handled, by method, status code and transport.")
                          .Register(*registry_);
  auto& duration = prometheus::BuildHistogram()
                       .Name("oomguard_request_duration_seconds")
                       .Help("Time to handle a request, in seconds, by method and transport.")
                       .Register(*registry_);
  for (size_t m = 0; m < RpcMethods().size(); ++m) methods_[m].name = RpcMethods()[m].name;
  methods_.back().name = kWebhookMethod;
  for (Method& method : methods_) {
    for (int t = 0; t < kNumTransports; ++t) {
      method.series[t].duration =
          &duration.Add({{"method", std::string(method.name)},
                         {"transport", std::string(TransportName(static_cast<Transport>(t)))}},
                        DurationBuckets());
    }
  }
  auto& verdicts = prometheus::BuildCounter()
                       .Name("oomguard_verdicts_total")
                       .Help("Check verdicts given.")
                       .Register(*registry_);
  for (int v = v1::VERDICT_FITS; v <= v1::Verdict_MAX; ++v) {
    verdicts_[v] = &verdicts.Add(
        {{"verdict", std::string(absl::StripPrefix(v1::Verdict_Name(v), "VERDICT_"))}});
  }
  estimated_peak_ = &prometheus::BuildHistogram()
                         .Name("oomguard_estimated_peak_bytes")
                         .Help(
                             "Estimated device peak of the worst rank, in bytes, of each "
                             "successful Estimate and Check.")
                         .Register(*registry_)
                         .Add({}, PeakBuckets());
  prometheus::BuildGauge()
      .Name("oomguard_build_info")
      .Help("Always 1; the labels say which build is running.")
      .Register(*registry_)
      .Add({{"version", std::string(version)}})
      .Set(1);
}

void ServiceMetrics::RecordRequest(absl::string_view method, Transport transport,
                                   grpc::StatusCode code, absl::Duration latency) {
  // A handful of short names: a scan is as quick as a hash.
  auto named = methods_.begin();
  while (named != methods_.end() && named->name != method) ++named;
  if (named == methods_.end()) return;  // Not a method of the table (methods_test checks).
  MethodSeries& series = named->series[static_cast<int>(transport)];
  series.duration->Observe(absl::ToDoubleSeconds(latency));
  const int c = static_cast<int>(code) < kNumCodes ? static_cast<int>(code)
                                                   : static_cast<int>(grpc::StatusCode::INTERNAL);
  prometheus::Counter* counter = series.requests[c].load(std::memory_order_acquire);
  if (counter == nullptr) {
    // Family::Add is thread-safe and returns the same series for the same
    // labels, so a race here only repeats the lookup.
    counter = &requests_family_->Add({{"method", std::string(method)},
                                      {"code", StatusCodeName(static_cast<grpc::StatusCode>(c))},
                                      {"transport", std::string(TransportName(transport))}});
    series.requests[c].store(counter, std::memory_order_release);
  }
  counter->Increment();
}

void ServiceMetrics::RecordVerdict(v1::Verdict verdict) {
  if (verdict > v1::VERDICT_UNSPECIFIED && verdict <= v1::Verdict_MAX) {
    verdicts_[verdict]->Increment();
  }
}

void ServiceMetrics::RecordEstimatedPeak(uint64_t peak_device_bytes) {
  estimated_peak_->Observe(static_cast<double>(peak_device_bytes));
}

}  // namespace oomguard::service
