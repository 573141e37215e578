#include "jobspec/rl_megatron_args.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

constexpr RlArgvFlag kFlags[] = {
    {"perform-rl-step", RlFlagArity::kSwitch, "framework"},
    // The engine: Megatron-Core's dynamic inference context.
    {"inference-dynamic-batching", RlFlagArity::kSwitch, "rollout.engine"},
    {"inference-dynamic-batching-buffer-size-gb", RlFlagArity::kOne, "rollout.kv_buffer_bytes"},
    {"inference-dynamic-batching-max-requests", RlFlagArity::kOne, "rollout.max_num_seqs"},
    {"inference-dynamic-batching-max-tokens", RlFlagArity::kOne, "rollout.max_num_batched_tokens"},
    {"rl-inference-tensor-model-parallel-size", RlFlagArity::kOne, "rollout.tensor_parallel"},
    {"rl-inference-pipeline-model-parallel-size", RlFlagArity::kOne, "rollout.pipeline_parallel"},
    {"rl-inference-expert-model-parallel-size", RlFlagArity::kOne, "rollout.expert_parallel"},
    {"rl-kv-cache-management-mode", RlFlagArity::kOne, "rollout.sleep"},
    {"rl-persist-cuda-graphs", RlFlagArity::kNegatable, "rollout.persist_cuda_graphs"},
    {"rl-training-cuda-graphs", RlFlagArity::kNegatable, "rollout.persist_cuda_graphs"},
    // The trainer.
    {"rl-offload-optimizer-during-inference", RlFlagArity::kSwitch,
     "actor_residency.optimizer_offload"},
    {"rl-use-sequence-packing", RlFlagArity::kNegatable, "actor.training.seq_length"},
    {"grpo-kl-beta", RlFlagArity::kOne, "reference.placement"},
};

uint32_t Product(const v1::ParallelismSpec& p) {
  return std::max<uint32_t>(p.tensor_model_parallel_size(), 1) *
         std::max<uint32_t>(p.pipeline_model_parallel_size(), 1) *
         std::max<uint32_t>(p.context_parallel_size(), 1);
}

}  // namespace

absl::Span<const RlArgvFlag> MegatronRlFlags() { return kFlags; }

bool IsMegatronRlReaderFlag(absl::string_view name) {
  return std::any_of(std::begin(kFlags), std::end(kFlags),
                     [&](const RlArgvFlag& f) { return f.name == name; });
}

