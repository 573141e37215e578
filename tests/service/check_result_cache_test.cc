// Tests of the cache of Check answers by resolved job (service/
// check_result_cache.h): its key, and RequestHandlers::RunCheck answering
// from it. A request answered from the cache needs no time, so a deadline
// that has already passed tells a hit (OK) from a computation
// (DEADLINE_EXCEEDED).
#include "service/check_result_cache.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "oomguard/v1/admission.pb.h"
#include "service/metrics.h"
#include "service/request_handlers.h"
#include "tests/testing/rl_test_jobs.h"
#include "tests/testing/service_test_jobs.h"

namespace oomguard::service {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

v1::CheckRequest Request(const std::string& args) {
  v1::CheckRequest request;
  *request.mutable_job() = testing::MegatronSource("llama3-8b", args, 8);
  request.set_gpu_name("H100-SXM-80GB");
  return request;
}

constexpr char kJob[] = "--seq-length 4096 --micro-batch-size 1 --use-distributed-optimizer";

std::string Notes(const v1::CheckResponse& response) {
  std::string all;
  for (const std::string& note : response.report().notes()) all += note + "\n";
  return all;
}

class CheckResultCacheTest : public ::testing::Test {
 protected:
  // The response cache (by request bytes) is off: only the answers cache
  // can answer without computing.
  std::unique_ptr<RequestHandlers> Handlers(size_t answers_bytes) {
    return std::make_unique<RequestHandlers>(
        ServiceConfig{.log_requests = false,
                      .response_cache_bytes = 0,
                      .check_result_cache_bytes = answers_bytes},
        &metrics_);
  }

