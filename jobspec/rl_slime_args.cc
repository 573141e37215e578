#include "jobspec/rl_slime_args.h"

#include <algorithm>
#include <cstdint>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/quoted_value.h"
#include "common/status_macros.h"

namespace oomguard {
namespace {

// slime's parser (slime/utils/arguments.py, sglang_utils/arguments.py,
// megatron_utils/server/arguments.py), sorted, then the SGLang server flags
// the reader reads (sglang's ServerArgs, prefixed by slime).
constexpr RlArgvFlag kFlags[] = {
    {"actor-num-gpus-per-node", RlFlagArity::kOne},
    {"actor-num-nodes", RlFlagArity::kOne},
    {"advantage-estimator", RlFlagArity::kOne},
    {"allgather-cp", RlFlagArity::kSwitch},
    {"apply-chat-template", RlFlagArity::kSwitch},
    {"apply-chat-template-kwargs", RlFlagArity::kOne},
    {"balance-by-flops", RlFlagArity::kSwitch},
    {"balance-data", RlFlagArity::kSwitch},
    {"buffer-filter-path", RlFlagArity::kOne},
    {"check-weight-update-equal", RlFlagArity::kSwitch},
    {"ci-disable-kl-checker", RlFlagArity::kSwitch},
    {"ci-load-grad-norm", RlFlagArity::kOne},
    {"ci-save-grad-norm", RlFlagArity::kOne},
    {"ci-test", RlFlagArity::kSwitch},
    {"ci-train-rollout-logprob-abs-diff-threshold", RlFlagArity::kOne},
    {"colocate", RlFlagArity::kSwitch},
    {"custom-advantage-function-path", RlFlagArity::kOne},
    {"custom-convert-samples-to-train-data-path", RlFlagArity::kOne},
    {"custom-eval-rollout-log-function-path", RlFlagArity::kOne},
    {"custom-generate-function-path", RlFlagArity::kOne},
    {"custom-loss-function-path", RlFlagArity::kOne},
    {"custom-megatron-before-log-prob-hook-path", RlFlagArity::kOne},
    {"custom-megatron-before-train-step-hook-path", RlFlagArity::kOne},
    {"custom-megatron-init-path", RlFlagArity::kOne},
    {"custom-model-provider-path", RlFlagArity::kOne},
    {"custom-pg-loss-reducer-function-path", RlFlagArity::kOne},
    {"custom-reward-post-process-path", RlFlagArity::kOne},
    {"custom-rm-path", RlFlagArity::kOne},
    {"custom-rollout-log-function-path", RlFlagArity::kOne},
    {"custom-tis-function-path", RlFlagArity::kOne},
    {"custom-update-weight-post-write-path", RlFlagArity::kOne},
    {"data-pad-size-multiplier", RlFlagArity::kOne},
    {"data-source-path", RlFlagArity::kOne},
    {"debug-rollout-only", RlFlagArity::kSwitch},
    {"debug-train-only", RlFlagArity::kSwitch},
    {"disable-compute-advantages-and-returns", RlFlagArity::kSwitch},
    {"disable-grpo-std-normalization", RlFlagArity::kSwitch},
    {"disable-rewards-normalization", RlFlagArity::kSwitch},
    {"disable-rollout-global-dataset", RlFlagArity::kSwitch},
    {"disable-wandb-random-suffix", RlFlagArity::kSwitch},
    {"dump-details", RlFlagArity::kOne},
    {"dynamic-sampling-filter-path", RlFlagArity::kOne},
    {"enable-mtp-training", RlFlagArity::kSwitch},
    {"entropy-coef", RlFlagArity::kOne},
    {"eps-clip", RlFlagArity::kOne},
    {"eps-clip-c", RlFlagArity::kOne},
    {"eps-clip-high", RlFlagArity::kOne},
    {"eval-config", RlFlagArity::kOne},
    {"eval-function-path", RlFlagArity::kOne},
    {"eval-input-key", RlFlagArity::kOne},
    {"eval-label-key", RlFlagArity::kOne},
    {"eval-max-context-len", RlFlagArity::kOne},
    {"eval-max-prompt-len", RlFlagArity::kOne},
    {"eval-max-response-len", RlFlagArity::kOne},
    {"eval-min-new-tokens", RlFlagArity::kOne},
    {"eval-prompt-data", RlFlagArity::kList},
    {"eval-reward-key", RlFlagArity::kOne},
    {"eval-temperature", RlFlagArity::kOne},
    {"eval-tool-key", RlFlagArity::kOne},
    {"eval-top-k", RlFlagArity::kOne},
    {"eval-top-p", RlFlagArity::kOne},
    {"fetch-trajectory-retry-times", RlFlagArity::kOne},
    {"freeze-params-name-list", RlFlagArity::kList},
    {"gamma", RlFlagArity::kOne},
    {"get-mismatch-metrics", RlFlagArity::kSwitch},
    {"group-rm", RlFlagArity::kSwitch},
    {"hf-checkpoint", RlFlagArity::kOne},
    {"http-proxy", RlFlagArity::kOne},
    {"input-key", RlFlagArity::kOne},
    {"keep-old-actor", RlFlagArity::kSwitch},
    {"kl-coef", RlFlagArity::kOne},
    {"kl-loss-coef", RlFlagArity::kOne},
    {"kl-loss-type", RlFlagArity::kOne},
    {"label-key", RlFlagArity::kOne},
    {"lambd", RlFlagArity::kOne},
    {"load-debug-rollout-data", RlFlagArity::kOne},
    {"load-debug-rollout-data-subsample", RlFlagArity::kOne},
    {"load-forge-rollout-data", RlFlagArity::kOne},
    {"log-correct-samples", RlFlagArity::kSwitch},
    {"log-multi-turn", RlFlagArity::kSwitch},
    {"log-passrate", RlFlagArity::kSwitch},
    {"log-probs-chunk-size", RlFlagArity::kOne},
    {"log-probs-max-tokens-per-gpu", RlFlagArity::kOne},
    {"log-reward-category", RlFlagArity::kOne},
    {"loss-mask-type", RlFlagArity::kOne},
    {"loss-type", RlFlagArity::kOne},
    {"mask-offpolicy-in-partial-rollout", RlFlagArity::kSwitch},
    {"max-tokens-per-gpu", RlFlagArity::kOne},
    {"megatron-config-path", RlFlagArity::kOne},
    {"megatron-deepgemm-forward-layers", RlFlagArity::kList},
    {"megatron-deepgemm-forward-modules", RlFlagArity::kList},
    {"megatron-deepgemm-moe-forward-layers", RlFlagArity::kList},
    {"megatron-deepgemm-moe-forward-modules", RlFlagArity::kList},
    {"megatron-server-max-length", RlFlagArity::kOne},
    {"megatron-server-update-timeout-s", RlFlagArity::kOne},
    {"megatron-server-warmup", RlFlagArity::kNegatable},
    {"memory-recorder", RlFlagArity::kOne},
    {"memory-snapshot-dir", RlFlagArity::kOne},
    {"memory-snapshot-num-steps", RlFlagArity::kOne},
    {"metadata-key", RlFlagArity::kOne},
    {"min-batch-collection-ratio", RlFlagArity::kOne},
    {"model-name", RlFlagArity::kOne},
    {"multimodal-keys", RlFlagArity::kOne},
    {"n-samples-per-eval-prompt", RlFlagArity::kOne},
    {"n-samples-per-prompt", RlFlagArity::kOne},
    {"normalize-advantages", RlFlagArity::kSwitch},
    {"num-critic-only-steps", RlFlagArity::kOne},
    {"num-epoch", RlFlagArity::kOne},
    {"num-gpus-per-node", RlFlagArity::kOne},
    {"num-rollout", RlFlagArity::kOne},
    {"num-steps-per-rollout", RlFlagArity::kOne},
    {"offload", RlFlagArity::kSwitch},
    {"offload-rollout", RlFlagArity::kNegatable},
    {"offload-train", RlFlagArity::kNegatable},
    {"only-train-params-name-list", RlFlagArity::kList},
    {"opd-kl-coef", RlFlagArity::kOne},
    {"opd-teacher-ckpt-step", RlFlagArity::kOne},
    {"opd-teacher-load", RlFlagArity::kOne},
    {"opd-type", RlFlagArity::kOne},
    {"opsm-delta", RlFlagArity::kOne},
    {"over-sampling-batch-size", RlFlagArity::kOne},
    {"partial-rollout", RlFlagArity::kSwitch},
    {"profile-target", RlFlagArity::kList},
    {"prompt-data", RlFlagArity::kOne},
    {"qwen-gdn-backend", RlFlagArity::kOne},
    {"recompute-loss-function", RlFlagArity::kSwitch},
    {"ref-ckpt-step", RlFlagArity::kOne},
    {"ref-load", RlFlagArity::kOne},
    {"ref-update-interval", RlFlagArity::kOne},
    {"release-train", RlFlagArity::kSwitch},
    {"reset-optimizer-states", RlFlagArity::kSwitch},
    {"reward-key", RlFlagArity::kOne},
    {"rm-type", RlFlagArity::kOne},
    {"rm-url", RlFlagArity::kOne},
    {"rollout-all-samples-process-path", RlFlagArity::kOne},
    {"rollout-batch-size", RlFlagArity::kOne},
    {"rollout-buffer-url", RlFlagArity::kOne},
    {"rollout-data-postprocess-path", RlFlagArity::kOne},
    {"rollout-data-transport", RlFlagArity::kOne},
    {"rollout-external-engine-addrs", RlFlagArity::kList},
    {"rollout-function-path", RlFlagArity::kOne},
    {"rollout-health-check-first-wait", RlFlagArity::kOne},
    {"rollout-health-check-interval", RlFlagArity::kOne},
    {"rollout-health-check-timeout", RlFlagArity::kOne},
    {"rollout-max-context-len", RlFlagArity::kOne},
    {"rollout-max-prompt-len", RlFlagArity::kOne},
    {"rollout-max-response-len", RlFlagArity::kOne},
    {"rollout-num-gpus", RlFlagArity::kOne},
    {"rollout-num-gpus-per-engine", RlFlagArity::kOne},
    {"rollout-sample-filter-path", RlFlagArity::kOne},
    {"rollout-sample-hook-path", RlFlagArity::kOne},
    {"rollout-seed", RlFlagArity::kOne},
    {"rollout-shuffle", RlFlagArity::kSwitch},
    {"rollout-skip-special-tokens", RlFlagArity::kSwitch},
    {"rollout-stop", RlFlagArity::kList},
    {"rollout-stop-token-ids", RlFlagArity::kList},
    {"rollout-task-type", RlFlagArity::kOne},
    {"rollout-temperature", RlFlagArity::kOne},
    {"rollout-top-k", RlFlagArity::kOne},
    {"rollout-top-p", RlFlagArity::kOne},
    {"save-debug-rollout-data", RlFlagArity::kOne},
    {"save-debug-train-data", RlFlagArity::kOne},
    {"save-hf", RlFlagArity::kOne},
    {"sglang-router-ip", RlFlagArity::kOne},
    {"sglang-router-port", RlFlagArity::kOne},
    {"sglang-router-request-timeout-secs", RlFlagArity::kOne},
    {"sglang-server-concurrency", RlFlagArity::kOne},
    {"skip-eval-before-train", RlFlagArity::kSwitch},
    {"start-rollout-id", RlFlagArity::kOne},
    {"tb-experiment-name", RlFlagArity::kOne},
    {"tb-project-name", RlFlagArity::kOne},
    {"teacher-label-reduction-chunk-size", RlFlagArity::kOne},
    {"teacher-port", RlFlagArity::kOne},
    {"teacher-sample-reduction-chunk-size", RlFlagArity::kOne},
    {"teacher-warmup-port", RlFlagArity::kOne},
    {"teacher-warmup-timeout-s", RlFlagArity::kOne},
    {"tis-clip", RlFlagArity::kOne},
    {"tis-clip-low", RlFlagArity::kOne},
    {"tool-key", RlFlagArity::kOne},
    {"train-backend", RlFlagArity::kOne},
    {"train-env-vars", RlFlagArity::kOne},
    {"update-weight-buffer-size", RlFlagArity::kOne},
    {"update-weight-delta-checksum", RlFlagArity::kOne},
    {"update-weight-delta-encoding", RlFlagArity::kOne},
    {"update-weight-disk-dir", RlFlagArity::kOne},
    {"update-weight-disk-keep-files", RlFlagArity::kSwitch},
    {"update-weight-local-checkpoint-dir", RlFlagArity::kOne},
    {"update-weight-mode", RlFlagArity::kOne},
    {"update-weight-transport", RlFlagArity::kOne},
    {"update-weights-interval", RlFlagArity::kOne},
    {"use-distributed-post", RlFlagArity::kSwitch},
    {"use-dynamic-batch-size", RlFlagArity::kSwitch},
    {"use-fault-tolerance", RlFlagArity::kSwitch},
    {"use-kl-loss", RlFlagArity::kSwitch},
    {"use-opd", RlFlagArity::kSwitch},
    {"use-opsm", RlFlagArity::kSwitch},
    {"use-rollout-entropy", RlFlagArity::kSwitch},
    {"use-rollout-logprobs", RlFlagArity::kSwitch},
    {"use-rollout-routing-replay", RlFlagArity::kSwitch},
    {"use-routing-replay", RlFlagArity::kSwitch},
    {"use-stateless-adam", RlFlagArity::kSwitch},
    {"use-tensorboard", RlFlagArity::kSwitch},
    {"use-tis", RlFlagArity::kSwitch},
    {"use-unbiased-kl", RlFlagArity::kSwitch},
    {"use-wandb", RlFlagArity::kSwitch},
    {"value-clip", RlFlagArity::kOne},
    {"wandb-always-use-train-step", RlFlagArity::kSwitch},
    {"wandb-dir", RlFlagArity::kOne},
    {"wandb-group", RlFlagArity::kOne},
    {"wandb-host", RlFlagArity::kOne},
    {"wandb-key", RlFlagArity::kOne},
    {"wandb-mode", RlFlagArity::kOne},
    {"wandb-run-id", RlFlagArity::kOne},
    {"wandb-team", RlFlagArity::kOne},
    // SGLang's, read.
    {"sglang-mem-fraction-static", RlFlagArity::kOne},
    {"sglang-disable-cuda-graph", RlFlagArity::kSwitch},
    {"sglang-cuda-graph-max-bs", RlFlagArity::kOne},
    {"sglang-kv-cache-dtype", RlFlagArity::kOne},
    {"sglang-ep-size", RlFlagArity::kOne},
    {"sglang-max-running-requests", RlFlagArity::kOne},
    {"sglang-chunked-prefill-size", RlFlagArity::kOne},
    {"sglang-quantization", RlFlagArity::kOne},
};

constexpr absl::string_view kPrefixes[] = {"sglang-", "router-"};

uint32_t Product(const v1::ParallelismSpec& p) {
  return std::max<uint32_t>(p.tensor_model_parallel_size(), 1) *
         std::max<uint32_t>(p.pipeline_model_parallel_size(), 1) *
         std::max<uint32_t>(p.context_parallel_size(), 1);
}

uint32_t Saturated(uint64_t n) { return static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX)); }

}  // namespace

