// Messages <-> JSON, errors as google.rpc.Status JSON (see json_transcoding.h).
#include "http/json_transcoding.h"

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/valid_utf8.h"
#include "google/protobuf/any.pb.h"
#include "google/protobuf/util/json_util.h"
#include "oomguard/v1/error.pb.h"
#include "service/status_mapping.h"

namespace oomguard::http {

absl::Status ParseJsonBody(absl::string_view body, google::protobuf::Message& message) {
  // Protobuf's JSON parser refuses bytes that are not UTF-8; a caller's
  // path may hold some (common/valid_utf8.h).
  std::string valid;
  if (!IsValidUtf8(body)) body = valid = ValidUtf8(body);
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(body.data(), body.size()), &message);
  if (status.ok()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("request body: not a ", message.GetTypeName(),
                                                 " in JSON: ", std::string(status.message())));
}

std::string DumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  // Fails only for an Any of a type the pool lacks; the service's
  // messages hold none.
  if (!google::protobuf::util::MessageToJsonString(message, &json).ok()) json.clear();
  return json;
}

int HttpStatusOf(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return 200;
    case grpc::StatusCode::CANCELLED:
      return 499;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
      return 400;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return 504;
    case grpc::StatusCode::NOT_FOUND:
      return 404;
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::ABORTED:
      return 409;
    case grpc::StatusCode::PERMISSION_DENIED:
      return 403;
    case grpc::StatusCode::UNAUTHENTICATED:
      return 401;
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return 429;
    case grpc::StatusCode::UNIMPLEMENTED:
      return 501;
    case grpc::StatusCode::UNAVAILABLE:
      return 503;
    default:
      return 500;
  }
}

std::string ErrorJson(const grpc::Status& status) {
  nlohmann::json body = {{"code", static_cast<int>(status.error_code())},
                         {"message", status.error_message()}};
  v1::RpcStatus details;
  if (!status.error_details().empty() && details.ParseFromString(status.error_details())) {
    nlohmann::json& list = body["details"] = nlohmann::json::array();
    for (const google::protobuf::Any& detail : details.details()) {
      // google.rpc.BadRequest (the field) and google.rpc.ErrorInfo (the
      // reason, e.g. JOB_NOT_MODELLED), each as its JSON mapping with @type.
      v1::BadRequest bad_request;
      v1::ErrorInfo error_info;
      std::string shown_json;
      if (detail.type_url() == service::kBadRequestTypeUrl &&
          bad_request.ParseFromString(detail.value())) {
        shown_json = ToJson(bad_request);
      } else if (detail.type_url() == service::kErrorInfoTypeUrl &&
                 error_info.ParseFromString(detail.value())) {
        shown_json = ToJson(error_info);
      } else {
        continue;
      }
      nlohmann::json shown = nlohmann::json::parse(shown_json);
      shown["@type"] = detail.type_url();
      list.push_back(std::move(shown));
    }
  }
  return DumpJson(body);
}

}  // namespace oomguard::http
