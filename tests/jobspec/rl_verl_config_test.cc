// veRL's resolved config read into an RlJobSpec: every key of the reader's
// table, veRL's defaults, notes for keys it does not read, settings it does
// not model, bad values naming the key, the model, and the shipped example
// (shared/seeds/000's RL story).
#include "jobspec/rl_verl_config.h"

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

absl::StatusOr<v1::RlJobSpec> Read(const std::string& yaml, std::vector<std::string>* notes,
                                   v1::RlJob job = {}) {
  job.set_config_yaml(yaml);
  job.set_framework(v1::RL_FRAMEWORK_VERL);
  return BuildRlJob(job, notes);
}

// The least a veRL config needs: the engine's name, the model, the world.
constexpr char kMinimal[] = R"(
actor_rollout_ref:
  model: {path: Qwen/Qwen3-8B}
  rollout: {name: vllm}
trainer: {nnodes: 1, n_gpus_per_node: 8}
)";

// Every key of the table, each at a value other than veRL's default.
constexpr char kEveryKey[] = R"(
actor_rollout_ref:
  hybrid_engine: true
  model:
    path: Qwen/Qwen3-8B
    use_fused_kernels: true
    lora_rank: 0
    lora: {rank: 0}
  actor:
    strategy: megatron
    ppo_mini_batch_size: 64
    ppo_micro_batch_size_per_gpu: 2
    use_dynamic_bsz: false
    ppo_max_token_len_per_gpu: 9999
    entropy_coeff: 0.01
    calculate_entropy: false
    use_kl_loss: false
    use_fused_kernels: false
    optim:
      optimizer: adam
      override_optimizer_config:
        optimizer_cpu_offload: true
        optimizer_offload_fraction: 0.5
        use_precision_aware_optimizer: true
    megatron:
      tensor_model_parallel_size: 2
      pipeline_model_parallel_size: 2
      virtual_pipeline_model_parallel_size: 3
      context_parallel_size: 2
      expert_model_parallel_size: 1
      expert_tensor_parallel_size: 1
      sequence_parallel: false
      use_distributed_optimizer: true
      dtype: bfloat16
      param_offload: true
      grad_offload: true
      optimizer_offload: true
      use_remove_padding: true
      override_transformer_config:
        recompute_granularity: full
        recompute_method: block
        recompute_num_layers: 2
        recompute_modules: [core_attn]
  ref:
    log_prob_use_dynamic_bsz: true
    log_prob_max_token_len_per_gpu: 3000
    log_prob_micro_batch_size_per_gpu: 1
    megatron: {param_offload: false}
  rollout:
    name: sglang
    gpu_memory_utilization: 0.55
    tensor_model_parallel_size: 8
    expert_parallel_size: 2
    pipeline_model_parallel_size: 1
    enforce_eager: true
    free_cache_engine: true
    enable_sleep_mode: true
    max_num_seqs: 128
    max_num_batched_tokens: 4096
    quantization: fp8
    engine_kwargs:
      vllm: {kv_cache_dtype: auto}
      sglang: {kv_cache_dtype: fp8_e5m2}
    'n': 4
    log_prob_use_dynamic_bsz: false
    log_prob_max_token_len_per_gpu: 5000
    log_prob_micro_batch_size_per_gpu: 4
    checkpoint_engine: {update_weights_bucket_megabytes: 512}
algorithm:
  adv_estimator: gae
  use_kl_in_reward: true
critic:
  strategy: megatron
  model: {path: Qwen/Qwen3-8B}
  optim: {optimizer: adam}
  megatron:
    tensor_model_parallel_size: 4
    pipeline_model_parallel_size: 1
    virtual_pipeline_model_parallel_size: null
    context_parallel_size: 1
    expert_model_parallel_size: 1
    expert_tensor_parallel_size: 1
    sequence_parallel: true
    use_distributed_optimizer: false
    dtype: bfloat16
    param_offload: true
    grad_offload: false
    optimizer_offload: true
    use_remove_padding: true
    override_transformer_config:
      recompute_granularity: selective
      recompute_method: null
      recompute_num_layers: null
      recompute_modules: [moe_act]
  ppo_micro_batch_size_per_gpu: 1
  use_dynamic_bsz: true
  ppo_max_token_len_per_gpu: 6000
  forward_max_token_len_per_gpu: 7000