absl::StatusOr<v1::RlJobSpec> ReadMegatronRlArgs(const v1::RlJob& job,
                                                 std::vector<std::string>* notes) {
  const std::vector<std::string> argv(job.argv().begin(), job.argv().end());
  OOMGUARD_ASSIGN_OR_RETURN(RlArgvSplit split, SplitRlArgv(argv, kFlags, {}));
  v1::RlJobSpec spec;
  spec.set_framework(v1::RL_FRAMEWORK_MEGATRON_RL);
  spec.set_colocated(true);  // The RL loop runs its engine in the training processes.
  if (!split.Has("perform-rl-step") && notes != nullptr) {
    notes->push_back("--perform-rl-step: absent; the argv is read as Megatron-LM's RL loop");
  }
  if (job.num_gpus() == 0) {
    return absl::InvalidArgumentError(
        "the number of GPUs: Megatron-LM's argv gives none; pass it with --gpus N");
  }
  OOMGUARD_ASSIGN_OR_RETURN(
      v1::JobSpec actor,
      RlActorFromArgv(job, split.rest, "--load", std::nullopt, job.num_gpus(), notes));

  // Training micro-batches: with --rl-use-sequence-packing, bins of
  // --seq-length tokens (micro-batch size 1, arguments.py); without, padded
  // micro-batches of --micro-batch-size sequences, counted as their tokens.
  v1::TrainingSpec& training = *actor.mutable_training();
  const uint32_t sequence = training.seq_length();
  const uint32_t mbs = std::max<uint32_t>(training.micro_batch_size(), 1);
  const bool packing = split.On("rl-use-sequence-packing", false);
  if (packing && mbs != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--micro-batch-size: expected 1 with --rl-use-sequence-packing, got ", mbs));
  }
  training.set_seq_length(
      static_cast<uint32_t>(std::min<uint64_t>(uint64_t{sequence} * mbs, UINT32_MAX)));
  training.set_micro_batch_size(1);
  const uint32_t dp = std::max<uint32_t>(job.num_gpus() / Product(actor.parallelism()), 1);
  if (training.has_global_batch_size()) {
    const uint32_t microbatches = std::max<uint32_t>(training.global_batch_size() / mbs / dp, 1);
    spec.set_train_microbatches(microbatches);
    training.set_global_batch_size(microbatches * dp);
  }
  // The argv gives no prompt / response split: the sequence is halved (what
  // the estimate uses is their sum).
  spec.set_max_prompt_length(std::max<uint32_t>(sequence / 2, 1));
  spec.set_max_response_length(std::max<uint32_t>(sequence - sequence / 2, 1));
  if (notes != nullptr) {
    notes->push_back(
        absl::StrCat("--seq-length: Megatron-LM's RL argv gives no prompt / response split; ",
                     sequence, " tokens are taken as prompt ", spec.max_prompt_length(),
                     " + response ", spec.max_response_length()));
  }

  // The engine.
  v1::RolloutEngineSpec& rollout = *spec.mutable_rollout();
  rollout.set_engine(v1::ROLLOUT_ENGINE_MEGATRON);
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> buffer_gb,
                            RlFlagReal(split, "inference-dynamic-batching-buffer-size-gb"));
  const double gb = buffer_gb.value_or(40.0);
  if (!(gb > 0) || gb > 1e6) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--inference-dynamic-batching-buffer-size-gb: expected a positive number, got ", gb));
  }
  rollout.set_kv_buffer_bytes(static_cast<uint64_t>(gb * (1ull << 30)));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_tp,
                            RlFlagUint(split, "rl-inference-tensor-model-parallel-size", 0));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_pp,
                            RlFlagUint(split, "rl-inference-pipeline-model-parallel-size", 0));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_ep,
                            RlFlagUint(split, "rl-inference-expert-model-parallel-size", 0));
  const v1::ParallelismSpec& p = actor.parallelism();
  rollout.set_tensor_parallel(
      engine_tp > 0 ? engine_tp : std::max<uint32_t>(p.tensor_model_parallel_size(), 1));
  rollout.set_pipeline_parallel(
      engine_pp > 0 ? engine_pp : std::max<uint32_t>(p.pipeline_model_parallel_size(), 1));
  rollout.set_expert_parallel(
      engine_ep > 0 ? engine_ep : std::max<uint32_t>(p.expert_model_parallel_size(), 1));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t max_requests,
                            RlFlagUint(split, "inference-dynamic-batching-max-requests", 0));
  rollout.set_max_num_seqs(max_requests);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t max_tokens,
                            RlFlagUint(split, "inference-dynamic-batching-max-tokens", 0));
  rollout.set_max_num_batched_tokens(max_tokens);
  // The engine's CUDA graphs come from the trainer's --cuda-graph-impl.
  rollout.set_cuda_graphs(actor.runtime().cuda_graph_impl() != v1::CUDA_GRAPH_IMPL_UNSPECIFIED &&
                          actor.runtime().cuda_graph_impl() != v1::CUDA_GRAPH_IMPL_NONE);
  // --rl-training-cuda-graphs keeps the graphs on through training (no
  // toggle, rl_utils.py), as --rl-persist-cuda-graphs keeps them while the
  // engine is suspended.
  rollout.set_persist_cuda_graphs(split.On("rl-persist-cuda-graphs", false) ||
                                  split.On("rl-training-cuda-graphs", false));
  const std::string mode = split.Value("rl-kv-cache-management-mode").value_or("persist");
  // persist keeps the KV buffer, offload moves it to the host, recompute
  // deletes it (arguments.py; estimator/rollout_engine_memory.cc reads them
  // as NONE, LEVEL_1, LEVEL_2).
  if (mode == "persist") {
    rollout.set_sleep(v1::ROLLOUT_SLEEP_NONE);
  } else if (mode == "offload") {
    rollout.set_sleep(v1::ROLLOUT_SLEEP_LEVEL_1);
  } else if (mode == "recompute") {
    rollout.set_sleep(v1::ROLLOUT_SLEEP_LEVEL_2);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--rl-kv-cache-management-mode: expected persist, offload or recompute, got ",
                     Quote(mode)));
  }

  spec.mutable_actor_residency()->set_optimizer_offload(
      split.On("rl-offload-optimizer-during-inference", false));
  // The reference: a host state dict loaded into the policy's module
  // (training.py: ref_state_dict on the CPU), for the KL term.
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> beta, RlFlagReal(split, "grpo-kl-beta"));
  spec.mutable_reference()->set_placement(beta.value_or(0.001) != 0
                                              ? v1::REFERENCE_PLACEMENT_SWAPPED_IN
                                              : v1::REFERENCE_PLACEMENT_NONE);
  *spec.mutable_actor() = std::move(actor);
  CopyActorUnmodelled(&spec);
  return spec;
}

}  // namespace oomguard
