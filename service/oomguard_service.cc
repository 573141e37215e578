// The oomguard.v1.Oomguard service (see oomguard_service.h).
#include "service/oomguard_service.h"

#include <chrono>
#include <string>
#include <utility>

#include "common/status_macros.h"
#include "service/wire_message.h"

namespace oomguard::service {
namespace {

absl::Time CallDeadline(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

OomguardService::OomguardService(ServiceConfig config, ServiceMetrics* metrics)
    : handlers_(std::move(config), metrics) {}

template <typename Handler>
grpc::Status OomguardService::Handle(Method method, grpc::ServerContext& context,
                                     Handler&& handler) {
  const std::string peer = context.peer();
  return handlers_.Handle(Call{.method = method,
                               .transport = Transport::kGrpc,
                               .deadline = CallDeadline(context),
                               .peer = peer},
                          handler);
}

grpc::Status OomguardService::Estimate(grpc::ServerContext& context,
                                       const grpc::ByteBuffer& request,
                                       grpc::ByteBuffer* response) {
  return Handle(Method::kEstimate, context,
                [&](absl::Time deadline, Outcome& outcome) -> absl::Status {
                  OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
                  v1::EstimateRequest parsed;
                  OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
                  OOMGUARD_ASSIGN_OR_RETURN(const v1::EstimateResponse estimated,
                                            handlers_.Estimate(parsed, deadline, outcome));
                  *response = SerializeResponse(estimated);
                  return absl::OkStatus();
                });
}

absl::Status OomguardService::RunCheck(const v1::CheckRequest& request, absl::Time deadline,
                                       v1::CheckResponse* response) {
  return handlers_.RunCheck(request, deadline, response);
}

grpc::Status OomguardService::Check(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                                    grpc::ByteBuffer* response) {
  return Handle(Method::kCheck, context,
                [&](absl::Time deadline, Outcome& outcome) -> absl::Status {
                  OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
                  OOMGUARD_ASSIGN_OR_RETURN(ResponseCache::Entry checked,
                                            handlers_.Check(request_bytes, deadline, outcome));
                  *response = grpc::ByteBuffer(&checked.response, 1);
                  return absl::OkStatus();
                });
}

grpc::Status OomguardService::Plan(grpc::ServerContext& context, const grpc::ByteBuffer& request,
                                   std::vector<grpc::ByteBuffer>* responses) {
  return Handle(Method::kPlan, context, [&](absl::Time deadline, Outcome&) -> absl::Status {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
    v1::PlanRequest parsed;
    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
    PlanResult plan;
    OOMGUARD_RETURN_IF_ERROR(handlers_.RunPlan(parsed, deadline, &plan));
    v1::PlanResponse message;
    for (v1::PlanCandidate& candidate : plan.candidates) {
      *message.mutable_candidate() = std::move(candidate);
      responses->push_back(SerializeResponse(message));
    }
    *message.mutable_summary() = std::move(plan.summary);
    responses->push_back(SerializeResponse(message));
    return absl::OkStatus();
  });
}

grpc::Status OomguardService::ListPresets(grpc::ServerContext& context,
                                          const grpc::ByteBuffer& request,
                                          grpc::ByteBuffer* response) {
  return Handle(Method::kListPresets, context, [&](absl::Time, Outcome&) -> absl::Status {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
    v1::ListPresetsRequest parsed;
    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
    *response = SerializeResponse(handlers_.ListPresets());
    return absl::OkStatus();
  });
}

grpc::Status OomguardService::ListGpus(grpc::ServerContext& context,
                                       const grpc::ByteBuffer& request,
                                       grpc::ByteBuffer* response) {
  return Handle(Method::kListGpus, context, [&](absl::Time, Outcome&) -> absl::Status {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, RequestBytes(request));
    v1::ListGpusRequest parsed;
    OOMGUARD_RETURN_IF_ERROR(ParseRequest(request_bytes, parsed));
    *response = SerializeResponse(handlers_.ListGpus());
    return absl::OkStatus();
  });
}

}  // namespace oomguard::service
