// Tests of the server's learned widening (service/learned_widening.h) on a
// real SQLite store in a temporary directory: learned from its cluster's
// measured records only, applied where asked, shown in the gauge.
#include "service/learned_widening.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "tests/feedback/feedback_test_records.h"
#include "tests/testing/temp_sqlite_store.h"

namespace oomguard::service {
namespace {

using feedback::testing::Allocated;
using feedback::testing::Report;
using feedback::testing::TwoStageRecord;

class LearnedWideningTest : public ::testing::Test {
 protected:
  // A check of `cluster` whose job's rank 0 measured `allocated_gib`
  // against stage 0's bound of 55 GiB (none: an outcome only, measuring
  // nothing).
  void AddJob(const std::string& cluster, std::optional<uint64_t> allocated_gib) {
    temp_.PutWithReport(
        cluster, TwoStageRecord(),
        allocated_gib ? Report({Allocated(0, *allocated_gib)}) : Report({}, v1::JOB_OUTCOME_RAN));
  }

  testing::TempSqliteStore temp_;
  store::CheckStore* store_ = &temp_.store();
};

// Cluster "a": 18 jobs under the bound, one 56 GiB (1/55 over 55), one 66
// GiB (11/55 over): the 19th smallest of 20 needed widenings is 1/55.
// Cluster "b"'s jobs, far over, and a job whose report measured nothing do not count.
TEST_F(LearnedWideningTest, LearnedFromTheClustersMeasuredJobs) {
  for (int i = 0; i < 18; ++i) AddJob("a", 50);
  AddJob("a", 56);
  AddJob("a", std::nullopt);
  for (int i = 0; i < 20; ++i) AddJob("b", 70);

  prometheus::Registry registry;
  FeedbackMetrics metrics(registry);
  LearnedWidening learned(*store_, "a", {}, &metrics);
  ASSERT_TRUE(learned.Refresh().ok());
  // 19 measured jobs: too few.
  EXPECT_EQ(learned.Current().measured_jobs, 19);
  EXPECT_EQ(learned.Current().widening, 0.0);

  AddJob("a", 66);
  ASSERT_TRUE(learned.Refresh().ok());
  const feedback::LearnedWidening now = learned.Current();
  EXPECT_EQ(now.measured_jobs, 20);
  EXPECT_EQ(now.jobs_over_bound, 2);
  EXPECT_NEAR(now.widening, 1.0 / 55, 1e-12);
  double gauge = -1;
  for (const prometheus::MetricFamily& f : registry.Collect()) {
    if (f.name == "oomguard_learned_bound_widening_ratio") gauge = f.metric.at(0).gauge.value;
  }
  EXPECT_NEAR(gauge, 1.0 / 55, 1e-12);
}

TEST_F(LearnedWideningTest, AppliedWhereTheServerOrThePolicySays) {
  for (int i = 0; i < 19; ++i) AddJob("a", 50);
  AddJob("a", 66);  // The 19th smallest of 20 is 0: nothing to widen yet.
  AddJob("a", 66);  // 21 jobs: the 20th smallest, 11/55 = 0.2.
  LearnedWidening off(*store_, "a", {}, nullptr);
  ASSERT_TRUE(off.Refresh().ok());
  ASSERT_NEAR(off.Current().widening, 0.2, 1e-12);

  AdmissionOptions unset;
  off.ApplyTo(std::nullopt, unset);  // Off by default.
  EXPECT_EQ(unset.learned_widening, 0.0);
  AdmissionOptions asked;
  off.ApplyTo(true, asked);
  EXPECT_NEAR(asked.learned_widening, 0.2, 1e-12);
  EXPECT_EQ(asked.learned_widening_jobs, 21u);
  EXPECT_EQ(asked.learned_widening_cluster, "a");

  LearnedWideningOptions on_options;
  on_options.apply_by_default = true;
  LearnedWidening on(*store_, "a", on_options, nullptr);
  on.Start();  // Learns at once, then in the background until destroyed.
  AdmissionOptions by_default, refused;
  on.ApplyTo(std::nullopt, by_default);
  EXPECT_NEAR(by_default.learned_widening, 0.2, 1e-12);
  on.ApplyTo(false, refused);
  EXPECT_EQ(refused.learned_widening, 0.0);

  // Capped by --learned_widening_max.
  LearnedWideningOptions capped_options;
  capped_options.widening.max_widening = 0.1;
  LearnedWidening capped(*store_, "a", capped_options, nullptr);
  ASSERT_TRUE(capped.Refresh().ok());
  EXPECT_DOUBLE_EQ(capped.Current().widening, 0.1);
}

}  // namespace
}  // namespace oomguard::service
