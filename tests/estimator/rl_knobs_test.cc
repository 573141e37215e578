// The RL keys table: each framework's spelling of each knob, and the
// setting written with the job's value as the framework reads it (MiB, GiB,
// bytes, per-CP-rank budgets, inverted switches).
#include "estimator/rl_knobs.h"

#include <string>

#include "gtest/gtest.h"

namespace oomguard {
namespace {

v1::RlJobSpec Job(v1::RlFramework framework) {
  v1::RlJobSpec job;
  job.set_framework(framework);
  job.mutable_actor()->mutable_parallelism()->set_context_parallel_size(2);
  job.mutable_actor()->mutable_training()->set_seq_length(20480);
  job.mutable_log_prob()->set_max_tokens_per_microbatch(40960);
  job.mutable_log_prob()->set_chunk_tokens(2048);
  job.mutable_reference()->set_placement(v1::REFERENCE_PLACEMENT_OFFLOADED_COPY);
  job.mutable_reference()->mutable_log_prob()->set_max_tokens_per_microbatch(8192);
  job.mutable_actor_residency()->set_param_offload(true);
  job.mutable_rollout()->set_memory_fraction(0.45);
  job.mutable_rollout()->set_tensor_parallel(4);
  job.mutable_rollout()->set_cuda_graphs(false);
  job.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_NONE);
  job.mutable_rollout()->set_kv_buffer_bytes(20ull << 30);
  job.mutable_weight_sync()->set_bucket_bytes(1ull << 30);
  v1::CriticSpec& critic = *job.mutable_critic();
  critic.mutable_job()->mutable_training()->set_seq_length(16384);
  critic.mutable_residency()->set_optimizer_offload(true);
  return job;
}

TEST(RlKnobs, KeysOfEachFramework) {
  EXPECT_EQ(RlKnobKey(v1::RL_FRAMEWORK_VERL, RlKnob::kLogProbTokens),
            "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu");
  EXPECT_EQ(RlKnobKey(v1::RL_FRAMEWORK_NEMO_RL, RlKnob::kLogProbChunk),
            "policy.logprob_chunk_size");
  EXPECT_EQ(RlKnobKey(v1::RL_FRAMEWORK_SLIME, RlKnob::kLogProbTokens),
            "--log-probs-max-tokens-per-gpu");
  EXPECT_EQ(RlKnobKey(v1::RL_FRAMEWORK_MEGATRON_RL, RlKnob::kEngineKvBuffer),
            "--inference-dynamic-batching-buffer-size-gb");
  // veRL's Megatron actor has no log-prob chunk; Megatron-LM no fraction.
  EXPECT_EQ(RlKnobKey(v1::RL_FRAMEWORK_VERL, RlKnob::kLogProbChunk), "");
  EXPECT_EQ(RlKnobKey(v1::RL_FRAMEWORK_MEGATRON_RL, RlKnob::kEngineMemoryFraction), "");
  EXPECT_EQ(RlKnobKey(v1::RL_FRAMEWORK_UNSPECIFIED, RlKnob::kTrainTokens), "");
}

TEST(RlKnobs, VerlSettingsInItsUnits) {
  const v1::RlJobSpec job = Job(v1::RL_FRAMEWORK_VERL);
  // Budgets per CP rank (veRL multiplies by CP).
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kTrainTokens),
            "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=10240");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kLogProbTokens),
            "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=20480");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kRefLogProbTokens),
            "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu=4096");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kParamOffload),
            "actor_rollout_ref.actor.megatron.param_offload=true");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kGradOffload),
            "actor_rollout_ref.actor.megatron.grad_offload=false");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kRefParamOffload),
            "actor_rollout_ref.ref.megatron.param_offload=true");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kCriticOptimizerOffload),
            "critic.megatron.optimizer_offload=true");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kCriticTrainTokens),
            "critic.ppo_max_token_len_per_gpu=16384");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kEngineMemoryFraction),
            "actor_rollout_ref.rollout.gpu_memory_utilization=0.45");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kEngineTensorParallel),
            "actor_rollout_ref.rollout.tensor_model_parallel_size=4");
  // Graphs off = enforce_eager on; no sleep = free_cache_engine off.
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kEngineCudaGraphs),
            "actor_rollout_ref.rollout.enforce_eager=true");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kEngineSleep),
            "actor_rollout_ref.rollout.free_cache_engine=false");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kWeightSyncBucket),
            "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=1024");
  EXPECT_EQ(RlKnobSetting(job, RlKnob::kLogProbChunk), "");
}

