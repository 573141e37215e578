// The service's requests, whatever transport brought them: each handler
// takes a request message and a deadline and returns the response message or
// an absl::Status naming the bad field; Handle runs one call under the
// service's rules (deadline, exception guard) and records it in the metrics
// and the log. The gRPC service (oomguard_service.h), the HTTP/JSON API
// (http/) and the admission webhook (webhook/) all call these, so all give
// the same answers and errors; each RPC's handler in the table of the
// service's methods (methods.h) calls one of them. Thread-safe.
#ifndef OOMGUARD_SERVICE_REQUEST_HANDLERS_H_
#define OOMGUARD_SERVICE_REQUEST_HANDLERS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "admission/gpu_catalog.h"
#include "common/deadline.h"
#include "grpcpp/support/status.h"
#include "oomguard/v1/service.pb.h"
#include "planner/plan_cache.h"
#include "planner/planner.h"
#include "service/cache_metrics.h"
#include "service/check_result_cache.h"
#include "service/feedback_metrics.h"
#include "service/learned_widening.h"
#include "service/metrics.h"
#include "service/report_auth.h"
#include "service/response_cache.h"
#include "store/check_store.h"

namespace oomguard::service {

struct ServiceConfig {
  GpuCatalog catalog = GpuCatalog::Builtin();
  // Policy.safety_margin when a CheckRequest leaves it unset. 0: the
  // estimate's own error is in the upper bound the verdict compares.
  double default_safety_margin = 0.0;
  // Policy.peak_bound when a CheckRequest leaves it unset (UNSPECIFIED
  // means UPPER).
  v1::PeakBound default_peak_bound = v1::PEAK_BOUND_UPPER;
  // Policy.judge_unmodelled when a CheckRequest leaves it unset: judge a job
  // with settings oomguard does not model as if they were absent (false:
  // UNIMPLEMENTED with the reason JOB_NOT_MODELLED).
  bool default_judge_unmodelled = false;
  // One stderr line per request.
  bool log_requests = true;
  // Bound of the Check response cache (see response_cache.h); 0 disables it.
  size_t response_cache_bytes = size_t{64} << 20;
  // Bound of the cache of Check answers by resolved job, GPU and options
  // (see check_result_cache.h); 0 disables it.
  size_t check_result_cache_bytes = size_t{16} << 20;
  // Bound of the cache of the plans behind a Check's alternatives
  // (planner/plan_cache.h); 0 disables it.
  size_t plan_cache_bytes = size_t{16} << 20;
  // The store of checks and what came back for them (--store); must outlive
  // the handlers. With one, every Check answered gets a check id and its
  // record is stored; without (nullptr), no ids, and Report and GetCheck
  // answer FAILED_PRECONDITION.
  store::CheckStore* store = nullptr;
  // CheckRecord.cluster (--cluster) and CheckRecord.oomguard_version.
  std::string cluster = {};
  std::string version = "unknown";
  // Who may Report (--report_tokens_file, mutual TLS,
  // --allow_unauthenticated_reports).
  ReportAuthOptions report_auth = {};
  // With a store: the cluster's widening of the bound learned from its
  // measured jobs (--learned_widening, --learned_widening_max;
  // learned_widening.h), relearned in the background and applied to a Check
  // where it or the request's Policy.learned_widening says.
  LearnedWideningOptions learned_widening = {};
};

// What a handler reports for the metrics and the log.
struct CallOutcome {
  v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
  uint64_t peak_bytes = 0;
};

// One call as its transport received it.
struct Call {
  // The `method` label of the metrics and the log: the name of an RPC in the
  // table of the service's methods (methods.h).
  absl::string_view method;
  Transport transport = Transport::kGrpc;
  // absl::InfiniteFuture() when the client set none.
  absl::Time deadline = absl::InfiniteFuture();
  // Who called, for the log (e.g. "ipv4:127.0.0.1:5", "http:127.0.0.1:5").
  absl::string_view peer;
};

class RequestHandlers {
 public:
  // `metrics` must outlive the handlers.
  RequestHandlers(ServiceConfig config, ServiceMetrics* metrics);

  // Runs `handler(deadline, outcome)` for `call` unless its deadline has
  // passed (DEADLINE_EXCEEDED), turns an exception into INTERNAL, records the
  // metrics and logs. The call's status as a client sees it (ToGrpcStatus,
  // status_mapping.h: error details included).
  grpc::Status Handle(
      const Call& call,
      absl::FunctionRef<absl::Status(absl::Time deadline, CallOutcome& outcome)> handler);

