#include "estimator/rl_knobs.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"

namespace oomguard {
namespace {

// How a knob's value is written in one framework.
enum class Spelling {
  kNone,       // The framework has no key for it.
  kYaml,       // "key=value" (Hydra override syntax).
  kFlagValue,  // "--flag value".
  kSwitch,     // "--flag" when on; "--no-flag" when the flag has that form
               // (argparse BooleanOptionalAction), else nothing.
};

struct KnobKey {
  Spelling spelling = Spelling::kNone;
  std::string_view key = {};
  // For a switch: whether argparse also reads "--no-" + the name.
  bool negatable = false;
};

// One row per knob: veRL · NeMo-RL · slime · Megatron-LM's RL loop. Sources
// (snapshots of jobspec/rl_*_config.cc and rl_*_args.cc):
// veRL verl/trainer/config/_generated_ppo_megatron_trainer.yaml; NeMo-RL
// examples/configs/grpo_math_1B.yaml and nemo_rl/models/policy/__init__.py;
// slime slime/utils/arguments.py; Megatron-LM megatron/training/arguments.py
// (_add_rl_args, _add_inference_args).
struct KnobRow {
  RlKnob knob;
  KnobKey verl;
  KnobKey nemo_rl;
  KnobKey slime;
  KnobKey megatron;
};

constexpr KnobKey Yaml(std::string_view key) { return {Spelling::kYaml, key}; }
constexpr KnobKey Flag(std::string_view key) { return {Spelling::kFlagValue, key}; }
constexpr KnobKey Switch(std::string_view key, bool negatable) {
  return {Spelling::kSwitch, key, negatable};
}
constexpr KnobKey kNone = {};

constexpr KnobRow kKnobs[] = {
    {RlKnob::kTrainTokens, Yaml("actor_rollout_ref.actor.ppo_max_token_len_per_gpu"),
     Yaml("policy.sequence_packing.train_mb_tokens"), Flag("--max-tokens-per-gpu"),
     Flag("--seq-length")},
    {RlKnob::kLogProbTokens, Yaml("actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu"),
     Yaml("policy.sequence_packing.logprob_mb_tokens"), Flag("--log-probs-max-tokens-per-gpu"),
     kNone},
    // veRL's Megatron actor has no chunk of its own (its fused kernels chunk
    // internally: use_fused_kernels).
    {RlKnob::kLogProbChunk, kNone, Yaml("policy.logprob_chunk_size"),
     Flag("--log-probs-chunk-size"), kNone},
    {RlKnob::kRefLogProbTokens, Yaml("actor_rollout_ref.ref.log_prob_max_token_len_per_gpu"), kNone,
     kNone, kNone},
    {RlKnob::kParamOffload, Yaml("actor_rollout_ref.actor.megatron.param_offload"), kNone,
     Switch("--offload-train", true), kNone},
    {RlKnob::kGradOffload, Yaml("actor_rollout_ref.actor.megatron.grad_offload"), kNone,
     Switch("--offload-train", true), kNone},
    {RlKnob::kOptimizerOffload, Yaml("actor_rollout_ref.actor.megatron.optimizer_offload"),
     Yaml("policy.offload_optimizer_for_logprob"), Switch("--offload-train", true),
     Switch("--rl-offload-optimizer-during-inference", false)},
    {RlKnob::kRefParamOffload, Yaml("actor_rollout_ref.ref.megatron.param_offload"), kNone, kNone,
     kNone},
    {RlKnob::kCriticParamOffload, Yaml("critic.megatron.param_offload"), kNone, kNone, kNone},
    {RlKnob::kCriticGradOffload, Yaml("critic.megatron.grad_offload"), kNone, kNone, kNone},
    {RlKnob::kCriticOptimizerOffload, Yaml("critic.megatron.optimizer_offload"), kNone, kNone,
     kNone},
    {RlKnob::kCriticTrainTokens, Yaml("critic.ppo_max_token_len_per_gpu"), kNone, kNone, kNone},
    {RlKnob::kEngineMemoryFraction, Yaml("actor_rollout_ref.rollout.gpu_memory_utilization"),
     Yaml("policy.generation.vllm_cfg.gpu_memory_utilization"),
     Flag("--sglang-mem-fraction-static"), kNone},
    {RlKnob::kEngineKvBuffer, kNone, kNone, kNone,
     Flag("--inference-dynamic-batching-buffer-size-gb")},
    {RlKnob::kEngineTensorParallel, Yaml("actor_rollout_ref.rollout.tensor_model_parallel_size"),
     Yaml("policy.generation.vllm_cfg.tensor_parallel_size"), Flag("--rollout-num-gpus-per-engine"),
     Flag("--rl-inference-tensor-model-parallel-size")},
    // Written inverted: enforce_eager / --sglang-disable-cuda-graph.
    {RlKnob::kEngineCudaGraphs, Yaml("actor_rollout_ref.rollout.enforce_eager"),
     Yaml("policy.generation.vllm_cfg.enforce_eager"), Switch("--sglang-disable-cuda-graph", false),
     kNone},
    {RlKnob::kEngineSleep, Yaml("actor_rollout_ref.rollout.free_cache_engine"), kNone,
     Switch("--offload-rollout", true), Flag("--rl-kv-cache-management-mode")},
    {RlKnob::kWeightSyncBucket,
     Yaml("actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes"),
     Yaml("policy.refit_buffer_size_gb"), Flag("--update-weight-buffer-size"), kNone},
};

const KnobKey& KeyOf(v1::RlFramework framework, RlKnob knob) {
  for (const KnobRow& row : kKnobs) {
    if (row.knob != knob) continue;
    switch (framework) {
      case v1::RL_FRAMEWORK_VERL:
        return row.verl;
      case v1::RL_FRAMEWORK_NEMO_RL:
        return row.nemo_rl;
      case v1::RL_FRAMEWORK_SLIME:
        return row.slime;
      case v1::RL_FRAMEWORK_MEGATRON_RL:
        return row.megatron;
      default:
        return kNone;
    }
  }
  return kNone;
}

// A value as the framework reads it: a bool, a whole number or a real.
struct KnobValue {
  enum Kind { kBool, kInteger, kReal, kWord } kind = kInteger;
  bool flag = false;
  uint64_t integer = 0;
  double real = 0;
  std::string word = {};

