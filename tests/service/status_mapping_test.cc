// Tests of absl::Status -> grpc::Status (service/status_mapping.h): codes,
// and the request field as google.rpc.Status / BadRequest details that
// decode with the googleapis wire format.
#include "service/status_mapping.h"

#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/any.pb.h"
#include "gtest/gtest.h"
#include "oomguard/v1/error.pb.h"

namespace oomguard::service {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ToGrpcStatusTest, SameCodeAndMessageNoDetailsWithoutPayload) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  const grpc::Status status = ToGrpcStatus(absl::InvalidArgumentError("bad"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "bad");
  EXPECT_THAT(status.error_details(), IsEmpty());
  EXPECT_THAT(BadRequestFields(status), IsEmpty());
}

TEST(ToGrpcStatusTest, UnknownNeverLeavesTheServer) {
  EXPECT_EQ(ToGrpcStatus(absl::UnknownError("x")).error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_EQ(ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(42), "x")).error_code(),
            grpc::StatusCode::INTERNAL);
  // With a payload, the details say the code that is sent.
  const grpc::Status status = ToGrpcStatus(WithBadField(absl::UnknownError("x"), "f"));
  v1::RpcStatus details;
  ASSERT_TRUE(details.ParseFromString(status.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(grpc::StatusCode::INTERNAL));
}

TEST(ToGrpcStatusTest, BadFieldBecomesABadRequestDetail) {
  const absl::Status bad =
      WithBadField(absl::InvalidArgumentError("gpu_name: unknown"), "gpu_name");
  EXPECT_EQ(bad.message(), "gpu_name: unknown");
  const grpc::Status status = ToGrpcStatus(bad);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "gpu_name: unknown");

  // google.rpc.Status {code = 1, message = 2, details = 3}.
  v1::RpcStatus details;
  ASSERT_TRUE(details.ParseFromString(status.error_details()));
  EXPECT_EQ(details.code(), 3);
  EXPECT_EQ(details.message(), "gpu_name: unknown");
  ASSERT_EQ(details.details_size(), 1);
  EXPECT_EQ(details.details(0).type_url(), "type.googleapis.com/google.rpc.BadRequest");
  // google.rpc.BadRequest {field_violations = 1 {field = 1, description = 2}}.
  v1::BadRequest bad_request;
  ASSERT_TRUE(bad_request.ParseFromString(details.details(0).value()));
  ASSERT_EQ(bad_request.field_violations_size(), 1);
  EXPECT_EQ(bad_request.field_violations(0).field(), "gpu_name");
  EXPECT_EQ(bad_request.field_violations(0).description(), "gpu_name: unknown");
  EXPECT_THAT(BadRequestFields(status), ElementsAre("gpu_name"));
}

TEST(ToGrpcStatusTest, TheBytesAreGoogleRpcStatus) {
  // The wire bytes, written by hand from google/rpc/status.proto and
  // error_details.proto: any client with the googleapis types reads them.
  const grpc::Status status = ToGrpcStatus(WithBadField(absl::InvalidArgumentError("m"), "f"));
  const std::string violation = std::string(
      "\x0a\x01"
      "f"
      "\x12\x01"
      "m");
  const std::string bad_request = std::string("\x0a\x06") + violation;
  const std::string type_url = "type.googleapis.com/google.rpc.BadRequest";
  const std::string any = std::string("\x0a") + static_cast<char>(type_url.size()) + type_url +
                          "\x12" + static_cast<char>(bad_request.size()) + bad_request;
  const std::string expected = std::string(
                                   "\x08\x03\x12\x01"
                                   "m"
                                   "\x1a") +
                               static_cast<char>(any.size()) + any;
  EXPECT_EQ(status.error_details(), expected);
}

TEST(WithBadFieldTest, AddsToTheViolationsAlreadyThere) {
  const absl::Status status =
      WithBadField(WithBadField(absl::InvalidArgumentError("m"), "a"), "b.c");
  EXPECT_THAT(BadRequestFields(ToGrpcStatus(status)), ElementsAre("a", "b.c"));
}

TEST(BadRequestFieldsTest, IgnoresOtherDetailsAndGarbage) {
  v1::RpcStatus details;
  details.set_code(3);
  google::protobuf::Any* other = details.add_details();
  other->set_type_url("type.googleapis.com/google.rpc.ErrorInfo");
  other->set_value("\x0a\x01x");
  EXPECT_THAT(BadRequestFields(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "m",
                                            details.SerializeAsString())),
              IsEmpty());
  EXPECT_THAT(BadRequestFields(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "m", "\xff")),
              IsEmpty());
}

}  // namespace
}  // namespace oomguard::service
