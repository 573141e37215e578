// The transport-free handlers (service/request_handlers.h), called in
// process: Estimate answers what the estimator answers for the resolved
// job; Check's verdict follows from the GPU's memory against that
// estimate's peak; errors are INVALID_ARGUMENT naming the request field; a
// repeated Check comes from the response cache byte for byte; the deadline
// and the stop point end the work; Handle guards, maps and counts a call.
#include "service/request_handlers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "estimator/estimator.h"
#include "google/protobuf/descriptor.h"
#include "jobspec/presets.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/service.pb.h"
#include "prometheus/metric_family.h"
#include "service/metrics.h"
#include "service/request_resolution.h"
#include "service/status_mapping.h"
#include "tests/testing/service_test_jobs.h"

namespace oomguard::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class RequestHandlersTest : public ::testing::Test {
 protected:
  // The estimate of the Llama-3-8B job (service_test_jobs.h) as the
  // estimator itself gives it for the job the request resolves to.
  static v1::EstimateReport DirectEstimate() {
    absl::StatusOr<ResolvedJob> job = ResolveJobSource(testing::Llama3With8GpusFits(), "job");
    EXPECT_TRUE(job.ok()) << job.status();
    absl::StatusOr<v1::EstimateReport> report = oomguard::Estimate(job->spec);
    EXPECT_TRUE(report.ok()) << report.status();
    for (const std::string& note : job->notes) report->add_notes(note);
    return *report;
  }

  // A Check of that job on a GPU of `bytes` (no catalog GPU: no planner
  // alternatives, which need the GPU's speed).
  static v1::CheckRequest CheckOnBytes(uint64_t bytes) {
    v1::CheckRequest request;
    *request.mutable_job() = testing::Llama3With8GpusFits();
    request.set_gpu_memory_bytes(bytes);
    return request;
  }

  absl::StatusOr<v1::CheckResponse> RunCheck(const v1::CheckRequest& request,
                                             absl::Time deadline = absl::InfiniteFuture()) {
    v1::CheckResponse response;
    absl::Status status = handlers_.RunCheck(request, deadline, &response);
    if (!status.ok()) return status;
    return response;
  }

  // The request fields the status's BadRequest detail names.
  static std::vector<std::string> Fields(const absl::Status& status) {
    return BadRequestFields(ToGrpcStatus(status));
  }

  ServiceMetrics metrics_{"test"};
  RequestHandlers handlers_{ServiceConfig{.log_requests = false}, &metrics_};
};

TEST_F(RequestHandlersTest, EstimateIsTheEstimatorsReportOfTheResolvedJob) {
  v1::EstimateRequest request;
  *request.mutable_job() = testing::Llama3With8GpusFits();
  CallOutcome outcome;
  absl::StatusOr<v1::EstimateResponse> response =
      handlers_.Estimate(request, absl::InfiniteFuture(), outcome);
  ASSERT_TRUE(response.ok()) << response.status();
  const v1::EstimateReport expected = DirectEstimate();
  EXPECT_EQ(response->report().SerializeAsString(), expected.SerializeAsString());
  ASSERT_EQ(response->report().ranks_size(), 1);  // PP 1.
  EXPECT_EQ(outcome.peak_bytes, expected.ranks(0).peak_device_bytes());
  EXPECT_EQ(outcome.verdict, v1::VERDICT_UNSPECIFIED);  // No verdict for an estimate.
  EXPECT_EQ(response->report().rank_trees_size(), 0);

  request.set_module_tree(true);
  response = handlers_.Estimate(request, absl::InfiniteFuture(), outcome);
  ASSERT_TRUE(response.ok()) << response.status();
  ASSERT_EQ(response->report().rank_trees_size(), 1);
  EXPECT_EQ(response->report().rank_trees(0).parameters(), expected.ranks(0).parameters());
}

// Upper-bound coverage 0.5 is the median: the upper bound is the point
// estimate itself.
TEST_F(RequestHandlersTest, EstimateTakesTheCoverage) {
  v1::EstimateRequest request;
  *request.mutable_job() = testing::Llama3With8GpusFits();
  request.set_upper_bound_coverage(0.5);
  CallOutcome outcome;
  absl::StatusOr<v1::EstimateResponse> response =
      handlers_.Estimate(request, absl::InfiniteFuture(), outcome);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->report().ranks(0).peak_device_upper_bytes(),
            response->report().ranks(0).peak_device_bytes());
}

