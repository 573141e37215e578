// TE's cached dummy weight gradients (transformer_engine/pytorch/module/
// base.py get_dummy_wgrad) and the word-embedding gradient, against byte
// counts derived by hand. The jobs are Megatron-LM CI-sized models: 12
// layers, hidden 512, 8 heads (head dim 64, no GQA), GELU FFN 2048, bf16,
// GPT-2 vocabulary 50257 padded to 50304 (multiple of 128 at TP 1), on 8
// GPUs (TP = PP = 1). Without a version the job runs Megatron-Core 0.20 and
// TE 2.18, with gradient-accumulation fusion on (Megatron-LM's default).
#include "estimator/te_weight_gradients.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "estimator/estimator.h"
#include "estimator/validated_job.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

std::vector<std::string> CiModel(std::vector<std::string> extra) {
  return testing::SmallGptArgs(12, std::move(extra));
}

// 8 routed experts (FFN 1024, no biases, grouped GEMM) in every layer.
std::vector<std::string> CiMoe(std::string ep, std::vector<std::string> extra) {
  std::vector<std::string> moe = {"--num-experts",
                                  "8",
                                  "--moe-router-topk",
                                  "2",
                                  "--moe-ffn-hidden-size",
                                  "1024",
                                  "--disable-bias-linear",
                                  "--moe-grouped-gemm",
                                  "--expert-model-parallel-size",
                                  std::move(ep)};
  moe.insert(moe.end(), extra.begin(), extra.end());
  return CiModel(moe);
}

v1::JobSpec Job(std::vector<std::string> args, uint32_t gpus = 8) {
  return testing::JobFromArgs(std::move(args), gpus);
}

double DummyBytes(const v1::JobSpec& job, int64_t pp_rank = 0) {
  absl::StatusOr<ValidatedJob> j = ValidateJob(job, nullptr);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? TeDummyWgradBytes(*j, pp_rank) : -1;
}

v1::JobSpec WithVersions(v1::JobSpec job, const char* core, const char* te) {
  job.mutable_runtime()->set_megatron_core_version(core);
  job.mutable_runtime()->set_transformer_engine_version(te);
  return job;
}

// Distinct bf16 weight shapes of the dense model, one dummy each (all 12
// layers share them):
//   linear_qkv  [3 x 512, 512]  =    786,432
//   linear_proj [512, 512]      =    262,144
//   linear_fc1  [2048, 512]     =  1,048,576
//   linear_fc2  [512, 2048]     =  1,048,576
//   output      [50304, 512]    = 25,755,648   (Megatron-Core >= 0.14)
constexpr double kDenseLayerShapes = 786432 + 262144 + 1048576 + 1048576;
constexpr double kOutputLayer = 50304.0 * 512;

TEST(TeDummyWgrad, DenseJobKeepsOneDummyPerDistinctWeightShape) {
  const v1::JobSpec job = Job(CiModel({}));
  EXPECT_DOUBLE_EQ(DummyBytes(job), 2 * (kDenseLayerShapes + kOutputLayer));  // 57,802,752

  // The report carries it as a static part, counted in the static total.
  absl::StatusOr<v1::EstimateReport> report = Estimate(job);
  ASSERT_TRUE(report.ok()) << report.status();
  const v1::StaticBytes& s = report->ranks(0).static_();
  EXPECT_EQ(s.te_dummy_wgrad_bytes(), 57802752u);
  EXPECT_EQ(s.total_bytes(), s.dense_param_bytes() + s.dense_grad_bytes() +
                                 s.dense_optimizer_bytes() + s.expert_param_bytes() +
                                 s.expert_grad_bytes() + s.expert_optimizer_bytes() +
                                 s.te_dummy_wgrad_bytes());
}

TEST(TeDummyWgrad, EqualShapesShareOneDummy) {
  // FFN 512 (not gated): fc1 [512, 512] and fc2 [512, 512] have
  // linear_proj's shape, so the layer adds qkv and one [512, 512] only.
  const v1::JobSpec job = Job(CiModel({"--ffn-hidden-size", "512"}));
  EXPECT_DOUBLE_EQ(DummyBytes(job), 2 * (786432 + 262144 + kOutputLayer));
}

