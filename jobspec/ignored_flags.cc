#include "jobspec/ignored_flags.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/match.h"

namespace oomguard {
namespace {

// Megatron-LM features oomguard cannot estimate: the whole job is refused,
// with the reason.
struct Unimplemented {
  absl::string_view flag;
  absl::string_view reason;
};

constexpr Unimplemented kUnimplementedFlags[] = {
    // Megatron-FSDP's spelling until Megatron-LM af28b5a559 (2025-08), which
    // removed it; its memory is modelled under the current spelling.
    {"use-custom-fsdp",
     "Megatron-LM removed this spelling of Megatron-FSDP (2025-08): oomguard models the job "
     "written with --use-megatron-fsdp"},
};

// Flags that do not change per-rank GPU memory (or change it by a negligible
// amount): accepted silently with their values.
constexpr absl::string_view kSilentFlags[] = {
    // Logging, profiling, checkpointing.
    "timing-log-level", "timing-log-option", "profile", "profile-step-start", "profile-step-end",
    "profile-ranks", "use-pytorch-profiler", "record-memory-history", "memory-snapshot-path",
    "logging-level", "enable-one-logger", "save", "load", "save-interval", "save-retain-interval",
    "no-save-optim", "no-save-rng", "no-load-optim", "no-load-rng", "finetune",
    "pretrained-checkpoint", "use-dist-ckpt", "auto-detect-ckpt-format", "async-save",
    "async-ckpt-use-cpu-shm", "async-strategy", "use-checkpoint-args",
    "use-checkpoint-opt-param-scheduler", "override-opt-param-scheduler",
    "use-persistent-ckpt-worker", "no-ckpt-fully-parallel-save", "load-main-params-from-ckpt",
    // Data and tokenizer files.
    "data-path", "train-data-path", "valid-data-path", "test-data-path", "data-cache-path",
    "data-args-path", "per-split-data-args-path", "split", "mock-data", "num-workers",
    "dataloader-type", "vocab-file", "merge-file", "no-mmap-bin-files", "mmap-bin-files",
    "reset-position-ids", "reset-attention-mask", "eod-mask-loss", "object-storage-cache-path",
    "full-validation", "multiple-validation-sets", "legacy-tokenizer", "use-packed-sequence",
    // Learning rate, schedule, loss scaling, optimizer hyper-parameters.
    "lr", "min-lr", "decoupled-lr", "decoupled-min-lr", "weight-decay", "start-weight-decay",
    "end-weight-decay", "weight-decay-incr-style", "clip-grad", "adam-beta1", "adam-beta2",
    "adam-eps", "sgd-momentum", "loss-scale", "initial-loss-scale", "min-loss-scale",
    "loss-scale-window", "hysteresis",
    // Run control, seeds, initialization, checks.
    "train-iters", "train-samples", "skip-train", "seed", "data-parallel-random-init",
    "init-method-std", "init-method-xavier-uniform", "rerun-mode", "check-for-nan-in-loss-and-grad",
    "no-check-for-nan-in-loss-and-grad", "check-for-spiky-loss", "check-for-large-grads",
    "test-mode", "calculate-per-token-loss", "enable-experimental", "deterministic-mode",
    "verify-integrity", "empty-unused-memory-level", "use-cpu-initialization",
    // Process groups and communication overlap.
    "distributed-backend", "distributed-timeout-minutes", "use-tp-pp-dp-mapping",
    "overlap-grad-reduce", "overlap-param-gather", "overlap-param-gather-with-optimizer-step",
    "no-align-grad-reduce", "no-align-param-gather", "overlap-p2p-communication",
    "no-overlap-p2p-communication", "overlap-p2p-communication-warmup-flush",
    "use-ring-exchange-p2p", "variable-seq-lengths", "batch-p2p-comm",
    "no-async-tensor-model-parallel-allreduce",
    // FSDP settings without memory of their own: NCCL registration of the
    // buffers counted, the gradient division's fusion, checkpoint loading.
    "fsdp-manual-registration", "no-gradient-reduce-div-fusion", "disable-strict-fsdp-dtensor-load",
    "no-strict-fsdp-dtensor-load",
    // Kernel choices and numerics with the same saved tensors.
    "use-mcore-models", "gradient-accumulation-fusion", "attention-softmax-in-fp32",
    "apply-query-key-layer-scaling", "no-bias-gelu-fusion", "no-bias-swiglu-fusion",
    "no-bias-dropout-fusion", "no-persist-layer-norm", "apply-residual-connection-post-layernorm",
    "openai-gelu", "te-rng-tracker", "inference-rng-tracker", "norm-epsilon", "apply-layernorm-1p",
    "use-rope-scaling", "rope-scaling-factor", "use-transformer-engine-op-fuser",
    // Eager iterations before the capture: their cached memory is released
    // by torch.cuda.graph.__enter__ (empty_cache) before each capture
    // (estimator/cuda_graph_memory.h).
    "cuda-graph-warmup-steps",
    // Read only with --fp4-recipe custom, which the flag table refuses (the
    // --fp8-quantizer-factory of --fp8-recipe custom is under the fp8- prefix).
    "fp4-quantizer-factory",
    // Host memory only: activation offloading's pinned CPU buffers kept for the
    // next iteration (TE's cpu_offload retain_pinned_cpu_buffers).
    "cpu-offloading-retain-pinned-cpu-buffers",
    // MoE routing and loss settings that keep tensor shapes.
    "moe-aux-loss-coeff", "moe-z-loss-coeff", "moe-input-jitter-eps", "moe-permute-fusion",
    "moe-per-layer-logging", "moe-token-drop-policy", "moe-use-legacy-grouped-gemm",
    "mtp-loss-scaling-factor",
    // HybridEP kernel settings: SMs and blocks of its kernels and where the
    // permute runs; its buffers are sized by tokens, hidden size, experts
    // and ranks (moe_dispatch_memory.h). Padding uneven inputs to the group's
    // largest changes nothing for the equal-length micro-batches modelled.
    "moe-hybridep-num-blocks-permute", "moe-hybridep-num-blocks-unpermute",
    "moe-hybridep-num-sms-preprocessing", "moe-permute-fusion-into-hybridep",
    "moe-hybridep-pad-uneven-dispatch-inputs",
    // Read only with --moe-paged-stash, which validation refuses.
    "moe-paged-stash-page-size", "moe-paged-stash-buffer-size-factor-cuda",
    "moe-paged-stash-buffer-size-factor-cpu",
    // Flags of other model families (BERT, multimodal) that change nothing
    // for a GPT model.
    "bert-no-binary-head", "disable-vision-class-token", "img-h", "img-w", "patch-dim"};

// Prefixes of silently accepted flag families. Exact table entries (e.g.
// moe-router-topk, fp8-format in megatron_flags.h) are looked up first.
constexpr absl::string_view kSilentPrefixes[] = {
    "log-",       "tensorboard", "wandb",  "one-logger",  "ckpt-", "dist-ckpt-", "non-persistent-",
    "tokenizer-", "tiktoken-",   "lr-",    "muon-",       "eval-", "exit-",      "manual-gc",
    "ddp-",       "rotary-",     "mscale", "moe-router-", "fp8-",  "straggler-"};

// Flags that may change memory in ways oomguard does not model: accepted
// with a note that says so.
struct Unmodelled {
  absl::string_view flag;
  absl::string_view reason;
};

constexpr Unmodelled kUnmodelledFlags[] = {
    {"tp-comm-overlap-cfg",
     "a custom TP communication overlap configuration is not read: Transformer Engine's default "
     "userbuffers are assumed"},
    {"encoder-num-layers", "encoder-decoder (T5) models are not modelled"},
    {"decoder-num-layers", "encoder-decoder (T5) models are not modelled"},
    {"encoder-seq-length", "encoder-decoder (T5) models are not modelled"},
    {"decoder-seq-length", "encoder-decoder (T5) models are not modelled"},
    {"vocab-extra-ids", "extra tokenizer ids are not added to the vocabulary"},
    {"hybrid-layer-pattern", "hybrid (Mamba) models are not modelled"},
    {"spec", "custom layer specs are not modelled; a GPT layer is assumed"},
    {"use-legacy-models", "legacy (non-Core) models are not modelled"},
    // Megatron-FSDP settings whose memory is not counted
    // (estimator/fsdp_memory.h counts whole-layer buffers in the gradients'
    // own dtype).
    {"megatron-fsdp-grad-comm-dtype",
     "Megatron-FSDP's gradient communication buffers in another dtype are not counted"},
    {"megatron-fsdp-enable-fine-grained-param-gather",
     "Megatron-FSDP's per-module all-gathers are counted as whole-layer ones"},
    {"keep-fp8-transpose-cache", "Megatron-FSDP's kept FP8 transpose caches are not counted"},
    {"fsdp-db-use-persist-buf-on-alloc-fail",
     "Megatron-FSDP's persistent fallback buffers for units outside its double buffer are not "
     "counted"},
    {"create-all-gather-group",
     "the NCCL buffers of Megatron-FSDP's (or the distributed optimizer's) separate all-gather "
     "communicator are not counted"},
};

}  // namespace

std::vector<absl::string_view> UnimplementedFlags() {
  std::vector<absl::string_view> names;
  for (const Unimplemented& entry : kUnimplementedFlags) names.push_back(entry.flag);
  return names;
}

std::optional<absl::string_view> UnimplementedFlagReason(absl::string_view name) {
  for (const Unimplemented& entry : kUnimplementedFlags) {
    if (entry.flag == name) return entry.reason;
  }
  return std::nullopt;
}

bool IsSilentFlag(absl::string_view name) {
  if (std::find(std::begin(kSilentFlags), std::end(kSilentFlags), name) != std::end(kSilentFlags)) {
    return true;
  }
  return std::any_of(std::begin(kSilentPrefixes), std::end(kSilentPrefixes),
                     [name](absl::string_view prefix) { return absl::StartsWith(name, prefix); });
}

std::optional<absl::string_view> UnmodelledFlagReason(absl::string_view name) {
  for (const Unmodelled& entry : kUnmodelledFlags) {
    if (entry.flag == name) return entry.reason;
  }
  return std::nullopt;
}

}  // namespace oomguard
