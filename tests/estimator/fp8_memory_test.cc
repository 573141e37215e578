// FP8 and NVFP4 training memory (estimator/fp8_memory.h) against
// hand-derived byte counts on Megatron-LM's CI models: 12 layers, hidden 512, 8 heads (head
// dim 64), FFN 2048, seq 1024, micro-batch 4 (4096 tokens), no linear
// biases, Transformer Engine, TP 1, PP 1 (one micro-batch in flight), 8 GPUs.
//
// Per dense layer the FP8 linears hold 512 x 1536 (qkv) + 512 x 512 (proj)
// + 512 x 2048 (fc1) + 2048 x 512 (fc2) = 3,145,728 weights.
#include "estimator/fp8_memory.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "estimator/estimator.h"
#include "estimator/validated_job.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using testing::EstimateArgs;
using testing::JobFromArgs;

constexpr double kDenseFp8Weights = 12 * 3145728.0;
constexpr double kE1 = 4096.0 * 512;   // tokens x hidden
constexpr double kE2 = 4096.0 * 2048;  // tokens x FFN

std::vector<std::string> CiModel(std::vector<std::string> extra) {
  std::vector<std::string> args = {"--transformer-impl", "transformer_engine",
                                   "--disable-bias-linear"};
  args.insert(args.end(), extra.begin(), extra.end());
  return testing::SmallGptArgs(12, std::move(args));
}

// 8 experts on EP 8 (one local expert), top-2, expert FFN 1024, alltoall.
std::vector<std::string> MoeEp8(std::vector<std::string> extra) {
  std::vector<std::string> moe = {"--expert-model-parallel-size",
                                  "8",
                                  "--num-experts",
                                  "8",
                                  "--moe-router-topk",
                                  "2",
                                  "--moe-ffn-hidden-size",
                                  "1024",
                                  "--moe-token-dispatcher-type",
                                  "alltoall",
                                  "--moe-grouped-gemm"};
  moe.insert(moe.end(), extra.begin(), extra.end());
  return CiModel(moe);
}

double OverheadBytes(const v1::RankReport& rank, const std::string& name) {
  for (const v1::Overhead& o : rank.overheads()) {
    if (o.name() == name) return static_cast<double>(o.bytes());
  }
  return -1;
}

double ActDelta(const v1::EstimateReport& a, const v1::EstimateReport& b) {
  return static_cast<double>(a.ranks(0).activation_bytes()) -
         static_cast<double>(b.ranks(0).activation_bytes());
}