TEST(TeDummyWgrad, VersionsSwitchTheTermAsTheSourceDoes) {
  const v1::JobSpec job = Job(CiModel({}));
  // Megatron-Core 0.13's output layer allocates a fresh torch.empty in each
  // backward (tensor_parallel/layers.py): only TE's layers keep dummies.
  EXPECT_DOUBLE_EQ(DummyBytes(WithVersions(job, "0.13", "2.18")), 2 * kDenseLayerShapes);
  EXPECT_DOUBLE_EQ(DummyBytes(WithVersions(job, "0.14", "2.3")),
                   2 * (kDenseLayerShapes + kOutputLayer));
  // TE 2.2 has no get_dummy_wgrad cache (it came with TE 2.3): nothing kept.
  EXPECT_DOUBLE_EQ(DummyBytes(WithVersions(job, "0.14", "2.2")), 0);
  EXPECT_DOUBLE_EQ(DummyBytes(WithVersions(job, "0.12", "2.0")), 0);
  // --no-gradient-accumulation-fusion: the real weight gradient is returned.
  EXPECT_DOUBLE_EQ(DummyBytes(Job(CiModel({"--no-gradient-accumulation-fusion"}))), 0);
}

TEST(TeDummyWgrad, LocalLayersUseTheCacheFromMegatronCore014) {
  // --transformer-impl local: Megatron's ColumnParallelLinear /
  // RowParallelLinear call get_dummy_wgrad from 0.14 only.
  const v1::JobSpec job = Job(CiModel({"--transformer-impl", "local"}));
  EXPECT_DOUBLE_EQ(DummyBytes(job), 2 * (kDenseLayerShapes + kOutputLayer));
  EXPECT_DOUBLE_EQ(DummyBytes(WithVersions(job, "0.13", "2.18")), 0);
}

// MoE: the GroupedLinear's local experts all have one weight shape, so one
// dummy per expert weight shape whatever the number of local experts:
//   linear_qkv [1536, 512] = 786,432; linear_proj [512, 512] = 262,144;
//   experts fc1 [1024, 512] = 524,288; experts fc2 [512, 1024] = 524,288;
//   output [50304, 512] = 25,755,648. The router takes no dummy.
TEST(TeDummyWgrad, MoeJobKeepsOneDummyPerExpertWeightShape) {
  const double expected = 2 * (786432 + 262144 + 524288 + 524288 + kOutputLayer);
  EXPECT_DOUBLE_EQ(DummyBytes(Job(CiMoe("2", {}))), expected);  // 4 local experts
  EXPECT_DOUBLE_EQ(DummyBytes(Job(CiMoe("8", {}))), expected);  // 1 local expert
  // A shared expert of the routed experts' width reuses their dummies.
  EXPECT_DOUBLE_EQ(DummyBytes(Job(CiMoe("8", {"--moe-shared-expert-intermediate-size", "1024"}))),
                   expected);
  EXPECT_DOUBLE_EQ(DummyBytes(WithVersions(Job(CiMoe("8", {})), "0.16", "2.2")), 0);
}

TEST(TeDummyWgrad, PipelineStagesKeepTheirOwnShapes) {
  // PP 2: both stages hold decoder layers; only the last has the output layer.
  const v1::JobSpec job = Job(CiModel({"--pipeline-model-parallel-size", "2"}));
  EXPECT_DOUBLE_EQ(DummyBytes(job, 0), 2 * kDenseLayerShapes);
  EXPECT_DOUBLE_EQ(DummyBytes(job, 1), 2 * (kDenseLayerShapes + kOutputLayer));
}

TEST(EmbeddingWgrad, DenseEmbeddingGradientIsTheWeightsSize) {
  // F.embedding's backward: a bf16 [50304, 512] gradient, 51,511,296 bytes.
  absl::StatusOr<ValidatedJob> j = ValidateJob(Job(CiModel({})), nullptr);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_DOUBLE_EQ(EmbeddingWgradTransientBytes(*j), 51511296);
}

}  // namespace
}  // namespace oomguard
