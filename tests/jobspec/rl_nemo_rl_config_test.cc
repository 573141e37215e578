// NeMo-RL's config read into an RlJobSpec: every key of the reader's table,
// NeMo-RL's defaults, notes, settings it does not model, bad values naming
// the key, and the shipped example.
#include "jobspec/rl_nemo_rl_config.h"

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
using testing::RlYamlJob;

absl::StatusOr<v1::RlJobSpec> Read(const std::string& yaml, std::vector<std::string>* notes) {
  return BuildRlJob(RlYamlJob(yaml), notes);
}

// Every key of the table, each at a value other than NeMo-RL's default.
constexpr char kEveryKey[] = R"(
loss_fn: {reference_policy_kl_penalty: 0}
policy:
  model_name: Qwen/Qwen3-8B
  precision: bfloat16
  train_global_batch_size: 128
  train_micro_batch_size: 2
  logprob_batch_size: 3
  max_total_sequence_length: 4000
  logprob_chunk_size: 1024
  offload_optimizer_for_logprob: true
  refit_buffer_size_gb: 4
  sequence_packing: {enabled: false, train_mb_tokens: 1, logprob_mb_tokens: 1}
  dynamic_batching: {enabled: true, train_mb_tokens: 12000, logprob_mb_tokens: 24000}
  megatron_cfg:
    enabled: true
    tensor_model_parallel_size: 2
    pipeline_model_parallel_size: 1
    context_parallel_size: 2
    expert_model_parallel_size: 1
    expert_tensor_parallel_size: 1
    num_layers_in_first_pipeline_stage: null
    num_layers_in_last_pipeline_stage: null
    moe_token_dispatcher_type: allgather
    moe_router_dtype: fp32
    sequence_parallel: true
    activation_checkpointing: true
    recompute_granularity: selective
    recompute_modules: [core_attn, mlp]
    fine_grained_activation_offloading: true
    offload_modules: [core_attn]
    defer_fp32_logits: true
    cuda_graph_impl: none
    peft: {enabled: false}
    fp8_cfg: {enabled: false}
    optimizer:
      optimizer: adam
      use_distributed_optimizer: true
      use_precision_aware_optimizer: false
      optimizer_cpu_offload: true
      optimizer_offload_fraction: 0.25
  generation:
    backend: vllm
    max_new_tokens: 3000
    colocated: {enabled: true}
    vllm_cfg:
      tensor_parallel_size: 2
      pipeline_parallel_size: 1
      expert_parallel_size: 2
      gpu_memory_utilization: 0.45
      enforce_eager: true
      precision: fp8
      kv_cache_dtype: fp8
      max_model_len: 4000
data: {max_input_seq_length: 1000}
cluster: {num_nodes: 2, gpus_per_node: 4}
)";

