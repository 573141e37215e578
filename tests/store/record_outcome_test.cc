#include "store/record_outcome.h"

#include "gtest/gtest.h"

namespace oomguard::store {
namespace {

v1::CheckRecord WithOutcomes(std::initializer_list<v1::JobOutcome> outcomes) {
  v1::CheckRecord record;
  for (v1::JobOutcome outcome : outcomes) record.add_reports()->set_outcome(outcome);
  SetRecordOutcome(&record);
  return record;
}

TEST(RecordOutcomeTest, ACudaOomOutranksEverything) {
  EXPECT_EQ(WithOutcomes({v1::JOB_OUTCOME_RAN, v1::JOB_OUTCOME_CUDA_OOM, v1::JOB_OUTCOME_FAILED,
                          v1::JOB_OUTCOME_HOST_OOM, v1::JOB_OUTCOME_CANCELLED})
                .outcome(),
            v1::JOB_OUTCOME_CUDA_OOM);
}

TEST(RecordOutcomeTest, FailuresOutrankACancelWhichOutranksRan) {
  EXPECT_EQ(WithOutcomes({v1::JOB_OUTCOME_FAILED, v1::JOB_OUTCOME_HOST_OOM}).outcome(),
            v1::JOB_OUTCOME_HOST_OOM);
  EXPECT_EQ(WithOutcomes({v1::JOB_OUTCOME_CANCELLED, v1::JOB_OUTCOME_FAILED}).outcome(),
            v1::JOB_OUTCOME_FAILED);
  EXPECT_EQ(WithOutcomes({v1::JOB_OUTCOME_RAN, v1::JOB_OUTCOME_CANCELLED}).outcome(),
            v1::JOB_OUTCOME_CANCELLED);
}

TEST(RecordOutcomeTest, AReportThatDoesNotSayChangesNothing) {
  EXPECT_EQ(WithOutcomes({v1::JOB_OUTCOME_RAN, v1::JOB_OUTCOME_UNSPECIFIED}).outcome(),
            v1::JOB_OUTCOME_RAN);
  EXPECT_EQ(WithOutcomes({}).outcome(), v1::JOB_OUTCOME_UNSPECIFIED);
}

}  // namespace
}  // namespace oomguard::store
