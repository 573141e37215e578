// Tests of the admission check (admission/admission.h) against a model of
// the estimator whose savings are known, so that the verdicts, the ladder
// order, the savings and the incompatibilities can be checked exactly.
// (service_test checks the same against the real estimator.)
#include "admission/admission.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "admission/check_basis.h"
#include "admission/gpu_catalog.h"
#include "estimator/reported_count.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/job_builder.h"
#include "tests/testing/examples.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::StartsWith;

constexpr uint64_t kGiB = uint64_t{1} << 30;

bool HasModule(const v1::JobSpec& job, v1::RecomputeModule m) {
  for (int x : job.recompute().modules()) {
    if (x == m) return true;
  }
  return false;
}

// A model of the estimator: 100 GiB, minus a fixed amount per setting
// (layer-norm recompute saves only on MoE models here); each rank's upper
// bound lies `spread_gib` above its point estimate.
absl::StatusOr<v1::EstimateReport> FakeEstimateWithSpread(const v1::JobSpec& job,
                                                          double spread_gib) {
  const auto& p = job.parallelism();
  const uint32_t tp = p.has_tensor_model_parallel_size() ? p.tensor_model_parallel_size() : 1;
  const uint32_t pp = p.has_pipeline_model_parallel_size() ? p.pipeline_model_parallel_size() : 1;
  if (p.num_gpus() == 0 || p.num_gpus() % (tp * pp) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parallelism.num_gpus = ", p.num_gpus(), ": not divisible by TP x PP"));
  }
  double gib = 100;
  if (job.runtime().expandable_segments()) gib -= 6;
  if (HasModule(job, v1::RECOMPUTE_MODULE_MOE_ACT)) gib -= 5;
  if (HasModule(job, v1::RECOMPUTE_MODULE_LAYERNORM) && job.model().num_experts() > 0) gib -= 1;
  if (HasModule(job, v1::RECOMPUTE_MODULE_MLA_UP_PROJ)) gib -= 3;
  if (pp == 2) gib -= 10;
  if (tp == 2) gib -= 8;
  if (job.precision().use_distributed_optimizer()) gib -= 15;
  if (job.precision().optimizer_cpu_offload()) gib -= 10;
  if (job.recompute().cpu_offloading_num_layers() > 0) gib -= 7;
  if (job.recompute().granularity() == v1::RECOMPUTE_GRANULARITY_FULL) gib -= 20;
  if (job.runtime().cuda_graph_impl() == v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE) gib += 4;
  v1::EstimateReport report;
  for (uint32_t rank = 0; rank < pp; ++rank) {
    v1::RankReport* r = report.add_ranks();
    r->set_pp_rank(rank);
    // The last rank is the worst one.
    r->set_peak_device_bytes(static_cast<uint64_t>((gib - (pp - 1 - rank)) * kGiB));
    r->set_peak_device_upper_bytes(
        static_cast<uint64_t>((gib - (pp - 1 - rank) + spread_gib) * kGiB));
  }
  return report;
}

// Point estimate and upper bound equal: the ladder's arithmetic alone.
absl::StatusOr<v1::EstimateReport> FakeEstimate(const v1::JobSpec& job) {
  return FakeEstimateWithSpread(job, 0);
}

// A MoE model with MLA on 8 GPUs, nothing tuned.
v1::JobSpec MoeJob() {
  v1::JobSpec job;
  job.mutable_model()->set_num_experts(64);
  job.mutable_model()->set_attention_type(v1::ATTENTION_TYPE_MLA);
  job.mutable_parallelism()->set_num_gpus(8);
  return job;
}

v1::GpuSpec Gpu(double gib, const std::string& name = "TEST-GPU") {
  v1::GpuSpec gpu;
  gpu.set_name(name);
  gpu.set_memory_bytes(static_cast<uint64_t>(gib * kGiB));
  gpu.set_vendor(v1::GPU_VENDOR_NVIDIA);
  gpu.set_compute_capability_major(9);
  return gpu;
}

absl::StatusOr<v1::CheckResponse> Check(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                                        double margin = 0) {
  return CheckJob(job, gpu, {.safety_margin = margin, .deadline = Deadline()}, FakeEstimate);
}

std::vector<std::string> Ids(const v1::CheckResponse& r) {
  std::vector<std::string> ids;
  for (const v1::Recommendation& rec : r.recommendations()) ids.push_back(rec.id());
  return ids;
}

TEST(AdmissionTest, FitsWhenTheWorstRankIsBelowTheUsableCapacity) {
  absl::StatusOr<v1::CheckResponse> r = Check(MoeJob(), Gpu(128));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(r->peak_device_bytes(), 100 * kGiB);
  EXPECT_EQ(r->headroom_bytes(), static_cast<int64_t>(28 * kGiB));
  // The zero-cost environment setting is still recommended, nothing else.
  EXPECT_THAT(Ids(*r), ElementsAre("expandable_segments"));
  EXPECT_EQ(r->recommendations(0).saved_bytes(), static_cast<int64_t>(6 * kGiB));
  EXPECT_EQ(r->compared_peak_label(), "95% bound");
  EXPECT_THAT(r->summary(), StartsWith("Fits: PP rank 0 peaks at 100.0 GiB (95% bound; point "
                                       "estimate 100.0 GiB) of 128.0 GiB usable on TEST-GPU, "
                                       "28.0 GiB headroom"));
}

