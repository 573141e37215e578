// The HTTP/JSON API's parts without a server: the endpoints with every turn
// of the call limiter (net/call_limiter.h) taken (503, 504), the HTTP status of
// each gRPC code, the error body, the Grpc-Timeout reading, the routes'
// path parameters.
#include <nlohmann/json.hpp>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "http/api_endpoints.h"
#include "http/http_api_server.h"
#include "http/json_transcoding.h"
#include "net/call_limiter.h"
#include "oomguard/v1/service.pb.h"
#include "service/metrics.h"
#include "service/request_handlers.h"
#include "service/status_mapping.h"

namespace oomguard::http {
namespace {

// The endpoints with every turn taken: a call that may not wait is 503, one
// whose deadline passes while it waits is 504; both counted as http.
TEST(ApiEndpointsTest, OverloadedIs503AndTimedOutWaitIs504) {
  service::ServiceMetrics metrics("test");
  service::RequestHandlers handlers(service::ServiceConfig{.log_requests = false}, &metrics);
  net::CallLimiter no_waiting(/*running=*/1, /*waiting=*/0);
  ApiEndpoints refusing(&handlers, &no_waiting);
  ASSERT_TRUE(no_waiting.Acquire(absl::InfiniteFuture()).ok());
  std::optional<HttpAnswer> answer =
      refusing.Serve(ApiRequest{.method = "GET", .path = "/v1/gpus"});
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 503);
  EXPECT_EQ(nlohmann::json::parse(answer->body)["code"], 14);  // UNAVAILABLE
  no_waiting.Release();
  answer = refusing.Serve(ApiRequest{.method = "GET", .path = "/v1/gpus"});
  EXPECT_EQ(answer->status, 200);

  net::CallLimiter one_waiting(/*running=*/1, /*waiting=*/1);
  ApiEndpoints waiting(&handlers, &one_waiting);
  ASSERT_TRUE(one_waiting.Acquire(absl::InfiniteFuture()).ok());
  answer = waiting.Serve(ApiRequest{.method = "POST",
                                    .path = "/v1/check",
                                    .body = "{}",
                                    .deadline = absl::Now() + absl::Milliseconds(20)});
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->status, 504);
  EXPECT_EQ(nlohmann::json::parse(answer->body)["code"], 4);  // DEADLINE_EXCEEDED
  one_waiting.Release();

  // Not an API path: for the page or a 404.
  EXPECT_FALSE(waiting.Serve(ApiRequest{.method = "GET", .path = "/"}).has_value());
}

TEST(JsonTranscodingTest, HttpStatusOfEachCode) {
  EXPECT_EQ(HttpStatusOf(grpc::StatusCode::OK), 200);
  EXPECT_EQ(HttpStatusOf(grpc::StatusCode::INVALID_ARGUMENT), 400);
  EXPECT_EQ(HttpStatusOf(grpc::StatusCode::NOT_FOUND), 404);
  EXPECT_EQ(HttpStatusOf(grpc::StatusCode::RESOURCE_EXHAUSTED), 429);
  EXPECT_EQ(HttpStatusOf(grpc::StatusCode::UNIMPLEMENTED), 501);
  EXPECT_EQ(HttpStatusOf(grpc::StatusCode::UNAVAILABLE), 503);
  EXPECT_EQ(HttpStatusOf(grpc::StatusCode::DEADLINE_EXCEEDED), 504);
  EXPECT_EQ(HttpStatusOf(grpc::StatusCode::INTERNAL), 500);
}

TEST(JsonTranscodingTest, ErrorBodyIsGoogleRpcStatusJson) {
  const absl::Status bad = service::WithBadField(
      absl::InvalidArgumentError("gpu_name = H999: not in the catalog"), "gpu_name");
  const nlohmann::json body = nlohmann::json::parse(ErrorJson(service::ToGrpcStatus(bad)));
  EXPECT_EQ(body["code"], 3);
  EXPECT_EQ(body["message"], "gpu_name = H999: not in the catalog");
  EXPECT_EQ(body["details"][0]["@type"], "type.googleapis.com/google.rpc.BadRequest");
  EXPECT_EQ(body["details"][0]["fieldViolations"][0]["field"], "gpu_name");
  EXPECT_FALSE(nlohmann::json::parse(ErrorJson(grpc::Status(grpc::StatusCode::NOT_FOUND, "x")))
                   .contains("details"));
}

