// The address a server flag names (net/host_port.h): host:port, [v6]:port,
// a bare port on loopback, and the errors naming the flag and the value.
#include "net/host_port.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::net {
namespace {

using ::testing::HasSubstr;

TEST(HostPortTest, SplitsAddresses) {
  absl::StatusOr<HostPort> parsed = ParseHostPort("http_address", "8080");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "127.0.0.1");
  EXPECT_EQ(parsed->port, 8080);
  parsed = ParseHostPort("http_address", "0.0.0.0:0");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "0.0.0.0");
  EXPECT_EQ(parsed->port, 0);
  parsed = ParseHostPort("http_address", "[::1]:80");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->host, "::1");
  EXPECT_EQ(parsed->port, 80);
  for (const char* bad : {"", ":80", "host:", "host:70000", "[::1:80", "x", "[]:80", "127.0.0.1"}) {
    EXPECT_FALSE(ParseHostPort("http_address", bad).ok()) << bad;
  }
}

// The webhook's and the HTTP API's flags read a bare port alike: loopback.
TEST(HostPortTest, ABarePortIsLoopbackForEveryFlag) {
  for (const char* flag : {"webhook_address", "http_address"}) {
    const absl::StatusOr<HostPort> parsed = ParseHostPort(flag, "8443");
    ASSERT_TRUE(parsed.ok()) << flag << ": " << parsed.status();
    EXPECT_EQ(parsed->host, "127.0.0.1") << flag;
    EXPECT_EQ(parsed->port, 8443) << flag;
  }
}

TEST(HostPortTest, ErrorsNameTheFlagAndTheValue) {
  absl::Status bad = ParseHostPort("webhook_address", "localhost:https").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "webhook_address = localhost:https: expected host:port or a port");
  bad = ParseHostPort("http_address", "[::1:80").status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "http_address = [::1:80: unbalanced '['");
  bad = ParseHostPort("http_address", ":80").status();
  EXPECT_THAT(bad.message(), HasSubstr("http_address = :80: expected host:port or a port"));
}

}  // namespace
}  // namespace oomguard::net
