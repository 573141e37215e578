// The HTTP/JSON face of the service's messages, as grpc-gateway and Envoy's
// gRPC-JSON transcoder map them: request and response bodies are protobuf's
// JSON mapping of the same messages (lowerCamelCase names, 64-bit integers as
// strings, enums by name, unset fields left out); an error is the JSON of a
// google.rpc.Status ({code, message, details}), with a BadRequest detail
// naming the request field, under the HTTP status of its gRPC code.
#ifndef OOMGUARD_HTTP_JSON_TRANSCODING_H_
#define OOMGUARD_HTTP_JSON_TRANSCODING_H_

#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/status.h"

namespace oomguard::http {

// Parses the JSON `body` into `message`. Bytes of `body` that are not UTF-8
// become U+FFFD first (common/valid_utf8.h: a path's bytes leave the job
// judged). InvalidArgument ("request body: ...") when it is not JSON, or
// names a field, enum value or type that `message` does not have.
absl::Status ParseJsonBody(absl::string_view body, google::protobuf::Message& message);

// `value` as JSON text. Never throws: a string that is not UTF-8 (an echoed
// value cut inside a character) is written with U+FFFD for its bad bytes.
// Every answer the API builds with nlohmann is written by this.
std::string DumpJson(const nlohmann::json& value);

// `message` as JSON.
std::string ToJson(const google::protobuf::Message& message);

// The HTTP status of a gRPC code (grpc-gateway's mapping): OK 200,
// INVALID_ARGUMENT / FAILED_PRECONDITION / OUT_OF_RANGE 400, NOT_FOUND 404,
// RESOURCE_EXHAUSTED 429, UNIMPLEMENTED 501, UNAVAILABLE 503,
// DEADLINE_EXCEEDED 504, the rest as grpc-gateway has them (INTERNAL 500).
int HttpStatusOf(grpc::StatusCode code);

// The JSON body of a failed call: {"code": 3, "message": "...", "details":
// [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations":
// [{"field": "...", "description": "..."}]}]}; details only when the status
// has some (status_mapping.h).
std::string ErrorJson(const grpc::Status& status);

}  // namespace oomguard::http

#endif  // OOMGUARD_HTTP_JSON_TRANSCODING_H_