// The verdict compares each rank's upper bound by default: a job whose
// point estimate fits but whose bound does not is not admitted as it is.
TEST(AdmissionTest, UpperBoundDecidesUnlessThePolicySaysPoint) {
  auto spread = [](const v1::JobSpec& job) { return FakeEstimateWithSpread(job, 3); };
  absl::StatusOr<v1::CheckResponse> upper = CheckJob(MoeJob(), Gpu(102), {}, spread);
  ASSERT_TRUE(upper.ok()) << upper.status();
  EXPECT_EQ(upper->peak_bound(), v1::PEAK_BOUND_UPPER);
  EXPECT_DOUBLE_EQ(upper->upper_bound_coverage(), 0.95);
  EXPECT_EQ(upper->peak_device_bytes(), 100 * kGiB);
  EXPECT_EQ(upper->peak_device_upper_bytes(), 103 * kGiB);
  EXPECT_EQ(upper->compared_peak_bytes(), 103 * kGiB);
  EXPECT_EQ(upper->headroom_bytes(), -static_cast<int64_t>(kGiB));
  // Expandable segments save 6 GiB of the bound: 97 <= 102.
  EXPECT_EQ(upper->verdict(), v1::VERDICT_FITS_WITH_SETTINGS);
  EXPECT_EQ(upper->recommendations(0).peak_device_bytes_after(), 97 * kGiB);
  // The compared peak leads, labelled; the point estimate follows, labelled.
  EXPECT_THAT(upper->summary(), HasSubstr("PP rank 0 peaks at 103.0 GiB (95% bound; point "
                                          "estimate 100.0 GiB) of 102.0 GiB usable on TEST-GPU"));

  AdmissionOptions point_options;
  point_options.compare_upper_bound = false;
  absl::StatusOr<v1::CheckResponse> point = CheckJob(MoeJob(), Gpu(102), point_options, spread);
  ASSERT_TRUE(point.ok()) << point.status();
  EXPECT_EQ(point->peak_bound(), v1::PEAK_BOUND_POINT);
  EXPECT_EQ(point->compared_peak_bytes(), 100 * kGiB);
  EXPECT_EQ(point->headroom_bytes(), static_cast<int64_t>(2 * kGiB));
  EXPECT_EQ(point->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(point->compared_peak_label(), "point estimate");
  EXPECT_THAT(point->summary(),
              HasSubstr("peaks at 100.0 GiB (point estimate; 95% bound 103.0 GiB)"));
}

// The cluster's learned widening multiplies every compared upper bound: the
// 100 GiB bound x 1.25 = 125 GiB does not fit 120 GiB as it is; expandable
// segments bring it to 94 x 1.25 = 117.5 GiB, which fits. The estimator's
// bound itself stays as it is, and the summary says what was widened.
TEST(AdmissionTest, TheLearnedWideningWidensEveryComparedBound) {
  AdmissionOptions options;
  options.learned_widening = 0.25;
  options.learned_widening_jobs = 40;
  options.learned_widening_cluster = "prod";
  absl::StatusOr<v1::CheckResponse> r = CheckJob(MoeJob(), Gpu(120), options, FakeEstimate);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->peak_device_upper_bytes(), 100 * kGiB);
  EXPECT_EQ(r->compared_peak_bytes(), 125 * kGiB);
  EXPECT_EQ(r->headroom_bytes(), -static_cast<int64_t>(5 * kGiB));
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS_WITH_SETTINGS);
  ASSERT_EQ(r->recommendations_size(), 1);
  EXPECT_EQ(r->recommendations(0).peak_device_bytes_after(), 117 * kGiB + kGiB / 2);
  EXPECT_DOUBLE_EQ(r->learned_widening(), 0.25);
  EXPECT_EQ(r->learned_widening_jobs(), 40u);
  EXPECT_EQ(r->learned_widening_cluster(), "prod");
  EXPECT_EQ(r->compared_peak_label(), "95% bound + 25.0% learned");
  EXPECT_THAT(r->summary(), HasSubstr("peaks at 125.0 GiB (95% bound + 25.0% learned; point "
                                      "estimate 100.0 GiB) of 120.0 GiB usable"));
  EXPECT_THAT(r->summary(), ::testing::EndsWith(". The 95% bound is widened by 25.0%, learned "
                                                "from 40 measured jobs of cluster \"prod\"."));

  // Without it the same job fits as it is.
  absl::StatusOr<v1::CheckResponse> plain = CheckJob(MoeJob(), Gpu(120), {}, FakeEstimate);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(plain->learned_widening(), 0.0);
  EXPECT_THAT(plain->summary(), Not(HasSubstr("widened")));
}

