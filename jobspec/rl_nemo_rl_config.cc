#include "jobspec/rl_nemo_rl_config.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

// policy.megatron_cfg keys that are Megatron-LM settings as they are.
constexpr RlMegatronKey kMegatronValues[] = {
    {"policy.megatron_cfg.tensor_model_parallel_size", "tensor-model-parallel-size"},
    {"policy.megatron_cfg.pipeline_model_parallel_size", "pipeline-model-parallel-size"},
    {"policy.megatron_cfg.context_parallel_size", "context-parallel-size"},
    {"policy.megatron_cfg.expert_model_parallel_size", "expert-model-parallel-size"},
    {"policy.megatron_cfg.expert_tensor_parallel_size", "expert-tensor-parallel-size"},
    {"policy.megatron_cfg.num_layers_in_first_pipeline_stage", "decoder-first-pipeline-num-layers"},
    {"policy.megatron_cfg.num_layers_in_last_pipeline_stage", "decoder-last-pipeline-num-layers"},
    {"policy.megatron_cfg.moe_token_dispatcher_type", "moe-token-dispatcher-type"},
    {"policy.megatron_cfg.moe_router_dtype", "moe-router-dtype"},
    {"policy.megatron_cfg.optimizer.optimizer", "optimizer"},
};
// Switches: on when the key is true.
constexpr RlMegatronKey kMegatronSwitches[] = {
    {"policy.megatron_cfg.sequence_parallel", "sequence-parallel"},
    {"policy.megatron_cfg.optimizer.use_distributed_optimizer", "use-distributed-optimizer"},
    {"policy.megatron_cfg.optimizer.use_precision_aware_optimizer",
     "use-precision-aware-optimizer"},
    {"policy.megatron_cfg.optimizer.optimizer_cpu_offload", "optimizer-cpu-offload"},
    {"policy.megatron_cfg.fine_grained_activation_offloading",
     "fine-grained-activation-offloading"},
};

constexpr RlMegatronKey kOptimizerOffloadFraction = {
    "policy.megatron_cfg.optimizer.optimizer_offload_fraction", "optimizer-offload-fraction"};
// Recompute: activation_checkpointing turns it on, recompute_granularity says
// which; full is uniform over one layer (nemo_rl/models/megatron/setup.py).
constexpr char kActivationCheckpointing[] = "policy.megatron_cfg.activation_checkpointing";
constexpr RlMegatronKey kRecomputeGranularity = {"policy.megatron_cfg.recompute_granularity",
                                                 "recompute-granularity"};
constexpr RlMegatronKey kRecomputeModules = {"policy.megatron_cfg.recompute_modules",
                                             "recompute-modules"};
// What full recompute sets with the granularity: the flag and its value.
struct ImpliedFlag {
  absl::string_view flag;
  absl::string_view value;
};
constexpr ImpliedFlag kFullRecomputeImplies[] = {
    {"recompute-method", "uniform"},
    {"recompute-num-layers", "1"},
};