  absl::StatusOr<v1::EstimateResponse> Estimate(const v1::EstimateRequest& request,
                                                absl::Time deadline, CallOutcome& outcome) const;
  // The Check of the serialized CheckRequest `request_bytes`: from the
  // response cache when it holds them (see response_cache.h), else parsed
  // (InvalidArgument when they are not a CheckRequest), run and stored.
  absl::StatusOr<ResponseCache::Entry> Check(const std::string& request_bytes, absl::Time deadline,
                                             CallOutcome& outcome);
  // The Check computation itself (resolution, then the core, whose answer
  // for a job resolved before comes from the answers cache,
  // check_result_cache.h): no response cache, metrics or log. With a store,
  // the check's record goes into it with `handle` (how the job's
  // measurements are found later) and the response gets its check id.
  // InvalidArgument for a bad request or handle, DeadlineExceeded once
  // `deadline` passes, Unavailable once the work is stopped (StopWorkAt).
  absl::Status RunCheck(const v1::CheckRequest& request, absl::Time deadline,
                        v1::CheckResponse* response, const v1::JobHandle& handle = {}) const;
  // Who sent a Report carrying `credentials`: the reporter name its reports
  // are stored under, or Unauthenticated (report_auth.h).
  absl::StatusOr<std::string> AuthenticateReporter(const CallerCredentials& credentials) const;
  // Stores `request` (feedback::ValidateReport's rule) from `reporter` with
  // the record of its check; returns once it is durable, then observes it in
  // the feedback metrics (feedback_metrics.h). InvalidArgument
  // naming the bad field, NotFound for an unknown check id,
  // FailedPrecondition without a store. The caller authenticates (RPC
  // Report: AuthenticateReporter; oomguard's own readers name themselves).
  absl::StatusOr<v1::ReportResponse> Report(const v1::ReportRequest& request,
                                            absl::string_view reporter, absl::Time deadline);
  // The record of a check with its reports. InvalidArgument for a malformed
  // id, NotFound for an unknown one, FailedPrecondition without a store.
  absl::StatusOr<v1::CheckRecord> GetCheck(const v1::GetCheckRequest& request,
                                           absl::Time deadline) const;
  // The store (ServiceConfig::store); nullptr without one.
  store::CheckStore* store() const { return config_.store; }
  // The Plan computation itself (resolution, then the planner): no metrics
  // or log. InvalidArgument for a bad request (naming the field),
  // ResourceExhausted beyond the planner's bound, DeadlineExceeded once
  // `deadline` passes.
  absl::Status RunPlan(const v1::PlanRequest& request, absl::Time deadline,
                       PlanResult* result) const;
  v1::ListPresetsResponse ListPresets() const;
  const v1::ListGpusResponse& ListGpus() const { return gpus_; }

  // The lookups and contents of the three Check caches, for /metrics
  // (cache_metrics.h); it reads the caches, so the handlers must outlive
  // every use of it.
  std::shared_ptr<CacheMetrics> cache_metrics() const { return cache_metrics_; }

  // Work of every call still running at `when` stops there (the estimator
  // and admission check their deadline inside their loops) and answers
  // UNAVAILABLE: the server calls it with the end of its shutdown grace
  // period, so that a drain ends on time whatever is in flight.
  void StopWorkAt(absl::Time when) { stop_.StopAt(when); }

 private:
  // RunCheck's computation; with `record`, also the check's record (then
  // the estimate is computed with its report even where the request omits
  // it, and the answer is the same as without).
  absl::Status ComputeCheck(const v1::CheckRequest& request, absl::Time deadline,
                            v1::CheckResponse* response, v1::CheckRecord* record) const;
  // Stores `record` under a new check id with the time now and `handle`;
  // returns the id, or "" when the store refused it (the Check is answered
  // all the same, without an id: a report could not find it).
  std::string StoreCheck(v1::CheckRecord record, const v1::JobHandle& handle) const;

  // The Check response cache's key: the request's bytes, and with a store
  // the widening learned now, which a cached answer must not outlive.
  std::string CheckCacheKey(const std::string& request_bytes) const;

  const ServiceConfig config_;
  ServiceMetrics* const metrics_;
  // With a store: what came back against the estimate, in /metrics, and
  // the learned widening (before the caches, which read nothing of them).
  std::unique_ptr<FeedbackMetrics> feedback_metrics_;
  std::unique_ptr<LearnedWidening> learned_widening_;
  ResponseCache check_cache_;
  // Filled by the const RunCheck; thread-safe.
  mutable CheckResultCache check_results_;
  mutable PlanCache plan_cache_;
  std::shared_ptr<CacheMetrics> cache_metrics_;  // Reads the caches above.
  StopPoint stop_;
  v1::ListGpusResponse gpus_;  // Fixed at start.
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_REQUEST_HANDLERS_H_