// A widened bound is rounded up to whole bytes: never below the product.
TEST(AdmissionTest, TheWidenedBoundRoundsUp) {
  AdmissionOptions options;
  options.learned_widening = 0.1;
  // 3 x 1.1 = 3.3000000000000003 rounds up to 4.
  EXPECT_EQ(ComparedBytes(1, 3, options), 4u);
  // 1.1 is not a binary fraction: 100 GiB x 1.1 lands a byte above.
  EXPECT_EQ(ComparedBytes(1, 100 * kGiB, options), 110 * kGiB + 1);
  options.learned_widening = 0.25;
  EXPECT_EQ(ComparedBytes(1, 100 * kGiB, options), 125 * kGiB);
  options.learned_widening = 0;
  EXPECT_EQ(ComparedBytes(1, 3, options), 3u);
}

// The widening is of the bound: a compared point estimate is not widened,
// and the response says none was applied.
TEST(AdmissionTest, APointEstimateComparedIsNotWidened) {
  AdmissionOptions options;
  options.compare_upper_bound = false;
  options.learned_widening = 0.25;
  options.learned_widening_jobs = 40;
  absl::StatusOr<v1::CheckResponse> r = CheckJob(MoeJob(), Gpu(120), options, FakeEstimate);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->compared_peak_bytes(), 100 * kGiB);
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(r->learned_widening(), 0.0);
  EXPECT_EQ(r->learned_widening_jobs(), 0u);
  EXPECT_EQ(r->compared_peak_label(), "point estimate");
  EXPECT_THAT(r->summary(), Not(HasSubstr("widened")));
}

TEST(AdmissionTest, AWideningOutsideItsRangeIsInvalidArgument) {
  for (double widening : {-0.01, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    AdmissionOptions options;
    options.learned_widening = widening;
    absl::StatusOr<v1::CheckResponse> r = CheckJob(MoeJob(), Gpu(120), options, FakeEstimate);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << widening;
    EXPECT_THAT(r.status().message(), HasSubstr("learned_widening = ")) << widening;
  }
}

TEST(AdmissionTest, CoverageOutsideItsRangeIsInvalidArgument) {
  for (double coverage : {0.4, 1.0, std::numeric_limits<double>::quiet_NaN()}) {
    AdmissionOptions options;
    options.upper_bound_coverage = coverage;
    absl::StatusOr<v1::CheckResponse> r = CheckJob(MoeJob(), Gpu(80), options, FakeEstimate);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(
        std::string(r.status().message()),
        StartsWith(absl::StrCat("upper_bound_coverage = ", coverage, ": must be in [0.5, 0.999]")));
  }
}

TEST(AdmissionTest, UsableCapacityKeepsTheMarginFree) {
  absl::StatusOr<v1::CheckResponse> r = Check(MoeJob(), Gpu(110), 0.1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->capacity_bytes(), 110 * kGiB);
  EXPECT_EQ(r->usable_bytes(), 99 * kGiB);
  EXPECT_EQ(r->headroom_bytes(), -static_cast<int64_t>(kGiB));
  EXPECT_DOUBLE_EQ(r->safety_margin(), 0.1);
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS_WITH_SETTINGS);
}

TEST(AdmissionTest, FitsWithSettingsWhenExpandableSegmentsSuffice) {
  absl::StatusOr<v1::CheckResponse> r = Check(MoeJob(), Gpu(96));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS_WITH_SETTINGS);
  ASSERT_THAT(Ids(*r), ElementsAre("expandable_segments"));  // No config change needed.
  const v1::Recommendation& rec = r->recommendations(0);
  EXPECT_EQ(rec.kind(), v1::Recommendation::KIND_ENVIRONMENT);
  EXPECT_EQ(rec.setting(), "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  EXPECT_EQ(rec.peak_device_bytes_after(), 94 * kGiB);
  EXPECT_TRUE(rec.sufficient());
  EXPECT_THAT(r->summary(),
              StartsWith("Fits only with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: "));
  EXPECT_THAT(r->summary(), HasSubstr("saves 6.0 GiB"));
}

TEST(AdmissionTest, LadderFollowsTheTuningGuidesAndStopsWhenItFits) {
  absl::StatusOr<v1::CheckResponse> r = Check(MoeJob(), Gpu(40));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->verdict(), v1::VERDICT_DOES_NOT_FIT);
  EXPECT_THAT(Ids(*r),
              ElementsAre("expandable_segments", "recompute_moe_act", "recompute_layernorm",
                          "recompute_mla_up_proj", "more_pipeline_parallel",
                          "distributed_optimizer", "optimizer_cpu_offload", "full_recompute"));
  std::vector<double> saved_gib, after_gib;
  for (const v1::Recommendation& rec : r->recommendations()) {
    saved_gib.push_back(static_cast<double>(rec.saved_bytes()) / kGiB);
    after_gib.push_back(static_cast<double>(rec.peak_device_bytes_after()) / kGiB);
  }
  // Full recompute replaces the selective modules: 50 + 9 - 20 = 39 GiB.
  EXPECT_THAT(saved_gib, ElementsAre(6, 5, 1, 3, 10, 15, 10, 11));
  EXPECT_THAT(after_gib, ElementsAre(94, 89, 88, 85, 75, 60, 50, 39));
  for (int i = 0; i + 1 < r->recommendations_size(); ++i) {
    EXPECT_FALSE(r->recommendations(i).sufficient()) << i;
  }
  EXPECT_TRUE(r->recommendations().rbegin()->sufficient());
  EXPECT_EQ(r->recommendations(1).setting(),
            "--recompute-granularity selective --recompute-modules moe_act --moe-grouped-gemm");
  EXPECT_EQ(r->recommendations(3).setting(),
            "--recompute-granularity selective --recompute-modules moe_act layernorm "
            "mla_up_proj");
  EXPECT_EQ(r->recommendations(4).setting(), "--pipeline-model-parallel-size 2");
  EXPECT_THAT(r->summary(), StartsWith("Does not fit: "));
  EXPECT_THAT(r->summary(),
              HasSubstr("first try PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (saves 6.0 "
                        "GiB); it fits once the recommendations up to --recompute-granularity "
                        "full"));
}

