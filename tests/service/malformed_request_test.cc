// Malformed request bodies, sent as raw bytes through the generic stub to the
// real server on a loopback port: every method answers INVALID_ARGUMENT with
// a message naming the expected message type, never gRPC's INTERNAL.
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

// Field 15 (unknown to every request) opening 10^5 nested groups, then
// closing them.
std::string NestedGroups() {
  constexpr int kDepth = 100000;
  return std::string(kDepth, '\x7b') + std::string(kDepth, '\x7c');
}

// `request` serialized with the string "@@" in it made invalid UTF-8.
std::string WithInvalidUtf8(const google::protobuf::MessageLite& request) {
  std::string bytes = request.SerializeAsString();
  const size_t at = bytes.find("@@");
  EXPECT_NE(at, std::string::npos);
  bytes.replace(at, 2, "\xc3\x28");
  return bytes;
}

std::string EstimateWithInvalidUtf8() {
  v1::EstimateRequest request;
  (*request.mutable_job()->mutable_env())["NAME"] = "@@";
  return WithInvalidUtf8(request);
}

std::string CheckWithInvalidUtf8() {
  v1::CheckRequest request;
  request.set_gpu_name("@@");
  return WithInvalidUtf8(request);
}

class MalformedRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.service.log_requests = false;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
  }

  // Sends `request_bytes` to /oomguard.v1.Oomguard/`method`.
  grpc::Status RawCall(const std::string& method, const std::string& request_bytes) {
    grpc::GenericStub generic(channel_);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    grpc::Slice slice(request_bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&context, absl::StrCat("/oomguard.v1.Oomguard/", method), grpc::StubOptions(),
                      &request, &response,
                      [&done](grpc::Status s) { done.set_value(std::move(s)); });
    return done.get_future().get();
  }

  void ExpectInvalidArgument(const std::string& method, const std::string& request_bytes) {
    const grpc::Status status = RawCall(method, request_bytes);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << method << ": " << status.error_message();
    EXPECT_THAT(status.error_message(),
                HasSubstr(absl::StrCat("request: not a valid oomguard.v1.", method, "Request")));
  }

  std::unique_ptr<server::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

constexpr char kJunk[] = "\xff\xff\xff\x01";
// Field 15 as a varint whose last byte still says "more follows".
constexpr char kTruncatedVarint[] = "\x78\xff\xff";

TEST_F(MalformedRequestTest, JunkBytesAreInvalidArgument) {
  for (const char* method : {"Estimate", "Check", "ListPresets", "ListGpus"}) {
    ExpectInvalidArgument(method, kJunk);
  }
}

TEST_F(MalformedRequestTest, TruncatedVarintIsInvalidArgument) {
  for (const char* method : {"Estimate", "Check", "ListPresets", "ListGpus"}) {
    ExpectInvalidArgument(method, kTruncatedVarint);
  }
}

TEST_F(MalformedRequestTest, InvalidUtf8IsInvalidArgument) {
  ExpectInvalidArgument("Estimate", EstimateWithInvalidUtf8());
  ExpectInvalidArgument("Check", CheckWithInvalidUtf8());
}

TEST_F(MalformedRequestTest, DeeplyNestedGroupsAreInvalidArgument) {
  for (const char* method : {"Estimate", "Check", "ListPresets", "ListGpus"}) {
    ExpectInvalidArgument(method, NestedGroups());
  }
}

TEST_F(MalformedRequestTest, TheServerStillServesAfterwards) {
  ExpectInvalidArgument("Estimate", kJunk);
  v1::ListGpusResponse gpus;
  grpc::ClientContext context;
  ASSERT_TRUE(v1::Oomguard::NewStub(channel_)->ListGpus(&context, {}, &gpus).ok());
  EXPECT_GT(gpus.gpus_size(), 0);
}

}  // namespace
}  // namespace oomguard
