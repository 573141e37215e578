// The HTTP/JSON API's endpoints (see api_endpoints.h).
#include "http/api_endpoints.h"

#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/deterministic_bytes.h"
#include "common/status_macros.h"
#include "http/json_transcoding.h"
#include "http/script_check.h"
#include "service/methods.h"

namespace oomguard::http {

using service::CallOutcome;
using service::RequestHandlers;
using service::RpcMethod;

namespace {

// An RPC's request as JSON, in protobuf's mapping; a GET has no body (the
// empty request).
class JsonRequest final : public service::CallRequest {
 public:
  JsonRequest(const google::protobuf::Message& prototype, absl::string_view verb,
              const ApiCall& call)
      : prototype_(prototype), no_body_(verb == "GET"), call_(call) {}

  // A GET's request is its path parameters' fields (each a string field of
  // the request, the table's routes say which).
  absl::Status Parse(google::protobuf::Message& request) const override {
    if (!no_body_) return ParseJsonBody(call_.body, request);
    request.Clear();
    for (const PathField& path_field : call_.path_fields) {
      const google::protobuf::FieldDescriptor* field =
          request.GetDescriptor()->FindFieldByName(std::string(path_field.field));
      if (field == nullptr || field->type() != google::protobuf::FieldDescriptor::TYPE_STRING ||
          field->is_repeated()) {
        return absl::InternalError(absl::StrCat("path parameter {", path_field.field,
                                                "}: not a string field of ",
                                                request.GetTypeName()));
      }
      request.GetReflection()->SetString(&request, field, std::string(path_field.value));
    }
    return absl::OkStatus();
  }
  // The same job sent as JSON or over gRPC has the same bytes (and so shares
  // its response cache entry).
  absl::StatusOr<std::string> Bytes() const override {
    const std::unique_ptr<google::protobuf::Message> request(prototype_.New());
    OOMGUARD_RETURN_IF_ERROR(Parse(*request));
    return DeterministicBytes(*request);
  }
  service::CallerCredentials Credentials() const override { return call_.credentials; }

 private:
  const google::protobuf::Message& prototype_;
  const bool no_body_;
  const ApiCall& call_;
};

// An RPC's responses as JSON.
class JsonResponses final : public service::CallResponses {
 public:
  explicit JsonResponses(const google::protobuf::Message& prototype) : prototype_(prototype) {}

  void Add(const google::protobuf::Message& response) override {
    json_.push_back(ToJson(response));
  }
  void AddSerialized(const grpc::Slice& response) override {
    const std::unique_ptr<google::protobuf::Message> parsed(prototype_.New());
    if (!parsed->ParseFromArray(response.begin(), static_cast<int>(response.size()))) {
      status_ = absl::InternalError(
          absl::StrCat("a stored ", prototype_.GetTypeName(), " does not parse"));
      return;
    }
    Add(*parsed);
  }

  // The messages' JSON, each in the order added; InternalError for a stored
  // one that did not parse.
  absl::StatusOr<std::vector<std::string>> Take() && {
    if (!status_.ok()) return status_;
    return std::move(json_);
  }

