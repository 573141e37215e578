// Tests of the upper bound of a rank's peak (estimator/peak_bound.h): the
// coverage quantile, the combination of the terms' spreads, and the bounds
// the estimator reports, checked against the uncertainties it lists.
#include "estimator/peak_bound.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "estimator/estimator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

v1::JobSpec Job(const std::string& preset, uint32_t gpus, std::vector<std::string> args) {
  return testing::JobFromArgs(std::move(args), gpus, preset);
}

// Standard normal quantiles from tables.
TEST(CoverageQuantile, MatchesTheNormalTable) {
  EXPECT_NEAR(CoverageQuantile(0.5), 0.0, 1e-9);
  EXPECT_NEAR(CoverageQuantile(0.9), 1.281552, 1e-6);
  EXPECT_NEAR(CoverageQuantile(0.95), 1.644854, 1e-6);
  EXPECT_NEAR(CoverageQuantile(0.999), 3.090232, 1e-6);
}

TEST(ValidateUpperBoundCoverage, NamesTheFieldAndTheRange) {
  EXPECT_TRUE(ValidateUpperBoundCoverage(0.5, "f").ok());
  EXPECT_TRUE(ValidateUpperBoundCoverage(0.999, "f").ok());
  for (double bad : {0.49, 1.0, -1.0, std::numeric_limits<double>::quiet_NaN()}) {
    const absl::Status s = ValidateUpperBoundCoverage(bad, "policy.upper_bound_coverage");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("policy.upper_bound_coverage = "));
    EXPECT_THAT(std::string(s.message()), HasSubstr(": must be in [0.5, 0.999]"));
  }
}

// Two terms of 3 and 4 GiB inside the allocator and one of 12 GiB outside:
// the allocated bound widens by z x 5 GiB, the device bound by z x 13 GiB.
TEST(UncertaintyList, CombinesTheTermsInQuadrature) {
  google::protobuf::RepeatedPtrField<v1::Uncertainty> items;
  UncertaintyList list(&items, /*with_basis=*/true);
  list.Add("a", 3 * kGiB, true, "basis a");
  list.Add("b", 4 * kGiB, true, "basis b");
  list.Add("c", 12 * kGiB, false, "basis c");
  list.Add("zero", 0, true, "not listed");
  ASSERT_EQ(items.size(), 3);
  EXPECT_EQ(items[2].name(), "c");
  EXPECT_EQ(items[2].sd_bytes(), static_cast<uint64_t>(12 * kGiB));
  EXPECT_FALSE(items[2].in_allocated());
  EXPECT_EQ(items[0].basis(), "basis a");
  const PeakVariance& v = list.variance();
  const uint64_t point = 100 * static_cast<uint64_t>(kGiB);
  EXPECT_EQ(UpperBound(point, v.in_allocated, 2.0), point + static_cast<uint64_t>(10 * kGiB));
  EXPECT_EQ(UpperBound(point, v.in_allocated + v.device_only, 2.0),
            point + static_cast<uint64_t>(26 * kGiB));
  EXPECT_EQ(UpperBound(point, v.in_allocated, 0.0), point);
}

// The report's bounds are rebuilt from the uncertainties it lists (each
// rounded to whole bytes, hence the few bytes of tolerance).
void ExpectBoundsFromTheListedTerms(const v1::EstimateReport& report) {
  const double z = CoverageQuantile(report.upper_bound_coverage());
  for (const v1::RankReport& r : report.ranks()) {
    double in_allocated = 0, all = 0;
    for (const v1::Uncertainty& u : r.uncertainties()) {
      const double sd = static_cast<double>(u.sd_bytes());
      all += sd * sd;
      if (u.in_allocated()) in_allocated += sd * sd;
    }
    EXPECT_NEAR(static_cast<double>(r.peak_allocated_upper_bytes()),
                static_cast<double>(r.peak_allocated_bytes()) + z * std::sqrt(in_allocated), 16)
        << "rank " << r.pp_rank();
    EXPECT_NEAR(static_cast<double>(r.peak_device_upper_bytes()),
                static_cast<double>(r.peak_device_bytes()) + z * std::sqrt(all), 16)
        << "rank " << r.pp_rank();
  }
}