TEST(AdmissionTest, LadderStopsAtTheFirstSufficientStep) {
  absl::StatusOr<v1::CheckResponse> r = Check(MoeJob(), Gpu(86));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Ids(*r), ElementsAre("expandable_segments", "recompute_moe_act",
                                   "recompute_layernorm", "recompute_mla_up_proj"));
}

TEST(AdmissionTest, StepsThatDoNotApplyAreLeftOut) {
  v1::JobSpec job;  // Dense, standard attention, already distributed optimizer.
  job.mutable_parallelism()->set_num_gpus(8);
  job.mutable_precision()->set_use_distributed_optimizer(true);
  job.mutable_runtime()->set_expandable_segments(true);
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  absl::StatusOr<v1::CheckResponse> r = Check(job, Gpu(30));
  ASSERT_TRUE(r.ok());
  // Layer-norm recompute saves nothing on this model: left out too.
  EXPECT_THAT(Ids(*r),
              ElementsAre("more_pipeline_parallel", "optimizer_cpu_offload", "full_recompute"));
  EXPECT_FALSE(r->recommendations().rbegin()->sufficient());
  EXPECT_THAT(r->summary(), HasSubstr("use more GPUs or larger ones"));
}

TEST(AdmissionTest, MoreTensorParallelWhenPipelineCannotGrow) {
  v1::JobSpec job = MoeJob();
  job.mutable_parallelism()->set_pipeline_model_parallel_layout("Et|tL");
  absl::StatusOr<v1::CheckResponse> r = Check(job, Gpu(40));
  ASSERT_TRUE(r.ok());
  const std::vector<std::string> ids = Ids(*r);
  EXPECT_THAT(ids, ::testing::Contains("more_tensor_parallel"));
  EXPECT_THAT(ids, ::testing::Not(::testing::Contains("more_pipeline_parallel")));
  for (const v1::Recommendation& rec : r->recommendations()) {
    if (rec.id() == "more_tensor_parallel") {
      EXPECT_EQ(rec.setting(), "--tensor-model-parallel-size 2 --sequence-parallel");
      EXPECT_EQ(rec.saved_bytes(), static_cast<int64_t>(8 * kGiB));
    }
  }
}

TEST(AdmissionTest, ActivationOffloadOnlyWherePipelineAllows) {
  // Dense, four layers (activation offload reads the validated job), one
  // GPU: neither PP nor TP can grow.
  v1::JobSpec job = testing::JobFromArgs(testing::SmallGptArgs(4, {}), 1);
  job.mutable_runtime()->set_expandable_segments(true);
  absl::StatusOr<v1::CheckResponse> r = Check(job, Gpu(10));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Ids(*r), ElementsAre("distributed_optimizer", "optimizer_cpu_offload",
                                   "activation_cpu_offload", "full_recompute"));
  // Full recompute replaces the activation offload (Megatron refuses both).
  const v1::Recommendation& last = *r->recommendations().rbegin();
  EXPECT_THAT(last.setting(), HasSubstr("and drop --cpu-offloading-num-layers"));
  EXPECT_EQ(last.saved_bytes(), static_cast<int64_t>(13 * kGiB));

  job.mutable_parallelism()->set_num_gpus(2);
  job.mutable_parallelism()->set_pipeline_model_parallel_size(2);
  r = Check(job, Gpu(10));
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(Ids(*r), ::testing::Not(::testing::Contains("activation_cpu_offload")));
}

