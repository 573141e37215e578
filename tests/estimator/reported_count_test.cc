// The range of reported counts (estimator/reported_count.h): the capped
// conversions and arithmetic, and the jobs of issue 12 whose byte counts
// once saturated at 2^63 and wrapped into a false "fits".
#include "estimator/reported_count.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "estimator/estimator.h"
#include "estimator/report_invariants.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

constexpr uint64_t kLimit = kMaxReportedCount;

TEST(ReportedCount, LimitIsOnePebibyte) { EXPECT_EQ(kLimit, 1125899906842624u); }

TEST(ReportedCount, RoundsBelowTheLimitAndCapsFromIt) {
  EXPECT_EQ(RoundedCount(0), 0u);
  EXPECT_EQ(RoundedCount(-5.0), 0u);
  EXPECT_EQ(RoundedCount(2.5), 3u);
  EXPECT_EQ(RoundedCount(1e12 + 0.4), 1000000000000u);
  EXPECT_EQ(RoundedCount(static_cast<double>(kLimit) - 1), kLimit - 1);
  EXPECT_EQ(RoundedCount(static_cast<double>(kLimit)), kLimit);
  EXPECT_EQ(RoundedCount(9.3e18), kLimit);  // Past 2^63: llround's undefined range.
  EXPECT_EQ(RoundedCount(1e300), kLimit);
  EXPECT_EQ(RoundedCount(std::numeric_limits<double>::infinity()), kLimit);
  EXPECT_EQ(RoundedCount(std::numeric_limits<double>::quiet_NaN()), kLimit);
  EXPECT_EQ(TruncatedCount(2.9), 2u);
  EXPECT_EQ(TruncatedCount(-1), 0u);
  EXPECT_EQ(TruncatedCount(1e30), kLimit);
}

// RoundedCount rounds as std::llround (half away from zero) everywhere
// below the limit, at the halves and at the doubles next to them, where
// adding 0.5 and truncating would not.
TEST(ReportedCount, RoundsAsLlroundBelowTheLimit) {
  EXPECT_EQ(RoundedCount(0.49999999999999994), 0u);  // + 0.5 would round to 1.
  EXPECT_EQ(RoundedCount(0.5), 1u);
  EXPECT_EQ(RoundedCount(std::numeric_limits<double>::denorm_min()), 0u);
  EXPECT_EQ(RoundedCount(static_cast<double>(kLimit) - 0.5), kLimit);
  EXPECT_EQ(RoundedCount(static_cast<double>(kLimit) - 0.75), kLimit - 1);
  std::vector<double> values;
  for (double whole = 1; whole < static_cast<double>(kLimit); whole = whole * 3 + 7) {
    for (const double frac : {0.0, 0.25, 0.5, 0.75}) {
      const double v = whole + frac;
      values.push_back(v);
      values.push_back(std::nextafter(v, 0.0));
      values.push_back(std::nextafter(v, 1e300));
    }
  }
  for (const double v : values) {
    if (v >= static_cast<double>(kLimit)) continue;
    EXPECT_EQ(RoundedCount(v), std::min<uint64_t>(std::llround(v), kLimit)) << v;
  }
}

TEST(ReportedCount, SumsAndProductsStopAtTheLimit) {
  EXPECT_EQ(AddCounts(2, 3), 5u);
  EXPECT_EQ(AddCounts(kLimit - 1, 1), kLimit);
  EXPECT_EQ(AddCounts(kLimit, kLimit), kLimit);
  EXPECT_EQ(MultiplyCount(3, 7), 21u);
  EXPECT_EQ(MultiplyCount(0, ~uint64_t{0}), 0u);
  EXPECT_EQ(MultiplyCount(kLimit / 4, 4), kLimit);
  EXPECT_EQ(MultiplyCount(kLimit / 4, 3), kLimit / 4 * 3);
  EXPECT_EQ(MultiplyCount(2, ~uint64_t{0}), kLimit);
  EXPECT_EQ(MultiplyCount(kLimit, kLimit), kLimit);
  EXPECT_TRUE(IsCapped(kLimit));
  EXPECT_FALSE(IsCapped(kLimit - 1));
}

using ::oomguard::testing::JobFromArgs;