  std::string Text() const {
    switch (kind) {
      case kBool:
        return flag ? "true" : "false";
      case kInteger:
        return absl::StrCat(integer);
      case kReal:
        return absl::StrCat(real);
      case kWord:
        return word;
    }
    return "";
  }
};

KnobValue Bool(bool b) { return {.kind = KnobValue::kBool, .flag = b}; }
KnobValue Integer(uint64_t n) { return {.kind = KnobValue::kInteger, .integer = n}; }
KnobValue Real(double x) { return {.kind = KnobValue::kReal, .real = x}; }

uint32_t ContextParallel(const v1::JobSpec& job) {
  return job.parallelism().has_context_parallel_size()
             ? std::max<uint32_t>(job.parallelism().context_parallel_size(), 1)
             : 1;
}

// veRL and slime give token budgets per CP rank (veRL multiplies by CP,
// megatron_actor.py; slime's --max-tokens-per-gpu is per CP rank).
bool BudgetPerCpRank(v1::RlFramework framework) {
  return framework == v1::RL_FRAMEWORK_VERL || framework == v1::RL_FRAMEWORK_SLIME;
}

KnobValue ValueOf(const v1::RlJobSpec& job, RlKnob knob) {
  const v1::RlFramework fw = job.framework();
  const uint32_t cp = BudgetPerCpRank(fw) ? ContextParallel(job.actor()) : 1;
  switch (knob) {
    case RlKnob::kTrainTokens:
      return Integer(job.actor().training().seq_length() / cp);
    case RlKnob::kLogProbTokens:
      return Integer(job.log_prob().max_tokens_per_microbatch() / cp);
    case RlKnob::kLogProbChunk:
      return Integer(job.log_prob().chunk_tokens());
    case RlKnob::kRefLogProbTokens:
      return Integer(job.reference().log_prob().max_tokens_per_microbatch() / cp);
    case RlKnob::kParamOffload:
      return Bool(job.actor_residency().param_offload() || job.actor_residency().release_all());
    case RlKnob::kGradOffload:
      return Bool(job.actor_residency().grad_offload() || job.actor_residency().release_all());
    case RlKnob::kOptimizerOffload:
      return Bool(job.actor_residency().optimizer_offload() || job.actor_residency().release_all());
    case RlKnob::kRefParamOffload:
      return Bool(job.reference().placement() == v1::REFERENCE_PLACEMENT_OFFLOADED_COPY);
    case RlKnob::kCriticParamOffload:
      return Bool(job.critic().residency().param_offload());
    case RlKnob::kCriticGradOffload:
      return Bool(job.critic().residency().grad_offload());
    case RlKnob::kCriticOptimizerOffload:
      return Bool(job.critic().residency().optimizer_offload());
    case RlKnob::kCriticTrainTokens:
      return Integer(job.critic().job().training().seq_length() /
                     (fw == v1::RL_FRAMEWORK_VERL ? ContextParallel(job.critic().job()) : 1));
    case RlKnob::kEngineMemoryFraction:
      return Real(job.rollout().memory_fraction());
    case RlKnob::kEngineKvBuffer:
      // --inference-dynamic-batching-buffer-size-gb: GiB (x 2^30).
      return Real(static_cast<double>(job.rollout().kv_buffer_bytes()) / (1ull << 30));
    case RlKnob::kEngineTensorParallel:
      return Integer(std::max<uint32_t>(job.rollout().tensor_parallel(), 1));
    case RlKnob::kEngineCudaGraphs:
      // enforce_eager / --sglang-disable-cuda-graph: the opposite.
      return Bool(job.rollout().has_cuda_graphs() && !job.rollout().cuda_graphs());
    case RlKnob::kEngineSleep:
      if (fw == v1::RL_FRAMEWORK_MEGATRON_RL) {
        // --rl-kv-cache-management-mode: the KV buffer kept, on the host,
        // or deleted.
        const v1::RolloutSleep sleep = job.rollout().sleep();
        return {.kind = KnobValue::kWord,
                .word = sleep == v1::ROLLOUT_SLEEP_NONE      ? "persist"
                        : sleep == v1::ROLLOUT_SLEEP_LEVEL_1 ? "offload"
                                                             : "recompute"};
      }
      return Bool(job.rollout().sleep() != v1::ROLLOUT_SLEEP_NONE);
    case RlKnob::kWeightSyncBucket:
      switch (fw) {
        case v1::RL_FRAMEWORK_VERL:  // MiB.
          return Integer(job.weight_sync().bucket_bytes() >> 20);
        case v1::RL_FRAMEWORK_NEMO_RL:  // GiB (grpo.py: x 1024**3).
          return Real(static_cast<double>(job.weight_sync().bucket_bytes()) / (1ull << 30));
        default:  // Bytes.
          return Integer(job.weight_sync().bucket_bytes());
      }
  }
  return Integer(0);
}

absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

}  // namespace

std::string_view RlKnobKey(v1::RlFramework framework, RlKnob knob) {
  return KeyOf(framework, knob).key;
}

std::string RlKnobSetting(const v1::RlJobSpec& job, RlKnob knob) {
  const KnobKey& key = KeyOf(job.framework(), knob);
  const KnobValue value = ValueOf(job, knob);
  switch (key.spelling) {
    case Spelling::kNone:
      return "";
    case Spelling::kYaml:
      return absl::StrCat(Absl(key.key), "=", value.Text());
    case Spelling::kFlagValue:
      return absl::StrCat(Absl(key.key), " ", value.Text());
    case Spelling::kSwitch:
      if (value.flag) return std::string(key.key);
      return key.negatable ? absl::StrCat("--no-", Absl(key.key.substr(2))) : "";
  }
  return "";
}

}  // namespace oomguard