TEST(NemoRlConfig, ReadsEveryKeyOfItsTable) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(kEveryKey, &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(notes, IsEmpty());
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  EXPECT_EQ(spec->framework(), v1::RL_FRAMEWORK_NEMO_RL);
  const v1::JobSpec& actor = spec->actor();
  EXPECT_EQ(actor.model().name(), "Qwen3-8B");
  EXPECT_EQ(actor.precision().params_dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(actor.parallelism().num_gpus(), 8u);
  EXPECT_EQ(actor.runtime().gpus_per_node(), 4u);
  EXPECT_EQ(actor.parallelism().tensor_model_parallel_size(), 2u);
  EXPECT_EQ(actor.parallelism().context_parallel_size(), 2u);
  EXPECT_TRUE(actor.parallelism().sequence_parallel());
  EXPECT_EQ(actor.model().moe_token_dispatcher(), v1::TOKEN_DISPATCHER_ALLGATHER);
  EXPECT_TRUE(actor.model().moe_router_dtype_fp32());
  EXPECT_EQ(actor.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  EXPECT_THAT(actor.recompute().modules(),
              ElementsAre(v1::RECOMPUTE_MODULE_CORE_ATTN, v1::RECOMPUTE_MODULE_MLP));
  EXPECT_TRUE(actor.recompute().fine_grained_activation_offloading());
  EXPECT_THAT(actor.recompute().offload_modules(), ElementsAre("core_attn"));
  EXPECT_TRUE(actor.precision().use_distributed_optimizer());
  EXPECT_FALSE(actor.precision().use_precision_aware_optimizer());
  EXPECT_TRUE(actor.precision().optimizer_cpu_offload());
  EXPECT_DOUBLE_EQ(actor.precision().optimizer_offload_fraction(), 0.25);
  // Dynamic batching (packing off): its budgets.
  EXPECT_EQ(actor.training().seq_length(), 12000u);
  EXPECT_EQ(spec->log_prob().max_tokens_per_microbatch(), 24000u);
  // DP = 8 / (TP2 x CP2) = 2; 128 x 4000 / 2 / 12000, rounded up.
  EXPECT_EQ(spec->train_microbatches(), 22u);
  EXPECT_EQ(spec->log_prob().chunk_tokens(), 1024u);
  EXPECT_TRUE(spec->log_prob().defer_fp32_logits());
  EXPECT_TRUE(spec->actor_residency().optimizer_offload());
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_NONE);
  EXPECT_EQ(spec->weight_sync().bucket_bytes(), 4ull << 30);
  EXPECT_FALSE(spec->weight_sync().has_free_fraction());
  const v1::RolloutEngineSpec& rollout = spec->rollout();
  EXPECT_EQ(rollout.engine(), v1::ROLLOUT_ENGINE_VLLM);
  EXPECT_EQ(rollout.tensor_parallel(), 2u);
  EXPECT_EQ(rollout.expert_parallel(), 2u);
  EXPECT_DOUBLE_EQ(rollout.memory_fraction(), 0.45);
  EXPECT_FALSE(rollout.cuda_graphs());
  EXPECT_EQ(rollout.weight_dtype(), v1::DTYPE_FP8);
  EXPECT_EQ(rollout.kv_cache_dtype(), v1::DTYPE_FP8);
  EXPECT_EQ(rollout.sleep(), v1::ROLLOUT_SLEEP_LEVEL_2);
  EXPECT_TRUE(spec->colocated());
  EXPECT_EQ(spec->max_prompt_length(), 1000u);
  EXPECT_EQ(spec->max_response_length(), 3000u);
}

TEST(NemoRlConfig, EveryTableKeyIsInTheFullConfig) {
  absl::StatusOr<RlConfigYaml> config = RlConfigYaml::Parse(kEveryKey);
  ASSERT_TRUE(config.ok());
  for (const RlConfigKey& key : NemoRlConfigKeys()) {
    EXPECT_TRUE(config->HasUnder(key.key)) << key.key;
  }
}

TEST(NemoRlConfig, DefaultsOfNemoRl) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(R"(
grpo: {num_prompts_per_step: 8}
policy:
  model_name: Qwen/Qwen3-8B
  max_total_sequence_length: 2048
  megatron_cfg: {enabled: true}
cluster: {num_nodes: 1, gpus_per_node: 8}
)",
                                            &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  // No packing: one micro-batch of 1 x 2048 tokens; vLLM 0.6, TP 1;
  // refit 30 % of the free memory; a KL penalty of 0.01 (its examples').
  EXPECT_EQ(spec->actor().training().seq_length(), 2048u);
  EXPECT_DOUBLE_EQ(spec->rollout().memory_fraction(), 0.6);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 1u);
  EXPECT_TRUE(spec->rollout().cuda_graphs());
  EXPECT_DOUBLE_EQ(spec->weight_sync().free_fraction(), 0.3);
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_SWAPPED_IN);
  EXPECT_TRUE(spec->actor().precision().use_distributed_optimizer());
  EXPECT_EQ(spec->log_prob().chunk_tokens(), 0u);
  // max_new_tokens defaults to the whole sequence: the prompt is read from
  // data.max_input_seq_length (its default the same), noted.
  EXPECT_EQ(spec->max_response_length(), 2048u);
  EXPECT_EQ(spec->max_prompt_length(), 2048u);
  EXPECT_THAT(notes, ElementsAre(HasSubstr("policy.generation.max_new_tokens")));
}

TEST(NemoRlConfig, KeysItDoesNotReadAndInterpolationsItCannotResolveAreNotes) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(R"(
loss_fn: {reference_policy_kl_penalty: 0.01}
policy:
  model_name: Qwen/Qwen3-8B
  max_total_sequence_length: 2048
  logprob_chunk_size: ${oc.env:CHUNK}
  generation: {max_new_tokens: 1024, vllm_cfg: {swap_space: 4}}
  megatron_cfg: {enabled: true}
cluster: {num_nodes: 1, gpus_per_node: 8}
)",
                                            &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(notes, ElementsAre("policy.generation.vllm_cfg.swap_space: not read by oomguard",
                                 HasSubstr("policy.logprob_chunk_size: the interpolation "
                                           "\"${oc.env:CHUNK}\" is not resolved")));
  EXPECT_EQ(spec->log_prob().chunk_tokens(), 0u);
}