// Issue 12: `oomguard estimate --gpus 8 --gpu-memory-gib 80 --preset
// moonlight-16b-a3b -- --expert-model-parallel-size 8
// --use-distributed-optimizer --micro-batch-size 16777216 --seq-length
// 16777216` printed 8589934592 GiB of activations and a 45.62 GiB peak that
// "fits".
TEST(ReportedCount, MoonlightWithAbsurdBatchIsFlaggedNotWrapped) {
  EstimateOptions options;
  options.module_tree = true;
  absl::StatusOr<v1::EstimateReport> rep =
      Estimate(JobFromArgs({"--expert-model-parallel-size", "8", "--use-distributed-optimizer",
                            "--micro-batch-size", "16777216", "--seq-length", "16777216"},
                           8, "moonlight-16b-a3b"),
               options);
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_TRUE(CheckReportInvariants(*rep).ok()) << CheckReportInvariants(*rep);
  EXPECT_TRUE(rep->exceeds_limit());
  ASSERT_EQ(rep->ranks_size(), 1);
  const v1::RankReport& r = rep->ranks(0);
  EXPECT_TRUE(r.exceeds_limit());
  EXPECT_EQ(r.activation_bytes(), kLimit);
  EXPECT_EQ(r.peak_allocated_bytes(), kLimit);
  EXPECT_EQ(r.peak_device_bytes(), kLimit);
  EXPECT_GE(r.peak_device_bytes(), r.static_bytes());
  // The weights are exact: about 3.4 B elements per GPU.
  EXPECT_LT(r.parameters(), uint64_t{4} << 30);
  ASSERT_FALSE(rep->notes().empty());
  EXPECT_EQ(rep->notes(rep->notes_size() - 1),
            "PP rank 0 needs 1 PiB (2^50 bytes) or more per GPU: counts of 2^50 or more are "
            "shown as 2^50 = 1125899906842624 and flagged exceeds_limit");
}

// Issue 12: `oomguard estimate --gpus 1 --json -- --num-layers 1
// --hidden-size 64 --num-attention-heads 1 --vocab-size 1000
// --position-embedding-type rope --seq-length 16777216 --micro-batch-size
// 134217728` reported peak_allocated_bytes 102513664 below activation_bytes
// 9223372036854775808.
TEST(ReportedCount, TinyModelWithAbsurdTokensKeepsPeakAboveActivations) {
  absl::StatusOr<v1::EstimateReport> rep =
      Estimate(JobFromArgs({"--num-layers", "1", "--hidden-size", "64", "--num-attention-heads",
                            "1", "--vocab-size", "1000", "--position-embedding-type", "rope",
                            "--seq-length", "16777216", "--micro-batch-size", "134217728"},
                           1));
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_TRUE(CheckReportInvariants(*rep).ok()) << CheckReportInvariants(*rep);
  const v1::RankReport& r = rep->ranks(0);
  EXPECT_TRUE(r.exceeds_limit());
  EXPECT_TRUE(rep->exceeds_limit());
  EXPECT_EQ(r.activation_bytes(), kLimit);
  EXPECT_EQ(r.peak_allocated_bytes(), kLimit);
  EXPECT_EQ(r.peak_device_bytes(), kLimit);
  // 115648 parameters x 16 bytes = 1850368, exact, + TE's fp32 dummy weight
  // gradients (te_weight_gradients.h): qkv [192, 64], proj [64, 64], fc1
  // [256, 64], fc2 [64, 256], output [1024, 64] = 114688 x 4 = 458752.
  EXPECT_EQ(r.static_().te_dummy_wgrad_bytes(), 458752u);
  EXPECT_EQ(r.static_bytes(), 1850368u + 458752u);
  EXPECT_FALSE(IsCapped(r.parameters()));
}

// A job far inside the limit is not flagged and gets no note about it.
TEST(ReportedCount, OrdinaryJobIsNotFlagged) {
  EstimateOptions options;
  options.module_tree = true;
  absl::StatusOr<v1::EstimateReport> rep =
      Estimate(JobFromArgs({"--expert-model-parallel-size", "8", "--use-distributed-optimizer",
                            "--micro-batch-size", "1", "--seq-length", "4096"},
                           8, "moonlight-16b-a3b"),
               options);
  ASSERT_TRUE(rep.ok()) << rep.status();
  EXPECT_TRUE(CheckReportInvariants(*rep).ok()) << CheckReportInvariants(*rep);
  EXPECT_FALSE(rep->exceeds_limit());
  EXPECT_FALSE(rep->ranks(0).exceeds_limit());
  for (const std::string& note : rep->notes()) EXPECT_EQ(note.find("2^50"), std::string::npos);
}

}  // namespace
}  // namespace oomguard