// The verdict against the upper bound of the worst rank: a GPU of exactly
// that many bytes fits with no headroom, one byte less does not fit as
// given; halving the GPU leaves nothing settings could fix.
TEST_F(RequestHandlersTest, CheckVerdictFollowsFromTheGpuMemory) {
  const v1::EstimateReport estimate = DirectEstimate();
  const uint64_t upper = estimate.ranks(0).peak_device_upper_bytes();
  const uint64_t point = estimate.ranks(0).peak_device_bytes();
  ASSERT_GT(upper, point);

  absl::StatusOr<v1::CheckResponse> exact = RunCheck(CheckOnBytes(upper));
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(exact->capacity_bytes(), upper);
  EXPECT_EQ(exact->usable_bytes(), upper);  // No margin by default.
  EXPECT_EQ(exact->peak_bound(), v1::PEAK_BOUND_UPPER);
  EXPECT_EQ(exact->compared_peak_bytes(), upper);
  EXPECT_EQ(exact->headroom_bytes(), 0);
  EXPECT_EQ(exact->worst_pp_rank(), 0u);
  EXPECT_EQ(exact->peak_device_bytes(), point);
  EXPECT_EQ(exact->peak_device_upper_bytes(), upper);
  EXPECT_EQ(exact->gpu_name(), "");  // Given by bytes.
  EXPECT_THAT(exact->alternatives(), IsEmpty());
  EXPECT_EQ(exact->report().ranks(0).peak_device_bytes(), point);
  EXPECT_EQ(exact->report().ranks(0).static_bytes(), estimate.ranks(0).static_bytes());

  absl::StatusOr<v1::CheckResponse> short_by_one = RunCheck(CheckOnBytes(upper - 1));
  ASSERT_TRUE(short_by_one.ok()) << short_by_one.status();
  EXPECT_NE(short_by_one->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(short_by_one->headroom_bytes(), -1);

  absl::StatusOr<v1::CheckResponse> half = RunCheck(CheckOnBytes(point / 2));
  ASSERT_TRUE(half.ok()) << half.status();
  EXPECT_EQ(half->verdict(), v1::VERDICT_DOES_NOT_FIT);

  // The point estimate, when the policy asks for it.
  v1::CheckRequest by_point = CheckOnBytes(point);
  by_point.mutable_policy()->set_peak_bound(v1::PEAK_BOUND_POINT);
  absl::StatusOr<v1::CheckResponse> on_point = RunCheck(by_point);
  ASSERT_TRUE(on_point.ok()) << on_point.status();
  EXPECT_EQ(on_point->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(on_point->compared_peak_bytes(), point);
  EXPECT_EQ(on_point->headroom_bytes(), 0);

  // A safety margin of a half: twice the bytes are needed.
  v1::CheckRequest with_margin = CheckOnBytes(2 * upper);
  with_margin.mutable_policy()->set_safety_margin(0.5);
  absl::StatusOr<v1::CheckResponse> margin = RunCheck(with_margin);
  ASSERT_TRUE(margin.ok()) << margin.status();
  EXPECT_EQ(margin->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(margin->usable_bytes(), upper);
  EXPECT_EQ(margin->safety_margin(), 0.5);
}

// A catalog GPU by name: its memory, its canonical name.
TEST_F(RequestHandlersTest, CheckOnACatalogGpu) {
  v1::CheckRequest request;
  *request.mutable_job() = testing::Llama3With8GpusFits();
  request.set_gpu_name("H100-SXM-80GB");
  request.set_omit_report(true);
  absl::StatusOr<v1::CheckResponse> response = RunCheck(request);
  ASSERT_TRUE(response.ok()) << response.status();
  const GpuCatalog catalog = GpuCatalog::Builtin();
  absl::StatusOr<v1::GpuSpec> h100 = catalog.Find("H100-SXM-80GB");
  ASSERT_TRUE(h100.ok()) << h100.status();
  EXPECT_EQ(response->gpu_name(), h100->name());
  EXPECT_EQ(response->capacity_bytes(), h100->memory_bytes());
  // Llama-3-8B with full recompute on 80 GB: fits, its upper bound below
  // the capacity.
  EXPECT_EQ(response->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(response->headroom_bytes(),
            static_cast<int64_t>(h100->memory_bytes()) -
                static_cast<int64_t>(DirectEstimate().ranks(0).peak_device_upper_bytes()));
  EXPECT_EQ(response->report().ranks_size(), 0);  // Omitted.
}

// Check by serialized request: a repeat is the cached answer, the same
// bytes, even after the deadline (nothing is computed).
std::string Bytes(const grpc::Slice& slice) {
  return std::string(reinterpret_cast<const char*>(slice.begin()), slice.size());
}

TEST_F(RequestHandlersTest, RepeatedCheckIsTheCachedBytes) {
  const std::string request = CheckOnBytes(uint64_t{80} << 30).SerializeAsString();
  CallOutcome first_outcome;
  absl::StatusOr<ResponseCache::Entry> first =
      handlers_.Check(request, absl::InfiniteFuture(), first_outcome);
  ASSERT_TRUE(first.ok()) << first.status();
  CallOutcome again_outcome;
  absl::StatusOr<ResponseCache::Entry> again =
      handlers_.Check(request, absl::InfinitePast(), again_outcome);
  ASSERT_TRUE(again.ok()) << again.status();
  const std::string first_bytes = Bytes(first->response);
  EXPECT_EQ(Bytes(again->response), first_bytes);
  EXPECT_EQ(again->response.begin(), first->response.begin());  // Shared, not recomputed.
  v1::CheckResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(first_bytes));
  EXPECT_EQ(parsed.verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(first_outcome.verdict, v1::VERDICT_FITS);
  EXPECT_EQ(first_outcome.peak_bytes, parsed.peak_device_bytes());
  EXPECT_EQ(again_outcome.verdict, first_outcome.verdict);
  EXPECT_EQ(again_outcome.peak_bytes, first_outcome.peak_bytes);
  // The answer is RunCheck's.
  absl::StatusOr<v1::CheckResponse> direct = RunCheck(CheckOnBytes(uint64_t{80} << 30));
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_EQ(direct->SerializeAsString(), first_bytes);

  // Without the caches the repeat is computed, and its deadline has passed.
  ServiceMetrics metrics("test");
  RequestHandlers uncached(
      ServiceConfig{
          .log_requests = false, .response_cache_bytes = 0, .check_result_cache_bytes = 0},
      &metrics);
  CallOutcome outcome;
  ASSERT_TRUE(uncached.Check(request, absl::InfiniteFuture(), outcome).ok());
  EXPECT_EQ(uncached.Check(request, absl::InfinitePast(), outcome).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_F(RequestHandlersTest, CheckOfBytesThatAreNoRequestIsInvalid) {
  CallOutcome outcome;
  const absl::Status status =
      handlers_.Check(std::string("\xff\xff\xff", 3), absl::InfiniteFuture(), outcome).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

// Each bad field: INVALID_ARGUMENT, its path in the message and in the
// BadRequest detail.
TEST_F(RequestHandlersTest, BadInputNamesTheField) {
  CallOutcome outcome;
  v1::EstimateRequest no_job;
  absl::Status status = handlers_.Estimate(no_job, absl::InfiniteFuture(), outcome).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Fields(status), ElementsAre("job"));

  v1::EstimateRequest coverage;
  *coverage.mutable_job() = testing::Llama3With8GpusFits();
  coverage.set_upper_bound_coverage(0.2);
  status = handlers_.Estimate(coverage, absl::InfiniteFuture(), outcome).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("upper_bound_coverage"));
  EXPECT_THAT(Fields(status), ElementsAre("upper_bound_coverage"));

  v1::CheckRequest bound = CheckOnBytes(uint64_t{80} << 30);
  bound.mutable_policy()->set_peak_bound(static_cast<v1::PeakBound>(7));
  status = RunCheck(bound).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("policy.peak_bound = 7"));
  EXPECT_THAT(Fields(status), ElementsAre("policy.peak_bound"));

  v1::CheckRequest check_coverage = CheckOnBytes(uint64_t{80} << 30);
  check_coverage.mutable_policy()->set_upper_bound_coverage(1.0);
  status = RunCheck(check_coverage).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Fields(status), ElementsAre("policy.upper_bound_coverage"));

  v1::CheckRequest margin = CheckOnBytes(uint64_t{80} << 30);
  margin.mutable_policy()->set_safety_margin(1.0);
  status = RunCheck(margin).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("safety_margin = 1"));
  EXPECT_THAT(Fields(status), ElementsAre("policy.safety_margin"));
}

v1::PlanRequest PlanOnH100() {
  v1::PlanRequest request;
  *request.mutable_job() = testing::Llama3With8GpusFits();
  request.set_gpu_name("H100-SXM-80GB");
  return request;
}

TEST_F(RequestHandlersTest, PlanBadInputNamesTheField) {
  const auto field_of = [this](const v1::PlanRequest& request) {
    PlanResult result;
    const absl::Status status = handlers_.RunPlan(request, absl::InfiniteFuture(), &result);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
    return Fields(status);
  };
  v1::PlanRequest gpu = PlanOnH100();
  gpu.set_gpu_name("H999");
  EXPECT_THAT(field_of(gpu), ElementsAre("gpu_name"));
  v1::PlanRequest limit = PlanOnH100();
  limit.set_limit(kMaxPlanLimit + 1);
  EXPECT_THAT(field_of(limit), ElementsAre("limit"));
  v1::PlanRequest margin = PlanOnH100();
  margin.mutable_constraints()->set_memory_margin(1.0);
  EXPECT_THAT(field_of(margin), ElementsAre("constraints.memory_margin"));
  v1::PlanRequest bound = PlanOnH100();
  bound.mutable_constraints()->set_peak_bound(static_cast<v1::PeakBound>(9));
  EXPECT_THAT(field_of(bound), ElementsAre("constraints.peak_bound"));
  v1::PlanRequest coverage = PlanOnH100();
  coverage.mutable_constraints()->set_upper_bound_coverage(0.1);
  EXPECT_THAT(field_of(coverage), ElementsAre("constraints.upper_bound_coverage"));
  // Each SizeRange by the name kSizeRangeNames gives it.
  for (const SizeRangeName& n : kSizeRangeNames) {
    v1::PlanRequest range = PlanOnH100();
    const google::protobuf::FieldDescriptor* fd =
        v1::PlanConstraints::descriptor()->FindFieldByName(n.field);
    ASSERT_NE(fd, nullptr) << n.field;
    auto* given =
        static_cast<v1::SizeRange*>(range.mutable_constraints()->GetReflection()->MutableMessage(
            range.mutable_constraints(), fd));
    given->set_min(4);
    given->set_max(2);
    EXPECT_THAT(field_of(range), ElementsAre(std::string("constraints.") + n.field));
  }
}

// The plan of Llama-3-8B on 8 H100s, its sizes left open, within its
// constraints: no more candidates than the limit, each inside the size
// ranges and fitting the GPU (headroom >= 0); the deadline ends it.
TEST_F(RequestHandlersTest, PlanWithinItsConstraints) {
  v1::PlanRequest request;
  *request.mutable_job() =
      testing::MegatronSource("llama3-8b", "--seq-length 4096 --global-batch-size 128", 8);
  request.set_gpu_name("H100-SXM-80GB");
  request.set_limit(3);
  v1::PlanConstraints& c = *request.mutable_constraints();
  c.mutable_tensor_model_parallel_size()->set_max(2);
  c.mutable_pipeline_model_parallel_size()->set_max(2);
  c.mutable_micro_batch_size()->set_max(1);
  PlanResult result;
  const absl::Status status = handlers_.RunPlan(request, absl::InfiniteFuture(), &result);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_FALSE(result.candidates.empty());
  EXPECT_LE(result.candidates.size(), 3u);
  for (const v1::PlanCandidate& candidate : result.candidates) {
    EXPECT_LE(candidate.tp(), 2u) << candidate.megatron_args();
    EXPECT_LE(candidate.pp(), 2u) << candidate.megatron_args();
    EXPECT_EQ(candidate.micro_batch_size(), 1u) << candidate.megatron_args();
    EXPECT_GE(candidate.headroom_bytes(), 0) << candidate.megatron_args();
  }
  EXPECT_EQ(handlers_.RunPlan(request, absl::InfinitePast(), &result).code(),
            absl::StatusCode::kDeadlineExceeded);
}

// Work stops at the stop point with UNAVAILABLE (a draining server).
TEST_F(RequestHandlersTest, StoppedWorkIsUnavailable) {
  handlers_.StopWorkAt(absl::InfinitePast());
  v1::EstimateRequest request;
  *request.mutable_job() = testing::Llama3With8GpusFits();
  CallOutcome outcome;
  EXPECT_EQ(handlers_.Estimate(request, absl::InfiniteFuture(), outcome).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(RunCheck(CheckOnBytes(uint64_t{80} << 30)).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(RequestHandlersTest, ListGpusIsTheCatalogAndListPresetsThePresets) {
  const GpuCatalog builtin = GpuCatalog::Builtin();
  const std::vector<v1::GpuSpec>& catalog = builtin.gpus();
  ASSERT_EQ(handlers_.ListGpus().gpus_size(), static_cast<int>(catalog.size()));
  for (size_t i = 0; i < catalog.size(); ++i) {
    EXPECT_EQ(handlers_.ListGpus().gpus(static_cast<int>(i)).SerializeAsString(),
              catalog[i].SerializeAsString());
  }
  const v1::ListPresetsResponse presets = handlers_.ListPresets();
  const auto& known = oomguard::ListPresets();
  ASSERT_EQ(presets.presets_size(), static_cast<int>(known.size()));
  for (int i = 0; i < presets.presets_size(); ++i) {
    EXPECT_EQ(presets.presets(i).name(), known[i].name);
    EXPECT_EQ(presets.presets(i).description(), known[i].description);
  }
}

// The value of `family`'s sample whose labels include `labels`.
double Sample(const ServiceMetrics& metrics, const std::string& family,
              const std::map<std::string, std::string>& labels) {
  for (const prometheus::MetricFamily& f : metrics.registry()->Collect()) {
    if (f.name != family) continue;
    for (const prometheus::ClientMetric& m : f.metric) {
      size_t matched = 0;
      for (const prometheus::ClientMetric::Label& l : m.label) {
        if (labels.contains(l.name) && labels.at(l.name) == l.value) ++matched;
      }
      if (matched == labels.size()) return m.counter.value;
    }
  }
  return -1;
}

// Handle: a passed deadline is not run; an exception is INTERNAL; a bad
// field reaches the client as a BadRequest detail; each call is counted by
// method, transport and code, and a Check's verdict too.
TEST_F(RequestHandlersTest, HandleGuardsMapsAndCounts) {
  bool ran = false;
  grpc::Status status = handlers_.Handle(Call{.method = "Check",
                                              .transport = Transport::kGrpc,
                                              .deadline = absl::Now() - absl::Seconds(1),
                                              .peer = "test"},
                                         [&](absl::Time, CallOutcome&) {
                                           ran = true;
                                           return absl::OkStatus();
                                         });
  EXPECT_FALSE(ran);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);

  status = handlers_.Handle(
      Call{.method = "Estimate",
           .transport = Transport::kGrpc,
           .deadline = absl::InfiniteFuture(),
           .peer = "test"},
      [](absl::Time, CallOutcome&) -> absl::Status { throw std::runtime_error("boom"); });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_THAT(status.error_message(), HasSubstr("unexpected exception: boom"));

  status = handlers_.Handle(
      Call{.method = "Estimate",
           .transport = Transport::kGrpc,
           .deadline = absl::InfiniteFuture(),
           .peer = "test"},
      [](absl::Time, CallOutcome&) {
        return WithBadField(absl::InvalidArgumentError("limit = 0: must be at least 1"), "limit");
      });
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(BadRequestFields(status), ElementsAre("limit"));

  const std::string request = CheckOnBytes(uint64_t{80} << 30).SerializeAsString();
  status = handlers_.Handle(Call{.method = "Check",
                                 .transport = Transport::kHttp,
                                 .deadline = absl::InfiniteFuture(),
                                 .peer = "test"},
                            [&](absl::Time deadline, CallOutcome& outcome) {
                              return handlers_.Check(request, deadline, outcome).status();
                            });
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(Sample(metrics_, "oomguard_requests_total",
                   {{"method", "Check"}, {"transport", "http"}, {"code", "OK"}}),
            1);
  EXPECT_EQ(Sample(metrics_, "oomguard_requests_total",
                   {{"method", "Check"}, {"transport", "grpc"}, {"code", "DEADLINE_EXCEEDED"}}),
            1);
  EXPECT_EQ(Sample(metrics_, "oomguard_requests_total",
                   {{"method", "Estimate"}, {"transport", "grpc"}, {"code", "INVALID_ARGUMENT"}}),
            1);
  EXPECT_EQ(Sample(metrics_, "oomguard_verdicts_total", {{"verdict", "FITS"}}), 1);
}

}  // namespace
}  // namespace oomguard::service
