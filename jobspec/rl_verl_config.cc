#include "jobspec/rl_verl_config.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"
#include "jobspec/presets.h"

namespace oomguard {
namespace {

// The Megatron block's keys (actor_rollout_ref.actor.megatron.*,
// critic.megatron.*) and the Megatron-LM setting each is.
constexpr RlMegatronKey kMegatronSizes[] = {
    {"tensor_model_parallel_size", "tensor-model-parallel-size"},
    {"pipeline_model_parallel_size", "pipeline-model-parallel-size"},
    {"virtual_pipeline_model_parallel_size", "num-virtual-stages-per-pipeline-rank"},
    {"context_parallel_size", "context-parallel-size"},
    {"expert_model_parallel_size", "expert-model-parallel-size"},
    {"expert_tensor_parallel_size", "expert-tensor-parallel-size"},
    // TransformerConfig attributes (veRL passes override_transformer_config
    // to the model's TransformerConfig).
    {"override_transformer_config.recompute_method", "recompute-method"},
    {"override_transformer_config.recompute_num_layers", "recompute-num-layers"},
};
// The block's switches (true by default: veRL's McoreEngineConfig).
constexpr RlMegatronKey kMegatronSwitches[] = {
    {"sequence_parallel", "sequence-parallel"},
    {"use_distributed_optimizer", "use-distributed-optimizer"},
};
constexpr RlMegatronKey kRecomputeGranularity = {
    "override_transformer_config.recompute_granularity", "recompute-granularity"};
constexpr RlMegatronKey kRecomputeModules = {"override_transformer_config.recompute_modules",
                                             "recompute-modules"};
// The optimizer block's keys (actor_rollout_ref.actor.optim.*, critic.optim.*):
// Megatron-Core OptimizerConfig attributes given in override_optimizer_config.
constexpr RlMegatronKey kOptimizerCpuOffload = {"override_optimizer_config.optimizer_cpu_offload",
                                                "optimizer-cpu-offload"};
constexpr RlMegatronKey kOptimizerOffloadFraction = {
    "override_optimizer_config.optimizer_offload_fraction", "optimizer-offload-fraction"};
constexpr RlMegatronKey kPrecisionAwareOptimizer = {
    "override_optimizer_config.use_precision_aware_optimizer", "use-precision-aware-optimizer"};

// The actor's and the critic's blocks.
constexpr char kActorMegatron[] = "actor_rollout_ref.actor.megatron";
constexpr char kActorOptim[] = "actor_rollout_ref.actor.optim";
constexpr char kCriticMegatron[] = "critic.megatron";
constexpr char kCriticOptim[] = "critic.optim";

#define MEGATRON_BLOCK_KEYS(block, who)                                                       \
  {block ".tensor_model_parallel_size", who " TP"},                                           \
      {block ".pipeline_model_parallel_size", who " PP"},                                     \
      {block ".virtual_pipeline_model_parallel_size", who " virtual stages per PP rank"},     \
      {block ".context_parallel_size", who " CP"},                                            \
      {block ".expert_model_parallel_size", who " EP"},                                       \
      {block ".expert_tensor_parallel_size", who " ETP"},                                     \
      {block ".sequence_parallel", who " sequence parallel"},                                 \
      {block ".use_distributed_optimizer", who " distributed optimizer"},                     \
      {block ".dtype", who " parameter dtype"},                                               \
      {block ".param_offload", who " residency.param_offload"},                               \
      {block ".grad_offload", who " residency.grad_offload"},                                 \
      {block ".optimizer_offload", who " residency.optimizer_offload"},                       \
      {block ".use_remove_padding", who " packed (THD) micro-batches; false not modelled"},   \
      {block ".override_transformer_config.recompute_granularity", who " recompute"},         \
      {block ".override_transformer_config.recompute_method", who " recompute method"},       \
      {block ".override_transformer_config.recompute_num_layers", who " recompute layers"}, { \
    block ".override_transformer_config.recompute_modules", who " recompute modules"          \
  }

constexpr RlConfigKey kKeys[] = {
    {"actor_rollout_ref.model.path", "the actor's model (a preset's model name)"},
    {"actor_rollout_ref.model.use_fused_kernels", "log_prob.fused_kernels"},
    {"actor_rollout_ref.model.lora_rank", "LoRA (> 0 not modelled)"},
    {"actor_rollout_ref.model.lora.rank", "LoRA (> 0 not modelled)"},
    {"actor_rollout_ref.hybrid_engine", "colocated (false not modelled)"},
    {"actor_rollout_ref.actor.strategy", "megatron (others not modelled)"},
    MEGATRON_BLOCK_KEYS("actor_rollout_ref.actor.megatron", "actor"),
    {"actor_rollout_ref.actor.optim.optimizer", "actor optimizer"},
    {"actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload",
     "actor optimizer CPU offload"},
    {"actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_offload_fraction",
     "actor optimizer offload fraction"},
    {"actor_rollout_ref.actor.optim.override_optimizer_config.use_precision_aware_optimizer",
     "actor precision-aware optimizer"},
    {"actor_rollout_ref.actor.ppo_mini_batch_size", "train_microbatches"},
    {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "actor training tokens (padded)"},
    {"actor_rollout_ref.actor.use_dynamic_bsz", "actor training tokens (budget)"},
    {"actor_rollout_ref.actor.ppo_max_token_len_per_gpu", "actor.training.seq_length / CP"},
    {"actor_rollout_ref.actor.entropy_coeff", "log_prob.entropy"},
    {"actor_rollout_ref.actor.calculate_entropy", "log_prob.entropy"},
    {"actor_rollout_ref.actor.use_kl_loss", "reference"},
    {"actor_rollout_ref.actor.use_fused_kernels", "log_prob.fused_kernels"},
    {"actor_rollout_ref.ref.megatron.param_offload", "reference.placement"},
    {"actor_rollout_ref.ref.log_prob_use_dynamic_bsz", "reference.log_prob"},
    {"actor_rollout_ref.ref.log_prob_max_token_len_per_gpu", "reference.log_prob"},
    {"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", "reference.log_prob"},
    {"actor_rollout_ref.rollout.name", "rollout.engine"},
    {"actor_rollout_ref.rollout.gpu_memory_utilization", "rollout.memory_fraction"},
    {"actor_rollout_ref.rollout.tensor_model_parallel_size", "rollout.tensor_parallel"},
    {"actor_rollout_ref.rollout.expert_parallel_size", "rollout.expert_parallel"},
    {"actor_rollout_ref.rollout.pipeline_model_parallel_size", "rollout (> 1 not modelled)"},
    {"actor_rollout_ref.rollout.enforce_eager", "rollout.cuda_graphs"},
    {"actor_rollout_ref.rollout.free_cache_engine", "rollout.sleep"},
    {"actor_rollout_ref.rollout.enable_sleep_mode", "rollout.sleep"},
    {"actor_rollout_ref.rollout.max_num_seqs", "rollout.max_num_seqs"},
    {"actor_rollout_ref.rollout.max_num_batched_tokens", "rollout.max_num_batched_tokens"},
    {"actor_rollout_ref.rollout.quantization", "rollout.weight_dtype"},
    {"actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype", "rollout.kv_cache_dtype"},
    {"actor_rollout_ref.rollout.engine_kwargs.sglang.kv_cache_dtype", "rollout.kv_cache_dtype"},
    {"actor_rollout_ref.rollout.n", "train_microbatches"},
    {"actor_rollout_ref.rollout.log_prob_use_dynamic_bsz", "log_prob"},
    {"actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu", "log_prob"},
    {"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", "log_prob"},
    {"actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes",
     "weight_sync.bucket_bytes"},
    {"algorithm.adv_estimator", "critic (gae)"},
    {"algorithm.use_kl_in_reward", "reference"},
    {"critic.strategy", "megatron (others not modelled)"},
    {"critic.model.path", "the critic's model"},
    MEGATRON_BLOCK_KEYS("critic.megatron", "critic"),
    {"critic.optim.optimizer", "critic optimizer"},
    {"critic.ppo_micro_batch_size_per_gpu", "critic training tokens (padded)"},
    {"critic.use_dynamic_bsz", "critic training tokens (budget)"},
    {"critic.ppo_max_token_len_per_gpu", "critic.job.training.seq_length / CP"},
    {"critic.forward_max_token_len_per_gpu", "critic.forward_tokens_per_microbatch"},
    {"data.max_prompt_length", "max_prompt_length"},
    {"data.max_response_length", "max_response_length"},
    {"trainer.nnodes", "world size"},
    {"trainer.n_gpus_per_node", "world size, runtime.gpus_per_node"},
};
#undef MEGATRON_BLOCK_KEYS

// Subtrees with no memory effect (or none on the GPUs of the step).
constexpr absl::string_view kSilent[] = {
    "actor_rollout_ref.actor.optim",
    "actor_rollout_ref.actor.profiler",
    "actor_rollout_ref.actor.checkpoint",
    "actor_rollout_ref.actor.policy_loss",
    "actor_rollout_ref.actor.router_replay",
    "actor_rollout_ref.actor.clip_ratio",
    "actor_rollout_ref.actor.clip_ratio_low",
    "actor_rollout_ref.actor.clip_ratio_high",
    "actor_rollout_ref.actor.clip_ratio_c",
    "actor_rollout_ref.actor.kl_loss_coef",
    "actor_rollout_ref.actor.kl_loss_type",
    "actor_rollout_ref.actor.loss_agg_mode",
    "actor_rollout_ref.actor.ppo_epochs",
    "actor_rollout_ref.actor.shuffle",
    "actor_rollout_ref.actor.data_loader_seed",
    "actor_rollout_ref.actor.megatron.seed",
    "actor_rollout_ref.actor.megatron._target_",
    "actor_rollout_ref.actor.megatron.use_mbridge",
    "actor_rollout_ref.actor.megatron.vanilla_mbridge",
    "actor_rollout_ref.actor.megatron.use_dist_checkpointing",
    "actor_rollout_ref.actor.megatron.dist_checkpointing_path",
    "actor_rollout_ref.actor.megatron.dist_checkpointing_prefix",
    "actor_rollout_ref.actor.megatron.override_transformer_config.attention_backend",
    "actor_rollout_ref.actor._target_",
    "actor_rollout_ref.actor.rollout_n",
    "actor_rollout_ref.ref.profiler",
    "actor_rollout_ref.ref.megatron",
    "actor_rollout_ref.ref._target_",
    "actor_rollout_ref.ref.rollout_n",
    "actor_rollout_ref.ref.strategy",
    "actor_rollout_ref.rollout._target_",
    "actor_rollout_ref.rollout.mode",
    "actor_rollout_ref.rollout.temperature",
    "actor_rollout_ref.rollout.top_k",
    "actor_rollout_ref.rollout.top_p",
    "actor_rollout_ref.rollout.do_sample",
    "actor_rollout_ref.rollout.prompt_length",
    "actor_rollout_ref.rollout.response_length",
    "actor_rollout_ref.rollout.dtype",
    "actor_rollout_ref.rollout.load_format",
    "actor_rollout_ref.rollout.val_kwargs",
    "actor_rollout_ref.rollout.multi_turn",
    "actor_rollout_ref.rollout.agent",
    "actor_rollout_ref.rollout.trace",
    "actor_rollout_ref.rollout.profiler",
    "actor_rollout_ref.rollout.prometheus",
    "actor_rollout_ref.rollout.disable_log_stats",
    "actor_rollout_ref.rollout.layer_name_map",
    "actor_rollout_ref.rollout.checkpoint_engine._target_",
    "actor_rollout_ref.rollout.checkpoint_engine.backend",
    "actor_rollout_ref.model._target_",
    "actor_rollout_ref.model.tokenizer_path",
    "actor_rollout_ref.model.trust_remote_code",
    "actor_rollout_ref.model.custom_chat_template",
    "actor_rollout_ref.model.external_lib",
    "actor_rollout_ref.nccl_timeout",
    "algorithm",
    "critic.optim",
    "critic.profiler",
    "critic.checkpoint",
    "critic.rollout_n",
    "critic.megatron.seed",
    "critic.megatron.use_mbridge",
    "critic.megatron.vanilla_mbridge",
    "critic.megatron.use_dist_checkpointing",
    "critic.megatron.dist_checkpointing_path",
    "critic.megatron.dist_checkpointing_prefix",
    "critic.megatron.override_transformer_config.attention_backend",
    "critic.model.tokenizer_path",
    "critic.model.external_lib",
    "critic.model.trust_remote_code",
    "critic.cliprange_value",
    "critic.loss_agg_mode",
    "critic.ppo_epochs",
    "critic.shuffle",
    "critic.data_loader_seed",
    "critic.nccl_timeout",
    "critic.enable",
    "data",
    "trainer",
    "reward_model",
    "reward_manager",
    "custom_reward_function",
    "global_profiler",
    "ray_kwargs",
    "transfer_queue",
};

// Reads one Megatron block (actor_rollout_ref.actor.megatron,
// critic.megatron) into Megatron-LM settings of `job` and its residency.
absl::Status ReadMegatronBlock(const RlConfigYaml& c, absl::string_view block,
                               RlMegatronSettings& settings, v1::ModelResidency* residency) {
  for (const RlMegatronKey& key : kMegatronSizes) {
    OOMGUARD_RETURN_IF_ERROR(
        RlSetFromKey(c, absl::StrCat(block, ".", key.key), key.flag, settings));
  }
  // Defaults: veRL's McoreEngineConfig (sequence_parallel and the
  // distributed optimizer true).
  for (const RlMegatronKey& key : kMegatronSwitches) {
    const std::string switch_key = absl::StrCat(block, ".", key.key);
    OOMGUARD_ASSIGN_OR_RETURN(const bool on, RlBool(c, switch_key, true));
    if (on) settings.Set(key.flag, switch_key, {});
  }
  const std::string dtype_key = absl::StrCat(block, ".dtype");
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> dtype, c.Word(dtype_key));
  const std::string dtype_word = dtype.value_or("bfloat16");
  if (dtype_word == "bfloat16" || dtype_word == "bf16") {
    settings.Set("bf16", dtype_key, {});
  } else if (dtype_word == "float16" || dtype_word == "fp16") {
    settings.Set("fp16", dtype_key, {});
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(dtype_key, ": expected bfloat16 or float16, got ", Quote(dtype_word)));
  }
  const std::string granularity_key = absl::StrCat(block, ".", kRecomputeGranularity.key);
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> granularity, c.Word(granularity_key));
  if (granularity.has_value()) {
    settings.Set(kRecomputeGranularity.flag, granularity_key, {*granularity});
    const std::string modules_key = absl::StrCat(block, ".", kRecomputeModules.key);
    OOMGUARD_ASSIGN_OR_RETURN(std::vector<std::string> modules, c.Words(modules_key));
    if (*granularity == "selective" && !modules.empty()) {
      settings.Set(kRecomputeModules.flag, modules_key, modules);
    }
  }
  OOMGUARD_ASSIGN_OR_RETURN(const bool param,
                            RlBool(c, absl::StrCat(block, ".param_offload"), false));
  OOMGUARD_ASSIGN_OR_RETURN(const bool grad,
                            RlBool(c, absl::StrCat(block, ".grad_offload"), false));
  OOMGUARD_ASSIGN_OR_RETURN(const bool optimizer,
                            RlBool(c, absl::StrCat(block, ".optimizer_offload"), false));
  residency->set_param_offload(param);
  residency->set_grad_offload(grad);
  residency->set_optimizer_offload(optimizer);
  return absl::OkStatus();
}