absl::Span<const RlArgvFlag> SlimeFlags() { return kFlags; }

bool IsSlimeFlag(absl::string_view name) {
  return absl::StartsWith(name, "sglang-") ||
         std::any_of(std::begin(kFlags), std::end(kFlags),
                     [&](const RlArgvFlag& f) { return f.name == name; });
}

absl::StatusOr<v1::RlJobSpec> ReadSlimeArgs(const v1::RlJob& job, std::vector<std::string>* notes) {
  const std::vector<std::string> argv(job.argv().begin(), job.argv().end());
  OOMGUARD_ASSIGN_OR_RETURN(RlArgvSplit split, SplitRlArgv(argv, kFlags, kPrefixes));
  if (notes != nullptr) {
    for (const std::string& flag : split.unread) {
      notes->push_back(absl::StrCat(flag, ": not read by oomguard"));
    }
  }
  v1::RlJobSpec spec;
  spec.set_framework(v1::RL_FRAMEWORK_SLIME);

  // Placement (validate_args in arguments.py): --colocate (or --offload)
  // offloads both sides unless told otherwise; PPO forces the train side.
  const bool colocate = split.On("colocate", false);
  const bool offload = split.On("offload", false);
  spec.set_colocated(colocate);
  if (!colocate) {
    AddRlUnmodelled(&spec, "--colocate",
                    "separate trainer and rollout GPUs are not modelled: only the colocated step "
                    "(--colocate)");
  }
  const std::optional<std::string> estimator = split.Value("advantage-estimator");
  const bool ppo = estimator.value_or("grpo") == "ppo";
  const bool release_train = split.On("release-train", false);
  const bool offload_train =
      ppo || (!release_train && split.On("offload-train", colocate || offload));
  const bool offload_rollout =
      split.On("offload-rollout", colocate || offload) || (colocate && release_train);
  spec.mutable_actor_residency()->set_release_all(offload_train || release_train);

  // The world: --actor-num-nodes x --actor-num-gpus-per-node.
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t nodes, RlFlagUint(split, "actor-num-nodes", 1));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t per_node,
                            RlFlagUint(split, "actor-num-gpus-per-node", 8));
  const uint32_t world =
      job.num_gpus() > 0 ? job.num_gpus() : Saturated(uint64_t{nodes} * per_node);
  if (world == 0) {
    return absl::InvalidArgumentError(
        "--actor-num-nodes x --actor-num-gpus-per-node: 0 GPUs; pass the number with --gpus N");
  }
  OOMGUARD_ASSIGN_OR_RETURN(v1::JobSpec actor,
                            RlActorFromArgv(job, split.rest, "--hf-checkpoint",
                                            split.Value("hf-checkpoint"), world, notes));
  if (per_node > 0) actor.mutable_runtime()->set_gpus_per_node(per_node);

  // Lengths.
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t response,
                            RlFlagUint(split, "rollout-max-response-len", 0));
  if (response == 0) {
    return absl::InvalidArgumentError(
        "--rollout-max-response-len: not given; the responses' length bounds every phase");
  }
  OOMGUARD_ASSIGN_OR_RETURN(uint32_t prompt, RlFlagUint(split, "rollout-max-prompt-len", 0));
  const uint32_t seq_length = actor.training().seq_length();
  if (prompt == 0) {
    if (seq_length <= response) {
      return absl::InvalidArgumentError(
          "--rollout-max-prompt-len: not given, and --seq-length leaves no room for a prompt "
          "beside --rollout-max-response-len");
    }
    prompt = seq_length - response;
    if (notes != nullptr) {
      notes->push_back(absl::StrCat("--rollout-max-prompt-len: not given; prompts are taken up to ",
                                    prompt, " tokens (--seq-length less the response)"));
    }
  }
  spec.set_max_prompt_length(prompt);
  spec.set_max_response_length(response);
  const uint32_t sequence = prompt + response;

  // Training micro-batches: always packed (THD, megatron_utils/data.py);
  // with --use-dynamic-batch-size the budget --max-tokens-per-gpu per CP
  // rank, else --micro-batch-size whole sequences.
  const uint32_t cp = std::max<uint32_t>(actor.parallelism().context_parallel_size(), 1);
  const bool dynamic = split.On("use-dynamic-batch-size", false);
  v1::TrainingSpec& training = *actor.mutable_training();
  const uint32_t mbs = std::max<uint32_t>(training.micro_batch_size(), 1);
  uint32_t train_tokens = Saturated(uint64_t{mbs} * sequence);
  if (dynamic) {
    OOMGUARD_ASSIGN_OR_RETURN(const uint32_t budget, RlFlagUint(split, "max-tokens-per-gpu", 0));
    if (budget == 0) {
      return absl::InvalidArgumentError(
          "--max-tokens-per-gpu: not given (or 0); --use-dynamic-batch-size needs it");
    }
    train_tokens = Saturated(uint64_t{budget} * cp);
  }
  training.set_seq_length(train_tokens);
  training.set_micro_batch_size(1);
  const uint32_t dp = std::max<uint32_t>(world / Product(actor.parallelism()), 1);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t rollout_batch,
                            RlFlagUint(split, "rollout-batch-size", 0));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t samples, RlFlagUint(split, "n-samples-per-prompt", 1));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t steps, RlFlagUint(split, "num-steps-per-rollout", 1));
  const uint64_t sequences = training.has_global_batch_size()
                                 ? uint64_t{training.global_batch_size()}
                                 : uint64_t{rollout_batch} * samples / std::max<uint32_t>(steps, 1);
  const uint32_t microbatches = RlCeilDiv(RlCeilDiv(sequences * sequence, dp), train_tokens);
  spec.set_train_microbatches(microbatches);
  if (microbatches > 0)
    training.set_global_batch_size(Saturated(uint64_t{microbatches} * dp));
  else
    training.clear_global_batch_size();

  // The log-prob pass.
  v1::LogProbSpec& log_prob = *spec.mutable_log_prob();
  if (dynamic) {
    OOMGUARD_ASSIGN_OR_RETURN(const uint32_t budget,
                              RlFlagUint(split, "log-probs-max-tokens-per-gpu", 0));
    log_prob.set_max_tokens_per_microbatch(budget > 0 ? Saturated(uint64_t{budget} * cp)
                                                      : train_tokens);
  }
  const std::string chunk = split.Value("log-probs-chunk-size").value_or("-1");
  if (chunk != "-1") {
    OOMGUARD_ASSIGN_OR_RETURN(const uint32_t chunk_tokens,
                              RlFlagUint(split, "log-probs-chunk-size", 0));
    log_prob.set_chunk_tokens(chunk_tokens);
  }

  // The reference: with a KL term (placement_group.py: kl_coef != 0 or
  // use_kl_loss), its weights are a pinned host backup swapped into the
  // actor's module (megatron_utils/actor.py load_other_checkpoint).
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> kl_coef, RlFlagReal(split, "kl-coef"));
  const bool with_ref = kl_coef.value_or(0) != 0 || split.On("use-kl-loss", false);
  spec.mutable_reference()->set_placement(with_ref ? v1::REFERENCE_PLACEMENT_SWAPPED_IN
                                                   : v1::REFERENCE_PLACEMENT_NONE);

  // The engine: SGLang, one engine per --rollout-num-gpus-per-engine GPUs.
  v1::RolloutEngineSpec& rollout = *spec.mutable_rollout();
  rollout.set_engine(v1::ROLLOUT_ENGINE_SGLANG);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_tp,
                            RlFlagUint(split, "rollout-num-gpus-per-engine", 1));
  rollout.set_tensor_parallel(engine_tp);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t engine_ep, RlFlagUint(split, "sglang-ep-size", 0));
  if (engine_ep > 1) rollout.set_expert_parallel(engine_ep);
  OOMGUARD_ASSIGN_OR_RETURN(std::optional<double> fraction,
                            RlFlagReal(split, "sglang-mem-fraction-static"));
  if (fraction.has_value()) {
    if (!(*fraction > 0 && *fraction <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--sglang-mem-fraction-static: expected a number in (0, 1], got ", *fraction));
    }
    rollout.set_memory_fraction(*fraction);
  } else if (notes != nullptr) {
    notes->push_back("--sglang-mem-fraction-static: not given; SGLang's own rule sizes its pool");
  }
  rollout.set_cuda_graphs(!split.On("sglang-disable-cuda-graph", false));
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t graph_bs,
                            RlFlagUint(split, "sglang-cuda-graph-max-bs", 0));
  rollout.set_max_num_seqs(graph_bs);
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t prefill,
                            RlFlagUint(split, "sglang-chunked-prefill-size", 0));
  rollout.set_max_num_batched_tokens(prefill);
  if (std::optional<std::string> kv = split.Value("sglang-kv-cache-dtype");
      kv.has_value() && *kv != "auto") {
    if (absl::StartsWith(*kv, "fp8")) {
      rollout.set_kv_cache_dtype(v1::DTYPE_FP8);
    } else {
      AddRlUnmodelled(&spec, "--sglang-kv-cache-dtype",
                      absl::StrCat("a ", *kv, " KV cache is not modelled"));
    }
  }
  if (std::optional<std::string> q = split.Value("sglang-quantization"); q.has_value()) {
    if (absl::StartsWith(*q, "fp8")) {
      rollout.set_weight_dtype(v1::DTYPE_FP8);
    } else {
      AddRlUnmodelled(&spec, "--sglang-quantization",
                      absl::StrCat("the engine's ", *q, " weights are not modelled"));
    }
  }
  rollout.set_sleep(offload_rollout ? v1::ROLLOUT_SLEEP_LEVEL_2 : v1::ROLLOUT_SLEEP_NONE);

  // Weight sync: --update-weight-buffer-size bytes (default 512 MiB).
  OOMGUARD_ASSIGN_OR_RETURN(const uint32_t bucket,
                            RlFlagUint(split, "update-weight-buffer-size", 512u << 20));
  spec.mutable_weight_sync()->set_bucket_bytes(bucket);

  // PPO's critic: the actor's model and layout (critic_num_* = the actor's),
  // its train side offloaded (arguments.py: use_critic forces offload_train).
  if (ppo) {
    v1::CriticSpec& critic = *spec.mutable_critic();
    *critic.mutable_job() = actor;
    critic.mutable_job()->clear_unmodelled_settings();
    critic.mutable_residency()->set_release_all(true);
  }
  *spec.mutable_actor() = std::move(actor);
  CopyActorUnmodelled(&spec);
  return spec;
}

}  // namespace oomguard
