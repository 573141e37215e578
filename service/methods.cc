// The table of the service's methods (see methods.h).
#include "service/methods.h"

#include <string>
#include <utility>
#include <vector>

#include "common/status_macros.h"
#include "oomguard/v1/service.pb.h"
#include "service/request_handlers.h"

namespace oomguard::service {
namespace {

absl::Status Estimate(RequestHandlers& handlers, const CallRequest& request, absl::Time deadline,
                      CallOutcome& outcome, CallResponses& responses) {
  v1::EstimateRequest parsed;
  OOMGUARD_RETURN_IF_ERROR(request.Parse(parsed));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::EstimateResponse estimated,
                            handlers.Estimate(parsed, deadline, outcome));
  responses.Add(estimated);
  return absl::OkStatus();
}

// Through the response cache: the request's bytes are its key, and a hit is
// answered with the bytes stored.
absl::Status Check(RequestHandlers& handlers, const CallRequest& request, absl::Time deadline,
                   CallOutcome& outcome, CallResponses& responses) {
  OOMGUARD_ASSIGN_OR_RETURN(const std::string request_bytes, request.Bytes());
  OOMGUARD_ASSIGN_OR_RETURN(const ResponseCache::Entry checked,
                            handlers.Check(request_bytes, deadline, outcome));
  responses.AddSerialized(checked.response);
  return absl::OkStatus();
}

// Server streaming: the candidates, best first, then the summary.
absl::Status Plan(RequestHandlers& handlers, const CallRequest& request, absl::Time deadline,
                  CallOutcome&, CallResponses& responses) {
  v1::PlanRequest parsed;
  OOMGUARD_RETURN_IF_ERROR(request.Parse(parsed));
  PlanResult plan;
  OOMGUARD_RETURN_IF_ERROR(handlers.RunPlan(parsed, deadline, &plan));
  v1::PlanResponse message;
  for (v1::PlanCandidate& candidate : plan.candidates) {
    *message.mutable_candidate() = std::move(candidate);
    responses.Add(message);
  }
  *message.mutable_summary() = std::move(plan.summary);
  responses.Add(message);
  return absl::OkStatus();
}

absl::Status ListPresets(RequestHandlers& handlers, const CallRequest& request, absl::Time,
                         CallOutcome&, CallResponses& responses) {
  v1::ListPresetsRequest parsed;
  OOMGUARD_RETURN_IF_ERROR(request.Parse(parsed));
  responses.Add(handlers.ListPresets());
  return absl::OkStatus();
}

absl::Status ListGpus(RequestHandlers& handlers, const CallRequest& request, absl::Time,
                      CallOutcome&, CallResponses& responses) {
  v1::ListGpusRequest parsed;
  OOMGUARD_RETURN_IF_ERROR(request.Parse(parsed));
  responses.Add(handlers.ListGpus());
  return absl::OkStatus();
}

// Authenticated (report_auth.h), then stored.
absl::Status Report(RequestHandlers& handlers, const CallRequest& request, absl::Time deadline,
                    CallOutcome&, CallResponses& responses) {
  OOMGUARD_ASSIGN_OR_RETURN(const std::string reporter,
                            handlers.AuthenticateReporter(request.Credentials()));
  v1::ReportRequest parsed;
  OOMGUARD_RETURN_IF_ERROR(request.Parse(parsed));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::ReportResponse stored,
                            handlers.Report(parsed, reporter, deadline));
  responses.Add(stored);
  return absl::OkStatus();
}

absl::Status GetCheck(RequestHandlers& handlers, const CallRequest& request, absl::Time deadline,
                      CallOutcome&, CallResponses& responses) {
  v1::GetCheckRequest parsed;
  OOMGUARD_RETURN_IF_ERROR(request.Parse(parsed));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::CheckRecord record, handlers.GetCheck(parsed, deadline));
  responses.Add(record);
  return absl::OkStatus();
}

// The table.
constexpr RpcMethod kRpcMethods[] = {
    {"Estimate", &Estimate, {"POST", "/v1/estimate"}},
    {"Check", &Check, {"POST", "/v1/check"}},
    {"Plan", &Plan, {"POST", "/v1/plan"}},
    {"ListPresets", &ListPresets, {"GET", "/v1/presets"}},
    {"ListGpus", &ListGpus, {"GET", "/v1/gpus"}},
    {"Report", &Report, {"POST", "/v1/report"}},
    {"GetCheck", &GetCheck, {"GET", "/v1/checks/{check_id}"}},
};

}  // namespace

absl::Span<const RpcMethod> RpcMethods() { return kRpcMethods; }

const google::protobuf::MethodDescriptor& Declaration(const RpcMethod& method) {
  // Looked up once: the call loop asks at every call it awaits.
  static const std::vector<const google::protobuf::MethodDescriptor*> declared = [] {
    const google::protobuf::ServiceDescriptor& service =
        *v1::EstimateRequest::descriptor()->file()->FindServiceByName("Oomguard");
    std::vector<const google::protobuf::MethodDescriptor*> methods;
    for (const RpcMethod& row : kRpcMethods) {
      methods.push_back(service.FindMethodByName(std::string(row.name)));
    }
    return methods;
  }();
  return *declared[static_cast<size_t>(&method - kRpcMethods)];
}

}  // namespace oomguard::service
