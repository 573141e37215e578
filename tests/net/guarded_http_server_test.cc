// The guarded HTTP server (net/guarded_http_server.h) on its own: serving on
// a bare port (loopback), its address errors naming the flag, a port already
// taken, the body limit (413), and Stop/Wait. Its connection guards under
// held connections are tested through the webhook
// (tests/webhook/webhook_held_connections_test.cc).
#include "net/guarded_http_server.h"

#include <httplib.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::net {
namespace {

using ::testing::HasSubstr;

ConnectionLimits SmallBodies() {
  ConnectionLimits limits;
  limits.max_body_bytes = 16;
  return limits;
}

void AddEcho(GuardedHttpServer& server) {
  server.Post("/echo", [](const httplib::Request& request, httplib::Response& response) {
    response.set_content(request.body, "text/plain");
  });
}

TEST(GuardedHttpServerTest, ServesOnABarePortOnLoopback) {
  GuardedHttpServer server(SmallBodies(), nullptr);
  ASSERT_TRUE(server.is_valid());
  AddEcho(server);
  const absl::StatusOr<int> port = server.Start("test_address", "0");
  ASSERT_TRUE(port.ok()) << port.status();
  ASSERT_GT(*port, 0);
  httplib::Client client("127.0.0.1", *port);
  httplib::Result echoed = client.Post("/echo", "hello", "text/plain");
  ASSERT_TRUE(echoed) << httplib::to_string(echoed.error());
  EXPECT_EQ(echoed->status, 200);
  EXPECT_EQ(echoed->body, "hello");
  httplib::Result too_large = client.Post("/echo", std::string(17, 'x'), "text/plain");
  ASSERT_TRUE(too_large) << httplib::to_string(too_large.error());
  EXPECT_EQ(too_large->status, 413);

  server.Stop();
  server.Wait();
  httplib::Client after("127.0.0.1", *port);
  after.set_connection_timeout(2);
  EXPECT_FALSE(after.Post("/echo", "hello", "text/plain"));
}

TEST(GuardedHttpServerTest, AddressErrorsNameTheFlag) {
  GuardedHttpServer server(ConnectionLimits{}, nullptr);
  const absl::Status bad = server.Start("test_address", "127.0.0.1:nope").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("test_address = 127.0.0.1:nope"));

  GuardedHttpServer first(ConnectionLimits{}, nullptr);
  const absl::StatusOr<int> port = first.Start("test_address", "127.0.0.1:0");
  ASSERT_TRUE(port.ok()) << port.status();
  GuardedHttpServer second(ConnectionLimits{}, nullptr);
  const std::string taken = absl::StrCat("127.0.0.1:", *port);
  const absl::Status refused = second.Start("test_address", taken).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(refused.message(), absl::StrCat("test_address = ", taken, ": cannot listen there"));
}

TEST(GuardedHttpServerTest, LimitsNoServerCanKeepAreRefused) {
  ConnectionLimits limits;
  EXPECT_TRUE(ValidateLimits("test", limits).ok());
  limits.max_connections = 0;
  EXPECT_EQ(ValidateLimits("test", limits).message(), "test max_connections = 0: must be >= 1");
  limits = ConnectionLimits{};
  limits.max_connections_per_source = 0;
  EXPECT_EQ(ValidateLimits("test", limits).message(),
            "test max_connections_per_source = 0: must be >= 1");
  limits = ConnectionLimits{};
  limits.header_timeout = absl::ZeroDuration();
  EXPECT_EQ(ValidateLimits("test", limits).message(), "test header_timeout = 0: must be > 0");
}

}  // namespace
}  // namespace oomguard::net