TEST(NemoRlConfig, SettingsItDoesNotModelAreUnmodelled) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(R"(
loss_fn: {reference_policy_kl_penalty: 0.01}
policy:
  model_name: Qwen/Qwen3-30B-A3B
  max_total_sequence_length: 2048
  dynamic_batching: {enabled: true, train_mb_tokens: 4096, logprob_mb_tokens: 4096}
  sequence_packing: {enabled: false}
  megatron_cfg:
    enabled: true
    pipeline_model_parallel_size: 2
    moe_router_dtype: fp64
    peft: {enabled: true}
  generation:
    max_new_tokens: 1024
    colocated: {enabled: false}
    vllm_cfg: {pipeline_parallel_size: 2}
cluster: {num_nodes: 1, gpus_per_node: 8}
)",
                                            &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<std::string> keys;
  for (const v1::UnmodelledSetting& s : spec->unmodelled_settings()) keys.push_back(s.flag());
  EXPECT_THAT(keys,
              ElementsAre("policy.megatron_cfg.peft.enabled", "policy.dynamic_batching.enabled",
                          "policy.generation.colocated.enabled",
                          "policy.generation.vllm_cfg.pipeline_parallel_size",
                          "policy.megatron_cfg.moe_router_dtype"));
  // fp64 routing, a not-modelled choice of --moe-router-dtype, under the
  // config's key with its value.
  EXPECT_EQ(spec->unmodelled_settings(4).value(), "fp64");
  EXPECT_EQ(spec->rollout().sleep(), v1::ROLLOUT_SLEEP_NONE);
}

TEST(NemoRlConfig, BadValuesNameTheKeyAndTheValue) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(R"(
policy:
  model_name: Qwen/Qwen3-8B
  max_total_sequence_length: 2048
  megatron_cfg: {enabled: true, context_parallel_size: -2}
loss_fn: {}
cluster: {num_nodes: 1, gpus_per_node: 8}
)",
                                            &notes);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(), HasSubstr("policy.megatron_cfg.context_parallel_size"));
  EXPECT_THAT(spec.status().message(), HasSubstr("\"-2\""));

  spec = Read(R"(
policy:
  model_name: Qwen/Qwen3-8B
  max_total_sequence_length: 2048
  refit_buffer_size_gb: lots
  megatron_cfg: {enabled: true}
loss_fn: {}
cluster: {num_nodes: 1, gpus_per_node: 8}
)",
              &notes);
  EXPECT_EQ(spec.status().message(),
            "policy.refit_buffer_size_gb: expected a number, got \"lots\"");

  spec = Read(R"(
policy:
  model_name: my-org/my-model
  max_total_sequence_length: 2048
  megatron_cfg: {enabled: true}
loss_fn: {}
cluster: {num_nodes: 1, gpus_per_node: 8}
)",
              &notes);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("policy.model_name: \"my-org/my-model\" names no preset's model; pass "
                        "the model with --preset NAME or --hf-config config.json"));
}

TEST(NemoRlConfig, TheShippedExample) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec =
      BuildRlJob(RlYamlJob(ReadRlExample("nemo_rl_grpo_megatron.yaml")), &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(notes, IsEmpty());
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  EXPECT_EQ(spec->framework(), v1::RL_FRAMEWORK_NEMO_RL);
  EXPECT_EQ(spec->actor().model().name(), "Qwen3-30B-A3B");
  EXPECT_EQ(spec->actor().parallelism().num_gpus(), 64u);
  EXPECT_EQ(spec->actor().parallelism().expert_model_parallel_size(), 8u);
  // ${mul:...} resolved: 4096 x 1 and 4096 x 4.
  EXPECT_EQ(spec->actor().training().seq_length(), 4096u);
  EXPECT_EQ(spec->log_prob().max_tokens_per_microbatch(), 16384u);
  EXPECT_EQ(spec->log_prob().chunk_tokens(), 2048u);
  // 512 x 4096 / DP 32 / 4096.
  EXPECT_EQ(spec->train_microbatches(), 16u);
  EXPECT_DOUBLE_EQ(spec->rollout().memory_fraction(), 0.7);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 4u);
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_SWAPPED_IN);
  EXPECT_EQ(spec->max_prompt_length(), 1024u);
  EXPECT_EQ(spec->max_response_length(), 3072u);
}

}  // namespace
}  // namespace oomguard