constexpr RlConfigKey kKeys[] = {
    {"policy.model_name", "the actor's model (a preset's model name)"},
    {"policy.precision", "actor parameter dtype"},
    {"policy.megatron_cfg.enabled", "the Megatron policy (false not modelled)"},
    {"policy.megatron_cfg.tensor_model_parallel_size", "actor TP"},
    {"policy.megatron_cfg.pipeline_model_parallel_size", "actor PP"},
    {"policy.megatron_cfg.context_parallel_size", "actor CP"},
    {"policy.megatron_cfg.expert_model_parallel_size", "actor EP"},
    {"policy.megatron_cfg.expert_tensor_parallel_size", "actor ETP"},
    {"policy.megatron_cfg.num_layers_in_first_pipeline_stage", "actor uneven PP"},
    {"policy.megatron_cfg.num_layers_in_last_pipeline_stage", "actor uneven PP"},
    {"policy.megatron_cfg.moe_token_dispatcher_type", "actor MoE dispatcher"},
    {"policy.megatron_cfg.moe_router_dtype", "actor router dtype"},
    {"policy.megatron_cfg.sequence_parallel", "actor sequence parallel"},
    {"policy.megatron_cfg.activation_checkpointing", "actor recompute"},
    {"policy.megatron_cfg.recompute_granularity", "actor recompute"},
    {"policy.megatron_cfg.recompute_modules", "actor recompute modules"},
    {"policy.megatron_cfg.fine_grained_activation_offloading", "actor activation offloading"},
    {"policy.megatron_cfg.offload_modules", "actor activation offloading"},
    {"policy.megatron_cfg.defer_fp32_logits", "log_prob.defer_fp32_logits"},
    {"policy.megatron_cfg.cuda_graph_impl", "actor CUDA graphs (not modelled)"},
    {"policy.megatron_cfg.peft.enabled", "LoRA (not modelled)"},
    {"policy.megatron_cfg.fp8_cfg.enabled", "FP8 training (not modelled)"},
    {"policy.megatron_cfg.optimizer.optimizer", "actor optimizer"},
    {"policy.megatron_cfg.optimizer.use_distributed_optimizer", "actor distributed optimizer"},
    {"policy.megatron_cfg.optimizer.use_precision_aware_optimizer", "actor precision-aware opt."},
    {"policy.megatron_cfg.optimizer.optimizer_cpu_offload", "actor optimizer CPU offload"},
    {"policy.megatron_cfg.optimizer.optimizer_offload_fraction", "actor optimizer offload"},
    {"policy.train_global_batch_size", "train_microbatches"},
    {"policy.train_micro_batch_size", "training tokens without packing"},
    {"policy.logprob_batch_size", "log-prob tokens without packing"},
    {"policy.max_total_sequence_length", "lengths, tokens without packing"},
    {"policy.sequence_packing.enabled", "packing"},
    {"policy.sequence_packing.train_mb_tokens", "actor.training.seq_length"},
    {"policy.sequence_packing.logprob_mb_tokens", "log_prob.max_tokens_per_microbatch"},
    {"policy.dynamic_batching.enabled", "dynamic batching (with PP not modelled)"},
    {"policy.dynamic_batching.train_mb_tokens", "actor.training.seq_length"},
    {"policy.dynamic_batching.logprob_mb_tokens", "log_prob.max_tokens_per_microbatch"},
    {"policy.logprob_chunk_size", "log_prob.chunk_tokens"},
    {"policy.offload_optimizer_for_logprob", "actor_residency.optimizer_offload"},
    {"policy.refit_buffer_size_gb", "weight_sync.bucket_bytes"},
    {"policy.generation.backend", "rollout.engine"},
    {"policy.generation.max_new_tokens", "max_response_length"},
    {"policy.generation.colocated.enabled", "colocated, rollout.sleep"},
    {"policy.generation.vllm_cfg.tensor_parallel_size", "rollout.tensor_parallel"},
    {"policy.generation.vllm_cfg.pipeline_parallel_size", "rollout (> 1 not modelled)"},
    {"policy.generation.vllm_cfg.expert_parallel_size", "rollout.expert_parallel"},
    {"policy.generation.vllm_cfg.gpu_memory_utilization", "rollout.memory_fraction"},
    {"policy.generation.vllm_cfg.enforce_eager", "rollout.cuda_graphs"},
    {"policy.generation.vllm_cfg.precision", "rollout.weight_dtype"},
    {"policy.generation.vllm_cfg.kv_cache_dtype", "rollout.kv_cache_dtype"},
    {"policy.generation.vllm_cfg.max_model_len", "the engine's longest sequence"},
    {"data.max_input_seq_length", "max_prompt_length"},
    {"loss_fn.reference_policy_kl_penalty", "reference"},
    {"cluster.num_nodes", "world size"},
    {"cluster.gpus_per_node", "world size, runtime.gpus_per_node"},
};