TEST(AdmissionTest, ExpandableSegmentsBringNcclGraphRegisterOffWithGraphsBeforeBlackwell) {
  v1::JobSpec job = MoeJob();
  job.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_LOCAL);
  absl::StatusOr<v1::CheckResponse> hopper = Check(job, Gpu(128));
  ASSERT_TRUE(hopper.ok());
  EXPECT_EQ(hopper->recommendations(0).setting(),
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True NCCL_GRAPH_REGISTER=0");

  v1::GpuSpec blackwell = Gpu(128);
  blackwell.set_compute_capability_major(10);
  absl::StatusOr<v1::CheckResponse> b200 = Check(job, blackwell);
  ASSERT_TRUE(b200.ok());
  EXPECT_EQ(b200->recommendations(0).setting(), "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
}

struct IncompatibilityCase {
  std::string name;
  std::function<void(v1::JobSpec&)> make;
  std::string id;
  std::string setting_part;
  double saved_gib;
};

class IncompatibilityTest : public ::testing::TestWithParam<IncompatibilityCase> {};

TEST_P(IncompatibilityTest, IsReportedWithItsFixMeasured) {
  v1::JobSpec job = MoeJob();
  GetParam().make(job);
  absl::StatusOr<v1::CheckResponse> r = Check(job, Gpu(200));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->recommendations().empty());
  const v1::Recommendation& rec = *r->recommendations().rbegin();
  EXPECT_EQ(rec.kind(), v1::Recommendation::KIND_INCOMPATIBILITY);
  EXPECT_EQ(rec.id(), GetParam().id);
  EXPECT_THAT(rec.setting(), HasSubstr(GetParam().setting_part));
  EXPECT_EQ(rec.saved_bytes(), static_cast<int64_t>(GetParam().saved_gib * kGiB));
  EXPECT_TRUE(rec.sufficient());
  EXPECT_EQ(r->verdict(), v1::VERDICT_FITS);  // The verdict is about memory.
  EXPECT_THAT(r->summary(), HasSubstr("as given it will not start: "));
}

INSTANTIATE_TEST_SUITE_P(
    Seeds, IncompatibilityTest,
    ::testing::ValuesIn(std::vector<IncompatibilityCase>{
        {"CpuOffloadingWithPipeline",
         [](v1::JobSpec& j) {
           // A whole model: the conflict reads the validated job.
           j = testing::JobFromArgs(testing::SmallGptArgs(4, {"--pipeline-model-parallel-size", "2",
                                                              "--cpu-offloading-num-layers", "1"}),
                                    8);
         },
         "cpu_offloading_conflict",
         "drop --cpu-offloading-num-layers (Megatron-Core refuses it with pipeline parallelism > "
         "1)",
         -7},
        {"NcclUbWithExpandableSegments",
         [](v1::JobSpec& j) {
           j.mutable_runtime()->set_use_nccl_ub(true);
           j.mutable_runtime()->set_expandable_segments(true);
         },
         "nccl_ub_with_expandable_segments", "drop --use-nccl-ub", 0},
        {"FullRecomputeWithTeGraphs",
         [](v1::JobSpec& j) {
           j.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
           j.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_TRANSFORMER_ENGINE);
           j.mutable_runtime()->add_cuda_graph_modules("mlp");
         },
         "full_recompute_with_cuda_graphs", "--cuda-graph-impl none", 4},
        {"GraphsWithExpandableNeedNcclGraphRegisterOff",
         [](v1::JobSpec& j) {
           j.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_LOCAL);
           j.mutable_runtime()->set_expandable_segments(true);
         },
         "nccl_graph_register", "NCCL_GRAPH_REGISTER=0", 0},
    }),
    [](const ::testing::TestParamInfo<IncompatibilityCase>& info) { return info.param.name; });

TEST(AdmissionTest, FullRecomputeWithAFullIterationGraphIsFine) {
  v1::JobSpec job = MoeJob();
  job.mutable_recompute()->set_granularity(v1::RECOMPUTE_GRANULARITY_FULL);
  job.mutable_runtime()->set_cuda_graph_impl(v1::CUDA_GRAPH_IMPL_LOCAL);
  job.mutable_runtime()->add_cuda_graph_modules("full_iteration");
  job.mutable_runtime()->set_expandable_segments(true);
  job.mutable_runtime()->set_nccl_graph_register_disabled(true);
  absl::StatusOr<v1::CheckResponse> r = Check(job, Gpu(200));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->recommendations().empty());
}

TEST(AdmissionTest, BadPolicyOrGpuIsInvalidArgumentNamingTheField) {
  for (double margin : {-0.1, 1.0, std::numeric_limits<double>::quiet_NaN()}) {
    absl::StatusOr<v1::CheckResponse> r = Check(MoeJob(), Gpu(80), margin);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(r.status().message()), StartsWith("safety_margin = "));
  }
  absl::StatusOr<v1::CheckResponse> r = Check(MoeJob(), Gpu(0));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("memory_bytes = 0"));
  // Past 2^50 bytes the usable capacity and the headroom would not be exact.
  v1::GpuSpec huge = Gpu(80);
  huge.set_memory_bytes(~uint64_t{0});
  r = Check(MoeJob(), huge);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "gpu memory_bytes = 18446744073709551615: must be at most 2^50 (1 PiB)");
}

