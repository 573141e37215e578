#include "jobspec/flag_kinds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "jobspec/flag_resolution.h"
#include "jobspec/flag_values.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

// Applies `flag` with `values` to `job`.
absl::Status Apply(const MegatronFlag& flag, std::vector<absl::string_view> values,
                   v1::JobSpec* job, ParseState* state = nullptr) {
  ParseState local{.job = job};
  ParseState& s = state != nullptr ? *state : local;
  s.job = job;
  return flag.apply(FlagUse{"--flag", std::move(values)}, s);
}

TEST(FlagKindsTest, UintAndRealSetTheirField) {
  v1::JobSpec job;
  const MegatronFlag layers = Uint("model.num_layers");
  EXPECT_EQ(layers.arity, FlagArity::kOne);
  EXPECT_THAT(layers.fields, ElementsAre("model.num_layers"));
  ASSERT_TRUE(Apply(layers, {"12"}, &job).ok());
  EXPECT_EQ(job.model().num_layers(), 12u);
  EXPECT_EQ(Apply(layers, {"x"}, &job).code(), absl::StatusCode::kInvalidArgument);

  ASSERT_TRUE(Apply(Real("model.hidden_dropout", kProbability), {"0.5"}, &job).ok());
  EXPECT_EQ(job.model().hidden_dropout(), 0.5);
}

TEST(FlagKindsTest, SwitchesSetAConstant) {
  v1::JobSpec job;
  const MegatronFlag bias = Switch("model.add_bias_linear", false);
  EXPECT_EQ(bias.arity, FlagArity::kSwitch);
  ASSERT_TRUE(Apply(bias, {}, &job).ok());
  ASSERT_TRUE(job.model().has_add_bias_linear());
  EXPECT_FALSE(job.model().add_bias_linear());

  ASSERT_TRUE(Apply(Switch("model.activation", v1::ACTIVATION_SWIGLU), {}, &job).ok());
  EXPECT_EQ(job.model().activation(), v1::ACTIVATION_SWIGLU);

  const MegatronFlag fp8 = EnableWithAnyValue("precision.fp8");
  EXPECT_EQ(fp8.arity, FlagArity::kOne);
  ASSERT_TRUE(Apply(fp8, {"hybrid"}, &job).ok());
  EXPECT_TRUE(job.precision().fp8());
}

TEST(FlagKindsTest, WordsAndWordLists) {
  v1::JobSpec job;
  const MegatronFlag method = Word("recompute.method", {{"uniform", v1::RECOMPUTE_METHOD_UNIFORM},
                                                        {"block", v1::RECOMPUTE_METHOD_BLOCK}});
  EXPECT_EQ(method.WordFor(v1::RECOMPUTE_METHOD_BLOCK), "block");
  ASSERT_TRUE(Apply(method, {"block"}, &job).ok());
  EXPECT_EQ(job.recompute().method(), v1::RECOMPUTE_METHOD_BLOCK);
  EXPECT_EQ(Apply(method, {"Block"}, &job).code(), absl::StatusCode::kInvalidArgument);

  const MegatronFlag modules =
      WordList("recompute.modules",
               {{"mlp", v1::RECOMPUTE_MODULE_MLP}, {"moe_act", v1::RECOMPUTE_MODULE_MOE_ACT}});
  EXPECT_EQ(modules.arity, FlagArity::kList);
  ASSERT_TRUE(Apply(modules, {"moe_act", "mlp", "moe_act"}, &job).ok());
  EXPECT_THAT(job.recompute().modules(),
              ElementsAre(v1::RECOMPUTE_MODULE_MOE_ACT, v1::RECOMPUTE_MODULE_MLP));
  ASSERT_TRUE(Apply(modules, {}, &job).ok());
  EXPECT_THAT(job.recompute().modules(), IsEmpty());
}

TEST(FlagKindsTest, Text) {
  v1::JobSpec job;
  ASSERT_TRUE(Apply(Text("parallelism.pipeline_model_parallel_layout"), {"Et|tL"}, &job).ok());
  EXPECT_EQ(job.parallelism().pipeline_model_parallel_layout(), "Et|tL");
  const MegatronFlag scope = TextList("runtime.cuda_graph_modules");
  ASSERT_TRUE(Apply(scope, {"attn", "mlp"}, &job).ok());
  ASSERT_TRUE(Apply(scope, {"moe_router"}, &job).ok());
  EXPECT_THAT(job.runtime().cuda_graph_modules(), ElementsAre("moe_router"));
}

TEST(FlagKindsTest, HandlersOfTheirOwn) {
  v1::JobSpec job;
  ParseState state{.job = &job};
  const MegatronFlag vocab =
      AlsoRecord(Uint("model.vocab_size"), [](ParseState& s) { s.vocab_size_given = true; });
  ASSERT_TRUE(Apply(vocab, {"8"}, &job, &state).ok());
  EXPECT_EQ(job.model().vocab_size(), 8u);
  EXPECT_TRUE(state.vocab_size_given);

  const MegatronFlag custom =
      Custom(FlagArity::kOne, {FieldAt("model.num_experts"), FieldAt("model.moe_router_topk")},
             [](const FlagUse&, absl::Span<const JobField> fields, ParseState& s) {
               fields[0].SetUint32(s.job, 4);
               fields[1].SetUint32(s.job, 2);
               return absl::OkStatus();
             });
  EXPECT_THAT(custom.fields, ElementsAre("model.num_experts", "model.moe_router_topk"));
  ASSERT_TRUE(Apply(custom, {"x"}, &job).ok());
  EXPECT_EQ(job.model().num_experts(), 4u);
  EXPECT_EQ(job.model().moe_router_topk(), 2u);

  const MegatronFlag resolved =
      Resolved(FlagArity::kSwitch, {"model.num_query_groups"}, [](const FlagUse&, ParseState& s) {
        s.group_query_attention = true;
        return absl::OkStatus();
      });
  EXPECT_THAT(resolved.fields, ElementsAre("model.num_query_groups"));
  ASSERT_TRUE(Apply(resolved, {}, &job, &state).ok());
  EXPECT_TRUE(state.group_query_attention);

  const MegatronFlag unmapped =
      Unmapped(FlagArity::kOne, [](const FlagUse&, ParseState&) { return absl::OkStatus(); });
  EXPECT_THAT(unmapped.fields, IsEmpty());
}

TEST(FlagKindsTest, FieldAtChecksTheType) {
  EXPECT_EQ(FieldAt("model.num_layers", google::protobuf::FieldDescriptor::CPPTYPE_UINT32).path(),
            "model.num_layers");
  EXPECT_DEATH(FieldAt("model.no_such_field"), "bug in the Megatron-LM flag table");
  EXPECT_DEATH(FieldAt("model.num_layers", google::protobuf::FieldDescriptor::CPPTYPE_BOOL),
               "model.num_layers is a uint32");
  EXPECT_DEATH(Switch("model.activation", v1::DTYPE_BF16), "model.activation is not a Dtype");
}

}  // namespace
}  // namespace oomguard