// The optimizer keys (actor_rollout_ref.actor.optim.*, critic.optim.*): the
// optimizer's name and Megatron-Core OptimizerConfig attributes given in
// override_optimizer_config.
absl::Status ReadOptimizer(const RlConfigYaml& c, absl::string_view optim,
                           RlMegatronSettings& settings) {
  OOMGUARD_RETURN_IF_ERROR(
      RlSetFromKey(c, absl::StrCat(optim, ".optimizer"), "optimizer", settings));
  const std::string offload_key = absl::StrCat(optim, ".", kOptimizerCpuOffload.key);
  OOMGUARD_ASSIGN_OR_RETURN(const bool offload, RlBool(c, offload_key, false));
  if (offload) {
    settings.Set(kOptimizerCpuOffload.flag, offload_key, {});
    OOMGUARD_RETURN_IF_ERROR(RlSetFromKey(c,
                                          absl::StrCat(optim, ".", kOptimizerOffloadFraction.key),
                                          kOptimizerOffloadFraction.flag, settings));
  }
  const std::string aware_key = absl::StrCat(optim, ".", kPrecisionAwareOptimizer.key);
  OOMGUARD_ASSIGN_OR_RETURN(const bool aware, RlBool(c, aware_key, false));
  if (aware) settings.Set(kPrecisionAwareOptimizer.flag, aware_key, {});
  return absl::OkStatus();
}