// A rank the estimator flags as over its 2^50-byte limit does not fit,
// even on a GPU the (capped) peak would seem to fit.
TEST(AdmissionTest, RankOverTheEstimatorLimitDoesNotFit) {
  auto over_limit = [](const v1::JobSpec& job) -> absl::StatusOr<v1::EstimateReport> {
    absl::StatusOr<v1::EstimateReport> report = FakeEstimate(job);
    if (!report.ok()) return report;
    report->mutable_ranks(0)->set_peak_device_bytes(kMaxReportedCount);
    report->mutable_ranks(0)->set_peak_device_upper_bytes(kMaxReportedCount);
    report->mutable_ranks(0)->set_exceeds_limit(true);
    report->set_exceeds_limit(true);
    return report;
  };
  v1::GpuSpec gpu = Gpu(80);
  gpu.set_memory_bytes(kMaxReportedCount);
  absl::StatusOr<v1::CheckResponse> r = CheckJob(MoeJob(), gpu, {}, over_limit);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_DOES_NOT_FIT);
  EXPECT_TRUE(r->recommendations().empty());
  EXPECT_EQ(r->peak_device_bytes(), kMaxReportedCount);
  EXPECT_EQ(r->headroom_bytes(), 0);
  EXPECT_THAT(r->summary(), StartsWith("Does not fit: PP rank 0 needs 1 PiB (2^50 bytes) or "
                                       "more per GPU, against 1024.00 TiB usable on TEST-GPU"));
}

// MoeJob with a flag oomguard does not model and a choice value it does
// not model, as the argument-line parser records them.
v1::JobSpec MoeJobWithUnmodelledSettings(int count = 2) {
  v1::JobSpec job = MoeJob();
  for (int i = 0; i < count; ++i) {
    v1::UnmodelledSetting* s = job.add_unmodelled_settings();
    s->set_flag(i == 1 ? "--fp8-recipe" : absl::StrCat("--flag-", i));
    if (i == 1) s->set_value("custom");
    s->set_reason(absl::StrCat("reason ", i));
  }
  return job;
}

// Not judged unless asked: Unimplemented naming every setting, its reason
// and how to judge anyway.
TEST(AdmissionTest, UnmodelledSettingsAreNotJudgedByDefault) {
  absl::StatusOr<v1::CheckResponse> r = Check(MoeJobWithUnmodelledSettings(), Gpu(128));
  ASSERT_EQ(r.status().code(), absl::StatusCode::kUnimplemented) << r.status();
  EXPECT_EQ(r.status().message(),
            "oomguard does not model --flag-0, --fp8-recipe custom, so the job is not judged. "
            "--flag-0: reason 0. --fp8-recipe custom: reason 1. To judge it as if they were "
            "absent: policy.judge_unmodelled (oomguard check --judge-unmodelled, or the server's "
            "--judge_unmodelled).");
}

// An invalid job is invalid whatever oomguard does not model in it: not
// "not judged" (which a hook admits), since it would not start.
TEST(AdmissionTest, AnInvalidJobWithUnmodelledSettingsIsInvalid) {
  auto invalid = [](const v1::JobSpec&) -> absl::StatusOr<v1::EstimateReport> {
    return absl::InvalidArgumentError("training.micro_batch_size = 3: must divide 4");
  };
  absl::StatusOr<v1::CheckResponse> r =
      CheckJob(MoeJobWithUnmodelledSettings(), Gpu(128), {.deadline = Deadline()}, invalid);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(r.status().message(), "training.micro_batch_size = 3: must divide 4");
}

