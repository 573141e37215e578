// The HTTP/JSON API's endpoints (see api_endpoints.h).
#include "http/api_endpoints.h"

#include <nlohmann/json.hpp>
#include <string>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "common/deterministic_bytes.h"
#include "common/status_macros.h"
#include "http/json_transcoding.h"
#include "http/script_check.h"

namespace oomguard::http {

using service::CallOutcome;
using service::Method;
using service::RequestHandlers;

// One endpoint: its path, HTTP method, the service method it counts as,
// and the call: request body in, response JSON out.
struct ApiEndpoints::Endpoint {
  absl::string_view path;
  absl::string_view http_method;
  Method method;
  absl::Status (*call)(RequestHandlers& handlers, absl::string_view body, absl::Time deadline,
                       CallOutcome& outcome, std::string& json);
};

namespace {

absl::Status Estimate(RequestHandlers& handlers, absl::string_view body, absl::Time deadline,
                      CallOutcome& outcome, std::string& json) {
  v1::EstimateRequest request;
  OOMGUARD_RETURN_IF_ERROR(ParseJsonBody(body, request));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::EstimateResponse response,
                            handlers.Estimate(request, deadline, outcome));
  json = ToJson(response);
  return absl::OkStatus();
}

// The Check of `request`, through the response cache.
absl::StatusOr<v1::CheckResponse> RunCheck(RequestHandlers& handlers,
                                           const v1::CheckRequest& request, absl::Time deadline,
                                           CallOutcome& outcome) {
  // The cache key: the request's deterministic encoding (the same job sent
  // as JSON or over gRPC shares its entry).
  OOMGUARD_ASSIGN_OR_RETURN(const service::ResponseCache::Entry checked,
                            handlers.Check(DeterministicBytes(request), deadline, outcome));
  v1::CheckResponse response;
  if (!response.ParseFromArray(checked.response.begin(),
                               static_cast<int>(checked.response.size()))) {
    return absl::InternalError("a stored Check response does not parse");
  }
  return response;
}

absl::Status Check(RequestHandlers& handlers, absl::string_view body, absl::Time deadline,
                   CallOutcome& outcome, std::string& json) {
  v1::CheckRequest request;
  OOMGUARD_RETURN_IF_ERROR(ParseJsonBody(body, request));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::CheckResponse response,
                            RunCheck(handlers, request, deadline, outcome));
  json = ToJson(response);
  return absl::OkStatus();
}

// CheckScriptRequest -> {"request": the CheckRequest read from the script,
// "response": its CheckResponse, "scriptNotes": what the reader noticed}.
absl::Status CheckScript(RequestHandlers& handlers, absl::string_view body, absl::Time deadline,
                         CallOutcome& outcome, std::string& json) {
  v1::CheckScriptRequest request;
  OOMGUARD_RETURN_IF_ERROR(ParseJsonBody(body, request));
  OOMGUARD_ASSIGN_OR_RETURN(const ScriptCheck script, ReadScriptCheck(request));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::CheckResponse response,
                            RunCheck(handlers, script.request, deadline, outcome));
  nlohmann::json answer = {{"request", nlohmann::json::parse(ToJson(script.request))},
                           {"response", nlohmann::json::parse(ToJson(response))},
                           {"scriptNotes", script.notes}};
  json = answer.dump();
  return absl::OkStatus();
}

// The server-streaming Plan as Envoy's gRPC-JSON transcoder maps a stream:
// one JSON array of the PlanResponse messages, in order (the candidates, best
// first, then the summary).
absl::Status Plan(RequestHandlers& handlers, absl::string_view body, absl::Time deadline,
                  CallOutcome&, std::string& json) {
  v1::PlanRequest request;
  OOMGUARD_RETURN_IF_ERROR(ParseJsonBody(body, request));
  PlanResult plan;
  OOMGUARD_RETURN_IF_ERROR(handlers.RunPlan(request, deadline, &plan));
  nlohmann::json messages = nlohmann::json::array();
  v1::PlanResponse message;
  for (v1::PlanCandidate& candidate : plan.candidates) {
    *message.mutable_candidate() = std::move(candidate);
    messages.push_back(nlohmann::json::parse(ToJson(message)));
  }
  *message.mutable_summary() = std::move(plan.summary);
  messages.push_back(nlohmann::json::parse(ToJson(message)));
  json = messages.dump();
  return absl::OkStatus();
}

absl::Status ListPresets(RequestHandlers& handlers, absl::string_view, absl::Time, CallOutcome&,
                         std::string& json) {
  json = ToJson(handlers.ListPresets());
  return absl::OkStatus();
}

absl::Status ListGpus(RequestHandlers& handlers, absl::string_view, absl::Time, CallOutcome&,
                      std::string& json) {
  json = ToJson(handlers.ListGpus());
  return absl::OkStatus();
}

}  // namespace

HttpAnswer JsonAnswer(int status, std::string body) {
  HttpAnswer answer;
  answer.status = status;
  answer.body = std::move(body);
  return answer;
}

HttpAnswer NotFound(absl::string_view path) {
  return JsonAnswer(404, ErrorJson(grpc::Status(grpc::StatusCode::NOT_FOUND,
                                                absl::StrCat("no such path: ", path))));
}

HttpAnswer MethodNotAllowed(absl::string_view method, absl::string_view path,
                            absl::string_view allow) {
  HttpAnswer answer = JsonAnswer(
      405, ErrorJson(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                  absl::StrCat(path, " takes ", allow, ", not ", method))));
  answer.allow = std::string(allow);
  return answer;
}

std::optional<HttpAnswer> ApiEndpoints::Serve(const ApiRequest& request) {
  static constexpr Endpoint kEndpoints[] = {
      {"/v1/estimate", "POST", Method::kEstimate, &Estimate},
      {"/v1/check", "POST", Method::kCheck, &Check},
      {"/v1/check_script", "POST", Method::kCheck, &CheckScript},
      {"/v1/presets", "GET", Method::kListPresets, &ListPresets},
      {"/v1/gpus", "GET", Method::kListGpus, &ListGpus},
      {"/v1/plan", "POST", Method::kPlan, &Plan},
  };
  for (const Endpoint& endpoint : kEndpoints) {
    if (endpoint.path != request.path) continue;
    if (endpoint.http_method != request.method) {
      return MethodNotAllowed(request.method, request.path, endpoint.http_method);
    }
    return Run(endpoint, request);
  }
  return std::nullopt;
}

HttpAnswer ApiEndpoints::Run(const Endpoint& endpoint, const ApiRequest& request) {
  std::string json;
  const grpc::Status status =
      handlers_->Handle(service::Call{.method = endpoint.method,
                                      .transport = service::Transport::kHttp,
                                      .deadline = request.deadline,
                                      .peer = request.peer},
                        [&](absl::Time deadline, CallOutcome& outcome) -> absl::Status {
                          OOMGUARD_RETURN_IF_ERROR(limiter_->Acquire(deadline));
                          const absl::Cleanup release = [this] { limiter_->Release(); };
                          return endpoint.call(*handlers_, request.body, deadline, outcome, json);
                        });
  if (!status.ok()) {
    return JsonAnswer(HttpStatusOf(status.error_code()), ErrorJson(status));
  }
  return JsonAnswer(200, std::move(json));
}

}  // namespace oomguard::http
