// The rate limit of protobuf's log lines (service/protobuf_log.h): the first
// line, then the first after each interval, with the count left out.
// ServeProcessTest.ProtobufLogLinesDoNotFloodTheLog checks it in a server.
#include "service/protobuf_log.h"

#include <gtest/gtest.h>

namespace oomguard::service {
namespace {

TEST(LogRateLimitTest, WritesOneLinePerIntervalWithTheCountLeftOut) {
  LogRateLimit limit(absl::Minutes(1));
  const absl::Time t0 = absl::FromUnixSeconds(1'700'000'000);
  int64_t left_out = -1;
  ASSERT_TRUE(limit.Admit(t0, &left_out));
  EXPECT_EQ(left_out, 0);
  for (int i = 1; i <= 5; ++i) EXPECT_FALSE(limit.Admit(t0 + absl::Seconds(10 * i), &left_out));
  EXPECT_FALSE(limit.Admit(t0 + absl::Seconds(59), &left_out));
  ASSERT_TRUE(limit.Admit(t0 + absl::Seconds(60), &left_out));
  EXPECT_EQ(left_out, 6);
  ASSERT_TRUE(limit.Admit(t0 + absl::Minutes(5), &left_out));
  EXPECT_EQ(left_out, 0);
}

}  // namespace
}  // namespace oomguard::service
