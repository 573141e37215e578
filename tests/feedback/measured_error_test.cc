#include "feedback/measured_error.h"

#include "feedback/model_family.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/feedback/feedback_test_records.h"

namespace oomguard::feedback {
namespace {

using testing::AddReport;
using testing::Allocated;
using testing::DeviceUsed;
using testing::kGiB;
using testing::Report;
using testing::TwoStageRecord;

TEST(MeasuredErrorTest, ARankIsComparedWithItsStage) {
  // Rank 5 of 4 GPUs per stage is on stage 1: estimate 40, upper 44, measured
  // 42: error (40 - 42) / 42 = -1/21, under the bound.
  const v1::CheckRecord record = TwoStageRecord();
  const std::vector<MeasuredError> errors = MeasuredErrors(record, Report({Allocated(5, 42)}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].measure, Measure::kAllocated);
  EXPECT_EQ(errors[0].pp_rank, 1u);
  EXPECT_EQ(errors[0].measured_bytes, 42 * kGiB);
  EXPECT_EQ(errors[0].estimate_bytes, 40 * kGiB);
  EXPECT_EQ(errors[0].upper_bytes, 44 * kGiB);
  EXPECT_DOUBLE_EQ(errors[0].error, -1.0 / 21);
  EXPECT_TRUE(errors[0].under_bound);
}

TEST(MeasuredErrorTest, APeakOverTheUpperBoundIsNotUnderIt) {
  // Rank 3 is on stage 0 (upper 55): 56 is over; error (50 - 56) / 56.
  const std::vector<MeasuredError> errors =
      MeasuredErrors(TwoStageRecord(), Report({Allocated(3, 56)}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].pp_rank, 0u);
  EXPECT_DOUBLE_EQ(errors[0].error, -6.0 / 56);
  EXPECT_FALSE(errors[0].under_bound);
  // At the bound is under it.
  EXPECT_TRUE(MeasuredErrors(TwoStageRecord(), Report({Allocated(3, 55)}))[0].under_bound);
}

TEST(MeasuredErrorTest, EachMeasureAgainstItsOwnEstimate) {
  // Rank 0 with both: allocated 40 against 50 (+0.25), device 50 against 60
  // (+0.2).
  v1::RankMeasurement both = Allocated(0, 40);
  both.set_device_used_bytes(50 * kGiB);
  const std::vector<MeasuredError> errors = MeasuredErrors(TwoStageRecord(), Report({both}));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].measure, Measure::kAllocated);
  EXPECT_DOUBLE_EQ(errors[0].error, 0.25);
  EXPECT_EQ(errors[1].measure, Measure::kDevice);
  EXPECT_EQ(errors[1].upper_bytes, 66 * kGiB);
  EXPECT_DOUBLE_EQ(errors[1].error, 0.2);
  EXPECT_EQ(MeasureName(Measure::kAllocated), "allocated");
  EXPECT_EQ(MeasureName(Measure::kDevice), "device");
}

TEST(MeasuredErrorTest, MeasurementsWithoutARankGiveTheirLargestAgainstTheLargestStage) {
  // DCGM's GPUs 30 and 65 GiB: one error, 65 against stage 0's device
  // estimate 60 (upper 66): (60 - 65) / 65 = -1/13, under the bound.
  const std::vector<MeasuredError> errors = MeasuredErrors(
      TwoStageRecord(), Report({DeviceUsed("node1/0", 30), DeviceUsed("node1/1", 65)}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].measure, Measure::kDevice);
  EXPECT_EQ(errors[0].pp_rank, 0u);
  EXPECT_EQ(errors[0].measured_bytes, 65 * kGiB);
  EXPECT_DOUBLE_EQ(errors[0].error, -1.0 / 13);
  EXPECT_TRUE(errors[0].under_bound);
}

TEST(MeasuredErrorTest, TheLargestStageIsTheOneWithTheLargestUpperBound) {
  // Stage 1 made the largest: a rankless device peak is compared with it.
  v1::CheckRecord record = TwoStageRecord();
  record.mutable_estimate(1)->set_peak_device_upper_bytes(70 * kGiB);
  const std::vector<MeasuredError> errors = MeasuredErrors(record, Report({DeviceUsed("n/0", 48)}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].pp_rank, 1u);
  EXPECT_DOUBLE_EQ(errors[0].error, 0.0);
}

