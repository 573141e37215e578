#include "feedback/report_limits.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::feedback {
namespace {

using ::testing::HasSubstr;

constexpr char kId[] = "0123456789abcdef0123456789abcdef";

v1::ReportRequest MegatronReport() {
  v1::ReportRequest r;
  r.set_check_id(kId);
  r.set_source(v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  v1::RankMeasurement* m = r.add_ranks();
  m->set_rank(0);
  m->set_max_allocated_bytes(uint64_t{60} << 30);
  m->set_max_reserved_bytes(uint64_t{64} << 30);
  return r;
}

void ExpectInvalid(const v1::ReportRequest& r, const std::string& field) {
  absl::Status s = ValidateReport(r);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr(field));
}

TEST(ReportLimitsTest, TakesAMegatronLogReport) {
  EXPECT_TRUE(ValidateReport(MegatronReport()).ok());
}

TEST(ReportLimitsTest, CheckIdIs32LowercaseHexDigits) {
  EXPECT_TRUE(ValidateCheckId(kId).ok());
  EXPECT_FALSE(ValidateCheckId("0123456789ABCDEF0123456789abcdef").ok());
  EXPECT_FALSE(ValidateCheckId("0123456789abcdef0123456789abcde").ok());
  v1::ReportRequest r = MegatronReport();
  r.set_check_id("");
  ExpectInvalid(r, "check_id: is empty");
  r.set_check_id("x');drop table checks;--");
  ExpectInvalid(r, "is not a check id");
}

TEST(ReportLimitsTest, NamesTheBadMeasurement) {
  v1::ReportRequest r = MegatronReport();
  r.mutable_ranks(0)->set_max_allocated_bytes((uint64_t{1} << 50) + 1);
  ExpectInvalid(r, "ranks[0].max_allocated_bytes: 1125899906842625 is over 1 PiB");
  r = MegatronReport();
  *r.add_ranks() = r.ranks(0);
  ExpectInvalid(r, "ranks[1].rank: rank 0 is measured twice");
  r = MegatronReport();
  r.mutable_ranks(0)->clear_rank();
  ExpectInvalid(r, "ranks[0]: names neither a rank nor a device");
  r = MegatronReport();
  r.mutable_ranks(0)->clear_max_allocated_bytes();
  r.mutable_ranks(0)->clear_max_reserved_bytes();
  ExpectInvalid(r, "ranks[0]: has no value");
  r = MegatronReport();
  r.mutable_ranks(0)->set_rank(1u << 24);
  ExpectInvalid(r, "ranks[0].rank: 16777216 is not a rank");
}

TEST(ReportLimitsTest, SourceOutcomeAndPhase) {
  v1::ReportRequest r = MegatronReport();
  r.set_source(v1::MEASUREMENT_SOURCE_UNSPECIFIED);
  ExpectInvalid(r, "source: 0 is not a measurement source");
  r = MegatronReport();
  r.set_outcome(static_cast<v1::JobOutcome>(99));
  ExpectInvalid(r, "outcome: 99 is not a job outcome");
  r = MegatronReport();
  r.set_oom_phase("log_prob");
  ExpectInvalid(r, "oom_phase: is set, but the outcome is not JOB_OUTCOME_CUDA_OOM");
  r.set_outcome(v1::JOB_OUTCOME_CUDA_OOM);
  EXPECT_TRUE(ValidateReport(r).ok());
  r.set_detail(std::string(2049, 'x'));
  ExpectInvalid(r, "detail: 2049 bytes, at most 2048");
}

TEST(ReportLimitsTest, HandlesAreSafeInALabelMatcher) {
  v1::ReportRequest r;
  r.set_check_id(kId);
  r.set_source(v1::MEASUREMENT_SOURCE_SLURM);
  ExpectInvalid(r, "the report says nothing");
  r.mutable_handle()->set_slurm_job_id("1234_7");
  EXPECT_TRUE(ValidateReport(r).ok());
  r.mutable_handle()->set_slurm_job_id("12\"}or vector(1)");
  ExpectInvalid(r, "handle.slurm_job_id");
  r.mutable_handle()->clear_slurm_job_id();
  r.mutable_handle()->set_kubernetes_namespace("team-a");
  ExpectInvalid(r, "kubernetes_namespace and kubernetes_workload go together");
  r.mutable_handle()->set_kubernetes_workload("Llama-70B");
  ExpectInvalid(r, "handle.kubernetes_workload: \"Llama-70B\" is not a Kubernetes name");
  r.mutable_handle()->set_kubernetes_workload("llama-70b.pretrain");
  EXPECT_TRUE(ValidateReport(r).ok());
  r.mutable_handle()->set_kubernetes_kind("PyTorchJob");
  EXPECT_TRUE(ValidateReport(r).ok());
  r.mutable_handle()->set_kubernetes_kind("pytorchjob\"}");
  ExpectInvalid(r, "handle.kubernetes_kind: \"pytorchjob\\\"}\" is not a Kubernetes kind");
  r.mutable_handle()->set_kubernetes_kind("Job");
  r.mutable_handle()->clear_kubernetes_namespace();
  r.mutable_handle()->clear_kubernetes_workload();
  r.mutable_handle()->set_slurm_job_id("1234");
  ExpectInvalid(r, "handle.kubernetes_kind: names the kind of no kubernetes_workload");
}

}  // namespace
}  // namespace oomguard::feedback