// Judged when asked: the same verdict and numbers as the job without them,
// the verdict's words saying what it was judged without, every verdict.
TEST(AdmissionTest, UnmodelledSettingsJudgedAnywayAreNamedInTheVerdict) {
  const AdmissionOptions judge{.deadline = Deadline(), .judge_unmodelled = true};
  absl::StatusOr<v1::CheckResponse> fits =
      CheckJob(MoeJobWithUnmodelledSettings(), Gpu(128), judge, FakeEstimate);
  ASSERT_TRUE(fits.ok()) << fits.status();
  absl::StatusOr<v1::CheckResponse> plain = Check(MoeJob(), Gpu(128));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(fits->verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(fits->peak_device_bytes(), plain->peak_device_bytes());
  EXPECT_EQ(fits->summary(),
            absl::StrCat("Fits, judged without modelling --flag-0, --fp8-recipe custom",
                         plain->summary().substr(std::string("Fits").size())));
  ASSERT_EQ(fits->unmodelled_settings_size(), 2);
  EXPECT_EQ(fits->unmodelled_settings(1).value(), "custom");
  EXPECT_THAT(plain->unmodelled_settings(), IsEmpty());

  // Past three, the verdict counts the rest (the response lists them all).
  absl::StatusOr<v1::CheckResponse> tight =
      CheckJob(MoeJobWithUnmodelledSettings(5), Gpu(96), judge, FakeEstimate);
  ASSERT_TRUE(tight.ok()) << tight.status();
  EXPECT_EQ(tight->verdict(), v1::VERDICT_FITS_WITH_SETTINGS);
  EXPECT_THAT(tight->summary(),
              StartsWith("Fits only with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, "
                         "judged without modelling --flag-0, --fp8-recipe custom, --flag-2 and "
                         "2 more: PP rank 0 peaks at "));
  EXPECT_EQ(tight->unmodelled_settings_size(), 5);
  absl::StatusOr<v1::CheckResponse> over =
      CheckJob(MoeJobWithUnmodelledSettings(1), Gpu(40), judge, FakeEstimate);
  ASSERT_TRUE(over.ok()) << over.status();
  EXPECT_THAT(over->summary(), StartsWith("Does not fit, judged without modelling --flag-0: PP "
                                          "rank 0 peaks at "));
}

// The real estimator notes each setting, report or not.
TEST(AdmissionTest, UnmodelledSettingsAreNotedWithOrWithoutTheReport) {
  JobInputs inputs;
  inputs.preset = "llama3-8b";
  inputs.megatron_args = {"--micro-batch-size", "1", "--seq-length", "4096"};
  inputs.megatron_args.insert(inputs.megatron_args.end(), {"--tp-comm-overlap-cfg", "x.yaml"});
  inputs.num_gpus = 8;
  absl::StatusOr<v1::JobSpec> job = BuildJob(inputs, nullptr);
  ASSERT_TRUE(job.ok()) << job.status();
  for (bool with_report : {true, false}) {
    absl::StatusOr<v1::CheckResponse> r =
        CheckJob(*job, Gpu(80, "H100"), {.with_report = with_report, .judge_unmodelled = true});
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_THAT(r->report().notes(),
                Contains(StartsWith("--tp-comm-overlap-cfg is not modelled (a custom TP "
                                    "communication overlap configuration is not read")))
        << with_report;
  }
}

// Issue 12: this job's byte counts once wrapped past 2^63 into a 45.62 GiB
// peak, and the check answered VERDICT_FITS.
TEST(AdmissionTest, MoonlightWithAbsurdBatchDoesNotFitOnTheRealEstimator) {
  JobInputs src;
  src.preset = "moonlight-16b-a3b";
  src.num_gpus = 8;
  src.megatron_args = {"--expert-model-parallel-size",
                       "8",
                       "--use-distributed-optimizer",
                       "--micro-batch-size",
                       "16777216",
                       "--seq-length",
                       "16777216"};
  absl::StatusOr<v1::JobSpec> job = BuildJob(src, nullptr);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<v1::CheckResponse> r = CheckJob(*job, Gpu(80), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->verdict(), v1::VERDICT_DOES_NOT_FIT);
  EXPECT_EQ(r->peak_device_bytes(), kMaxReportedCount);
  EXPECT_LT(r->headroom_bytes(), 0);
  EXPECT_TRUE(r->report().ranks(0).exceeds_limit());
  EXPECT_EQ(r->summary(),
            "Does not fit: PP rank 0 needs 1 PiB (2^50 bytes) or more per GPU, against 80.0 GiB "
            "usable on TEST-GPU; no recommended change is measured "
            "on an estimate that large: make the micro-batch, the sequence or the model "
            "smaller.");
}

// A check without the report (CheckRequest.omit_report, what the hooks ask
// for) gives the same answer as one with it, for a job that does not fit
// (with its ladder), one that fits and one over the estimator's limit.
TEST(AdmissionTest, WithoutTheReportTheAnswerIsTheSame) {
  const v1::GpuSpec h100 = GpuCatalog::Builtin().Find("H100-SXM-80GB").value();
  struct Case {
    v1::JobSpec job;
    v1::Verdict verdict;
  };
  const std::vector<Case> cases = {
      {testing::JobFromArgs(testing::ExampleArgs(testing::kDeepSeekV3With1024Gpus), 1024,
                            "deepseek-v3"),
       v1::VERDICT_DOES_NOT_FIT},
      {testing::JobFromArgs(
           {"--use-distributed-optimizer", "--seq-length", "4096", "--micro-batch-size", "1",
            "--global-batch-size", "128", "--recompute-granularity", "full", "--recompute-method",
            "uniform", "--recompute-num-layers", "1"},
           8, "llama3-8b"),
       v1::VERDICT_FITS},
      {testing::JobFromArgs({"--expert-model-parallel-size", "8", "--use-distributed-optimizer",
                             "--micro-batch-size", "16777216", "--seq-length", "16777216",
                             "--global-batch-size", "134217728"},
                            8, "moonlight-16b-a3b"),
       v1::VERDICT_DOES_NOT_FIT},
  };
  for (const Case& c : cases) {
    absl::StatusOr<v1::CheckResponse> with = CheckJob(c.job, h100, {});
    absl::StatusOr<v1::CheckResponse> without = CheckJob(c.job, h100, {.with_report = false});
    ASSERT_TRUE(with.ok()) << with.status();
    ASSERT_TRUE(without.ok()) << without.status();
    EXPECT_EQ(with->verdict(), c.verdict) << with->summary();
    EXPECT_TRUE(with->has_report());
    EXPECT_FALSE(without->has_report());
    with->clear_report();
    EXPECT_EQ(with->SerializeAsString(), without->SerializeAsString()) << with->summary();
  }
}

// The GPU's architecture decides which quantized weight copies TE keeps and
// which recipes run: Llama-3 8B with FP8 (tensorwise) weights keeps their
// transpose on an H100 (1 byte per FP8 weight) and none on a B200; NVFP4 is
// refused on the H100, naming its flag's field.
TEST(AdmissionTest, TheGpuDecidesTheQuantizedWeightCopies) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  const v1::GpuSpec h100 = catalog.Find("H100").value();
  const v1::GpuSpec b200 = catalog.Find("B200").value();
  const std::vector<std::string> base = {
      "--use-distributed-optimizer", "--seq-length", "4096", "--micro-batch-size", "1",
      "--global-batch-size",         "128"};
  std::vector<std::string> fp8 = base;
  for (const char* word :
       {"--fp8-format", "hybrid", "--fp8-recipe", "tensorwise", "--fp8-param-gather"}) {
    fp8.push_back(word);
  }
  const v1::JobSpec fp8_job = testing::JobFromArgs(fp8, 8, "llama3-8b");
  absl::StatusOr<v1::CheckResponse> on_h100 = CheckJob(fp8_job, h100, {});
  absl::StatusOr<v1::CheckResponse> on_b200 = CheckJob(fp8_job, b200, {});
  ASSERT_TRUE(on_h100.ok() && on_b200.ok()) << on_h100.status() << on_b200.status();
  const auto copy = [](const v1::CheckResponse& r) -> double {
    for (const v1::Overhead& o : r.report().ranks(0).overheads()) {
      if (o.name() == "fp8_param_columnwise_copy") return static_cast<double>(o.bytes());
    }
    return 0;
  };
  EXPECT_EQ(copy(*on_h100), 32 * 218103808.0);  // Llama-3 8B's linear weights.
  EXPECT_EQ(copy(*on_b200), 0);
  EXPECT_GT(on_h100->peak_device_bytes(), on_b200->peak_device_bytes());

  std::vector<std::string> fp4 = base;
  for (const char* word : {"--fp4-format", "e2m1", "--fp4-param-gather"}) fp4.push_back(word);
  const v1::JobSpec fp4_job = testing::JobFromArgs(fp4, 8, "llama3-8b");
  EXPECT_TRUE(CheckJob(fp4_job, b200, {}).ok());
  absl::StatusOr<v1::CheckResponse> refused = CheckJob(fp4_job, h100, {});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(refused.status().message()),
              HasSubstr("precision.fp4_format = FP4_FORMAT_E2M1: runs on Blackwell GPUs only"));
}