TEST(EstimatedUpperBound, IsBuiltFromTheListedTermsAtTheCoverage) {
  const v1::JobSpec job =
      Job("llama3-70b", 32,
          {"--tensor-model-parallel-size", "4", "--pipeline-model-parallel-size", "4",
           "--seq-length", "4096", "--micro-batch-size", "1", "--global-batch-size", "64",
           "--use-distributed-optimizer"});
  EstimateOptions options;
  absl::StatusOr<v1::EstimateReport> at95 = Estimate(job, options);
  ASSERT_TRUE(at95.ok()) << at95.status();
  EXPECT_DOUBLE_EQ(at95->upper_bound_coverage(), 0.95);
  ExpectBoundsFromTheListedTerms(*at95);
  const v1::RankReport& r0 = at95->ranks(0);
  // Every rank lists the model's terms and the device terms, largest first.
  std::vector<std::string> names;
  for (const v1::Uncertainty& u : r0.uncertainties()) names.push_back(u.name());
  EXPECT_THAT(names,
              ::testing::IsSupersetOf({"static_buffers", "held_activations", "backward_transient",
                                       "allocator_slack", "nccl_buffers", "cuda_context"}));
  for (int i = 1; i < r0.uncertainties_size(); ++i) {
    EXPECT_GE(r0.uncertainties(i - 1).sd_bytes(), r0.uncertainties(i).sd_bytes());
  }
  // static_buffers is 1% of static.
  for (const v1::Uncertainty& u : r0.uncertainties()) {
    if (u.name() == "static_buffers") {
      EXPECT_NEAR(static_cast<double>(u.sd_bytes()), 0.01 * r0.static_bytes(), 1);
    }
  }

  options.upper_bound_coverage = 0.5;  // z = 0: the bound is the point.
  absl::StatusOr<v1::EstimateReport> at50 = Estimate(job, options);
  ASSERT_TRUE(at50.ok());
  EXPECT_EQ(at50->ranks(0).peak_device_upper_bytes(), at50->ranks(0).peak_device_bytes());
  options.upper_bound_coverage = 0.99;
  absl::StatusOr<v1::EstimateReport> at99 = Estimate(job, options);
  ASSERT_TRUE(at99.ok());
  ExpectBoundsFromTheListedTerms(*at99);
  EXPECT_GT(at99->ranks(0).peak_device_upper_bytes(), r0.peak_device_upper_bytes());

  options.upper_bound_coverage = 1.2;
  const absl::StatusOr<v1::EstimateReport> bad = Estimate(job, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("upper_bound_coverage = 1.2"));
}

// Routing not forced to balance: the moe_imbalance overhead (25% of the
// routed-expert activations) has a spread of 0.6 of itself (15% of them).
TEST(EstimatedUpperBound, RoutingImbalanceSpreadIsSixTenthsOfItsMargin) {
  const v1::JobSpec job =
      Job("qwen3-235b-a22b", 64,
          {"--expert-model-parallel-size", "8", "--pipeline-model-parallel-size", "2",
           "--seq-length", "4096", "--micro-batch-size", "1", "--global-batch-size", "64",
           "--use-distributed-optimizer"});
  absl::StatusOr<v1::EstimateReport> report = Estimate(job);
  ASSERT_TRUE(report.ok()) << report.status();
  ExpectBoundsFromTheListedTerms(*report);
  const v1::RankReport& r = report->ranks(0);
  double margin = 0, sd = 0;
  for (const v1::Overhead& o : r.overheads()) {
    if (o.name() == "moe_imbalance") margin = static_cast<double>(o.bytes());
  }
  for (const v1::Uncertainty& u : r.uncertainties()) {
    if (u.name() == "moe_imbalance") sd = static_cast<double>(u.sd_bytes());
  }
  ASSERT_GT(margin, 0);
  EXPECT_NEAR(sd, 0.6 * margin, 2);
}

// torch's foreach AdamW (no TE or Apex) allocates a temporary of 4 bytes
// per element of the optimizer's shard during the step; FusedAdam none.
TEST(OptimizerStepTemporary, TorchAdamAddsFourBytesPerShardElement) {
  v1::JobSpec job = Job("llama3-8b", 8,
                        {"--seq-length", "1024", "--micro-batch-size", "1", "--global-batch-size",
                         "8", "--use-distributed-optimizer", "--recompute-granularity", "full",
                         "--recompute-method", "uniform", "--recompute-num-layers", "1"});
  absl::StatusOr<v1::EstimateReport> fused = Estimate(job);
  ASSERT_TRUE(fused.ok()) << fused.status();
  EXPECT_EQ(fused->ranks(0).optimizer_step_temporary_bytes(), 0u);
  job.mutable_runtime()->set_optimizer_implementation(v1::OPTIMIZER_IMPLEMENTATION_TORCH);
  absl::StatusOr<v1::EstimateReport> torch = Estimate(job);
  ASSERT_TRUE(torch.ok()) << torch.status();
  const v1::RankReport& r = torch->ranks(0);
  // DP 8 shards every element 8 ways: 4 B x parameters / 8.
  EXPECT_NEAR(static_cast<double>(r.optimizer_step_temporary_bytes()),
              4.0 * static_cast<double>(r.parameters()) / 8, 8);
  // Full recompute leaves a small forward/backward peak: the step's is the
  // larger one, and it sets peak_allocated.
  EXPECT_GT(r.peak_allocated_bytes(), fused->ranks(0).peak_allocated_bytes());
}

}  // namespace
}  // namespace oomguard
