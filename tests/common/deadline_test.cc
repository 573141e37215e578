// Tests of the work deadline (common/deadline.h): which error each stop
// gives, and where CheckEvery reads the clock.
#include "common/deadline.h"

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

TEST(DeadlineTest, NeverPassesByDefault) {
  const Deadline never;
  EXPECT_FALSE(never.Passed());
  EXPECT_TRUE(never.Check("working").ok());
  EXPECT_TRUE(never.CheckEvery(0xFFFF, "working").ok());
}

TEST(DeadlineTest, APassedDeadlineNamesWhatWasBeingDone) {
  const Deadline passed(absl::Now() - absl::Seconds(1));
  EXPECT_TRUE(passed.Passed());
  const absl::Status status = passed.Check("estimating pipeline rank 3 of 8");
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(status.message(), "deadline passed while estimating pipeline rank 3 of 8");
  EXPECT_FALSE(Deadline(absl::Now() + absl::Hours(1)).Passed());
}

TEST(DeadlineTest, AStopPointThatPassedMakesItUnavailable) {
  StopPoint stop;
  const Deadline deadline(absl::InfiniteFuture(), &stop);
  EXPECT_FALSE(deadline.Passed());
  EXPECT_TRUE(deadline.Check("working").ok());
  stop.StopAt(absl::Now() - absl::Seconds(1));
  EXPECT_TRUE(deadline.Passed());
  const absl::Status status = deadline.Check("walking the schedule");
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(status.message(), "the server is shutting down; stopped while walking the schedule");
}

TEST(DeadlineTest, CheckEveryReadsTheClockAtTheLastOfEach65536Iterations) {
  const Deadline passed(absl::InfinitePast());
  for (int64_t i : {0, 1, 65534, 65536, 131070}) {
    EXPECT_TRUE(passed.CheckEvery(i, "looping").ok()) << i;
  }
  for (int64_t i : {65535, 131071}) {
    EXPECT_EQ(passed.CheckEvery(i, "looping").code(), absl::StatusCode::kDeadlineExceeded) << i;
  }
}

}  // namespace
}  // namespace oomguard
