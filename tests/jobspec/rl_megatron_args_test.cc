// Megatron-LM's RL loop read into an RlJobSpec: the RL flags it reads, their
// defaults (arguments.py), the rest given to the Megatron-LM parser (its RL
// flags that are not read are not modelled there), the plain parser's
// answer for an RL argv, and the example.
#include "jobspec/rl_megatron_args.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/ignored_flags.h"
#include "jobspec/megatron_args.h"
#include "jobspec/rl_job_builder.h"
#include "tests/jobspec/rl_test_util.h"
#include "tests/testing/megatron_lm_arguments.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ReadRlExample;
using testing::RlArgvJob;

absl::StatusOr<v1::RlJobSpec> Read(const std::string& line, std::vector<std::string>* notes) {
  v1::RlJob job = RlArgvJob(line);
  job.set_preset("qwen3-8b");
  job.set_num_gpus(8);
  return BuildRlJob(job, notes);
}

TEST(MegatronRlArgs, EveryFlagReadIsMegatronLms) {
  for (const RlArgvFlag& flag : MegatronRlFlags()) {
    EXPECT_EQ(testing::MegatronLmArguments().count(absl::StrCat("--", flag.name)), 1u) << flag.name;
    EXPECT_FALSE(flag.sets.empty()) << flag.name;
  }
}

TEST(MegatronRlArgs, DefaultsOfMegatronLm) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(
      "--perform-rl-step --tensor-model-parallel-size 2 --seq-length 4096 "
      "--micro-batch-size 2 --global-batch-size 64",
      &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  EXPECT_EQ(spec->framework(), v1::RL_FRAMEWORK_MEGATRON_RL);
  // No packing: 2 padded sequences of 4096 tokens per micro-batch; 64 / 2
  // sequences per micro-batch / DP 4.
  EXPECT_EQ(spec->actor().training().seq_length(), 8192u);
  EXPECT_EQ(spec->actor().training().micro_batch_size(), 1u);
  EXPECT_EQ(spec->train_microbatches(), 8u);
  EXPECT_EQ(spec->actor().training().global_batch_size(), 32u);
  // The engine: 40 GB of KV buffer kept (persist), the trainer's layout,
  // no CUDA graphs without --cuda-graph-impl; the reference swapped in
  // (--grpo-kl-beta 0.001).
  EXPECT_EQ(spec->rollout().engine(), v1::ROLLOUT_ENGINE_MEGATRON);
  EXPECT_EQ(spec->rollout().kv_buffer_bytes(), 40ull << 30);
  EXPECT_EQ(spec->rollout().sleep(), v1::ROLLOUT_SLEEP_NONE);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 2u);
  EXPECT_FALSE(spec->rollout().cuda_graphs());
  EXPECT_FALSE(spec->rollout().persist_cuda_graphs());
  EXPECT_FALSE(spec->actor_residency().optimizer_offload());
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_SWAPPED_IN);
  EXPECT_EQ(spec->max_prompt_length() + spec->max_response_length(), 4096u);
}

TEST(MegatronRlArgs, ReadsItsFlags) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(
      "--perform-rl-step --seq-length 4096 --micro-batch-size 1 --rl-use-sequence-packing "
      "--inference-dynamic-batching --inference-dynamic-batching-buffer-size-gb 12.5 "
      "--inference-dynamic-batching-max-requests 64 --inference-dynamic-batching-max-tokens 2048 "
      "--rl-inference-tensor-model-parallel-size 4 --rl-inference-pipeline-model-parallel-size 1 "
      "--rl-inference-expert-model-parallel-size 2 --rl-kv-cache-management-mode recompute "
      "--cuda-graph-impl local --rl-persist-cuda-graphs --rl-offload-optimizer-during-inference "
      "--grpo-kl-beta 0 --rl-default-temperature 0.7 --rl-partial-rollouts",
      &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->actor().training().seq_length(), 4096u);
  EXPECT_EQ(spec->rollout().kv_buffer_bytes(), static_cast<uint64_t>(12.5 * (1ull << 30)));
  EXPECT_EQ(spec->rollout().max_num_seqs(), 64u);
  EXPECT_EQ(spec->rollout().max_num_batched_tokens(), 2048u);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 4u);
  EXPECT_EQ(spec->rollout().pipeline_parallel(), 1u);
  EXPECT_EQ(spec->rollout().expert_parallel(), 2u);
  EXPECT_EQ(spec->rollout().sleep(), v1::ROLLOUT_SLEEP_LEVEL_2);
  EXPECT_TRUE(spec->rollout().cuda_graphs());
  EXPECT_TRUE(spec->rollout().persist_cuda_graphs());
  EXPECT_TRUE(spec->actor_residency().optimizer_offload());
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_NONE);
  // --rl-partial-rollouts is not modelled (the Megatron-LM parser's class);
  // the temperature changes nothing.
  ASSERT_EQ(spec->unmodelled_settings_size(), 1);
  EXPECT_EQ(spec->unmodelled_settings(0).flag(), "--rl-partial-rollouts");
  EXPECT_THAT(spec->unmodelled_settings(0).reason(), HasSubstr("RL post-training"));
}

