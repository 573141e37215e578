// FP8 training memory (estimator/fp8_memory.h) against hand-derived byte
// counts on Megatron-LM's CI models: 12 layers, hidden 512, 8 heads (head
// dim 64), FFN 2048, seq 1024, micro-batch 4 (4096 tokens), no linear
// biases, Transformer Engine, TP 1, PP 1 (one micro-batch in flight), 8 GPUs.
//
// Per dense layer the FP8 linears hold 512 x 1536 (qkv) + 512 x 512 (proj)
// + 512 x 2048 (fc1) + 2048 x 512 (fc2) = 3,145,728 weights.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "estimator/estimator.h"
#include "jobspec/job_builder.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using testing::EstimateArgs;

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
  };
  for (const auto& c : cases) {
    auto r = EstimateArgs(CiModel(c.args));
    ASSERT_FALSE(r.ok()) << c.field;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(r.status().message(), c.field)) << r.status();
  }
}

}  // namespace
}  // namespace oomguard
