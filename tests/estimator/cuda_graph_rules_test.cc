// Megatron-LM's CUDA graph settings (estimator/cuda_graph_rules.h): the
// migration of deprecated `--cuda-graph-modules` values and the
// combinations it refuses, each refusal naming the field and the value.
#include "estimator/cuda_graph_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "estimator/validated_job.h"
#include "tests/testing/small_models.h"

namespace oomguard {
namespace {

using ::testing::StartsWith;

const std::vector<std::string> kMoe = {"--num-experts",         "8",   "--moe-router-topk", "2",
                                       "--moe-ffn-hidden-size", "1024"};

std::vector<std::string> With(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

absl::StatusOr<ValidatedJob> Validate(const std::vector<std::string>& extra, uint32_t gpus = 1) {
  return ValidateJob(testing::JobFromArgs(testing::SmallGptArgs(4, extra), gpus), nullptr);
}

// The refusal of `extra`: INVALID_ARGUMENT whose message starts with
// `field = "value"`.
void ExpectRefused(const std::vector<std::string>& extra, const std::string& field_and_value) {
  const absl::StatusOr<ValidatedJob> j = Validate(extra);
  ASSERT_FALSE(j.ok()) << field_and_value;
  EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(j.status().message()), StartsWith(field_and_value));
}

TEST(CudaGraphRules, ImplementationsAndDeprecatedValuesResolveAsMegatronLmDoes) {
  struct Case {
    std::vector<std::string> flags;
    CudaGraphImpl impl;
    bool whole_layers;
  };
  const std::vector<Case> cases = {
      {{}, CudaGraphImpl::kNone, true},
      {{"--cuda-graph-impl", "full_iteration"}, CudaGraphImpl::kFullIteration, true},
      // cuda_graph_config.py CUDA_GRAPH_MODULES_DEPRECATIONS: full_iteration
      // becomes the implementation, with impl none or local.
      {{"--cuda-graph-modules", "full_iteration"}, CudaGraphImpl::kFullIteration, true},
      {{"--cuda-graph-impl", "local", "--cuda-graph-scope", "full_iteration"},
       CudaGraphImpl::kFullIteration,
       true},
      // full_iteration_inference only sets an inference scope.
      {{"--cuda-graph-modules", "full_iteration_inference"}, CudaGraphImpl::kNone, true},
      {{"--cuda-graph-impl", "local", "--cuda-graph-modules", "full_iteration_inference"},
       CudaGraphImpl::kLocal,
       true},
      // "full" alone: whole layers.
      {{"--cuda-graph-impl", "transformer_engine", "--cuda-graph-modules", "full"},
       CudaGraphImpl::kTransformerEngine,
       true},
      {{"--cuda-graph-impl", "transformer_engine", "--cuda-graph-modules", "attn"},
       CudaGraphImpl::kTransformerEngine,
       false},
  };
  for (const Case& c : cases) {
    const absl::StatusOr<ValidatedJob> j = Validate(c.flags);
    ASSERT_TRUE(j.ok()) << j.status();
    EXPECT_EQ(j->runtime.cuda_graph_impl, c.impl) << c.flags.size();
    EXPECT_EQ(j->runtime.cuda_graph_modules.whole_layers(), c.whole_layers) << c.flags.size();
  }
  // The local implementation captures moe_router and moe_preprocess
  // together (TransformerConfig.__post_init__ adds the other).
  const absl::StatusOr<ValidatedJob> local = Validate(
      With(kMoe, {"--cuda-graph-impl", "local", "--cuda-graph-modules", "moe_preprocess"}));
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_TRUE(local->runtime.cuda_graph_modules.moe_router);
}

TEST(CudaGraphRules, RefusalsNameTheFieldAndTheValue) {
  const std::vector<std::string> te = {"--cuda-graph-impl", "transformer_engine",
                                       "--cuda-graph-modules"};
  ExpectRefused(With(te, {"attn", "everything"}), "runtime.cuda_graph_modules[1] = \"everything\"");
  ExpectRefused(With(te, {"full", "attn"}), "runtime.cuda_graph_modules = \"full\"");
  ExpectRefused(With(te, {"full_iteration"}), "runtime.cuda_graph_impl = \"transformer_engine\"");
  ExpectRefused({"--cuda-graph-impl", "full_iteration", "--cuda-graph-modules", "attn"},
                "runtime.cuda_graph_modules = \"attn\"");
  ExpectRefused(
      {"--cuda-graph-impl", "full_iteration", "--cuda-graph-modules", "full_iteration_inference"},
      "runtime.cuda_graph_impl = \"full_iteration\"");
  ExpectRefused({"--cuda-graph-modules", "full_iteration", "full_iteration_inference"},
                "runtime.cuda_graph_modules[1] = \"full_iteration_inference\"");
  // TransformerConfig.__post_init__'s module rules.
  ExpectRefused(With(te, {"moe_router"}), "runtime.cuda_graph_modules = \"moe_router\"");
  ExpectRefused(With(kMoe, With(te, {"moe", "moe_router"})),
                "runtime.cuda_graph_modules = \"moe moe_router\"");
  ExpectRefused(With(kMoe, With(te, {"moe_preprocess"})),
                "runtime.cuda_graph_modules = \"moe_preprocess\"");
  ExpectRefused(With(kMoe, With(te, {"mlp"})), "runtime.cuda_graph_modules = \"mlp\"");
  ExpectRefused(With(kMoe, With(te, {"moe"})), "runtime.cuda_graph_modules = \"moe\"");
  ExpectRefused(With(kMoe, With({"--moe-expert-capacity-factor", "1.0",
                                 "--moe-token-dispatcher-type", "alltoall"},
                                With(te, {"moe_router", "moe_preprocess"}))),
                "runtime.cuda_graph_modules = \"moe_preprocess\"");
  // What Megatron-Core accepts: mlp beside MoE layers, moe with drop-and-pad,
  // moe_preprocess with the allgather dispatcher and a capacity factor.
  const std::vector<std::string> accepted[] = {
      With(kMoe, With({"--moe-layer-freq", "([0]*1+[1]*3)"}, With(te, {"attn", "mlp"}))),
      With(kMoe, With({"--moe-expert-capacity-factor", "1.0", "--moe-pad-expert-input-to-capacity"},
                      With(te, {"moe"}))),
      With(kMoe,
           With({"--moe-expert-capacity-factor", "1.0", "--moe-token-dispatcher-type", "allgather"},
                With(te, {"moe_router", "moe_preprocess"}))),
  };
  for (const std::vector<std::string>& flags : accepted) {
    const absl::StatusOr<ValidatedJob> j = Validate(flags);
    EXPECT_TRUE(j.ok()) << j.status();
  }
}

}  // namespace
}  // namespace oomguard