data: {max_prompt_length: 1000, max_response_length: 3000}
trainer: {nnodes: 2, n_gpus_per_node: 8}
)";

TEST(VerlConfig, ReadsEveryKeyOfItsTable) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(kEveryKey, &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(notes, IsEmpty());
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  EXPECT_EQ(spec->framework(), v1::RL_FRAMEWORK_VERL);
  EXPECT_TRUE(spec->colocated());
  EXPECT_EQ(spec->max_prompt_length(), 1000u);
  EXPECT_EQ(spec->max_response_length(), 3000u);

  const v1::JobSpec& actor = spec->actor();
  EXPECT_EQ(actor.model().name(), "Qwen3-8B");
  EXPECT_EQ(actor.parallelism().num_gpus(), 16u);
  EXPECT_EQ(actor.runtime().gpus_per_node(), 8u);
  EXPECT_EQ(actor.parallelism().tensor_model_parallel_size(), 2u);
  EXPECT_EQ(actor.parallelism().pipeline_model_parallel_size(), 2u);
  EXPECT_EQ(actor.parallelism().num_virtual_stages_per_pipeline_rank(), 3u);
  EXPECT_EQ(actor.parallelism().context_parallel_size(), 2u);
  EXPECT_EQ(actor.parallelism().expert_model_parallel_size(), 1u);
  EXPECT_FALSE(actor.parallelism().sequence_parallel());
  EXPECT_TRUE(actor.precision().use_distributed_optimizer());
  EXPECT_EQ(actor.precision().params_dtype(), v1::DTYPE_BF16);
  EXPECT_EQ(actor.precision().optimizer(), v1::OPTIMIZER_ADAM);
  EXPECT_TRUE(actor.precision().optimizer_cpu_offload());
  EXPECT_DOUBLE_EQ(actor.precision().optimizer_offload_fraction(), 0.5);
  EXPECT_TRUE(actor.precision().use_precision_aware_optimizer());
  EXPECT_EQ(actor.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_FULL);
  EXPECT_EQ(actor.recompute().method(), v1::RECOMPUTE_METHOD_BLOCK);
  EXPECT_EQ(actor.recompute().num_layers(), 2u);
  // Not dynamic: 2 sequences of 1000 + 3000 tokens.
  EXPECT_EQ(actor.training().seq_length(), 8000u);
  EXPECT_EQ(actor.training().micro_batch_size(), 1u);
  // DP = 16 / (TP2 x PP2 x CP2) = 2; 64 prompts x 4 x 4000 tokens / 2 / 8000.
  EXPECT_EQ(spec->train_microbatches(), 64u);
  EXPECT_EQ(actor.training().global_batch_size(), 128u);
  EXPECT_TRUE(spec->actor_residency().param_offload());
  EXPECT_TRUE(spec->actor_residency().grad_offload());
  EXPECT_TRUE(spec->actor_residency().optimizer_offload());

  // Log-probs: not dynamic, 4 sequences; entropy from entropy_coeff; the
  // actor's use_fused_kernels over the model's.
  EXPECT_EQ(spec->log_prob().max_tokens_per_microbatch(), 16000u);
  EXPECT_TRUE(spec->log_prob().entropy());
  EXPECT_FALSE(spec->log_prob().fused_kernels());
  // The reference (use_kl_in_reward), on the GPU; dynamic: 3000 x CP 2.
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_GPU_COPY);
  EXPECT_EQ(spec->reference().log_prob().max_tokens_per_microbatch(), 6000u);

  const v1::RolloutEngineSpec& rollout = spec->rollout();
  EXPECT_EQ(rollout.engine(), v1::ROLLOUT_ENGINE_SGLANG);
  EXPECT_DOUBLE_EQ(rollout.memory_fraction(), 0.55);
  EXPECT_EQ(rollout.tensor_parallel(), 8u);
  EXPECT_EQ(rollout.expert_parallel(), 2u);
  EXPECT_FALSE(rollout.cuda_graphs());
  EXPECT_EQ(rollout.max_num_seqs(), 128u);
  EXPECT_EQ(rollout.max_num_batched_tokens(), 4096u);
  EXPECT_EQ(rollout.sleep(), v1::ROLLOUT_SLEEP_LEVEL_2);
  EXPECT_EQ(rollout.weight_dtype(), v1::DTYPE_FP8);
  EXPECT_EQ(rollout.kv_cache_dtype(), v1::DTYPE_FP8);
  EXPECT_EQ(spec->weight_sync().bucket_bytes(), 512ull << 20);

  ASSERT_TRUE(spec->has_critic());
  const v1::CriticSpec& critic = spec->critic();
  EXPECT_EQ(critic.job().model().name(), "Qwen3-8B");
  EXPECT_EQ(critic.job().parallelism().tensor_model_parallel_size(), 4u);
  EXPECT_TRUE(critic.job().parallelism().sequence_parallel());
  EXPECT_FALSE(critic.job().precision().use_distributed_optimizer());
  EXPECT_EQ(critic.job().recompute().granularity(), v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  EXPECT_THAT(critic.job().recompute().modules(), ElementsAre(v1::RECOMPUTE_MODULE_MOE_ACT));
  EXPECT_EQ(critic.job().training().seq_length(), 6000u);
  EXPECT_EQ(critic.forward_tokens_per_microbatch(), 7000u);
  EXPECT_TRUE(critic.residency().param_offload());
  EXPECT_FALSE(critic.residency().grad_offload());
  EXPECT_TRUE(critic.residency().optimizer_offload());
}

