// The call limiter (net/call_limiter.h): refusing at once when no call may
// wait, and a waiting call that gets a turn or times out.
#include "net/call_limiter.h"

#include <thread>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::net {
namespace {

TEST(CallLimiterTest, RefusesAtOnceWhenNoneMayWait) {
  CallLimiter limiter(/*running=*/1, /*waiting=*/0);
  ASSERT_TRUE(limiter.Acquire(absl::InfiniteFuture()).ok());
  const absl::Status refused = limiter.Acquire(absl::InfiniteFuture());
  EXPECT_EQ(refused.code(), absl::StatusCode::kUnavailable) << refused;
  EXPECT_THAT(refused.message(), ::testing::HasSubstr("server overloaded"));
  limiter.Release();
  EXPECT_TRUE(limiter.Acquire(absl::InfiniteFuture()).ok());
}

TEST(CallLimiterTest, WaitersGetATurnOrTimeOut) {
  CallLimiter limiter(/*running=*/1, /*waiting=*/1);
  ASSERT_TRUE(limiter.Acquire(absl::InfiniteFuture()).ok());
  const absl::Status waited = limiter.Acquire(absl::Now() + absl::Milliseconds(20));
  EXPECT_EQ(waited.code(), absl::StatusCode::kDeadlineExceeded) << waited;

  std::thread waiter([&] {
    const absl::Status turn = limiter.Acquire(absl::Now() + absl::Seconds(30));
    EXPECT_TRUE(turn.ok()) << turn;
    limiter.Release();
  });
  absl::SleepFor(absl::Milliseconds(20));
  limiter.Release();
  waiter.join();
  EXPECT_TRUE(limiter.Acquire(absl::Now() + absl::Seconds(1)).ok());
}

}  // namespace
}  // namespace oomguard::net