// An error that echoes bytes that are not UTF-8 (a protobuf parse error's
// excerpt cut inside a character) is still a JSON answer, with U+FFFD for
// them, never an exception (the HTTP API's 500).
TEST(JsonTranscodingTest, ErrorBodyOfBytesThatAreNotUtf8IsJson) {
  const std::string body =
      ErrorJson(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "request body: \xc3 at \xff"));
  EXPECT_EQ(nlohmann::json::parse(body)["message"], "request body: \xEF\xBF\xBD at \xEF\xBF\xBD");
  EXPECT_EQ(DumpJson(nlohmann::json::array({"/data/\xff"})), "[\"/data/\xEF\xBF\xBD\"]");
}

// A body that is not UTF-8 is read with U+FFFD for its bad bytes
// (common/valid_utf8.h), where protobuf's parser would refuse it.
TEST(JsonTranscodingTest, BodyBytesThatAreNotUtf8BecomeReplacementCharacters) {
  v1::CheckRequest request;
  ASSERT_TRUE(ParseJsonBody("{\"gpuName\": \"H100\", \"job\": {\"megatron\": {\"argv\": "
                            "[\"--data-path\", \"/d/\xff\xc3\"]}}}",
                            request)
                  .ok());
  ASSERT_EQ(request.job().megatron().argv_size(), 2);
  EXPECT_EQ(request.job().megatron().argv(1), "/d/\xEF\xBF\xBD\xEF\xBF\xBD");
  // An escaped lone surrogate is not a character: 400, not 500.
  const absl::Status surrogate =
      ParseJsonBody(R"({"job": {"megatron": {"argv": ["\udcff"]}}})", request);
  EXPECT_EQ(surrogate.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NO_THROW(static_cast<void>(nlohmann::json::parse(ErrorJson(
      grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, std::string(surrogate.message()))))));
}

TEST(JsonTranscodingTest, ParsesProtobufJson) {
  v1::CheckRequest request;
  ASSERT_TRUE(ParseJsonBody(R"({"gpuName": "H100", "job": {"megatron": {"numGpus": 8}},
                                "policy": {"safetyMargin": 0.1}})",
                            request)
                  .ok());
  EXPECT_EQ(request.gpu_name(), "H100");
  EXPECT_EQ(request.job().megatron().num_gpus(), 8u);
  // The proto names are accepted too, as protobuf's JSON parser does.
  ASSERT_TRUE(ParseJsonBody(R"({"gpu_memory_bytes": "1000"})", request).ok());
  EXPECT_EQ(request.gpu_memory_bytes(), 1000u);
  const absl::Status unknown = ParseJsonBody(R"({"gpu": "H100"})", request);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
}

TEST(HttpApiServerTest, ReadsGrpcTimeout) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(GrpcTimeoutDeadline("2S", now), now + absl::Seconds(2));
  EXPECT_EQ(GrpcTimeoutDeadline("500m", now), now + absl::Milliseconds(500));
  EXPECT_EQ(GrpcTimeoutDeadline("1H", now), now + absl::Hours(1));
  EXPECT_EQ(GrpcTimeoutDeadline("7n", now), now + absl::Nanoseconds(7));
  for (const char* bad : {"", "S", "2", "2s", "-1S", "1234567890S"}) {
    EXPECT_EQ(GrpcTimeoutDeadline(bad, now), std::nullopt) << bad;
  }
}

// A "{field}" segment takes one non-empty segment; the others match as
// they are.
TEST(ApiEndpointsTest, MatchesPathParameters) {
  const std::optional<std::vector<PathField>> fields =
      MatchPath("/v1/checks/{check_id}", "/v1/checks/0123abc");
  ASSERT_TRUE(fields.has_value());
  ASSERT_EQ(fields->size(), 1u);
  EXPECT_EQ((*fields)[0].field, "check_id");
  EXPECT_EQ((*fields)[0].value, "0123abc");
  ASSERT_TRUE(MatchPath("/v1/gpus", "/v1/gpus").has_value());
  EXPECT_TRUE(MatchPath("/v1/gpus", "/v1/gpus")->empty());
  for (const char* other :
       {"/v1/checks/", "/v1/checks", "/v1/checks/a/b", "/v1/check/a", "/v1/checks//"}) {
    EXPECT_FALSE(MatchPath("/v1/checks/{check_id}", other).has_value()) << other;
  }
}

}  // namespace
}  // namespace oomguard::http
