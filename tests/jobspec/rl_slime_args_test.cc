// slime's argv read into an RlJobSpec: its flags taken out of the Megatron-LM
// words, its defaults and the rules of its validate_args (colocation implies
// both offloads, PPO forces the train side's), the flags read, notes for
// --sglang-* flags it does not read, errors naming the flag, and the example.
#include "jobspec/rl_slime_args.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobspec/rl_job_builder.h"
#include "tests/jobspec/rl_test_util.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::ReadRlExample;
using testing::RlArgvJob;

constexpr char kBase[] =
    "--hf-checkpoint /models/Qwen3-8B --tensor-model-parallel-size 2 --seq-length 4096 "
    "--micro-batch-size 1 --bf16 --actor-num-nodes 1 --actor-num-gpus-per-node 8 "
    "--rollout-max-prompt-len 1024 --rollout-max-response-len 3072 ";

absl::StatusOr<v1::RlJobSpec> Read(const std::string& line, std::vector<std::string>* notes) {
  v1::RlJob job = RlArgvJob(line);
  job.set_framework(v1::RL_FRAMEWORK_SLIME);
  return BuildRlJob(job, notes);
}

TEST(SlimeArgs, ColocatedGrpoWithItsDefaults) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(std::string(kBase) + "--colocate", &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  EXPECT_EQ(spec->actor().model().name(), "Qwen3-8B");
  EXPECT_EQ(spec->actor().parallelism().num_gpus(), 8u);
  EXPECT_EQ(spec->actor().parallelism().tensor_model_parallel_size(), 2u);
  // Not dynamic: --micro-batch-size 1 of 1024 + 3072 tokens, packed.
  EXPECT_EQ(spec->actor().training().seq_length(), 4096u);
  EXPECT_EQ(spec->actor().training().micro_batch_size(), 1u);
  // --colocate: both sides offloaded (torch_memory_saver's pause; SGLang's
  // release); SGLang TP 1; graphs on; no KL term, no reference; bucket
  // 512 MiB; no chunking (-1); the memory fraction SGLang's own rule.
  EXPECT_TRUE(spec->colocated());
  EXPECT_TRUE(spec->actor_residency().release_all());
  EXPECT_EQ(spec->rollout().engine(), v1::ROLLOUT_ENGINE_SGLANG);
  EXPECT_EQ(spec->rollout().sleep(), v1::ROLLOUT_SLEEP_LEVEL_2);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 1u);
  EXPECT_TRUE(spec->rollout().cuda_graphs());
  EXPECT_FALSE(spec->rollout().has_memory_fraction());
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_NONE);
  EXPECT_EQ(spec->weight_sync().bucket_bytes(), 512ull << 20);
  EXPECT_EQ(spec->log_prob().chunk_tokens(), 0u);
  EXPECT_FALSE(spec->has_critic());
  EXPECT_THAT(notes, ElementsAre(HasSubstr("--sglang-mem-fraction-static: not given")));
}

TEST(SlimeArgs, ReadsItsFlags) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(
      std::string(kBase) +
          "--context-parallel-size 2 --colocate --no-offload-rollout --use-dynamic-batch-size "
          "--max-tokens-per-gpu 5000 --log-probs-max-tokens-per-gpu 8000 "
          "--log-probs-chunk-size 512 --advantage-estimator ppo --kl-coef 0.01 "
          "--rollout-num-gpus-per-engine 4 --sglang-mem-fraction-static 0.5 "
          "--sglang-disable-cuda-graph --sglang-cuda-graph-max-bs 64 "
          "--sglang-chunked-prefill-size 2048 --sglang-kv-cache-dtype fp8_e4m3 "
          "--sglang-quantization fp8 --sglang-ep-size 4 --update-weight-buffer-size 1073741824 "
          "--rollout-batch-size 16 --n-samples-per-prompt 4 --sglang-log-level warning "
          "--rollout-stop a b --prompt-data /data/x.jsonl",
      &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  // The budget per CP rank x CP 2.
  EXPECT_EQ(spec->actor().training().seq_length(), 10000u);
  EXPECT_EQ(spec->log_prob().max_tokens_per_microbatch(), 16000u);
  EXPECT_EQ(spec->log_prob().chunk_tokens(), 512u);
  // 16 prompts x 4 x 4096 tokens over DP 2 (8 / TP2 / CP2), in 10000.
  EXPECT_EQ(spec->train_microbatches(), 14u);
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_SWAPPED_IN);
  const v1::RolloutEngineSpec& rollout = spec->rollout();
  EXPECT_EQ(rollout.tensor_parallel(), 4u);
  EXPECT_EQ(rollout.expert_parallel(), 4u);
  EXPECT_DOUBLE_EQ(rollout.memory_fraction(), 0.5);
  EXPECT_FALSE(rollout.cuda_graphs());
  EXPECT_EQ(rollout.max_num_seqs(), 64u);
  EXPECT_EQ(rollout.max_num_batched_tokens(), 2048u);
  EXPECT_EQ(rollout.kv_cache_dtype(), v1::DTYPE_FP8);
  EXPECT_EQ(rollout.weight_dtype(), v1::DTYPE_FP8);
  // --no-offload-rollout: the engine keeps its memory.
  EXPECT_EQ(rollout.sleep(), v1::ROLLOUT_SLEEP_NONE);
  EXPECT_EQ(spec->weight_sync().bucket_bytes(), 1ull << 30);
  // PPO: a critic like the actor, its train side offloaded.
  ASSERT_TRUE(spec->has_critic());
  EXPECT_EQ(spec->critic().job().parallelism().context_parallel_size(), 2u);
  EXPECT_TRUE(spec->critic().residency().release_all());
  EXPECT_TRUE(spec->actor_residency().release_all());
  EXPECT_THAT(notes, ElementsAre("--sglang-log-level: not read by oomguard"));
}

