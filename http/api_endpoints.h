// The HTTP/JSON API's endpoints, transport-free: an HTTP method, path and
// body in, the HTTP answer out, each call run by the service's own handlers
// (service/request_handlers.h: same validation, errors, cache, metrics
// labelled transport="http", and log) with protobuf's JSON mapping of the
// same messages (json_transcoding.h). Each RPC's verb and path come from the
// table of the service's methods (service/methods.h); /v1/check_script is
// the API's own.
//
//   POST /v1/estimate  EstimateRequest -> EstimateResponse
//   POST /v1/check     CheckRequest    -> CheckResponse
//   POST /v1/check_script  CheckScriptRequest -> the CheckRequest read
//                      from the script and its CheckResponse (script_check.h)
//   GET  /v1/presets   ListPresetsResponse
//   GET  /v1/gpus      ListGpusResponse
//   POST /v1/plan      PlanRequest     -> a JSON array of the streamed
//                      PlanResponse messages (as Envoy's transcoder maps a
//                      server stream): the candidates, then the summary
//   POST /v1/report    ReportRequest   -> ReportResponse (authenticated:
//                      `Authorization: Bearer TOKEN` or a client
//                      certificate; 401 otherwise)
//   GET  /v1/checks/{check_id}  CheckRecord
//
// A failed call answers the JSON of a google.rpc.Status under the
// HTTP status of its code (400 naming the field, 503 overloaded, 504 past
// its deadline); a known path with another method 405 (with Allow); a body
// in a form encoding 415.
#ifndef OOMGUARD_HTTP_API_ENDPOINTS_H_
#define OOMGUARD_HTTP_API_ENDPOINTS_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "net/call_limiter.h"
#include "service/request_handlers.h"

namespace oomguard::http {

struct ApiRequest {
  absl::string_view method = {};  // "GET", "POST", ...
  absl::string_view path = {};
  absl::string_view body = {};
  absl::Time deadline = absl::InfiniteFuture();
  absl::string_view peer = {};  // For the log.
  // Who sent it (service/report_auth.h): the Authorization header, and the
  // common name of the client certificate TLS verified.
  service::CallerCredentials credentials = {};
};

// A path parameter's field and the path segment it took.
struct PathField {
  absl::string_view field;
  absl::string_view value;
};

// The fields of `path` when it matches `pattern` (whose segments "{field}"
// take any one non-empty segment); nullopt when it does not match.
std::optional<std::vector<PathField>> MatchPath(absl::string_view pattern, absl::string_view path);

// What an endpoint's call reads of its request.
struct ApiCall {
  absl::string_view body;
  std::vector<PathField> path_fields;
  const service::CallerCredentials& credentials;
};

struct HttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;  // The Allow header of a 405.
};

// A JSON answer.
HttpAnswer JsonAnswer(int status, std::string body);

// The answer to a request for no known path (404) or a known path with a
// method it does not take (405, naming `allow`), as a google.rpc.Status JSON.
HttpAnswer NotFound(absl::string_view path);
HttpAnswer MethodNotAllowed(absl::string_view method, absl::string_view path,
                            absl::string_view allow);

// 415 for a request whose Content-Type is a form encoding
// (application/x-www-form-urlencoded, what `curl -d` sends without -H, or
// multipart/form-data), naming it and what to send instead; nullopt for any
// other. The API reads its bodies as JSON; a form's would be cut at 8 KiB
// (413) or parsed as fields by the HTTP library.
std::optional<HttpAnswer> UnsupportedContentType(absl::string_view content_type);

class ApiEndpoints {
 public:
  // Both must outlive the endpoints.
  ApiEndpoints(service::RequestHandlers* handlers, net::CallLimiter* limiter);

  // The answer when `request.path` is an API path; nullopt when it is not.
  std::optional<HttpAnswer> Serve(const ApiRequest& request);

 private:
  // One endpoint: its path (segments "{field}" are path parameters), HTTP
  // method, the `method` label it counts as, and the call: the request (its
  // body, path parameters and credentials) in, response JSON out.
  struct Endpoint {
    absl::string_view path;
    absl::string_view http_method;
    absl::string_view method;
    std::function<absl::Status(service::RequestHandlers& handlers, const ApiCall& call,
                               absl::Time deadline, service::CallOutcome& outcome,
                               std::string& json)>
        call;
  };

  HttpAnswer Run(const Endpoint& endpoint, const ApiRequest& request,
                 std::vector<PathField> path_fields);

  service::RequestHandlers* const handlers_;
  net::CallLimiter* const limiter_;
  std::vector<Endpoint> endpoints_;  // The RPCs', then the API's own.
};

}  // namespace oomguard::http

#endif  // OOMGUARD_HTTP_API_ENDPOINTS_H_
