#include "feedback/bound_widening.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/feedback/feedback_test_records.h"

namespace oomguard::feedback {
namespace {

using testing::AddReport;
using testing::Allocated;
using testing::DeviceUsed;
using ::testing::HasSubstr;
using testing::kGiB;
using testing::TwoStageRecord;

TEST(NeededWideningTest, NothingMeasuredNeedsNothingKnown) {
  EXPECT_FALSE(NeededWidening(TwoStageRecord()).has_value());
  // An outcome alone (the job ran) measures no peak.
  v1::CheckRecord ran = TwoStageRecord();
  AddReport(ran, {}, v1::JOB_OUTCOME_RAN);
  EXPECT_FALSE(NeededWidening(ran).has_value());
}

TEST(NeededWideningTest, PeaksUnderTheBoundNeedNone) {
  v1::CheckRecord record = TwoStageRecord();
  AddReport(record, {Allocated(0, 40), Allocated(4, 44)});  // 44 = stage 1's upper
  EXPECT_EQ(NeededWidening(record), 0.0);
}

TEST(NeededWideningTest, ThePeakFurthestOverItsBound) {
  // Stage 0's allocated 56 over 55: 1/55; stage 1's 46 over 44: 2/44 = 1/22,
  // the larger; the device 60 is under 66.
  v1::CheckRecord record = TwoStageRecord();
  AddReport(record, {Allocated(0, 56), Allocated(4, 46)});
  AddReport(record, {DeviceUsed("n/0", 60)});
  ASSERT_TRUE(NeededWidening(record).has_value());
  EXPECT_NEAR(*NeededWidening(record), 2.0 / 44, 1e-12);  // measured / upper - 1 rounds
}

TEST(NeededWideningTest, AnAdmittedCudaOomNeededTheUsableMemory) {
  // Admitted against 80 GiB usable with a largest device bound of 66 GiB,
  // then a CUDA OOM: it needed at least 80 / 66 - 1 = 14/66.
  v1::CheckRecord record = TwoStageRecord();
  AddReport(record, {}, v1::JOB_OUTCOME_CUDA_OOM);
  ASSERT_TRUE(NeededWidening(record).has_value());
  EXPECT_NEAR(*NeededWidening(record), 14.0 / 66, 1e-12);
  // A job the verdict refused that ran out of memory says nothing of the
  // bound.
  record.set_verdict(v1::VERDICT_DOES_NOT_FIT);
  EXPECT_FALSE(NeededWidening(record).has_value());
}

std::vector<double> Jobs(int zeros, std::vector<double> others) {
  std::vector<double> jobs(zeros, 0.0);
  jobs.insert(jobs.end(), others.begin(), others.end());
  return jobs;
}

TEST(LearnWideningTest, TheNeededWideningAtTheCoverageQuantile) {
  // 20 jobs: 17 needed nothing, then 0.01, 0.05, 0.30. 95 % of 20 = 19: the
  // 19th smallest, 0.05, covers 19 of them.
  const LearnedWidening w = LearnWidening(Jobs(17, {0.30, 0.01, 0.05}), WideningOptions{});
  EXPECT_EQ(w.measured_jobs, 20);
  EXPECT_EQ(w.jobs_over_bound, 3);
  EXPECT_TRUE(w.enough_jobs);
  EXPECT_DOUBLE_EQ(w.needed, 0.05);
  EXPECT_DOUBLE_EQ(w.widening, 0.05);
}

TEST(LearnWideningTest, TooFewJobsWidenNothing) {
  // 19 jobs: ceil(0.95 x 19) = 19, the largest (0.30) is needed, but 19 is
  // under the minimum of 20.
  const LearnedWidening w = LearnWidening(Jobs(16, {0.01, 0.05, 0.30}), WideningOptions{});
  EXPECT_EQ(w.measured_jobs, 19);
  EXPECT_FALSE(w.enough_jobs);
  EXPECT_DOUBLE_EQ(w.needed, 0.30);
  EXPECT_EQ(w.widening, 0.0);
  EXPECT_EQ(LearnWidening({}, WideningOptions{}).widening, 0.0);
}

TEST(LearnWideningTest, BoundedAbove) {
  // The 19th smallest of 20 is 0.30, capped at 0.25.
  const LearnedWidening w = LearnWidening(Jobs(17, {0.01, 0.30, 0.40}), WideningOptions{});
  EXPECT_DOUBLE_EQ(w.needed, 0.30);
  EXPECT_DOUBLE_EQ(w.widening, 0.25);
  WideningOptions tight;
  tight.max_widening = 0.1;
  EXPECT_DOUBLE_EQ(LearnWidening(Jobs(17, {0.01, 0.30, 0.40}), tight).widening, 0.1);
}

TEST(LearnWideningTest, NeverNarrows) {
  // Jobs far under their bounds leave it where the physics put it.
  const LearnedWidening w = LearnWidening(std::vector<double>(30, -0.2), WideningOptions{});
  EXPECT_EQ(w.needed, 0.0);
  EXPECT_EQ(w.widening, 0.0);
  EXPECT_EQ(w.jobs_over_bound, 0);
}

TEST(LearnWideningTest, OptionsAreValidated) {
  EXPECT_TRUE(ValidateWideningOptions(WideningOptions{}).ok());
  WideningOptions bad;
  bad.max_widening = -0.1;
  EXPECT_THAT(ValidateWideningOptions(bad).message(), HasSubstr("learned_widening_max = -0.1"));
  bad.max_widening = 1.5;
  EXPECT_EQ(ValidateWideningOptions(bad).code(), absl::StatusCode::kInvalidArgument);
  bad = WideningOptions{};
  bad.min_measured_jobs = 0;
  EXPECT_THAT(ValidateWideningOptions(bad).message(), HasSubstr("min_measured_jobs"));
  bad = WideningOptions{};
  bad.coverage = 0.4;
  EXPECT_THAT(ValidateWideningOptions(bad).message(), HasSubstr("coverage"));
}

}  // namespace
}  // namespace oomguard::feedback