TEST(RlKnobs, NemoRlSlimeAndMegatronSettings) {
  const v1::RlJobSpec nemo = Job(v1::RL_FRAMEWORK_NEMO_RL);
  EXPECT_EQ(RlKnobSetting(nemo, RlKnob::kTrainTokens),
            "policy.sequence_packing.train_mb_tokens=20480");
  EXPECT_EQ(RlKnobSetting(nemo, RlKnob::kLogProbChunk), "policy.logprob_chunk_size=2048");
  EXPECT_EQ(RlKnobSetting(nemo, RlKnob::kWeightSyncBucket), "policy.refit_buffer_size_gb=1");
  EXPECT_EQ(RlKnobSetting(nemo, RlKnob::kEngineCudaGraphs),
            "policy.generation.vllm_cfg.enforce_eager=true");

  const v1::RlJobSpec slime = Job(v1::RL_FRAMEWORK_SLIME);
  EXPECT_EQ(RlKnobSetting(slime, RlKnob::kTrainTokens), "--max-tokens-per-gpu 10240");
  EXPECT_EQ(RlKnobSetting(slime, RlKnob::kLogProbChunk), "--log-probs-chunk-size 2048");
  EXPECT_EQ(RlKnobSetting(slime, RlKnob::kEngineMemoryFraction),
            "--sglang-mem-fraction-static 0.45");
  EXPECT_EQ(RlKnobSetting(slime, RlKnob::kEngineCudaGraphs), "--sglang-disable-cuda-graph");
  EXPECT_EQ(RlKnobSetting(slime, RlKnob::kEngineSleep), "--no-offload-rollout");
  EXPECT_EQ(RlKnobSetting(slime, RlKnob::kParamOffload), "--offload-train");
  EXPECT_EQ(RlKnobSetting(slime, RlKnob::kWeightSyncBucket),
            "--update-weight-buffer-size 1073741824");

  v1::RlJobSpec megatron = Job(v1::RL_FRAMEWORK_MEGATRON_RL);
  EXPECT_EQ(RlKnobSetting(megatron, RlKnob::kEngineKvBuffer),
            "--inference-dynamic-batching-buffer-size-gb 20");
  EXPECT_EQ(RlKnobSetting(megatron, RlKnob::kEngineSleep), "--rl-kv-cache-management-mode persist");
  megatron.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_LEVEL_1);
  EXPECT_EQ(RlKnobSetting(megatron, RlKnob::kEngineSleep), "--rl-kv-cache-management-mode offload");
  megatron.mutable_rollout()->set_sleep(v1::ROLLOUT_SLEEP_LEVEL_2);
  EXPECT_EQ(RlKnobSetting(megatron, RlKnob::kEngineSleep),
            "--rl-kv-cache-management-mode recompute");
  EXPECT_EQ(RlKnobSetting(megatron, RlKnob::kOptimizerOffload), "");
  megatron.mutable_actor_residency()->set_optimizer_offload(true);
  EXPECT_EQ(RlKnobSetting(megatron, RlKnob::kOptimizerOffload),
            "--rl-offload-optimizer-during-inference");
  EXPECT_EQ(RlKnobSetting(megatron, RlKnob::kEngineTensorParallel),
            "--rl-inference-tensor-model-parallel-size 4");
}

}  // namespace
}  // namespace oomguard