std::vector<std::string> Fp8(const char* recipe, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--fp8-format", "hybrid", "--fp8-recipe", recipe};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

std::vector<std::string> Fp4(std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--fp4-format", "e2m1", "--fp4-recipe", "nvfp4"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// One NVFP4 copy: E2M1 two per byte and an E4M3 scale per 16 elements.
constexpr double kNvfp4Copy = 0.5 + 1.0 / 16;  // 0.5625

// The estimate of the job of `args` on GPUs of architecture `arch`.
absl::StatusOr<v1::EstimateReport> EstimateOn(std::vector<std::string> args,
                                              v1::GpuArchitecture arch,
                                              const std::string& preset = "") {
  v1::JobSpec job = JobFromArgs(std::move(args), 8, preset);
  job.mutable_runtime()->set_gpu_architecture(arch);
  return Estimate(job);
}

double DenseParamBytes(const v1::EstimateReport& r) {
  return static_cast<double>(r.ranks(0).static_().dense_param_bytes());
}

TEST(Fp8Memory, WeightWorkspacePerRecipe) {
  auto bf16 = EstimateArgs(CiModel({}));
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  EXPECT_EQ(OverheadBytes(bf16->ranks(0), "fp8_weight_workspace"), -1);
  // Rowwise + columnwise FP8 copies of every FP8 weight (quantize_weight
  // workspace): 2 bytes for Float8Tensor data + transpose; blockwise adds
  // two fp32 scales per 128x128 block; mxfp8 two E8M0 bytes per 32.
  const struct {
    const char* recipe;
    double bytes_per_weight;
  } cases[] = {
      {"delayed", 2}, {"tensorwise", 2}, {"blockwise", 2 + 8.0 / 16384}, {"mxfp8", 2 + 2.0 / 32}};
  for (const auto& c : cases) {
    auto fp8 = EstimateArgs(CiModel(Fp8(c.recipe)));
    ASSERT_TRUE(fp8.ok()) << c.recipe << ": " << fp8.status();
    EXPECT_EQ(OverheadBytes(fp8->ranks(0), "fp8_weight_workspace"),
              kDenseFp8Weights * c.bytes_per_weight)
        << c.recipe;
    // The bf16 parameters stay as they are.
    EXPECT_EQ(fp8->ranks(0).static_().dense_param_bytes(),
              bf16->ranks(0).static_().dense_param_bytes());
  }
}

TEST(Fp8Memory, SavedInputsOfFp8LinearsPerLayer) {
  auto bf16 = EstimateArgs(CiModel({}));
  auto tensorwise = EstimateArgs(CiModel(Fp8("tensorwise")));
  auto blockwise = EstimateArgs(CiModel(Fp8("blockwise")));
  ASSERT_TRUE(bf16.ok() && tensorwise.ok() && blockwise.ok());
  // Per layer with b bytes per saved FP8 element: the two fused norms'
  // outputs (linear_qkv's and linear_fc1's inputs) go from 2 to b bytes,
  // linear_proj adds its b-byte copy of the attention output (which core
  // attention keeps in bf16) and fc2's input goes from 2 to b bytes:
  // (3b - 4) x tokens x hidden + (b - 2) x tokens x FFN.
  auto delta = [](double b) { return 12 * ((3 * b - 4) * kE1 + (b - 2) * kE2); };
  EXPECT_EQ(ActDelta(*tensorwise, *bf16), delta(1));  // -125,829,120
  EXPECT_EQ(ActDelta(*blockwise, *bf16), delta(1 + 4.0 / 128));
}

TEST(Fp8Memory, ParamGatherStoresFp8WeightsInTheParamBuffer) {
  const std::vector<std::string> dist = {"--use-distributed-optimizer"};
  auto plain = EstimateArgs(CiModel(Fp8("delayed", dist)));
  std::vector<std::string> gather_args = dist;
  gather_args.push_back("--fp8-param-gather");
  auto gather = EstimateArgs(CiModel(Fp8("delayed", gather_args)));
  ASSERT_TRUE(plain.ok() && gather.ok()) << plain.status() << gather.status();
  // uint8 parameter buffer: 1 byte instead of 2 per FP8 weight.
  EXPECT_EQ(static_cast<double>(plain->ranks(0).static_().dense_param_bytes()) -
                static_cast<double>(gather->ranks(0).static_().dense_param_bytes()),
            kDenseFp8Weights);
  // No workspace; the FP8 parameter's transpose (1 byte) instead.
  EXPECT_EQ(OverheadBytes(gather->ranks(0), "fp8_weight_workspace"), -1);
  EXPECT_EQ(OverheadBytes(gather->ranks(0), "fp8_param_columnwise_copy"), kDenseFp8Weights);
  // The fp32 main copy and gradients do not change.
  EXPECT_EQ(plain->ranks(0).static_().dense_optimizer_bytes(),
            gather->ranks(0).static_().dense_optimizer_bytes());
  EXPECT_EQ(plain->ranks(0).static_().dense_grad_bytes(),
            gather->ranks(0).static_().dense_grad_bytes());
}

TEST(Fp8Memory, FirstAndLastLayersInBf16) {
  auto all = EstimateArgs(CiModel(Fp8("tensorwise")));
  auto ends = EstimateArgs(CiModel(Fp8("tensorwise", {"--first-last-layers-bf16"})));
  auto two = EstimateArgs(CiModel(
      Fp8("tensorwise", {"--first-last-layers-bf16", "--num-layers-at-start-in-bf16", "2"})));
  ASSERT_TRUE(all.ok() && ends.ok() && two.ok());
  // Layers 0 and 11 (then 0, 1 and 11) keep bf16: no weight copies, and
  // their activations are the bf16 ones (10,485,760 more bytes per layer).
  EXPECT_EQ(OverheadBytes(ends->ranks(0), "fp8_weight_workspace"), 10 * 3145728.0 * 2);
  EXPECT_EQ(OverheadBytes(two->ranks(0), "fp8_weight_workspace"), 9 * 3145728.0 * 2);
  EXPECT_EQ(ActDelta(*ends, *all), 2 * (kE1 + kE2));
  EXPECT_EQ(ActDelta(*two, *all), 3 * (kE1 + kE2));
}

TEST(Fp8Memory, MoeExpertsAndRoutingPadding) {
  auto bf16 = EstimateArgs(MoeEp8({}));
  auto fp8 = EstimateArgs(MoeEp8(Fp8("tensorwise")));
  auto padded = EstimateArgs(MoeEp8(Fp8("tensorwise", {"--moe-router-padding-for-fp8"})));
  ASSERT_TRUE(bf16.ok() && fp8.ok() && padded.ok()) << fp8.status() << padded.status();
  // FP8 weights per layer: qkv + proj 1,048,576 dense (the router stays
  // bf16) and one local expert's fc1 + fc2 1,048,576.
  EXPECT_EQ(OverheadBytes(fp8->ranks(0), "fp8_weight_workspace"), 2 * 12 * 2 * 1048576.0);
  EXPECT_EQ(static_cast<double>(fp8->ranks(0).expert_parameters()),
            static_cast<double>(bf16->ranks(0).expert_parameters()));
  // Routed tokens: top-2 x 4096 = 8192, plus at most 15 padding tokens for
  // the one local expert (align 16). Per layer: the norm output and
  // proj copy cancel (-E1 + E1); dispatched tokens 8207 x (512 + 4) fp8 +
  // fp32 probs vs 8192 x (1024 + 4); fc1 output 2 x 15 x 1024 more; fc2's
  // input 8207 x 1024 vs 2 x 8192 x 1024.
  const double per_layer =
      (8207.0 * 516 - 8192.0 * 1028) + 2 * 15 * 1024.0 + (8207.0 * 1024 - 2 * 8192.0 * 1024);
  EXPECT_EQ(ActDelta(*fp8, *bf16), 12 * per_layer);  // -150,349,104
  // Router padding moves where the padding happens, not how much.
  EXPECT_EQ(padded->ranks(0).activation_bytes(), fp8->ranks(0).activation_bytes());
}

TEST(Fp8Memory, WeightCopiesOnBlackwell) {
  auto bf16 = EstimateArgs(CiModel({"--use-distributed-optimizer"}));
  ASSERT_TRUE(bf16.ok()) << bf16.status();
  // Blackwell runs FP8 GEMMs in any layout: a Float8Tensor keeps its
  // rowwise data only (no transpose); the block-scaled recipes keep both
  // copies as on Hopper.
  const struct {
    const char* recipe;
    double bytes_per_weight;
  } cases[] = {
      {"delayed", 1}, {"tensorwise", 1}, {"blockwise", 2 + 8.0 / 16384}, {"mxfp8", 2 + 2.0 / 32}};
  for (const auto& c : cases) {
    auto fp8 = EstimateOn(CiModel(Fp8(c.recipe)), v1::GPU_ARCHITECTURE_BLACKWELL);
    ASSERT_TRUE(fp8.ok()) << c.recipe << ": " << fp8.status();
    EXPECT_EQ(OverheadBytes(fp8->ranks(0), "fp8_weight_workspace"),
              kDenseFp8Weights * c.bytes_per_weight)
        << c.recipe;
  }
  // FP8 parameters of the tensorwise recipe: the 1-byte parameter buffer
  // is all TE keeps on Blackwell (no columnwise term), 2 bytes on Hopper.
  const std::vector<std::string> gather = {"--use-distributed-optimizer", "--fp8-param-gather"};
  auto blackwell = EstimateOn(CiModel(Fp8("tensorwise", gather)), v1::GPU_ARCHITECTURE_BLACKWELL);
  auto hopper = EstimateOn(CiModel(Fp8("tensorwise", gather)), v1::GPU_ARCHITECTURE_HOPPER);
  ASSERT_TRUE(blackwell.ok() && hopper.ok()) << blackwell.status() << hopper.status();
  EXPECT_EQ(DenseParamBytes(*bf16) - DenseParamBytes(*blackwell), kDenseFp8Weights);
  EXPECT_EQ(OverheadBytes(blackwell->ranks(0), "fp8_param_columnwise_copy"), -1);
  EXPECT_EQ(OverheadBytes(hopper->ranks(0), "fp8_param_columnwise_copy"), kDenseFp8Weights);
  // An unspecified architecture is Hopper's for these recipes.
  auto unspecified = EstimateArgs(CiModel(Fp8("tensorwise", gather)));
  ASSERT_TRUE(unspecified.ok()) << unspecified.status();
  EXPECT_EQ(unspecified->SerializeAsString(), hopper->SerializeAsString());
}

TEST(Fp8Memory, ParamGatherThroughTheGradientBuffer) {
  auto bf16 = EstimateArgs(CiModel({"--use-distributed-optimizer"}));
  // MXFP8 weights (--reuse-grad-buf-for-mxfp8-param-ag): no parameter
  // buffer holds them (the all-gather runs in the gradient buffer); each
  // keeps its own rowwise and columnwise copies, 1 + 1/32 bytes each.
  auto mxfp8 =
      EstimateArgs(CiModel(Fp8("mxfp8", {"--use-distributed-optimizer", "--fp8-param-gather",
                                         "--reuse-grad-buf-for-mxfp8-param-ag"})));
  // The same flag with tensorwise weights on Hopper: the uint8 parameter
  // buffer is still allocated (1 byte), and each Float8Tensor keeps its own
  // data and transpose (2 bytes).
  auto tensorwise =
      EstimateOn(CiModel(Fp8("tensorwise", {"--use-distributed-optimizer", "--fp8-param-gather",
                                            "--reuse-grad-buf-for-mxfp8-param-ag"})),
                 v1::GPU_ARCHITECTURE_HOPPER);
  ASSERT_TRUE(bf16.ok() && mxfp8.ok() && tensorwise.ok())
      << bf16.status() << mxfp8.status() << tensorwise.status();
  EXPECT_EQ(DenseParamBytes(*bf16) - DenseParamBytes(*mxfp8), 2 * kDenseFp8Weights);
  EXPECT_EQ(OverheadBytes(mxfp8->ranks(0), "fp8_param_own_storage"),
            kDenseFp8Weights * (2 + 2.0 / 32));
  EXPECT_EQ(DenseParamBytes(*bf16) - DenseParamBytes(*tensorwise), kDenseFp8Weights);
  EXPECT_EQ(OverheadBytes(tensorwise->ranks(0), "fp8_param_own_storage"), 2 * kDenseFp8Weights);
  // The gradients and the fp32 main copy do not change.
  EXPECT_EQ(mxfp8->ranks(0).static_().dense_grad_bytes(),
            bf16->ranks(0).static_().dense_grad_bytes());
  EXPECT_EQ(mxfp8->ranks(0).static_().dense_optimizer_bytes(),
            bf16->ranks(0).static_().dense_optimizer_bytes());
}

// What the data-parallel all-gather moves per weight (the planner's step
// time): the quantized data, or bf16 where the weights are not quantized or
// the all-gather runs through the gradient buffer (viewed as bf16).
TEST(Fp8Memory, ParamAllGatherBytesPerElement) {
  const auto gather_bytes = [](std::vector<std::string> args, v1::GpuArchitecture arch) {
    v1::JobSpec job = JobFromArgs(CiModel(std::move(args)));
    job.mutable_runtime()->set_gpu_architecture(arch);
    const absl::StatusOr<ValidatedJob> v = ValidateJob(job, nullptr);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? ParamAllGatherBytesPerElement(*v) : -1.0;
  };
  const std::vector<std::string> dist = {"--use-distributed-optimizer"};
  EXPECT_EQ(gather_bytes(dist, v1::GPU_ARCHITECTURE_HOPPER), 2);
  EXPECT_EQ(
      gather_bytes(Fp8("tensorwise", {"--use-distributed-optimizer"}), v1::GPU_ARCHITECTURE_HOPPER),
      2);
  EXPECT_EQ(gather_bytes(Fp8("tensorwise", {"--use-distributed-optimizer", "--fp8-param-gather"}),
                         v1::GPU_ARCHITECTURE_HOPPER),
            1);
  EXPECT_EQ(gather_bytes(Fp8("mxfp8", {"--use-distributed-optimizer", "--fp8-param-gather",
                                       "--reuse-grad-buf-for-mxfp8-param-ag"}),
                         v1::GPU_ARCHITECTURE_BLACKWELL),
            2);
  EXPECT_EQ(gather_bytes(Fp4({"--use-distributed-optimizer", "--fp4-param-gather"}),
                         v1::GPU_ARCHITECTURE_BLACKWELL),
            0.5);
}

TEST(Fp8Memory, Nvfp4WeightsPerElement) {
  auto bf16 = EstimateArgs(CiModel({"--use-distributed-optimizer"}));
  auto nvfp4 = EstimateArgs(CiModel(Fp4({"--use-distributed-optimizer"})));
  auto gather = EstimateArgs(CiModel(Fp4({"--use-distributed-optimizer", "--fp4-param-gather"})));
  ASSERT_TRUE(bf16.ok() && nvfp4.ok() && gather.ok())
      << bf16.status() << nvfp4.status() << gather.status();
  // bf16 weights and the quantize_weight workspace: rowwise + columnwise
  // NVFP4 copies, 2 x 0.5625 = 1.125 bytes per weight.
  EXPECT_EQ(DenseParamBytes(*nvfp4), DenseParamBytes(*bf16));
  EXPECT_EQ(OverheadBytes(nvfp4->ranks(0), "fp4_weight_workspace"), kDenseFp8Weights * 1.125);
  // NVFP4 parameters: the packed rowwise data in the uint8 buffer (0.5
  // bytes instead of 2), its scales and the columnwise copy beside it
  // (0.0625 + 0.5625 = 0.625 bytes).
  EXPECT_EQ(DenseParamBytes(*bf16) - DenseParamBytes(*gather), kDenseFp8Weights * 1.5);
  EXPECT_EQ(OverheadBytes(gather->ranks(0), "fp4_weight_workspace"), -1);
  EXPECT_EQ(OverheadBytes(gather->ranks(0), "fp4_param_columnwise_copy"), kDenseFp8Weights * 0.625);
  EXPECT_EQ(gather->ranks(0).static_().dense_grad_bytes(),
            bf16->ranks(0).static_().dense_grad_bytes());
  EXPECT_EQ(gather->ranks(0).static_().dense_optimizer_bytes(),
            bf16->ranks(0).static_().dense_optimizer_bytes());
  // No architecture given: Blackwell, the only one that runs NVFP4 (the
  // same report but for the note that says so).
  auto blackwell =
      EstimateOn(CiModel(Fp4({"--use-distributed-optimizer"})), v1::GPU_ARCHITECTURE_BLACKWELL);
  ASSERT_TRUE(blackwell.ok()) << blackwell.status();
  v1::EstimateReport unspecified = *nvfp4;
  ASSERT_EQ(unspecified.notes_size(), 1);
  EXPECT_TRUE(absl::StrContains(unspecified.notes(0), "runs on Blackwell GPUs only"));
  unspecified.clear_notes();
  EXPECT_EQ(blackwell->SerializeAsString(), unspecified.SerializeAsString());
}

TEST(Fp8Memory, Nvfp4Llama3_8BWeights) {
  // Llama-3 8B: 32 layers of qkv 4096 x 6144, proj 4096 x 4096, fc1
  // 4096 x 28672 and fc2 14336 x 4096 = 218,103,808 weights, 6,979,321,856
  // in all, on every rank at TP 1, PP 1.
  constexpr double kWeights = 32 * 218103808.0;
  const std::vector<std::string> base = {
      "--use-distributed-optimizer", "--seq-length", "8192", "--micro-batch-size", "1",
      "--global-batch-size",         "128"};
  std::vector<std::string> gather_args = Fp4(base);
  gather_args.push_back("--fp4-param-gather");
  auto bf16 = EstimateOn(base, v1::GPU_ARCHITECTURE_BLACKWELL, "llama3-8b");
  auto nvfp4 = EstimateOn(Fp4(base), v1::GPU_ARCHITECTURE_BLACKWELL, "llama3-8b");
  auto gather = EstimateOn(gather_args, v1::GPU_ARCHITECTURE_BLACKWELL, "llama3-8b");
  ASSERT_TRUE(bf16.ok() && nvfp4.ok() && gather.ok())
      << bf16.status() << nvfp4.status() << gather.status();
  // Workspace: 1.125 bytes per weight, 7,851,737,088 (7.31 GiB).
  EXPECT_EQ(OverheadBytes(nvfp4->ranks(0), "fp4_weight_workspace"), kWeights * 1.125);
  // NVFP4 parameters: 1.5 bytes per weight less in the parameter buffer
  // (10,468,982,784), 0.625 beside it (4,362,076,160, 4.06 GiB).
  EXPECT_EQ(DenseParamBytes(*bf16) - DenseParamBytes(*gather), kWeights * 1.5);
  EXPECT_EQ(OverheadBytes(gather->ranks(0), "fp4_param_columnwise_copy"), kWeights * 0.625);
}

TEST(Fp8Memory, Nvfp4SavedInputsOfLinears) {
  auto bf16 = EstimateArgs(CiModel({}));
  auto nvfp4 = EstimateArgs(CiModel(Fp4()));
  ASSERT_TRUE(bf16.ok() && nvfp4.ok()) << nvfp4.status();
  // As for FP8 (SavedInputsOfFp8LinearsPerLayer) with b = 0.5625: each
  // linear saves the columnwise NVFP4 copy of its input.
  auto delta = [](double b) { return 12 * ((3 * b - 4) * kE1 + (b - 2) * kE2); };
  EXPECT_EQ(ActDelta(*nvfp4, *bf16), delta(kNvfp4Copy));  // -243,793,920
  // TP 2 with sequence parallelism: a TE LayerNormLinear keeps both NVFP4
  // copies of its norm output (the rowwise one for the all-gather in
  // backward), 2b per element of the local sequence shard (2048 tokens x
  // 512 = kE1 / 2); proj's input is 4096 tokens x 256 (kE1 / 2), fc2's
  // 4096 x 1024 (kE2 / 2).
  const std::vector<std::string> sp = {"--tensor-model-parallel-size", "2", "--sequence-parallel"};
  auto bf16_sp = EstimateArgs(CiModel(sp));
  auto nvfp4_sp = EstimateArgs(CiModel(Fp4(sp)));
  ASSERT_TRUE(bf16_sp.ok() && nvfp4_sp.ok()) << nvfp4_sp.status();
  const double b = kNvfp4Copy;
  EXPECT_EQ(ActDelta(*nvfp4_sp, *bf16_sp),
            12 * (2 * (2 * b - 2) * kE1 / 2 + b * kE1 / 2 + (b - 2) * kE2 / 2));
}

TEST(Fp8Memory, Nvfp4LeavesMtpLayersAndFirstLastLayersInBf16) {
  // MTP layers run outside the FP4 context (multi_token_prediction.py): the
  // workspace holds the 12 decoder layers' weights only (FP8 adds eh_proj
  // and the MTP layer's linears).
  auto mtp = EstimateArgs(CiModel(Fp4({"--mtp-num-layers", "1"})));
  ASSERT_TRUE(mtp.ok()) << mtp.status();
  EXPECT_EQ(OverheadBytes(mtp->ranks(0), "fp4_weight_workspace"), kDenseFp8Weights * 1.125);
  auto fp8_mtp = EstimateArgs(CiModel(Fp8("tensorwise", {"--mtp-num-layers", "1"})));
  ASSERT_TRUE(fp8_mtp.ok()) << fp8_mtp.status();
  EXPECT_EQ(OverheadBytes(fp8_mtp->ranks(0), "fp8_weight_workspace"),
            2 * (kDenseFp8Weights + 3145728.0 + 2 * 512.0 * 512));
  // --first-last-layers-bf16 keeps layers 0 and 11 in bf16, as for FP8.
  auto ends = EstimateArgs(CiModel(Fp4({"--first-last-layers-bf16"})));
  ASSERT_TRUE(ends.ok()) << ends.status();
  EXPECT_EQ(OverheadBytes(ends->ranks(0), "fp4_weight_workspace"), 10 * 3145728.0 * 1.125);
}

TEST(Fp8Memory, Nvfp4RoutingPadding) {
  auto fp8 = EstimateArgs(MoeEp8(Fp8("tensorwise")));
  auto nvfp4 = EstimateArgs(MoeEp8(Fp4()));
  ASSERT_TRUE(fp8.ok() && nvfp4.ok()) << nvfp4.status();
  // FP4 grouped GEMMs pad each expert's tokens to 128 (fp4_utils
  // get_fp4_align_size): at most 127 padding tokens for the one local
  // expert, against 15 for FP8. Per layer, with b bytes per saved element
  // (0.5625 against FP8's 1): qkv's copy of the norm output and proj's
  // input, b x E1 each (the MoE's own TENorm output is bf16 in both);
  // the dispatched tokens (8192 + p) x 512 x b with 4-byte probs; fc1's
  // bf16 output (8192 + p) x 1024 x 2; fc2's input (8192 + p) x 1024 x b.
  const auto per_layer = [](double b, double p) {
    const double tokens = 8192 + p;
    return 2 * b * kE1 + tokens * (512 * b + 4) + tokens * 1024 * 2 + tokens * 1024 * b;
  };
  EXPECT_EQ(ActDelta(*nvfp4, *fp8), 12 * (per_layer(kNvfp4Copy, 127) - per_layer(1, 15)));
  EXPECT_EQ(OverheadBytes(nvfp4->ranks(0), "fp4_weight_workspace"), 12 * 2 * 1048576.0 * 1.125);
}

TEST(Fp8Memory, RefusesWhatMegatronRefuses) {
  const struct {
    std::vector<std::string> args;
    const char* field;
  } cases[] = {
      {{"--first-last-layers-bf16"}, "precision.first_last_layers_bf16"},
      {Fp8("delayed", {"--first-last-layers-bf16"}), "precision.first_last_layers_bf16"},
      {Fp8("tensorwise", {"--first-last-layers-bf16", "--num-layers-at-end-in-bf16", "13"}),
       "precision.num_layers_at_end_in_bf16 = 13"},
      {Fp8("delayed", {"--fp8-param-gather"}), "precision.fp8_param_gather"},
      {Fp8("delayed", {"--transformer-impl", "local"}), "precision.fp8"},
      // arguments.py validate_args: FP4 parameters need FP4; FP4 and FP8
      // exclude each other; NVFP4 needs TE 2.7.
      {{"--fp4-param-gather"}, "precision.fp4_param_gather = true"},
      {Fp4(Fp8("tensorwise")), "precision.fp4_format = FP4_FORMAT_E2M1"},
      {Fp4({"--transformer-impl", "local"}), "precision.fp4_format = FP4_FORMAT_E2M1"},
      // DistributedDataParallelConfig: the gradient-buffer all-gather needs
      // quantized parameters; TE cannot map MXFP8 ones into the buffer.
      {Fp8("mxfp8", {"--reuse-grad-buf-for-mxfp8-param-ag"}),
       "precision.reuse_grad_buf_for_mxfp8_param_ag = true"},
      {Fp8("mxfp8", {"--use-distributed-optimizer", "--fp8-param-gather"}),
       "precision.reuse_grad_buf_for_mxfp8_param_ag = false"},
  };
  for (const auto& c : cases) {
    auto r = EstimateArgs(CiModel(c.args));
    ASSERT_FALSE(r.ok()) << c.field;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(r.status().message(), c.field)) << r.status();
  }
}

TEST(Fp8Memory, RefusesRecipesTheGpuDoesNotRun) {
  // TE check_mxfp8_support / check_nvfp4_support: compute capability 10.
  auto mxfp8 = EstimateOn(CiModel(Fp8("mxfp8")), v1::GPU_ARCHITECTURE_HOPPER);
  auto nvfp4 = EstimateOn(CiModel(Fp4()), v1::GPU_ARCHITECTURE_HOPPER);
  ASSERT_FALSE(mxfp8.ok() || nvfp4.ok());
  EXPECT_EQ(mxfp8.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(mxfp8.status().message(),
                                "precision.fp8_recipe = FP8_RECIPE_MXFP8: runs on Blackwell"))
      << mxfp8.status();
  EXPECT_EQ(nvfp4.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(nvfp4.status().message(),
                                "precision.fp4_format = FP4_FORMAT_E2M1: runs on Blackwell"))
      << nvfp4.status();
  v1::JobSpec te26 = JobFromArgs(CiModel(Fp4()));
  te26.mutable_runtime()->set_transformer_engine_version("2.6");
  absl::StatusOr<v1::EstimateReport> old = Estimate(te26);
  ASSERT_FALSE(old.ok());
  EXPECT_TRUE(absl::StrContains(old.status().message(), "Transformer Engine 2.7")) << old.status();
  // Megatron-Core has --fp4-format from 0.15, the gradient-buffer
  // all-gather from 0.13.
  v1::JobSpec core14 = JobFromArgs(CiModel(Fp4()));
  core14.mutable_runtime()->set_megatron_core_version("0.14");
  absl::StatusOr<v1::EstimateReport> no_fp4 = Estimate(core14);
  ASSERT_FALSE(no_fp4.ok());
  EXPECT_TRUE(absl::StrContains(no_fp4.status().message(),
                                "precision.fp4_format = FP4_FORMAT_E2M1: needs Megatron-Core 0.15"))
      << no_fp4.status();
  v1::JobSpec core12 =
      JobFromArgs(CiModel(Fp8("mxfp8", {"--use-distributed-optimizer", "--fp8-param-gather",
                                        "--reuse-grad-buf-for-mxfp8-param-ag"})));
  core12.mutable_runtime()->set_megatron_core_version("0.12");
  absl::StatusOr<v1::EstimateReport> no_reuse = Estimate(core12);
  ASSERT_FALSE(no_reuse.ok());
  EXPECT_TRUE(absl::StrContains(no_reuse.status().message(),
                                "precision.reuse_grad_buf_for_mxfp8_param_ag = true: needs "
                                "Megatron-Core 0.13"))
      << no_reuse.status();
}

}  // namespace
}  // namespace oomguard