 private:
  const google::protobuf::Message& prototype_;
  std::vector<std::string> json_;
  absl::Status status_;
};

// One call of `rpc`: the request body in protobuf's JSON mapping in, the
// response's JSON out; a server stream as Envoy's gRPC-JSON transcoder maps
// it: one JSON array of the messages, in order.
absl::Status CallRpc(const RpcMethod& rpc, RequestHandlers& handlers, const ApiCall& call,
                     absl::Time deadline, CallOutcome& outcome, std::string& json) {
  const google::protobuf::MethodDescriptor& declared = service::Declaration(rpc);
  google::protobuf::MessageFactory& types = *google::protobuf::MessageFactory::generated_factory();
  const JsonRequest request(*types.GetPrototype(declared.input_type()), rpc.http.verb, call);
  JsonResponses responses(*types.GetPrototype(declared.output_type()));
  OOMGUARD_RETURN_IF_ERROR(rpc.handler(handlers, request, deadline, outcome, responses));
  OOMGUARD_ASSIGN_OR_RETURN(std::vector<std::string> messages, std::move(responses).Take());
  if (!declared.server_streaming()) {
    if (messages.size() != 1) {
      return absl::InternalError(absl::StrCat(rpc.name, " answered other than one message"));
    }
    json = std::move(messages.front());
    return absl::OkStatus();
  }
  nlohmann::json array = nlohmann::json::array();
  for (const std::string& message : messages) array.push_back(nlohmann::json::parse(message));
  json = DumpJson(array);
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

// CheckScriptRequest -> {"request": the CheckRequest read from the script,
// "response": its CheckResponse, "scriptNotes": what the reader noticed}.
absl::Status CheckScript(RequestHandlers& handlers, const ApiCall& call, absl::Time deadline,
                         CallOutcome& outcome, std::string& json) {
  v1::CheckScriptRequest request;
  OOMGUARD_RETURN_IF_ERROR(ParseJsonBody(call.body, request));
  OOMGUARD_ASSIGN_OR_RETURN(const ScriptCheck script, ReadScriptCheck(request, Deadline(deadline)));
  OOMGUARD_ASSIGN_OR_RETURN(const v1::CheckResponse response,
                            RunCheck(handlers, script.request, deadline, outcome));
  nlohmann::json answer = {{"request", nlohmann::json::parse(ToJson(script.request))},
                           {"response", nlohmann::json::parse(ToJson(response))},
                           {"scriptNotes", script.notes}};
  json = DumpJson(answer);
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

std::optional<HttpAnswer> UnsupportedContentType(absl::string_view content_type) {
  const absl::string_view media_type =
      absl::StripAsciiWhitespace(content_type.substr(0, content_type.find(';')));
  if (!absl::EqualsIgnoreCase(media_type, "application/x-www-form-urlencoded") &&
      !absl::EqualsIgnoreCase(media_type, "multipart/form-data")) {
    return std::nullopt;
  }
  return JsonAnswer(
      415, ErrorJson(grpc::Status(
               grpc::StatusCode::INVALID_ARGUMENT,
               absl::StrCat("Content-Type: ", media_type,
                            ": the API reads JSON; send the body unchanged with Content-Type: "
                            "application/json (curl: -H 'Content-Type: application/json' "
                            "--data-binary @request.json)"))));
}

HttpAnswer MethodNotAllowed(absl::string_view method, absl::string_view path,
                            absl::string_view allow) {
  HttpAnswer answer = JsonAnswer(
      405, ErrorJson(grpc::Status(grpc::StatusCode::UNIMPLEMENTED,
                                  absl::StrCat(path, " takes ", allow, ", not ", method))));
  answer.allow = std::string(allow);
  return answer;
}

ApiEndpoints::ApiEndpoints(RequestHandlers* handlers, net::CallLimiter* limiter)
    : handlers_(handlers), limiter_(limiter) {
  for (const RpcMethod& rpc : service::RpcMethods()) {
    endpoints_.push_back(
        {rpc.http.path, rpc.http.verb, rpc.name,
         [&rpc](RequestHandlers& h, const ApiCall& call, absl::Time deadline, CallOutcome& outcome,
                std::string& json) { return CallRpc(rpc, h, call, deadline, outcome, json); }});
  }
  // The API's own endpoints.
  const Endpoint own[] = {
      {"/v1/check_script", "POST", "Check", &CheckScript},
  };
  endpoints_.insert(endpoints_.end(), std::begin(own), std::end(own));
}

std::optional<std::vector<PathField>> MatchPath(absl::string_view pattern, absl::string_view path) {
  const std::vector<absl::string_view> want = absl::StrSplit(pattern, '/');
  const std::vector<absl::string_view> got = absl::StrSplit(path, '/');
  if (want.size() != got.size()) return std::nullopt;
  std::vector<PathField> fields;
  for (size_t i = 0; i < want.size(); ++i) {
    absl::string_view field = want[i];
    if (absl::ConsumePrefix(&field, "{") && absl::ConsumeSuffix(&field, "}")) {
      if (got[i].empty()) return std::nullopt;
      fields.push_back({field, got[i]});
    } else if (want[i] != got[i]) {
      return std::nullopt;
    }
  }
  return fields;
}

std::optional<HttpAnswer> ApiEndpoints::Serve(const ApiRequest& request) {
  for (const Endpoint& endpoint : endpoints_) {
    std::optional<std::vector<PathField>> fields = MatchPath(endpoint.path, request.path);
    if (!fields) continue;
    if (endpoint.http_method != request.method) {
      return MethodNotAllowed(request.method, request.path, endpoint.http_method);
    }
    return Run(endpoint, request, *std::move(fields));
  }
  return std::nullopt;
}

HttpAnswer ApiEndpoints::Run(const Endpoint& endpoint, const ApiRequest& request,
                             std::vector<PathField> path_fields) {
  const ApiCall call{request.body, std::move(path_fields), request.credentials};
  std::string json;
  const grpc::Status status =
      handlers_->Handle(service::Call{.method = endpoint.method,
                                      .transport = service::Transport::kHttp,
                                      .deadline = request.deadline,
                                      .peer = request.peer},
                        [&](absl::Time deadline, CallOutcome& outcome) -> absl::Status {
                          OOMGUARD_RETURN_IF_ERROR(limiter_->Acquire(deadline));
                          const absl::Cleanup release = [this] { limiter_->Release(); };
                          return endpoint.call(*handlers_, call, deadline, outcome, json);
                        });
  if (!status.ok()) {
    return JsonAnswer(HttpStatusOf(status.error_code()), ErrorJson(status));
  }
  return JsonAnswer(200, std::move(json));
}

}  // namespace oomguard::http