TEST(VerlConfig, EveryTableKeyIsInTheFullConfig) {
  // The test above covers the table: each key is in its config.
  absl::StatusOr<RlConfigYaml> config = RlConfigYaml::Parse(kEveryKey);
  ASSERT_TRUE(config.ok());
  for (const RlConfigKey& key : VerlConfigKeys()) {
    EXPECT_TRUE(config->HasUnder(key.key)) << key.key;
  }
}

TEST(VerlConfig, DefaultsOfVerl) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(std::string(kMinimal) +
                                                "data: {max_prompt_length: 512}\n"
                                                "algorithm: {adv_estimator: grpo}\n",
                                            &notes);
  // ppo_micro_batch_size_per_gpu is needed without dynamic batch sizes.
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu: not given"));

  const std::string yaml = R"(
actor_rollout_ref:
  model: {path: Qwen/Qwen3-8B}
  rollout: {name: vllm}
  actor: {use_dynamic_bsz: true}
algorithm: {adv_estimator: grpo}
trainer: {nnodes: 1}
)";
  notes.clear();
  spec = Read(yaml, &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(notes, IsEmpty());
  // ppo_max_token_len_per_gpu 16384; log-probs the same; prompt and
  // response 512; n_gpus_per_node 8.
  EXPECT_EQ(spec->actor().training().seq_length(), 16384u);
  EXPECT_EQ(spec->log_prob().max_tokens_per_microbatch(), 16384u);
  EXPECT_EQ(spec->max_prompt_length(), 512u);
  EXPECT_EQ(spec->max_response_length(), 512u);
  EXPECT_EQ(spec->actor().parallelism().num_gpus(), 8u);
  // ppo_mini_batch_size 256 x n 1 x 1024 tokens / DP 8 / 16384.
  EXPECT_EQ(spec->train_microbatches(), 2u);
  // McoreEngineConfig: sequence parallel and the distributed optimizer.
  EXPECT_TRUE(spec->actor().parallelism().sequence_parallel());
  EXPECT_TRUE(spec->actor().precision().use_distributed_optimizer());
  EXPECT_EQ(spec->actor().precision().params_dtype(), v1::DTYPE_BF16);
  // The engine: 0.5, TP 2, graphs, 256 sequences, 8192 tokens, vLLM's
  // sleep level by its own rule; bucket 2048 MiB.
  EXPECT_DOUBLE_EQ(spec->rollout().memory_fraction(), 0.5);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 2u);
  EXPECT_TRUE(spec->rollout().cuda_graphs());
  EXPECT_EQ(spec->rollout().max_num_seqs(), 256u);
  EXPECT_EQ(spec->rollout().max_num_batched_tokens(), 8192u);
  EXPECT_EQ(spec->rollout().sleep(), v1::ROLLOUT_SLEEP_UNSPECIFIED);
  EXPECT_EQ(spec->weight_sync().bucket_bytes(), 2048ull << 20);
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_NONE);
  EXPECT_FALSE(spec->has_critic());
  EXPECT_TRUE(spec->colocated());
}