TEST(SlimeArgs, NotColocatedIsNotModelled) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(kBase, &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->unmodelled_settings_size(), 1);
  EXPECT_EQ(spec->unmodelled_settings(0).flag(), "--colocate");
  EXPECT_FALSE(spec->actor_residency().release_all());
  EXPECT_EQ(spec->rollout().sleep(), v1::ROLLOUT_SLEEP_NONE);
}

TEST(SlimeArgs, ErrorsNameTheFlag) {
  std::vector<std::string> notes;
  absl::Status status =
      Read(std::string(kBase) + "--colocate --rollout-num-gpus-per-engine four", &notes).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "--rollout-num-gpus-per-engine: expected a whole number from 0 to 4294967295, got "
            "\"four\"");
  status = Read(std::string(kBase) + "--colocate --sglang-mem-fraction-static", &notes).status();
  EXPECT_EQ(status.message(), "--sglang-mem-fraction-static: missing value");
  status = Read(std::string(kBase) + "--colocate --colocate=yes", &notes).status();
  EXPECT_EQ(status.message(), "--colocate takes no value, got \"yes\"");
  status =
      Read("--hf-checkpoint /m/Qwen3-8B --seq-length 4096 --micro-batch-size 1 --colocate", &notes)
          .status();
  EXPECT_THAT(status.message(), HasSubstr("--rollout-max-response-len: not given"));
  status =
      Read("--hf-checkpoint /m/unknown-model --rollout-max-response-len 100 --colocate", &notes)
          .status();
  EXPECT_THAT(status.message(),
              HasSubstr("--hf-checkpoint: \"/m/unknown-model\" names no preset's model"));
  // A Megatron-LM flag's bad value names the Megatron-LM flag.
  status =
      Read(std::string(kBase) + "--colocate --pipeline-model-parallel-size x", &notes).status();
  EXPECT_THAT(status.message(), HasSubstr("--pipeline-model-parallel-size"));
}

TEST(SlimeArgs, TheTableIsSlimesParser) {
  // Spot checks of arities from slime/utils/arguments.py.
  const auto arity = [](absl::string_view name) {
    for (const RlArgvFlag& flag : SlimeFlags()) {
      if (flag.name == name) return static_cast<int>(flag.arity);
    }
    return -1;
  };
  EXPECT_EQ(arity("colocate"), static_cast<int>(RlFlagArity::kSwitch));
  EXPECT_EQ(arity("offload-train"), static_cast<int>(RlFlagArity::kNegatable));
  EXPECT_EQ(arity("max-tokens-per-gpu"), static_cast<int>(RlFlagArity::kOne));
  EXPECT_EQ(arity("rollout-stop"), static_cast<int>(RlFlagArity::kList));
  EXPECT_EQ(arity("num-layers"), -1);  // Megatron-LM's.
  EXPECT_GE(SlimeFlags().size(), 210u);
  EXPECT_TRUE(IsSlimeFlag("sglang-anything"));
  EXPECT_FALSE(IsSlimeFlag("tensor-model-parallel-size"));
}

TEST(SlimeArgs, TheShippedExample) {
  std::vector<std::string> notes;
  v1::RlJob job = RlArgvJob(ReadRlExample("slime_qwen3_30b_a3b.args"));
  absl::StatusOr<v1::RlJobSpec> spec = BuildRlJob(job, &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(notes, IsEmpty());
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  EXPECT_EQ(spec->framework(), v1::RL_FRAMEWORK_SLIME);
  EXPECT_EQ(spec->actor().model().name(), "Qwen3-30B-A3B");
  EXPECT_EQ(spec->actor().parallelism().num_gpus(), 32u);
  EXPECT_EQ(spec->actor().parallelism().expert_model_parallel_size(), 8u);
  EXPECT_EQ(spec->actor().recompute().granularity(), v1::RECOMPUTE_GRANULARITY_FULL);
  EXPECT_EQ(spec->actor().training().seq_length(), 10240u);
  EXPECT_EQ(spec->log_prob().max_tokens_per_microbatch(), 20480u);
  EXPECT_EQ(spec->log_prob().chunk_tokens(), 4096u);
  // --global-batch-size 256 sequences x 10240 / DP 16 / 10240.
  EXPECT_EQ(spec->train_microbatches(), 16u);
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_SWAPPED_IN);
  EXPECT_DOUBLE_EQ(spec->rollout().memory_fraction(), 0.6);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 4u);
  EXPECT_TRUE(spec->actor_residency().release_all());
}

}  // namespace
}  // namespace oomguard