TEST(MegatronRlArgs, ErrorsNameTheFlag) {
  std::vector<std::string> notes;
  EXPECT_EQ(Read("--perform-rl-step --seq-length 4096 --micro-batch-size 1 "
                 "--rl-kv-cache-management-mode sometimes",
                 &notes)
                .status()
                .message(),
            "--rl-kv-cache-management-mode: expected persist, offload or recompute, got "
            "\"sometimes\"");
  EXPECT_EQ(Read("--perform-rl-step --seq-length 4096 --micro-batch-size 2 "
                 "--rl-use-sequence-packing",
                 &notes)
                .status()
                .message(),
            "--micro-batch-size: expected 1 with --rl-use-sequence-packing, got 2");
  EXPECT_THAT(Read("--perform-rl-step --seq-length 4096 --micro-batch-size 1 "
                   "--inference-dynamic-batching-buffer-size-gb big",
                   &notes)
                  .status()
                  .message(),
              HasSubstr("--inference-dynamic-batching-buffer-size-gb: expected a number, got "
                        "\"big\""));
}

// The plain Megatron-LM parser, given an RL argv the caller did not route,
// records the flags the RL reader reads as not modelled, naming the rule.
TEST(MegatronRlArgs, ThePlainParserNamesTheRlReader) {
  v1::JobSpec job;
  std::vector<std::string> notes;
  ASSERT_TRUE(ApplyMegatronArgs({"--perform-rl-step", "--rl-kv-cache-management-mode", "offload",
                                 "--rl-default-temperature", "0.5"},
                                ArgsMode::kOverrides, &job, &notes)
                  .ok());
  ASSERT_EQ(job.unmodelled_settings_size(), 2);
  EXPECT_EQ(job.unmodelled_settings(0).flag(), "--perform-rl-step");
  EXPECT_THAT(job.unmodelled_settings(0).reason(), HasSubstr("RL reader"));
  EXPECT_EQ(job.unmodelled_settings(1).flag(), "--rl-kv-cache-management-mode");
  EXPECT_TRUE(LooksLikeRlArgv({"--num-layers", "4", "--perform-rl-step"}));
}

TEST(MegatronRlArgs, TheShippedExample) {
  std::vector<std::string> notes;
  v1::RlJob job = RlArgvJob(ReadRlExample("megatron_rl.args"));
  job.set_preset("qwen3-30b-a3b");
  job.set_num_gpus(32);
  absl::StatusOr<v1::RlJobSpec> spec = BuildRlJob(job, &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  EXPECT_EQ(spec->framework(), v1::RL_FRAMEWORK_MEGATRON_RL);
  EXPECT_EQ(spec->actor().parallelism().expert_model_parallel_size(), 8u);
  EXPECT_EQ(spec->actor().training().seq_length(), 8192u);
  // 256 sequences / DP 16.
  EXPECT_EQ(spec->train_microbatches(), 16u);
  EXPECT_EQ(spec->rollout().kv_buffer_bytes(), 20ull << 30);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 4u);
  EXPECT_EQ(spec->rollout().expert_parallel(), 8u);
  EXPECT_EQ(spec->rollout().sleep(), v1::ROLLOUT_SLEEP_LEVEL_1);
  EXPECT_TRUE(spec->actor_residency().optimizer_offload());
  EXPECT_THAT(notes, ElementsAre(HasSubstr("--seq-length: Megatron-LM's RL argv gives no prompt")));
}

}  // namespace
}  // namespace oomguard
