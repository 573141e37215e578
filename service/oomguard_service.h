// The oomguard.v1.Oomguard handlers: request -> core -> response, with every
// call timed, counted in the metrics and logged. Thin: resolution lives in
// request_resolution, estimation and admission in the core; call_loop feeds
// the calls in. Thread-safe.
#ifndef OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_
#define OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_

#include <vector>

#include "admission/gpu_catalog.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "oomguard/v1/service.pb.h"
#include "planner/planner.h"
#include "service/metrics.h"
#include "service/response_cache.h"

namespace oomguard::service {

struct ServiceConfig {
  GpuCatalog catalog = GpuCatalog::Builtin();
  // Policy.safety_margin when a CheckRequest leaves it unset.
  double default_safety_margin = 0.05;
  // One stderr line per request.
  bool log_requests = true;
  // Bound of the Check response cache (see response_cache.h); 0 disables it.
  size_t response_cache_bytes = size_t{64} << 20;
};

class OomguardService {
 public:
  // `metrics` must outlive the service.
  OomguardService(ServiceConfig config, ServiceMetrics* metrics);

  // Every handler works on serialized messages and parses its request
  // itself (see wire_message.h); Check also so that a response cache hit is
  // sent as stored.
  grpc::Status Estimate(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                        grpc::ByteBuffer* response);
  grpc::Status Check(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                     grpc::ByteBuffer* response);
  grpc::Status ListPresets(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                           grpc::ByteBuffer* response);
  grpc::Status ListGpus(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                        grpc::ByteBuffer* response);
  // Server streaming: the messages to send, in order (the candidates, best
  // first, then the summary); call_loop writes them one by one.
  grpc::Status Plan(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                    std::vector<grpc::ByteBuffer>* responses);

  // The Check computation itself (resolution, then the core), for
  // in-process callers such as the admission webhook: no cache, metrics or
  // log (the caller records its own). InvalidArgument for a bad request,
  // DeadlineExceeded once `deadline` passes.
  absl::Status RunCheck(const v1::CheckRequest& request, absl::Time deadline,
                        v1::CheckResponse* response);

  // The Plan computation itself (resolution, then the planner), for
  // in-process callers: no metrics or log. InvalidArgument for a bad request
  // (naming the field), ResourceExhausted beyond the planner's bound,
  // DeadlineExceeded once `deadline` passes.
  absl::Status RunPlan(const v1::PlanRequest& request, absl::Time deadline, PlanResult* result);

 private:
  // What a handler reports for the metrics and the log.
  struct Outcome {
    v1::Verdict verdict = v1::VERDICT_UNSPECIFIED;
    uint64_t peak_bytes = 0;
  };

  // Runs `handler` unless the call's deadline has passed, then maps its
  // status, records metrics and logs.
  template <typename Handler>
  grpc::Status Handle(Method method, grpc::ServerContext& context, Handler&& handler);

  const ServiceConfig config_;
  ServiceMetrics* const metrics_;
  ResponseCache check_cache_;
  v1::ListGpusResponse gpus_;  // Fixed at start.
};

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_OOMGUARD_SERVICE_H_