TEST(VerlConfig, AKeyItDoesNotReadIsANote) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(R"(
actor_rollout_ref:
  model: {path: Qwen/Qwen3-8B}
  rollout: {name: vllm, foo: 3, temperature: 0.7}
  actor: {use_dynamic_bsz: true}
algorithm: {adv_estimator: grpo}
trainer: {nnodes: 1}
)",
                                            &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  // temperature has no memory effect: no note.
  EXPECT_THAT(notes, ElementsAre("actor_rollout_ref.rollout.foo: not read by oomguard"));
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
}

TEST(VerlConfig, SettingsItDoesNotModelAreUnmodelled) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(R"(
actor_rollout_ref:
  hybrid_engine: false
  model: {path: Qwen/Qwen3-8B, lora_rank: 16}
  rollout: {name: vllm, pipeline_model_parallel_size: 2, quantization: awq}
  actor:
    use_dynamic_bsz: true
    megatron: {use_remove_padding: false}
algorithm: {adv_estimator: grpo}
trainer: {nnodes: 1}
)",
                                            &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  std::vector<std::string> keys;
  for (const v1::UnmodelledSetting& s : spec->unmodelled_settings()) keys.push_back(s.flag());
  EXPECT_THAT(keys,
              ElementsAre("actor_rollout_ref.hybrid_engine", "actor_rollout_ref.model.lora_rank",
                          "actor_rollout_ref.actor.megatron.use_remove_padding",
                          "actor_rollout_ref.rollout.pipeline_model_parallel_size",
                          "actor_rollout_ref.rollout.quantization"));
  EXPECT_THAT(spec->unmodelled_settings(0).reason(), HasSubstr("colocated"));
  EXPECT_THAT(spec->unmodelled_settings(1).reason(), HasSubstr("LoRA"));
  EXPECT_FALSE(spec->colocated());
}

TEST(VerlConfig, BadValuesNameTheKeyAndTheValue) {
  const auto error = [](const std::string& extra) {
    std::vector<std::string> notes;
    return Read(std::string(R"(
trainer: {nnodes: 1}
algorithm: {adv_estimator: grpo}
)") + extra,
                &notes)
        .status();
  };
  absl::Status status = error(R"(
actor_rollout_ref:
  model: {path: Qwen/Qwen3-8B}
  actor: {use_dynamic_bsz: true}
  rollout: {name: vllm, gpu_memory_utilization: high}
)");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "actor_rollout_ref.rollout.gpu_memory_utilization: expected a number, got \"high\"");
  status = error(R"(
actor_rollout_ref:
  model: {path: Qwen/Qwen3-8B}
  actor: {use_dynamic_bsz: true}
  rollout: {name: vllm, gpu_memory_utilization: 1.5}
)");
  EXPECT_THAT(status.message(),
              HasSubstr("actor_rollout_ref.rollout.gpu_memory_utilization: expected a number in "
                        "(0, 1], got 1.5"));
  status = error(R"(
actor_rollout_ref:
  model: {path: Qwen/Qwen3-8B}
  actor:
    use_dynamic_bsz: true
    megatron: {tensor_model_parallel_size: two}
  rollout: {name: vllm}
)");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("actor_rollout_ref.actor.megatron.tensor_model_parallel_size"));
  EXPECT_THAT(status.message(), HasSubstr("\"two\""));
  status = error(R"(
actor_rollout_ref:
  model: {path: Qwen/Qwen3-8B}
  actor: {use_dynamic_bsz: maybe}
  rollout: {name: vllm}
)");
  EXPECT_EQ(status.message(),
            "actor_rollout_ref.actor.use_dynamic_bsz: expected true or false, got \"maybe\"");
  status = error(R"(
actor_rollout_ref:
  model: {path: Qwen/Qwen3-8B}
  actor:
    use_dynamic_bsz: true
    megatron:
      override_transformer_config: {recompute_granularity: sometimes}
  rollout: {name: vllm}
)");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr("actor_rollout_ref.actor.megatron.override_transformer_config."
                        "recompute_granularity"));
}