TEST(AdmissionTest, EstimatorErrorsPassThrough) {
  v1::JobSpec job = MoeJob();
  job.mutable_parallelism()->set_tensor_model_parallel_size(3);
  absl::StatusOr<v1::CheckResponse> r = Check(job, Gpu(80));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("parallelism.num_gpus = 8"));
}

TEST(AdmissionTest, PassedDeadlineIsDeadlineExceeded) {
  absl::StatusOr<v1::CheckResponse> r = CheckJob(
      MoeJob(), Gpu(40), {.safety_margin = 0, .deadline = Deadline(absl::Now() - absl::Seconds(1))},
      FakeEstimate);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded);
}

// Megatron-Core refuses --overlap-moe-expert-parallel-comm with full
// recompute (estimator/expert_parallel_overlap.h): the check says the job
// will not start and what to drop, with the saving measured.
TEST(AdmissionTest, ExpertParallelOverlapWithFullRecomputeWillNotStart) {
  JobInputs src;
  src.preset = "qwen3-30b-a3b";
  src.num_gpus = 32;
  src.megatron_args = absl::StrSplit(
      "--seq-length 4096 --global-batch-size 256 --micro-batch-size 1 "
      "--expert-model-parallel-size 8 --recompute-granularity full --recompute-method uniform "
      "--recompute-num-layers 1 --overlap-moe-expert-parallel-comm",
      ' ');
  absl::StatusOr<v1::JobSpec> job = BuildJob(src, nullptr);
  ASSERT_TRUE(job.ok()) << job.status();
  absl::StatusOr<v1::CheckResponse> r =
      CheckJob(*job, GpuCatalog::Builtin().Find("H100-SXM-80GB").value(), {});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_FALSE(r->recommendations().empty());
  const v1::Recommendation& rec = *r->recommendations().rbegin();
  EXPECT_EQ(rec.kind(), v1::Recommendation::KIND_INCOMPATIBILITY);
  EXPECT_EQ(rec.id(), "expert_parallel_overlap_conflict");
  EXPECT_EQ(rec.setting(),
            "drop --overlap-moe-expert-parallel-comm (it cannot run with full recompute)");
  // At PP 1 the overlap's combined 1F1B holds one micro-batch, as without it,
  // plus one layer's attention part beside the layers' backward working set
  // (pipeline_schedule.h), which full recompute's rematerialised layer
  // exceeds: dropping the flag saves nothing, the job is refused for the
  // conflict alone.
  EXPECT_EQ(rec.saved_bytes(), 0);
  EXPECT_THAT(r->summary(), HasSubstr("as given it will not start: Megatron-Core refuses "
                                      "--overlap-moe-expert-parallel-comm"));
}

TEST(AdmissionTest, WorksWithTheRealEstimator) {
  // Validation comes from the real estimator; the numbers are its own.
  v1::JobSpec job;
  absl::StatusOr<v1::CheckResponse> r =
      CheckJob(job, GpuCatalog::Builtin().Find("H100-SXM-80GB").value(), {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oomguard