constexpr absl::string_view kSilent[] = {
    "defaults",
    "grpo",
    "loss_fn",
    "checkpointing",
    "reward_penalties",
    "data",
    "env",
    "logger",
    "cluster",
    "data_plane",
    "on_policy_distillation",
    "policy.tokenizer",
    "policy.hf_config_overrides",
    "policy.generation_batch_size",
    "policy.max_grad_norm",
    "policy.make_sequence_length_divisible_by",
    "policy.optimizer",
    "policy.scheduler",
    "policy.dtensor_cfg",
    "policy.draft",
    "policy.sequence_packing.algorithm",
    "policy.sequence_packing.microbatch_order",
    "policy.sequence_packing.sequence_length_round",
    "policy.dynamic_batching.sequence_length_round",
    "policy.megatron_cfg.checkpoint",
    "policy.megatron_cfg.scheduler",
    "policy.megatron_cfg.force_reconvert_from_hf",
    "policy.megatron_cfg.empty_unused_memory_level",
    "policy.megatron_cfg.pipeline_dtype",
    "policy.megatron_cfg.freeze_moe_router",
    "policy.megatron_cfg.moe_router_load_balancing_type",
    "policy.megatron_cfg.moe_router_bias_update_rate",
    "policy.megatron_cfg.moe_permute_fusion",
    "policy.megatron_cfg.moe_per_layer_logging",
    "policy.megatron_cfg.moe_shared_expert_overlap",
    "policy.megatron_cfg.use_gloo_process_groups",
    "policy.megatron_cfg.apply_rope_fusion",
    "policy.megatron_cfg.bias_activation_fusion",
    "policy.megatron_cfg.gradient_accumulation_fusion",
    "policy.megatron_cfg.model_overrides",
    "policy.megatron_cfg.peft",
    "policy.megatron_cfg.fp8_cfg",
    "policy.megatron_cfg.cuda_graph_modules",
    "policy.megatron_cfg.cuda_graph_warmup_steps",
    "policy.megatron_cfg.env_vars",
    "policy.megatron_cfg.distributed_data_parallel_config.overlap_grad_reduce",
    "policy.megatron_cfg.distributed_data_parallel_config.overlap_param_gather",
    "policy.megatron_cfg.distributed_data_parallel_config.use_custom_fsdp",
    "policy.megatron_cfg.distributed_data_parallel_config.data_parallel_sharding_strategy",
    "policy.megatron_cfg.optimizer.lr",
    "policy.megatron_cfg.optimizer.min_lr",
    "policy.megatron_cfg.optimizer.weight_decay",
    "policy.megatron_cfg.optimizer.bf16",
    "policy.megatron_cfg.optimizer.fp16",
    "policy.megatron_cfg.optimizer.params_dtype",
    "policy.megatron_cfg.optimizer.adam_beta1",
    "policy.megatron_cfg.optimizer.adam_beta2",
    "policy.megatron_cfg.optimizer.adam_eps",
    "policy.megatron_cfg.optimizer.sgd_momentum",
    "policy.megatron_cfg.optimizer.clip_grad",
    "policy.megatron_cfg.optimizer.overlap_cpu_optimizer_d2h_h2d",
    "policy.generation.temperature",
    "policy.generation.top_p",
    "policy.generation.top_k",
    "policy.generation.val_temperature",
    "policy.generation.val_top_p",
    "policy.generation.val_top_k",
    "policy.generation.stop_token_ids",
    "policy.generation.stop_strings",
    "policy.generation.port_range_low",
    "policy.generation.port_range_high",
    "policy.generation.colocated.resources",
    "policy.generation.vllm_cfg.async_engine",
    "policy.generation.vllm_cfg.logprobs_mode",
    "policy.generation.vllm_cfg.use_tqdm",
    "policy.generation.vllm_cfg.enable_vllm_metrics_logger",
    "policy.generation.vllm_cfg.vllm_metrics_logger_interval",
    "policy.generation.vllm_kwargs",
};

absl::Status BadWord(absl::string_view key, const std::string& value, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(key, ": expected ", expected, ", got ", Quote(value)));
}

}  // namespace

