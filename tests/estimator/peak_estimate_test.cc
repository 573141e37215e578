// The peaks-only path (EstimatePeaks) against the full report: the same
// computation, so every number must equal the report's field.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estimator/estimator.h"
#include "estimator/validated_job.h"
#include "jobspec/job_builder.h"
#include "tests/testing/examples.h"

namespace oomguard {
namespace {

v1::JobSpec Job(const std::string& preset, uint32_t gpus, std::vector<std::string> args) {
  JobInputs src;
  src.preset = preset;
  src.num_gpus = gpus;
  src.megatron_args = std::move(args);
  auto job = BuildJob(src, nullptr);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : v1::JobSpec();
}

void ExpectSameAsReport(const v1::JobSpec& job) {
  const auto report = Estimate(job);
  const auto peaks = EstimatePeaks(job);
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  ASSERT_EQ(peaks->ranks.size(), static_cast<size_t>(report->ranks_size()));
  EXPECT_EQ(peaks->worst_rank, static_cast<int64_t>(report->worst_rank()));
  for (int r = 0; r < report->ranks_size(); ++r) {
    const v1::RankReport& rank = report->ranks(r);
    EXPECT_EQ(peaks->ranks[r].exceeds_limit, rank.exceeds_limit()) << "rank " << r;
    EXPECT_EQ(peaks->ranks[r].static_bytes, rank.static_bytes()) << "rank " << r;
    EXPECT_EQ(peaks->ranks[r].activation_bytes, rank.activation_bytes()) << "rank " << r;
    EXPECT_EQ(peaks->ranks[r].peak_allocated_bytes, rank.peak_allocated_bytes()) << "rank " << r;
    EXPECT_EQ(peaks->ranks[r].peak_device_bytes, rank.peak_device_bytes()) << "rank " << r;
    EXPECT_EQ(peaks->ranks[r].peak_allocated_upper_bytes, rank.peak_allocated_upper_bytes())
        << "rank " << r;
    EXPECT_EQ(peaks->ranks[r].peak_device_upper_bytes, rank.peak_device_upper_bytes())
        << "rank " << r;
  }
  // FitsWithin, which stops at the first rank over, agrees at the boundary:
  // the worst peak fits exactly, one byte less does not.
  const absl::StatusOr<ValidatedJob> v = ValidateJob(job, nullptr);
  ASSERT_TRUE(v.ok()) << v.status();
  for (const bool upper : {false, true}) {
    const uint64_t worst = peaks->WorstPeak(upper);
    EXPECT_TRUE(FitsWithin(*v, kDefaultUpperBoundCoverage, upper, worst)) << upper;
    EXPECT_FALSE(FitsWithin(*v, kDefaultUpperBoundCoverage, upper, worst - 1)) << upper;
  }
}

TEST(EstimatePeaks, EqualsTheReportOnTheShippedExamples) {
  ExpectSameAsReport(
      Job("deepseek-v3", 256, testing::ExampleArgs(testing::kDeepSeekV3With256Gpus)));
  ExpectSameAsReport(
      Job("deepseek-v3", 1024, testing::ExampleArgs(testing::kDeepSeekV3With1024Gpus)));
}

TEST(EstimatePeaks, EqualsTheReportOnDenseAndMoeLayouts) {
  ExpectSameAsReport(Job("llama3-70b", 32,
                         {"--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size",
                          "4", "--num-layers-per-virtual-pipeline-stage", "4", "--seq-length",
                          "4096", "--global-batch-size", "32", "--sequence-parallel",
                          "--micro-batch-size", "1", "--use-distributed-optimizer"}));
  ExpectSameAsReport(
      Job("qwen3-30b-a3b", 32,
          {"--expert-model-parallel-size", "8", "--seq-length", "10240", "--recompute-granularity",
           "full", "--recompute-method", "uniform", "--recompute-num-layers", "1",
           "--micro-batch-size", "1", "--use-distributed-optimizer"}));
}

// Issue 12's job whose counts reach 2^50: both paths flag the same ranks.
TEST(EstimatePeaks, FlagsTheRanksOverTheLimitAsTheReportDoes) {
  const v1::JobSpec job = Job("moonlight-16b-a3b", 8,
                              {"--expert-model-parallel-size", "8", "--use-distributed-optimizer",
                               "--micro-batch-size", "16777216", "--seq-length", "16777216"});
  ExpectSameAsReport(job);
  const auto peaks = EstimatePeaks(job);
  ASSERT_TRUE(peaks.ok()) << peaks.status();
  EXPECT_TRUE(peaks->ranks[0].exceeds_limit);
}

TEST(EstimatePeaks, RefusesWhatValidationRefuses) {
  const auto peaks = EstimatePeaks(Job("llama3-8b", 8, {"--tensor-model-parallel-size", "3"}));
  EXPECT_FALSE(peaks.ok());
}

}  // namespace
}  // namespace oomguard
