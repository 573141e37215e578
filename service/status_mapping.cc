// absl::Status <-> grpc::Status with error details (see status_mapping.h).
#include "service/status_mapping.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/types/optional.h"
#include "google/protobuf/any.pb.h"
#include "oomguard/v1/error.pb.h"

namespace oomguard::service {

absl::Status WithBadField(absl::Status status, absl::string_view field) {
  v1::BadRequest bad_request;
  const absl::optional<absl::Cord> payload = status.GetPayload(kBadRequestTypeUrl);
  if (payload && !bad_request.ParseFromString(std::string(*payload))) bad_request.Clear();
  v1::BadRequest::FieldViolation* violation = bad_request.add_field_violations();
  violation->set_field(std::string(field));
  violation->set_description(std::string(status.message()));
  status.SetPayload(kBadRequestTypeUrl, absl::Cord(bad_request.SerializeAsString()));
  return status;
}

absl::Status WithErrorReason(absl::Status status, absl::string_view reason) {
  v1::ErrorInfo info;
  info.set_reason(std::string(reason));
  info.set_domain(std::string(kErrorDomain));
  status.SetPayload(kErrorInfoTypeUrl, absl::Cord(info.SerializeAsString()));
  return status;
}

absl::Status MarkJobNotModelled(absl::Status status) {
  if (!absl::IsUnimplemented(status)) return status;
  return WithErrorReason(std::move(status), kJobNotModelledReason);
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbers.
  const int number = static_cast<int>(status.code());
  const grpc::StatusCode code = status.code() == absl::StatusCode::kUnknown ||
                                        number > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)
                                    ? grpc::StatusCode::INTERNAL
                                    : static_cast<grpc::StatusCode>(number);
  std::string message(status.message());
  v1::RpcStatus details;
  status.ForEachPayload([&details](absl::string_view type_url, const absl::Cord& value) {
    google::protobuf::Any* detail = details.add_details();
    detail->set_type_url(std::string(type_url));
    detail->set_value(std::string(value));
  });
  if (details.details().empty()) return grpc::Status(code, std::move(message));
  details.set_code(static_cast<int32_t>(code));
  details.set_message(message);
  return grpc::Status(code, std::move(message), details.SerializeAsString());
}

namespace {

// The details of `status`; empty when it has none or they do not parse.
v1::RpcStatus Details(const grpc::Status& status) {
  v1::RpcStatus details;
  if (status.error_details().empty() || !details.ParseFromString(status.error_details())) {
    details.Clear();
  }
  return details;
}

}  // namespace

std::string ErrorReason(const grpc::Status& status) {
  const v1::RpcStatus details = Details(status);
  for (const google::protobuf::Any& detail : details.details()) {
    v1::ErrorInfo info;
    if (detail.type_url() == kErrorInfoTypeUrl && info.ParseFromString(detail.value()) &&
        info.domain() == kErrorDomain) {
      return info.reason();
    }
  }
  return "";
}

bool IsJobNotModelled(const absl::Status& status) {
  return absl::IsUnimplemented(status) &&
         ErrorReason(ToGrpcStatus(status)) == kJobNotModelledReason;
}

std::vector<std::string> BadRequestFields(const grpc::Status& status) {
  std::vector<std::string> fields;
  const v1::RpcStatus details = Details(status);
  for (const google::protobuf::Any& detail : details.details()) {
    v1::BadRequest bad_request;
    if (detail.type_url() != kBadRequestTypeUrl || !bad_request.ParseFromString(detail.value())) {
      continue;
    }
    for (const v1::BadRequest::FieldViolation& violation : bad_request.field_violations()) {
      fields.push_back(violation.field());
    }
  }
  return fields;
}

}  // namespace oomguard::service
