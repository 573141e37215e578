// The RL job builder: which framework a config or an argv is (recognised
// when unspecified), the routing rule for Megatron-LM argv (LooksLikeRlArgv),
// and its errors.
#include "jobspec/rl_job_builder.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/jobspec/rl_test_util.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using testing::ReadRlExample;
using testing::RlArgvJob;
using testing::RlYamlJob;

TEST(RlJobBuilder, RecognisesTheFrameworkOfEachExample) {
  std::vector<std::string> notes;
  EXPECT_EQ(BuildRlJob(RlYamlJob(ReadRlExample("verl_qwen3_30b_a3b.yaml")), &notes)->framework(),
            v1::RL_FRAMEWORK_VERL);
  EXPECT_EQ(BuildRlJob(RlYamlJob(ReadRlExample("nemo_rl_grpo_megatron.yaml")), &notes)->framework(),
            v1::RL_FRAMEWORK_NEMO_RL);
  EXPECT_EQ(BuildRlJob(RlArgvJob(ReadRlExample("slime_qwen3_30b_a3b.args")), &notes)->framework(),
            v1::RL_FRAMEWORK_SLIME);
  v1::RlJob megatron = RlArgvJob(ReadRlExample("megatron_rl.args"));
  megatron.set_preset("qwen3-30b-a3b");
  megatron.set_num_gpus(32);
  EXPECT_EQ(BuildRlJob(megatron, &notes)->framework(), v1::RL_FRAMEWORK_MEGATRON_RL);
}

TEST(RlJobBuilder, TheRoutingRuleForMegatronArgv) {
  EXPECT_EQ(RecognizeRlArgv({"--num-layers", "2", "--perform-rl-step"}),
            v1::RL_FRAMEWORK_MEGATRON_RL);
  EXPECT_EQ(RecognizeRlArgv({"--num-layers", "2", "--colocate"}), v1::RL_FRAMEWORK_SLIME);
  EXPECT_EQ(RecognizeRlArgv({"--sglang-mem-fraction-static=0.5"}), v1::RL_FRAMEWORK_SLIME);
  EXPECT_EQ(RecognizeRlArgv({"--num-layers", "2", "--seq-length", "4096"}),
            v1::RL_FRAMEWORK_UNSPECIFIED);
  // A value that looks like an RL flag's name is a value.
  EXPECT_FALSE(LooksLikeRlArgv({"--data-path", "perform-rl-step"}));
  EXPECT_TRUE(LooksLikeRlArgv({"--perform_rl_step"}));
  EXPECT_FALSE(LooksLikeRlArgv({}));
}

TEST(RlJobBuilder, Errors) {
  std::vector<std::string> notes;
  v1::RlJob both = RlYamlJob("a: 1");
  both.add_argv("--colocate");
  EXPECT_THAT(BuildRlJob(both, &notes).status().message(), HasSubstr("not both"));
  EXPECT_THAT(BuildRlJob(v1::RlJob(), &notes).status().message(), HasSubstr("no RL job"));
  absl::Status status = BuildRlJob(RlYamlJob("model: {path: x}\n"), &notes).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("actor_rollout_ref"));
  status = BuildRlJob(RlArgvJob("--num-layers 2"), &notes).status();
  EXPECT_THAT(status.message(), HasSubstr("--perform-rl-step"));
  status = BuildRlJob(RlYamlJob("actor_rollout_ref:\n  rollout: [\n"), &notes).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("YAML line"));
  v1::RlJob yaml_as_slime = RlYamlJob("actor_rollout_ref: {}\n");
  yaml_as_slime.set_framework(v1::RL_FRAMEWORK_SLIME);
  EXPECT_THAT(BuildRlJob(yaml_as_slime, &notes).status().message(),
              HasSubstr("RL_FRAMEWORK_SLIME is read from an argv"));
  // A preset and the caller's GPU count override the config's.
  v1::RlJob job = RlYamlJob(ReadRlExample("verl_qwen3_30b_a3b.yaml"));
  job.set_num_gpus(64);
  absl::StatusOr<v1::RlJobSpec> spec = BuildRlJob(job, &notes);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->actor().parallelism().num_gpus(), 64u);
}

}  // namespace
}  // namespace oomguard