// Packed tokens of one micro-batch per GPU: the budget x CP with dynamic
// batch sizes (megatron_actor.py multiplies by CP), else micro-batch
// sequences of prompt + response tokens.
absl::StatusOr<uint32_t> MicroBatchTokens(const RlConfigYaml& c, absl::string_view dynamic_key,
                                          bool dynamic_default, absl::string_view budget_key,
                                          uint32_t budget_default, absl::string_view micro_key,
                                          uint32_t cp, uint32_t sequence, bool required) {
  OOMGUARD_ASSIGN_OR_RETURN(const bool dynamic, RlBool(c, dynamic_key, dynamic_default));
  if (dynamic) {
    OOMGUARD_ASSIGN_OR_RETURN(const uint32_t budget, RlUint(c, budget_key, budget_default));
    if (budget == 0) {
      return absl::InvalidArgumentError(absl::StrCat(budget_key, ": expected > 0, got 0"));
    }
    return static_cast<uint32_t>(std::min<uint64_t>(uint64_t{budget} * cp, UINT32_MAX));
  }
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t micro, RlUint(c, micro_key, 0));
  if (micro == 0) {
    if (!required) return 0u;
    return absl::InvalidArgumentError(absl::StrCat(micro_key, ": not given; veRL needs it (or ",
                                                   dynamic_key, "=true with ", budget_key, ")"));
  }
  return static_cast<uint32_t>(std::min<uint64_t>(uint64_t{micro} * sequence, UINT32_MAX));
}