TEST(VerlConfig, TheModelFromThePathOrTheCaller) {
  const std::string yaml = R"(
actor_rollout_ref:
  model: {path: /models/llama-13b-custom}
  actor: {use_dynamic_bsz: true}
  rollout: {name: vllm}
algorithm: {adv_estimator: grpo}
trainer: {nnodes: 1}
)";
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec = Read(yaml, &notes);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(spec.status().message(),
              HasSubstr("actor_rollout_ref.model.path: \"/models/llama-13b-custom\" names no "
                        "preset's model"));
  EXPECT_THAT(spec.status().message(), HasSubstr("--preset"));
  EXPECT_THAT(spec.status().message(), HasSubstr("--hf-config"));
  v1::RlJob job;
  job.set_preset("qwen3-30b-a3b");
  spec = Read(yaml, &notes, job);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->actor().model().name(), "Qwen3-30B-A3B");
  EXPECT_EQ(spec->actor().model().num_experts(), 128u);
}

// shared/seeds/000's RL story: Qwen3-30B-A3B on 32 x 80 GB, 2048 + 8192
// tokens, TP2 EP8 with selective recompute (the seed's setting 9).
TEST(VerlConfig, TheShippedExample) {
  std::vector<std::string> notes;
  absl::StatusOr<v1::RlJobSpec> spec =
      BuildRlJob(RlYamlJob(ReadRlExample("verl_qwen3_30b_a3b.yaml")), &notes);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_THAT(notes, IsEmpty());
  EXPECT_THAT(spec->unmodelled_settings(), IsEmpty());
  EXPECT_EQ(spec->framework(), v1::RL_FRAMEWORK_VERL);
  const v1::JobSpec& actor = spec->actor();
  EXPECT_EQ(actor.model().name(), "Qwen3-30B-A3B");
  EXPECT_EQ(actor.parallelism().num_gpus(), 32u);
  EXPECT_EQ(actor.parallelism().tensor_model_parallel_size(), 2u);
  EXPECT_EQ(actor.parallelism().expert_model_parallel_size(), 8u);
  EXPECT_TRUE(actor.parallelism().sequence_parallel());
  EXPECT_EQ(actor.recompute().granularity(), v1::RECOMPUTE_GRANULARITY_SELECTIVE);
  EXPECT_THAT(actor.recompute().modules(),
              ElementsAre(v1::RECOMPUTE_MODULE_MOE_ACT, v1::RECOMPUTE_MODULE_LAYERNORM));
  EXPECT_EQ(actor.training().seq_length(), 10240u);
  // 32 prompts x 8 x 10240 tokens over DP 16, in budgets of 10240.
  EXPECT_EQ(spec->train_microbatches(), 16u);
  EXPECT_EQ(spec->log_prob().max_tokens_per_microbatch(), 20480u);
  EXPECT_EQ(spec->reference().placement(), v1::REFERENCE_PLACEMENT_OFFLOADED_COPY);
  // The ${oc.select:...} interpolation resolves to the actor's dynamic bsz.
  EXPECT_EQ(spec->reference().log_prob().max_tokens_per_microbatch(), 20480u);
  EXPECT_EQ(spec->rollout().engine(), v1::ROLLOUT_ENGINE_VLLM);
  EXPECT_EQ(spec->rollout().tensor_parallel(), 4u);
  EXPECT_DOUBLE_EQ(spec->rollout().memory_fraction(), 0.5);
  EXPECT_EQ(spec->weight_sync().bucket_bytes(), 2048ull << 20);
  EXPECT_EQ(spec->max_prompt_length() + spec->max_response_length(), 10240u);
  EXPECT_FALSE(spec->has_critic());
}

}  // namespace
}  // namespace oomguard