  ServiceMetrics metrics_{"test"};
};

TEST_F(CheckResultCacheTest, AnswersAResubmissionWithItsOwnNotes) {
  const std::unique_ptr<RequestHandlers> handlers = Handlers(size_t{1} << 20);
  v1::CheckResponse first;
  ASSERT_TRUE(handlers
                  ->RunCheck(Request(absl::StrCat(kJob,
                                                  " --save /ckpt/a --rampup-batch-size 16 16 "
                                                  "1000")),
                             absl::InfiniteFuture(), &first)
                  .ok());
  EXPECT_THAT(Notes(first), HasSubstr("--rampup-batch-size"));

  // Other checkpoint directory, no batch-size ramp-up (noted, estimated at
  // the final batch size): the same job.
  v1::CheckResponse again;
  const absl::Status status = handlers->RunCheck(Request(absl::StrCat(kJob, " --save /ckpt/b")),
                                                 absl::InfinitePast(), &again);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(again.verdict(), first.verdict());
  EXPECT_EQ(again.peak_device_bytes(), first.peak_device_bytes());
  EXPECT_EQ(again.summary(), first.summary());
  EXPECT_EQ(again.report().ranks_size(), first.report().ranks_size());
  EXPECT_EQ(again.alternatives_size(), first.alternatives_size());
  // Notes are the request's alone: the first answer's were not stored.
  EXPECT_THAT(Notes(again), Not(HasSubstr("--rampup-batch-size")));
}

TEST_F(CheckResultCacheTest, AnotherJobGpuOrPolicyIsComputed) {
  const std::unique_ptr<RequestHandlers> handlers = Handlers(size_t{1} << 20);
  v1::CheckResponse response;
  ASSERT_TRUE(handlers->RunCheck(Request(kJob), absl::InfiniteFuture(), &response).ok());
  ASSERT_TRUE(handlers->RunCheck(Request(kJob), absl::InfinitePast(), &response).ok());

  v1::CheckRequest other_job = Request(absl::StrCat(kJob, " --micro-batch-size 2"));
  v1::CheckRequest other_gpu = Request(kJob);
  other_gpu.set_gpu_name("A100-SXM-80GB");
  v1::CheckRequest other_margin = Request(kJob);
  other_margin.mutable_policy()->set_safety_margin(0.1);
  v1::CheckRequest point = Request(kJob);
  point.mutable_policy()->set_peak_bound(v1::PEAK_BOUND_POINT);
  v1::CheckRequest coverage = Request(kJob);
  coverage.mutable_policy()->set_upper_bound_coverage(0.9);
  v1::CheckRequest no_report = Request(kJob);
  no_report.set_omit_report(true);
  // A setting oomguard does not model is part of the job; judging such jobs
  // is part of the policy.
  v1::CheckRequest unmodelled = Request(absl::StrCat(kJob, " --frobnicate"));
  unmodelled.mutable_policy()->set_judge_unmodelled(true);
  v1::CheckRequest judge_unmodelled = Request(kJob);
  judge_unmodelled.mutable_policy()->set_judge_unmodelled(true);
  for (const v1::CheckRequest& request : {other_job, other_gpu, other_margin, point, coverage,
                                          no_report, unmodelled, judge_unmodelled}) {
    EXPECT_EQ(handlers->RunCheck(request, absl::InfinitePast(), &response).code(),
              absl::StatusCode::kDeadlineExceeded)
        << request.ShortDebugString();
  }
}

// An RL job's config that differs only in a comment reads as the same job:
// its answer comes from the cache (a passed deadline still answers); another
// engine fraction is computed.
TEST_F(CheckResultCacheTest, AnswersAnRlJobReadAsBefore) {
  const std::unique_ptr<RequestHandlers> handlers = Handlers(size_t{1} << 20);
  auto request = [](const std::string& fraction, const std::string& comment) {
    v1::CheckRequest r;
    *r.mutable_job() = testing::VerlQwen3Source(fraction, comment);
    r.set_gpu_name("H100-SXM-80GB");
    return r;
  };
  v1::CheckResponse first, again;
  ASSERT_TRUE(handlers->RunCheck(request("0.5", "# run a"), absl::InfiniteFuture(), &first).ok());
  const absl::Status status =
      handlers->RunCheck(request("0.5", "# run b"), absl::InfinitePast(), &again);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(again.SerializeAsString(), first.SerializeAsString());
  EXPECT_EQ(handlers->RunCheck(request("0.6", "# run a"), absl::InfinitePast(), &again).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_F(CheckResultCacheTest, ZeroBytesTurnsItOff) {
  const std::unique_ptr<RequestHandlers> handlers = Handlers(0);
  v1::CheckResponse response;
  ASSERT_TRUE(handlers->RunCheck(Request(kJob), absl::InfiniteFuture(), &response).ok());
  EXPECT_EQ(handlers->RunCheck(Request(kJob), absl::InfinitePast(), &response).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(CheckResultKeyTest, EqualForEqualInputsAndDistinctOtherwise) {
  v1::JobSpec job;
  job.mutable_model()->set_num_layers(32);
  v1::GpuSpec gpu;
  gpu.set_name("H100-SXM-80GB");
  gpu.set_memory_bytes(uint64_t{80} << 30);
  const AdmissionOptions options;
  const std::string key = CheckResultKey(job, gpu, options);
  EXPECT_EQ(CheckResultKey(job, gpu, options), key);

  v1::JobSpec other_job = job;
  other_job.mutable_model()->set_num_layers(33);
  v1::GpuSpec other_gpu = gpu;
  other_gpu.set_memory_bytes(uint64_t{94} << 30);
  AdmissionOptions margin = options, point = options, coverage = options, brief = options;
  margin.safety_margin = 0.05;
  point.compare_upper_bound = false;
  coverage.upper_bound_coverage = 0.99;
  brief.with_report = false;
  AdmissionOptions widened = options, widened_jobs = options, widened_cluster = options;
  widened.learned_widening = 0.05;
  widened_jobs.learned_widening_jobs = 21;
  widened_cluster.learned_widening_cluster = "b";
  AdmissionOptions deadline = options;
  deadline.deadline = Deadline(absl::InfinitePast());
  EXPECT_EQ(CheckResultKey(job, gpu, deadline), key);  // The deadline changes no answer.
  for (const std::string& other :
       {CheckResultKey(other_job, gpu, options), CheckResultKey(job, other_gpu, options),
        CheckResultKey(job, gpu, margin), CheckResultKey(job, gpu, point),
        CheckResultKey(job, gpu, coverage), CheckResultKey(job, gpu, brief),
        CheckResultKey(job, gpu, widened), CheckResultKey(job, gpu, widened_jobs),
        CheckResultKey(job, gpu, widened_cluster)}) {
    EXPECT_NE(other, key);
  }
}

// An RL job's key: its RlJobSpec's, never a JobSpec's (even one whose
// serialization is the same bytes), and distinct for another RL job.
TEST(CheckResultKeyTest, RlJobsAreKeyedApart) {
  v1::RlJobSpec rl;
  rl.mutable_actor()->mutable_model()->set_num_layers(32);
  v1::GpuSpec gpu;
  gpu.set_memory_bytes(uint64_t{80} << 30);
  const AdmissionOptions options;
  const std::string key = CheckResultKey(rl, gpu, options);
  EXPECT_EQ(CheckResultKey(rl, gpu, options), key);
  // A JobSpec whose bytes are the RlJobSpec's.
  v1::JobSpec same_bytes;
  ASSERT_TRUE(same_bytes.ParseFromString(rl.SerializeAsString()));
  EXPECT_NE(CheckResultKey(same_bytes, gpu, options), key);
  v1::RlJobSpec other = rl;
  other.mutable_rollout()->set_memory_fraction(0.4);
  EXPECT_NE(CheckResultKey(other, gpu, options), key);
  AdmissionOptions margin = options;
  margin.safety_margin = 0.05;
  EXPECT_NE(CheckResultKey(rl, gpu, margin), key);
}

}  // namespace
}  // namespace oomguard::service