uint32_t ContextParallel(const v1::JobSpec& job) {
  return std::max<uint32_t>(job.parallelism().context_parallel_size(), 1);
}

uint32_t DataParallel(const v1::JobSpec& job) {
  const uint64_t model =
      uint64_t{std::max<uint32_t>(job.parallelism().tensor_model_parallel_size(), 1)} *
      std::max<uint32_t>(job.parallelism().pipeline_model_parallel_size(), 1) *
      ContextParallel(job);
  return static_cast<uint32_t>(std::max<uint64_t>(job.parallelism().num_gpus() / model, 1));
}

}  // namespace

absl::Span<const RlConfigKey> VerlConfigKeys() { return kKeys; }

bool IsVerlConfig(const RlConfigYaml& config) { return config.HasTopLevel("actor_rollout_ref"); }

absl::StatusOr<v1::RlJobSpec> ReadVerlConfig(const RlConfigYaml& c, const v1::RlJob& job,
                                             std::vector<std::string>* notes) {
  v1::RlJobSpec spec;
  spec.set_framework(v1::RL_FRAMEWORK_VERL);

  // Lengths (data.*; veRL's defaults 512).
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t prompt, RlUint(c, "data.max_prompt_length", 512));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t response, RlUint(c, "data.max_response_length", 512));
  spec.set_max_prompt_length(prompt);
  spec.set_max_response_length(response);
  const uint32_t sequence = prompt + response;

  // Placement and what is not modelled.
  OOMGUARD_ASSIGN_OR_RETURN(const bool hybrid, RlBool(c, "actor_rollout_ref.hybrid_engine", true));
  spec.set_colocated(hybrid);
  if (!hybrid) {
    AddRlUnmodelled(&spec, "actor_rollout_ref.hybrid_engine",
                    "separate trainer and rollout GPUs are not modelled: only the colocated step");
  }
  for (absl::string_view key : {"actor_rollout_ref.actor.strategy", "critic.strategy"}) {
    OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> strategy, c.Word(key));
    if (strategy.has_value() && *strategy != "megatron") {
      AddRlUnmodelled(&spec, key,
                      absl::StrCat("the ", *strategy,
                                   " workers are not modelled: only veRL's Megatron workers"));
    }
  }
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t lora_rank,
                            RlUint(c, "actor_rollout_ref.model.lora_rank", 0));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t lora, RlUint(c, "actor_rollout_ref.model.lora.rank", 0));
  if (lora_rank > 0 || lora > 0) {
    AddRlUnmodelled(
        &spec,
        lora_rank > 0 ? "actor_rollout_ref.model.lora_rank" : "actor_rollout_ref.model.lora.rank",
        "LoRA is not modelled (adapters and their optimizer on frozen weights; vLLM "
        "sleeps at level 1, keeping the base weights on the host)");
  }

  // The actor.
  v1::JobSpec& actor = *spec.mutable_actor();
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> path,
                            c.Word("actor_rollout_ref.model.path"));
  OOMGUARD_ASSIGN_OR_RETURN(*actor.mutable_model(),
                            RlActorModel(job, "actor_rollout_ref.model.path", path));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t nnodes, RlUint(c, "trainer.nnodes", 0));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t per_node, RlUint(c, "trainer.n_gpus_per_node", 8));
  OOMGUARD_ASSIGN_OR_RETURN(
      const uint32_t world,
      RlWorldSize(job, nnodes * per_node, "trainer.nnodes x trainer.n_gpus_per_node"));
  RlMegatronSettings settings;
  OOMGUARD_RETURN_IF_ERROR(
      ReadMegatronBlock(c, kActorMegatron, settings, spec.mutable_actor_residency()));
  OOMGUARD_RETURN_IF_ERROR(ReadOptimizer(c, kActorOptim, settings));
  OOMGUARD_RETURN_IF_ERROR(settings.ApplyTo(&actor, notes));
  actor.mutable_parallelism()->set_num_gpus(world);
  if (per_node > 0) actor.mutable_runtime()->set_gpus_per_node(per_node);
  OOMGUARD_ASSIGN_OR_RETURN(const bool packed,
                            RlBool(c, "actor_rollout_ref.actor.megatron.use_remove_padding", true));
  if (!packed) {
    AddRlUnmodelled(&spec, "actor_rollout_ref.actor.megatron.use_remove_padding",
                    "padded (BSHD) micro-batches are not modelled: packed (THD) ones are assumed");
  }
  const uint32_t cp = ContextParallel(actor);
  OOMGUARD_ASSIGN_OR_RETURN(
      const uint32_t train_tokens,
      MicroBatchTokens(c, "actor_rollout_ref.actor.use_dynamic_bsz", false,
                       "actor_rollout_ref.actor.ppo_max_token_len_per_gpu", 16384,
                       "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", cp, sequence,
                       /*required=*/true));
  actor.mutable_training()->set_seq_length(train_tokens);
  actor.mutable_training()->set_micro_batch_size(1);
  // Micro-batches per optimizer step: the mini-batch's sequences (prompts x
  // rollout.n) over DP, packed into budgets.
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t mini,
                            RlUint(c, "actor_rollout_ref.actor.ppo_mini_batch_size", 256));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t n, RlUint(c, "actor_rollout_ref.rollout.n", 1));
  const uint32_t dp = DataParallel(actor);
  const uint32_t microbatches =
      RlCeilDiv(RlCeilDiv(uint64_t{mini} * n * sequence, dp), train_tokens);
  spec.set_train_microbatches(microbatches);
  if (microbatches > 0) {
    actor.mutable_training()->set_global_batch_size(
        static_cast<uint32_t>(std::min<uint64_t>(uint64_t{microbatches} * dp, UINT32_MAX)));
  }

  // The log-prob pass (the old policy's, computed by the actor).
  v1::LogProbSpec& log_prob = *spec.mutable_log_prob();
  OOMGUARD_ASSIGN_OR_RETURN(const bool dynamic,
                            RlBool(c, "actor_rollout_ref.actor.use_dynamic_bsz", false));
  OOMGUARD_ASSIGN_OR_RETURN(
      const uint32_t log_prob_tokens,
      MicroBatchTokens(c, "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz", dynamic,
                       "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu",
                       actor.training().seq_length() / cp,
                       "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", cp, sequence,
                       /*required=*/false));
  log_prob.set_max_tokens_per_microbatch(log_prob_tokens);
  OOMGUARD_ASSIGN_OR_RETURN(const double entropy_coeff,
                            RlReal(c, "actor_rollout_ref.actor.entropy_coeff", 0));
  OOMGUARD_ASSIGN_OR_RETURN(const bool calculate_entropy,
                            RlBool(c, "actor_rollout_ref.actor.calculate_entropy", false));
  log_prob.set_entropy(entropy_coeff != 0 || calculate_entropy);
  OOMGUARD_ASSIGN_OR_RETURN(const bool model_fused,
                            RlBool(c, "actor_rollout_ref.model.use_fused_kernels", false));
  OOMGUARD_ASSIGN_OR_RETURN(const bool fused,
                            RlBool(c, "actor_rollout_ref.actor.use_fused_kernels", model_fused));
  log_prob.set_fused_kernels(fused);

  // The reference: a KL term needs it (use_kl_loss, use_kl_in_reward).
  OOMGUARD_ASSIGN_OR_RETURN(const bool kl_loss,
                            RlBool(c, "actor_rollout_ref.actor.use_kl_loss", false));
  OOMGUARD_ASSIGN_OR_RETURN(const bool kl_reward, RlBool(c, "algorithm.use_kl_in_reward", false));
  v1::ReferenceSpec& reference = *spec.mutable_reference();
  if (kl_loss || kl_reward) {
    // ref.megatron.param_offload defaults to the actor's.
    OOMGUARD_ASSIGN_OR_RETURN(const bool ref_offload,
                              RlBool(c, "actor_rollout_ref.ref.megatron.param_offload",
                                     spec.actor_residency().param_offload()));
    reference.set_placement(ref_offload ? v1::REFERENCE_PLACEMENT_OFFLOADED_COPY
                                        : v1::REFERENCE_PLACEMENT_GPU_COPY);
    OOMGUARD_ASSIGN_OR_RETURN(
        const uint32_t ref_tokens,
        MicroBatchTokens(c, "actor_rollout_ref.ref.log_prob_use_dynamic_bsz", dynamic,
                         "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu",
                         actor.training().seq_length() / cp,
                         "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", cp, sequence,
                         /*required=*/false));
    if (ref_tokens > 0) reference.mutable_log_prob()->set_max_tokens_per_microbatch(ref_tokens);
  } else {
    reference.set_placement(v1::REFERENCE_PLACEMENT_NONE);
  }

  // The engine.
  v1::RolloutEngineSpec& rollout = *spec.mutable_rollout();
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> name,
                            c.Word("actor_rollout_ref.rollout.name"));
  if (!name.has_value()) {
    return absl::InvalidArgumentError(
        "actor_rollout_ref.rollout.name: not given; expected vllm or sglang");
  }
  if (*name == "vllm") {
    rollout.set_engine(v1::ROLLOUT_ENGINE_VLLM);
  } else if (*name == "sglang") {
    rollout.set_engine(v1::ROLLOUT_ENGINE_SGLANG);
  } else {
    AddRlUnmodelled(&spec, "actor_rollout_ref.rollout.name",
                    absl::StrCat("the ", *name, " rollout is not modelled: vLLM and SGLang are"));
  }
  OOMGUARD_ASSIGN_OR_RETURN(const double fraction,
                            RlReal(c, "actor_rollout_ref.rollout.gpu_memory_utilization", 0.5));
  if (!(fraction > 0 && fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("actor_rollout_ref.rollout.gpu_memory_utilization: expected a number in (0, "
                     "1], got ",
                     fraction));
  }
  rollout.set_memory_fraction(fraction);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_tp,
                            RlUint(c, "actor_rollout_ref.rollout.tensor_model_parallel_size", 2));
  rollout.set_tensor_parallel(engine_tp);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_ep,
                            RlUint(c, "actor_rollout_ref.rollout.expert_parallel_size", 1));
  if (engine_ep > 1) rollout.set_expert_parallel(engine_ep);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_pp,
                            RlUint(c, "actor_rollout_ref.rollout.pipeline_model_parallel_size", 1));
  if (engine_pp > 1) {
    AddRlUnmodelled(&spec, "actor_rollout_ref.rollout.pipeline_model_parallel_size",
                    "pipeline-parallel rollout engines are not modelled");
  }
  OOMGUARD_ASSIGN_OR_RETURN(const bool eager,
                            RlBool(c, "actor_rollout_ref.rollout.enforce_eager", false));
  rollout.set_cuda_graphs(!eager);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t max_seqs,
                            RlUint(c, "actor_rollout_ref.rollout.max_num_seqs", 256));
  rollout.set_max_num_seqs(max_seqs);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t max_tokens,
                            RlUint(c, "actor_rollout_ref.rollout.max_num_batched_tokens", 8192));
  rollout.set_max_num_batched_tokens(max_tokens);
  // Sleep: free_cache_engine with sleep mode frees the engine (vLLM's level
  // by its version, LoRA and EP: the engine's rule; SGLang releases both).
  OOMGUARD_ASSIGN_OR_RETURN(const bool free_cache,
                            RlBool(c, "actor_rollout_ref.rollout.free_cache_engine", true));
  OOMGUARD_ASSIGN_OR_RETURN(const bool sleep_mode,
                            RlBool(c, "actor_rollout_ref.rollout.enable_sleep_mode", true));
  if (!free_cache || !sleep_mode) {
    rollout.set_sleep(v1::ROLLOUT_SLEEP_NONE);
  } else if (rollout.engine() == v1::ROLLOUT_ENGINE_SGLANG) {
    rollout.set_sleep(v1::ROLLOUT_SLEEP_LEVEL_2);
  }
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> quantization,
                            c.Word("actor_rollout_ref.rollout.quantization"));
  if (quantization.has_value()) {
    if (*quantization == "fp8") {
      rollout.set_weight_dtype(v1::DTYPE_FP8);
    } else {
      AddRlUnmodelled(&spec, "actor_rollout_ref.rollout.quantization",
                      absl::StrCat("the engine's ", *quantization,
                                   " weights are not modelled: bf16 and fp8 are"));
    }
  }
  for (absl::string_view key : {"actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_dtype",
                                "actor_rollout_ref.rollout.engine_kwargs.sglang.kv_cache_dtype"}) {
    OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> kv, c.Word(key));
    if (!kv.has_value() || *kv == "auto" || *kv == "bfloat16") continue;
    if (kv->rfind("fp8", 0) == 0) {
      rollout.set_kv_cache_dtype(v1::DTYPE_FP8);
    } else {
      AddRlUnmodelled(&spec, key, absl::StrCat("a ", *kv, " KV cache is not modelled"));
    }
  }

  // Weight sync: the bucket in MiB (veRL's default 2048).
  OOMGUARD_ASSIGN_OR_RETURN(
      const uint32_t bucket_mib,
      RlUint(c, "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes",
             2048));
  spec.mutable_weight_sync()->set_bucket_bytes(uint64_t{bucket_mib} << 20);

  // The critic (PPO with GAE).
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> estimator,
                            c.Word("algorithm.adv_estimator"));
  if (estimator.value_or("gae") == "gae") {
    v1::CriticSpec& critic = *spec.mutable_critic();
    v1::JobSpec& critic_job = *critic.mutable_job();
    OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> critic_path, c.Word("critic.model.path"));
    absl::StatusOr<v1::ModelSpec> critic_model =
        critic_path.has_value() ? RlActorModel(v1::RlJob(), "critic.model.path", critic_path)
                                : absl::NotFoundError("");
    if (critic_model.ok()) {
      *critic_job.mutable_model() = *std::move(critic_model);
    } else {
      *critic_job.mutable_model() = actor.model();
      if (notes != nullptr) {
        notes->push_back(
            "critic.model.path: names no preset's model; the critic is assumed to "
            "be the actor's model with a value head");
      }
    }
    RlMegatronSettings critic_settings;
    OOMGUARD_RETURN_IF_ERROR(
        ReadMegatronBlock(c, kCriticMegatron, critic_settings, critic.mutable_residency()));
    OOMGUARD_RETURN_IF_ERROR(ReadOptimizer(c, kCriticOptim, critic_settings));
    OOMGUARD_RETURN_IF_ERROR(critic_settings.ApplyTo(&critic_job, notes));
    critic_job.mutable_parallelism()->set_num_gpus(world);
    if (per_node > 0) critic_job.mutable_runtime()->set_gpus_per_node(per_node);
    OOMGUARD_ASSIGN_OR_RETURN(
        const uint32_t critic_tokens,
        MicroBatchTokens(c, "critic.use_dynamic_bsz", dynamic, "critic.ppo_max_token_len_per_gpu",
                         32768, "critic.ppo_micro_batch_size_per_gpu", ContextParallel(critic_job),
                         sequence, /*required=*/true));
    critic_job.mutable_training()->set_seq_length(critic_tokens);
    critic_job.mutable_training()->set_micro_batch_size(1);
    OOMGUARD_ASSIGN_OR_RETURN(const uint32_t forward,
                              RlUint(c, "critic.forward_max_token_len_per_gpu", 0));
    if (forward > 0) {
      critic.set_forward_tokens_per_microbatch(static_cast<uint32_t>(
          std::min<uint64_t>(uint64_t{forward} * ContextParallel(critic_job), UINT32_MAX)));
    }
  }

  NoteUnreadKeys(c, kKeys, kSilent, notes);
  CopyActorUnmodelled(&spec);
  return spec;
}

std::optional<RlMegatronKeyWriting> VerlMegatronKeyFor(absl::string_view flag, bool critic) {
  const absl::string_view megatron = critic ? kCriticMegatron : kActorMegatron;
  const absl::string_view optim = critic ? kCriticOptim : kActorOptim;
  auto in = [&](absl::string_view block, const RlMegatronKey& key) {
    return RlMegatronKeyWriting{.key = absl::StrCat(block, ".", key.key)};
  };
  for (const RlMegatronKey& key : kMegatronSizes) {
    if (key.flag == flag) return in(megatron, key);
  }
  for (const RlMegatronKey& key : kMegatronSwitches) {
    if (key.flag == flag) return in(megatron, key);
  }
  for (const RlMegatronKey* key : {&kRecomputeGranularity, &kRecomputeModules}) {
    if (key->flag == flag) return in(megatron, *key);
  }
  for (const RlMegatronKey* key :
       {&kOptimizerCpuOffload, &kOptimizerOffloadFraction, &kPrecisionAwareOptimizer}) {
    if (key->flag == flag) return in(optim, *key);
  }
  return std::nullopt;
}

}  // namespace oomguard