absl::Span<const RlConfigKey> NemoRlConfigKeys() { return kKeys; }

bool IsNemoRlConfig(const RlConfigYaml& config) {
  return config.HasTopLevel("policy") &&
         (config.HasTopLevel("grpo") || config.HasTopLevel("loss_fn") ||
          config.HasUnder("policy.megatron_cfg"));
}

absl::StatusOr<v1::RlJobSpec> ReadNemoRlConfig(const RlConfigYaml& c, const v1::RlJob& job,
                                               std::vector<std::string>* notes) {
  v1::RlJobSpec spec;
  spec.set_framework(v1::RL_FRAMEWORK_NEMO_RL);

  OOMGUARD_ASSIGN_OR_RETURN(const bool megatron, RlBool(c, "policy.megatron_cfg.enabled", false));
  if (!megatron) {
    AddRlUnmodelled(&spec, "policy.megatron_cfg.enabled",
                    "the DTensor (FSDP2) policy is not modelled: only the Megatron policy");
  }
  for (const auto& [key, what] :
       {std::pair<absl::string_view, absl::string_view>{"policy.megatron_cfg.peft.enabled",
                                                        "LoRA (PEFT) is not modelled"},
        {"policy.megatron_cfg.fp8_cfg.enabled",
         "NeMo-RL's FP8 training recipe is not read: its quantized copies are not modelled"}}) {
    OOMGUARD_ASSIGN_OR_RETURN(const bool on, RlBool(c, key, false));
    if (on) AddRlUnmodelled(&spec, key, what);
  }
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> graphs,
                            c.Word("policy.megatron_cfg.cuda_graph_impl"));
  if (graphs.has_value() && *graphs != "none") {
    AddRlUnmodelled(&spec, "policy.megatron_cfg.cuda_graph_impl",
                    "training CUDA graphs in NeMo-RL are not modelled");
  }

  // Lengths: a sequence is at most max_total_sequence_length.
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t total, RlUint(c, "policy.max_total_sequence_length", 0));
  if (total == 0) {
    return absl::InvalidArgumentError("policy.max_total_sequence_length: not given; expected > 0");
  }
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t new_tokens,
                            RlUint(c, "policy.generation.max_new_tokens", total));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t input, RlUint(c, "data.max_input_seq_length", total));
  const uint32_t response = std::min(new_tokens, total);
  uint32_t prompt = total - response;
  if (prompt == 0) {
    // NeMo-RL's default: prompt and response each up to the total (vLLM
    // truncates at max_model_len).
    prompt = std::min(input, total);
    if (notes != nullptr) {
      notes->push_back(absl::StrCat(
          "policy.generation.max_new_tokens: the whole of policy.max_total_sequence_length (",
          total, "); prompts are taken up to ", prompt, " tokens (data.max_input_seq_length)"));
    }
  }
  spec.set_max_prompt_length(prompt);
  spec.set_max_response_length(response);

  // The actor.
  v1::JobSpec& actor = *spec.mutable_actor();
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> path, c.Word("policy.model_name"));
  OOMGUARD_ASSIGN_OR_RETURN(*actor.mutable_model(), RlActorModel(job, "policy.model_name", path));
  RlMegatronSettings settings;
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> precision, c.Word("policy.precision"));
  if (!precision.has_value() || *precision == "bfloat16") {
    settings.Set("bf16", "policy.precision", {});
  } else if (*precision == "float16") {
    settings.Set("fp16", "policy.precision", {});
  } else if (*precision != "float32") {
    return BadWord("policy.precision", *precision, "bfloat16, float16 or float32");
  }
  for (const RlMegatronKey& key : kMegatronValues) {
    OOMGUARD_RETURN_IF_ERROR(RlSetFromKey(c, key.key, key.flag, settings));
  }
  // NeMo-RL's defaults: the distributed and precision-aware optimizer on.
  for (const RlMegatronKey& key : kMegatronSwitches) {
    const bool fallback = key.flag == "use-distributed-optimizer";
    OOMGUARD_ASSIGN_OR_RETURN(const bool on, RlBool(c, key.key, fallback));
    if (on) settings.Set(key.flag, key.key, {});
  }
  OOMGUARD_ASSIGN_OR_RETURN(
      const bool cpu_offload,
      RlBool(c, "policy.megatron_cfg.optimizer.optimizer_cpu_offload", false));
  if (cpu_offload) {
    OOMGUARD_RETURN_IF_ERROR(
        RlSetFromKey(c, kOptimizerOffloadFraction.key, kOptimizerOffloadFraction.flag, settings));
  }
  OOMGUARD_ASSIGN_OR_RETURN(std::vector<std::string> offload_modules,
                            c.Words("policy.megatron_cfg.offload_modules"));
  if (!offload_modules.empty()) {
    settings.Set("offload-modules", "policy.megatron_cfg.offload_modules", offload_modules);
  }
  OOMGUARD_ASSIGN_OR_RETURN(const bool checkpointing, RlBool(c, kActivationCheckpointing, false));
  if (checkpointing) {
    OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> granularity,
                              c.Word(kRecomputeGranularity.key));
    const std::string word = granularity.value_or("full");
    settings.Set(kRecomputeGranularity.flag, kRecomputeGranularity.key, {word});
    if (word == "full") {
      for (const ImpliedFlag& implied : kFullRecomputeImplies) {
        settings.Set(implied.flag, kRecomputeGranularity.key, {std::string(implied.value)});
      }
    } else {
      OOMGUARD_ASSIGN_OR_RETURN(std::vector<std::string> modules, c.Words(kRecomputeModules.key));
      if (!modules.empty()) settings.Set(kRecomputeModules.flag, kRecomputeModules.key, modules);
    }
  }
  OOMGUARD_RETURN_IF_ERROR(settings.ApplyTo(&actor, notes));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t nodes, RlUint(c, "cluster.num_nodes", 1));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t per_node, RlUint(c, "cluster.gpus_per_node", 0));
  OOMGUARD_ASSIGN_OR_RETURN(
      const uint32_t world,
      RlWorldSize(job, nodes * per_node, "cluster.num_nodes x cluster.gpus_per_node"));
  actor.mutable_parallelism()->set_num_gpus(world);
  if (per_node > 0) actor.mutable_runtime()->set_gpus_per_node(per_node);

  // Token budgets: sequence packing (Megatron's), else dynamic batching,
  // else micro-batches of whole sequences.
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t train_mbs,
                            RlUint(c, "policy.train_micro_batch_size", 1));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t logprob_bs,
                            RlUint(c, "policy.logprob_batch_size", train_mbs));
  OOMGUARD_ASSIGN_OR_RETURN(const bool packing,
                            RlBool(c, "policy.sequence_packing.enabled", false));
  OOMGUARD_ASSIGN_OR_RETURN(const bool dynamic,
                            RlBool(c, "policy.dynamic_batching.enabled", false));
  absl::string_view budget = packing   ? "policy.sequence_packing"
                             : dynamic ? "policy.dynamic_batching"
                                       : "";
  uint32_t train_tokens = train_mbs * total;
  uint32_t logprob_tokens = logprob_bs * total;
  if (!budget.empty()) {
    OOMGUARD_ASSIGN_OR_RETURN(train_tokens,
                              RlUint(c, absl::StrCat(budget, ".train_mb_tokens"), train_tokens));
    OOMGUARD_ASSIGN_OR_RETURN(
        logprob_tokens, RlUint(c, absl::StrCat(budget, ".logprob_mb_tokens"), logprob_tokens));
  }
  if (dynamic && !packing && actor.parallelism().pipeline_model_parallel_size() > 1) {
    AddRlUnmodelled(&spec, "policy.dynamic_batching.enabled",
                    "dynamic batching with pipeline parallelism is not modelled (NeMo-RL: "
                    "incompatible; sequence packing is)");
  }
  if (train_tokens == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        budget.empty() ? "policy.train_micro_batch_size" : absl::StrCat(budget, ".train_mb_tokens"),
        ": expected > 0, got 0"));
  }
  actor.mutable_training()->set_seq_length(train_tokens);
  actor.mutable_training()->set_micro_batch_size(1);
  // Micro-batches per step: the global batch's sequences over DP, packed.
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t global, RlUint(c, "policy.train_global_batch_size", 0));
  const auto& p = actor.parallelism();
  const uint64_t model_parallel = uint64_t{std::max<uint32_t>(p.tensor_model_parallel_size(), 1)} *
                                  std::max<uint32_t>(p.pipeline_model_parallel_size(), 1) *
                                  std::max<uint32_t>(p.context_parallel_size(), 1);
  const uint32_t dp = static_cast<uint32_t>(std::max<uint64_t>(world / model_parallel, 1));
  const uint32_t microbatches = RlCeilDiv(RlCeilDiv(uint64_t{global} * total, dp), train_tokens);
  spec.set_train_microbatches(microbatches);
  if (microbatches > 0) {
    actor.mutable_training()->set_global_batch_size(
        static_cast<uint32_t>(std::min<uint64_t>(uint64_t{microbatches} * dp, UINT32_MAX)));
  }

  v1::LogProbSpec& log_prob = *spec.mutable_log_prob();
  log_prob.set_max_tokens_per_microbatch(logprob_tokens);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t chunk, RlUint(c, "policy.logprob_chunk_size", 0));
  log_prob.set_chunk_tokens(chunk);
  OOMGUARD_ASSIGN_OR_RETURN(const bool defer,
                            RlBool(c, "policy.megatron_cfg.defer_fp32_logits", false));
  log_prob.set_defer_fp32_logits(defer);

  // Residency: colocated generation frees grads and the optimizer before
  // refit and moves the model to the host after it (offload_before_refit,
  // offload_after_refit, megatron_policy_worker.py).
  OOMGUARD_ASSIGN_OR_RETURN(const bool colocated,
                            RlBool(c, "policy.generation.colocated.enabled", true));
  spec.set_colocated(colocated);
  if (!colocated) {
    AddRlUnmodelled(&spec, "policy.generation.colocated.enabled",
                    "separate trainer and generation GPUs are not modelled: only the colocated "
                    "step");
  }
  OOMGUARD_ASSIGN_OR_RETURN(const bool offload_for_logprob,
                            RlBool(c, "policy.offload_optimizer_for_logprob", false));
  spec.mutable_actor_residency()->set_optimizer_offload(offload_for_logprob || colocated);
  spec.mutable_actor_residency()->set_grad_offload(colocated);
  spec.mutable_actor_residency()->set_param_offload(colocated);

  // The reference: swapped into the policy's module from a host state dict.
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> kl,
                            c.Real("loss_fn.reference_policy_kl_penalty"));
  spec.mutable_reference()->set_placement(kl.value_or(0.01) > 0 ? v1::REFERENCE_PLACEMENT_SWAPPED_IN
                                                                : v1::REFERENCE_PLACEMENT_NONE);

  // The engine.
  v1::RolloutEngineSpec& rollout = *spec.mutable_rollout();
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> backend,
                            c.Word("policy.generation.backend"));
  if (backend.value_or("vllm") == "vllm") {
    rollout.set_engine(v1::ROLLOUT_ENGINE_VLLM);
  } else if (*backend == "sglang") {
    rollout.set_engine(v1::ROLLOUT_ENGINE_SGLANG);
  } else {
    AddRlUnmodelled(&spec, "policy.generation.backend",
                    absl::StrCat("the ", *backend, " generation backend is not modelled: vLLM is"));
  }
  constexpr absl::string_view kVllm = "policy.generation.vllm_cfg";
  OOMGUARD_ASSIGN_OR_RETURN(const double fraction,
                            RlReal(c, absl::StrCat(kVllm, ".gpu_memory_utilization"), 0.6));
  if (!(fraction > 0 && fraction <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kVllm, ".gpu_memory_utilization: expected a number in (0, 1], got ", fraction));
  }
  rollout.set_memory_fraction(fraction);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_tp,
                            RlUint(c, absl::StrCat(kVllm, ".tensor_parallel_size"), 1));
  rollout.set_tensor_parallel(engine_tp);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_ep,
                            RlUint(c, absl::StrCat(kVllm, ".expert_parallel_size"), 1));
  if (engine_ep > 1) rollout.set_expert_parallel(engine_ep);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_pp,
                            RlUint(c, absl::StrCat(kVllm, ".pipeline_parallel_size"), 1));
  if (engine_pp > 1) {
    AddRlUnmodelled(&spec, "policy.generation.vllm_cfg.pipeline_parallel_size",
                    "pipeline-parallel rollout engines are not modelled");
  }
  OOMGUARD_ASSIGN_OR_RETURN(const bool eager,
                            RlBool(c, absl::StrCat(kVllm, ".enforce_eager"), false));
  rollout.set_cuda_graphs(!eager);
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> engine_precision,
                            c.Word(absl::StrCat(kVllm, ".precision")));
  if (engine_precision.value_or("bfloat16") == "fp8") rollout.set_weight_dtype(v1::DTYPE_FP8);
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<std::string> kv,
                            c.Word(absl::StrCat(kVllm, ".kv_cache_dtype")));
  if (kv.has_value() && *kv != "auto") {
    if (kv->rfind("fp8", 0) == 0) {
      rollout.set_kv_cache_dtype(v1::DTYPE_FP8);
    } else {
      return BadWord("policy.generation.vllm_cfg.kv_cache_dtype", *kv, "auto or fp8");
    }
  }
  // Colocated: the engine sleeps (weights and KV released) while the
  // policy trains; otherwise it keeps everything.
  rollout.set_sleep(colocated ? v1::ROLLOUT_SLEEP_LEVEL_2 : v1::ROLLOUT_SLEEP_NONE);

  // Refit: refit_buffer_size_gb x 2^30 (grpo.py: x 1024**3), else 30 % of
  // the free memory (NRL_REFIT_BUFFER_MEMORY_RATIO).
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> refit, c.Real("policy.refit_buffer_size_gb"));
  if (refit.has_value()) {
    if (!(*refit > 0) || *refit > 1e6) {
      return absl::InvalidArgumentError(absl::StrCat(
          "policy.refit_buffer_size_gb: expected a positive number of GiB, got ", *refit));
    }
    spec.mutable_weight_sync()->set_bucket_bytes(static_cast<uint64_t>(*refit * (1ull << 30)));
  } else {
    spec.mutable_weight_sync()->set_free_fraction(0.3);
  }

  NoteUnreadKeys(c, kKeys, kSilent, notes);
  CopyActorUnmodelled(&spec);
  return spec;
}

std::optional<RlMegatronKeyWriting> NemoRlMegatronKeyFor(absl::string_view flag) {
  for (const RlMegatronKey& key : kMegatronValues) {
    if (key.flag == flag) return RlMegatronKeyWriting{.key = std::string(key.key)};
  }
  for (const RlMegatronKey& key : kMegatronSwitches) {
    if (key.flag == flag) return RlMegatronKeyWriting{.key = std::string(key.key)};
  }
  if (flag == kOptimizerOffloadFraction.flag) {
    return RlMegatronKeyWriting{.key = std::string(kOptimizerOffloadFraction.key)};
  }
  for (const RlMegatronKey* key : {&kRecomputeGranularity, &kRecomputeModules}) {
    if (key->flag == flag) {
      return RlMegatronKeyWriting{.key = std::string(key->key),
                                  .enabled_by = kActivationCheckpointing};
    }
  }
  for (const ImpliedFlag& implied : kFullRecomputeImplies) {
    if (implied.flag == flag) {
      return RlMegatronKeyWriting{.key = "", .implied_value = std::string(implied.value)};
    }
  }
  return std::nullopt;
}

}  // namespace oomguard