TEST(MeasuredErrorTest, SkipsWhatCannotBeCompared) {
  const v1::CheckRecord record = TwoStageRecord();
  // Rank 9 is on stage 2, which the record has no estimate for; a value of 0
  // has no ratio.
  EXPECT_TRUE(MeasuredErrors(record, Report({Allocated(9, 40), Allocated(1, 0)})).empty());
  // Without gpus_per_pipeline_stage no rank has a stage.
  v1::CheckRecord no_stage_size = record;
  no_stage_size.clear_gpus_per_pipeline_stage();
  EXPECT_TRUE(MeasuredErrors(no_stage_size, Report({Allocated(0, 40)})).empty());
  // Without an estimate nothing is compared, rankless values neither.
  v1::CheckRecord no_estimate = record;
  no_estimate.clear_estimate();
  EXPECT_TRUE(
      MeasuredErrors(no_estimate, Report({Allocated(0, 40), DeviceUsed("n/0", 40)})).empty());
  // A measurement of max_reserved only has no estimate to compare with.
  v1::RankMeasurement reserved;
  reserved.set_rank(0);
  reserved.set_max_reserved_bytes(50 * kGiB);
  EXPECT_TRUE(MeasuredErrors(record, Report({reserved})).empty());
}

TEST(MeasuredErrorTest, RecordErrorsTakeEveryReportInOrder) {
  v1::CheckRecord record = TwoStageRecord();
  AddReport(record, {Allocated(0, 40)});
  AddReport(record, {DeviceUsed("n/0", 65)});
  const std::vector<MeasuredError> errors = RecordErrors(record);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].measure, Measure::kAllocated);
  EXPECT_EQ(errors[1].measure, Measure::kDevice);
}

TEST(MeasuredErrorTest, AdmittedAndCudaOom) {
  v1::CheckRecord record = TwoStageRecord();
  EXPECT_TRUE(Admitted(record));
  record.set_verdict(v1::VERDICT_FITS_WITH_SETTINGS);
  EXPECT_TRUE(Admitted(record));
  record.set_verdict(v1::VERDICT_DOES_NOT_FIT);
  EXPECT_FALSE(Admitted(record));
  EXPECT_FALSE(DiedOfCudaOom(record));
  AddReport(record, {}, v1::JOB_OUTCOME_RAN);
  EXPECT_FALSE(DiedOfCudaOom(record));
  AddReport(record, {}, v1::JOB_OUTCOME_CUDA_OOM);
  EXPECT_TRUE(DiedOfCudaOom(record));
  v1::CheckRecord by_outcome = TwoStageRecord();
  by_outcome.set_outcome(v1::JOB_OUTCOME_CUDA_OOM);
  EXPECT_TRUE(DiedOfCudaOom(by_outcome));
}

TEST(ModelFamilyTest, TheBoundedFamilyOfAJob) {
  v1::JobSpec job;
  EXPECT_EQ(ModelFamily(job), "dense");
  job.mutable_model()->set_num_experts(8);
  EXPECT_EQ(ModelFamily(job), "moe");
  job.mutable_model()->set_hybrid_layer_pattern("M*M*");
  EXPECT_EQ(ModelFamily(job), "hybrid");

  v1::RlJobSpec rl;
  EXPECT_EQ(ModelFamily(rl), "rl-dense");
  rl.mutable_actor()->mutable_model()->set_num_experts(64);
  EXPECT_EQ(ModelFamily(rl), "rl-moe");

  v1::CheckRecord record;
  EXPECT_EQ(ModelFamily(record), "unknown");
  *record.mutable_job_spec() = job;
  EXPECT_EQ(ModelFamily(record), "hybrid");
  *record.mutable_rl_job_spec() = rl;
  EXPECT_EQ(ModelFamily(record), "rl-moe");
}

}  // namespace
}  // namespace oomguard::feedback
