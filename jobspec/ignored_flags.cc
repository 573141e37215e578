#include "jobspec/ignored_flags.h"

#include <algorithm>
#include <iterator>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "common/supported_megatron.h"
#include "jobspec/rl_megatron_args.h"

// Every flag of Megatron-LM's parser at the supported version (Megatron-Core
// 0.20.0, NVIDIA/Megatron-LM d98e8a64dd: tests/data/megatron_lm_arguments.txt)
// that the flag table (megatron_flags.cc) does not read is named here, in one
// group, with the group's reason; tests/jobspec/flag_classification_test.cc
// checks that each is in exactly one class. Explicit names only: a prefix
// would silently classify a future flag that changes memory.

namespace oomguard {
namespace {

// Megatron-LM features oomguard cannot estimate: the whole job is refused,
// with the reason.
struct Unimplemented {
  absl::string_view flag;
  absl::string_view reason;
  // Megatron-LM itself refuses it in every supported version: the job
  // never trains, so it is an invalid job rather than one not modelled.
  bool megatron_refuses = false;
};

constexpr Unimplemented kUnimplementedFlags[] = {
    // Megatron-FSDP's spelling until Megatron-LM af28b5a559 (2025-08), which
    // removed it; its memory is modelled under the current spelling.
    {"use-custom-fsdp",
     "Megatron-LM removed this spelling of Megatron-FSDP (2025-08): oomguard models the job "
     "written with --use-megatron-fsdp"},
    // Old spellings Megatron-LM still parses only to refuse them
    // (arguments.py validate_args asserts each is unset).
    {"batch-size",
     "Megatron-LM refuses this old flag (\"--batch-size argument is no longer valid\"): write "
     "--micro-batch-size",
     true},
    {"model-parallel-size",
     "Megatron-LM refuses this old flag (\"--model-parallel-size is no longer valid\"): write "
     "--tensor-model-parallel-size",
     true},
    {"warmup",
     "Megatron-LM refuses this old flag (\"--warmup argument is no longer valid\"): write one of "
     "the --lr-warmup-* flags",
     true},
    // Still parsed, but validate_args prints that it is no longer valid and
    // exits: the job never trains.
    {"checkpoint-activations",
     "Megatron-LM exits on it (\"--checkpoint-activations is no longer valid\", arguments.py "
     "validate_args): write --recompute-activations, or --recompute-granularity full with "
     "--recompute-method and --recompute-num-layers",
     true},
};

// A group of flags that share a reason.
struct FlagGroup {
  absl::string_view reason;
  absl::Span<const absl::string_view> flags;
};

// ---------------------------------------------------------------------------
// No memory effect: the flag does not change per-rank GPU memory during
// training (or by a negligible amount). Accepted silently with its values.

constexpr absl::string_view kLoggingFlags[] = {"timing-log-level",
                                               "timing-log-option",
                                               "no-barrier-with-level-1-timing",
                                               "profile",
                                               "profile-step-start",
                                               "profile-step-end",
                                               "profile-ranks",
                                               "use-pytorch-profiler",
                                               "pytorch-profiler-collect-callstack",
                                               "pytorch-profiler-collect-chakra",
                                               "pytorch-profiler-collect-shapes",
                                               "record-shapes",
                                               "nvtx-ranges",
                                               "record-memory-history",
                                               "memory-snapshot-path",
                                               "logging-level",
                                               "log-device-memory-used",
                                               "log-energy",
                                               "log-interval",
                                               "log-max-attention-logit",
                                               "log-memory-interval",
                                               "log-memory-to-tensorboard",
                                               "log-num-zeros-in-grad",
                                               "log-params-norm",
                                               "log-progress",
                                               "log-straggler",
                                               "log-throughput",
                                               "log-timers-to-tensorboard",
                                               "log-validation-ppl-to-tensorboard",
                                               "log-world-size-to-tensorboard",
                                               "disable-log-loss-scale-to-tensorboard",
                                               "no-log-loss-scale-to-tensorboard",
                                               "tensorboard-dir",
                                               "tensorboard-log-interval",
                                               "tensorboard-queue-size",
                                               "wandb-entity",
                                               "wandb-exp-name",
                                               "wandb-project",
                                               "wandb-save-dir",
                                               "no-one-logger",
                                               "one-logger-async",
                                               "one-logger-project",
                                               "one-logger-run-name",
                                               "app-tag-run-name",
                                               "app-tag-run-version",
                                               "otel-enabled",
                                               "otel-service-name",
                                               "otel-span-groups",
                                               "config-logger-dir",
                                               "moe-per-layer-logging",
                                               "straggler-ctrlr-port",
                                               "straggler-minmax-count",
                                               "disable-straggler-on-startup",
                                               "flight-recorder-dump-path",
                                               "flight-recorder-include-stack-trace",
                                               "flight-recorder-trace-buffer-size",
                                               "disable-flight-recorder-dump-on-timeout",
                                               "no-flight-recorder-dump-on-timeout",
                                               "disable-flight-recorder-extra-dump-on-exec",
                                               "no-flight-recorder-extra-dump-on-exec",
                                               "disable-flight-recorder-include-only-active",
                                               "no-flight-recorder-include-only-active",
                                               "run-workload-inspector-server",
                                               "result-rejected-tracker-filename"};

constexpr absl::string_view kCheckpointFlags[] = {
    "save", "load", "save-interval", "save-retain-interval", "persistent-save-interval",
    "no-save-optim", "no-save-rng", "no-load-optim", "no-load-rng", "finetune",
    "pretrained-checkpoint", "use-dist-ckpt", "auto-detect-ckpt-format", "async-save",
    "async-ckpt-use-cpu-shm", "async-ckpt-cpu-priority", "async-ckpt-io-priority", "async-strategy",
    "use-checkpoint-args", "use-mp-args-from-checkpoint-args",
    // Also spelled with "opt_param" (the same flag once canonical).
    "use-checkpoint-opt-param-scheduler", "override-opt-param-scheduler", "override-ckpt-iteration",
    "use-persistent-ckpt-worker", "no-ckpt-fully-parallel-save", "load-main-params-from-ckpt",
    "exit-on-missing-checkpoint", "ckpt-assume-constant-structure", "ckpt-convert-format",
    "ckpt-convert-save", "ckpt-convert-update-legacy-dist-opt-format",
    "ckpt-drop-redundant-extra-state", "ckpt-format", "ckpt-fully-parallel-load",
    "ckpt-fully-parallel-load-exchange-algo", "ckpt-fully-parallel-load-per-rank-objects",
    "ckpt-fully-parallel-load-process-group", "ckpt-fully-parallel-save",
    "ckpt-fully-parallel-save-process-group", "ckpt-pg-tensors-cache-create",
    "ckpt-pg-tensors-cache-path", "ckpt-step", "dist-ckpt-format",
    "dist-ckpt-optim-fully-reshardable", "dist-ckpt-save-pre-mcore-014", "dist-ckpt-strictness",
    "dist-ckpt-workers", "distrib-optim-fully-reshardable-mem-efficient",
    "disable-ckpt-load-validate-sharding-integrity", "no-ckpt-load-validate-sharding-integrity",
    "non-persistent-ckpt-type", "non-persistent-global-ckpt-dir", "non-persistent-local-ckpt-algo",
    "non-persistent-local-ckpt-dir", "non-persistent-save-interval", "replication",
    "replication-factor", "replication-jump", "disable-save-tokenizer-assets",
    "no-save-tokenizer-assets", "disable-use-tokenizer-model-from-checkpoint-args",
    "no-use-tokenizer-model-from-checkpoint-args", "enable-msc", "disable-msc",
    // FSDP checkpoint loading.
    "disable-strict-fsdp-dtensor-load", "no-strict-fsdp-dtensor-load"};

constexpr absl::string_view kDataFlags[] = {
    "data-path",
    "train-data-path",
    "valid-data-path",
    "test-data-path",
    "data-cache-path",
    "data-args-path",
    "per-split-data-args-path",
    "per-dataset-sequences-path",
    "split",
    "mock-data",
    "num-workers",
    "num-dataset-builder-threads",
    "mid-level-dataset-surplus",
    "dataloader-type",
    "dataloader-defer-npy-index-mmap",
    "dataloader-fast-cache-load",
    "dataloader-inter-document-masking",
    "no-data-sharding",
    "vocab-file",
    "merge-file",
    "no-mmap-bin-files",
    "reset-position-ids",
    "reset-attention-mask",
    "eod-mask-loss",
    "allow-ambiguous-pad-tokens",
    "object-storage-cache-path",
    "full-validation",
    "multiple-validation-sets",
    "validation-set-names",
    "sft",
    "sft-tokenizer-prompt-format",
    "chat-template",
    "tokenizer-model",
    "tokenizer-metadata",
    "tokenizer-special-tokens",
    "tokenizer-hf-no-include-special-tokens",
    "tokenizer-hf-no-use-fast",
    "tokenizer-sentencepiece-legacy",
    "disable-tokenizer-sentencepiece-ignore-extra-whitespaces",
    "no-tokenizer-sentencepiece-ignore-extra-whitespaces",
    "tiktoken-num-special-tokens",
    "tiktoken-pattern",
    "trust-remote-code",
    "use-gigatoken",
    "null-tokenizer-eod-id",
    "null-tokenizer-pad-id",
    "fim-data",
    "fim-eod-token",
    "fim-fragment-rate",
    "fim-middle-token",
    "fim-no-prefix",
    "fim-pad-token",
    "fim-prefix-token",
    "fim-rate",
    "fim-split-sample",
    "fim-spm-rate",
    "fim-suffix-token"};

constexpr absl::string_view kOptimizerScheduleFlags[] = {"lr",
                                                         "min-lr",
                                                         "decoupled-lr",
                                                         "decoupled-min-lr",
                                                         "head-lr-mult",
                                                         "lr-decay-iters",
                                                         "lr-decay-samples",
                                                         "lr-decay-style",
                                                         "lr-warmup-fraction",
                                                         "lr-warmup-init",
                                                         "lr-warmup-iters",
                                                         "lr-warmup-samples",
                                                         "lr-wsd-decay-iters",
                                                         "lr-wsd-decay-samples",
                                                         "lr-wsd-decay-style",
                                                         "weight-decay",
                                                         "start-weight-decay",
                                                         "end-weight-decay",
                                                         "weight-decay-incr-style",
                                                         "apply-wd-to-qk-layernorm",
                                                         "no-weight-decay-cond-type",
                                                         "clip-grad",
                                                         "adam-beta1",
                                                         "adam-beta2",
                                                         "adam-eps",
                                                         "sgd-momentum",
                                                         "lion-beta1",
                                                         "lion-beta2",
                                                         "loss-scale",
                                                         "initial-loss-scale",
                                                         "min-loss-scale",
                                                         "loss-scale-window",
                                                         "hysteresis",
                                                         "muon-coefficient-type",
                                                         "muon-extra-scale-factor",
                                                         "muon-fp32-matmul-prec",
                                                         "muon-momentum",
                                                         "muon-nesterov",
                                                         "muon-no-split-qkv",
                                                         "muon-num-ns-steps",
                                                         "muon-scale-mode",
                                                         "muon-use-syrk",
                                                         "qk-clip",
                                                         "qk-clip-alpha",
                                                         "qk-clip-threshold",
                                                         "dump-param-to-param-group-map",
                                                         "use-mup",
                                                         "mup-attn-scale-power",
                                                         "mup-base-head-dim",
                                                         "mup-base-hidden-size",
                                                         "mup-embedding-mult",
                                                         "mup-output-mult",
                                                         "mup-width-mult"};

constexpr absl::string_view kRunControlFlags[] = {"train-iters",
                                                  "train-samples",
                                                  "skip-train",
                                                  "iterations-to-skip",
                                                  "decrease-batch-size-if-needed",
                                                  "phase-transition-iterations",
                                                  "eval-interval",
                                                  "eval-iters",
                                                  "eval-global-batch-size",
                                                  "start-eval-at-iter",
                                                  "exit-duration-in-mins",
                                                  "exit-interval",
                                                  "exit-signal",
                                                  "exit-signal-handler",
                                                  "exit-signal-handler-for-dataloader",
                                                  "exit-signal-handler-for-training",
                                                  "train-sync-interval",
                                                  "manual-gc",
                                                  "manual-gc-interval",
                                                  "disable-manual-gc-eval",
                                                  "no-manual-gc-eval",
                                                  "seed",
                                                  "data-parallel-random-init",
                                                  "init-method-std",
                                                  "init-method-xavier-uniform",
                                                  "embedding-init-method-std",
                                                  "no-initialization",
                                                  "init-model-with-meta-device",
                                                  "use-cpu-initialization",
                                                  "lazy-mpu-init",
                                                  "rerun-mode",
                                                  "error-injection-rate",
                                                  "error-injection-type",
                                                  "no-check-for-nan-in-loss-and-grad",
                                                  "check-for-spiky-loss",
                                                  "check-for-large-grads",
                                                  "check-weight-hash-across-dp-replicas-interval",
                                                  "test-mode",
                                                  "calculate-per-token-loss",
                                                  "enable-experimental",
                                                  "deterministic-mode",
                                                  "verify-integrity",
                                                  "empty-unused-memory-level",
                                                  "adlr-autoresume",
                                                  "adlr-autoresume-interval",
                                                  "enable-ft-package",
                                                  "calc-ft-timeouts",
                                                  "ft-num-warmup-iters",
                                                  "inprocess-restart",
                                                  "inprocess-active-world-size",
                                                  "inprocess-barrier-timeout",
                                                  "inprocess-completion-timeout",
                                                  "inprocess-empty-cuda-cache",
                                                  "inprocess-granularity",
                                                  "inprocess-hard-timeout",
                                                  "inprocess-heartbeat-interval",
                                                  "inprocess-heartbeat-timeout",
                                                  "inprocess-last-call-wait",
                                                  "inprocess-max-iterations",
                                                  "inprocess-monitor-process-interval",
                                                  "inprocess-monitor-thread-interval",
                                                  "inprocess-progress-watchdog-interval",
                                                  "inprocess-soft-timeout",
                                                  "inprocess-termination-grace-time",
                                                  "fault-injector-delay-start-iteration",
                                                  "fault-injector-fault-delay",
                                                  "fault-injector-fault-probabilities",
                                                  "fault-injector-fault-types",
                                                  "fault-injector-mtti-seconds",
                                                  "fault-injector-num-ranks",
                                                  "fault-injector-offset-seconds",
                                                  "fault-injector-ranks",
                                                  "fault-injector-seed",
                                                  "local-rank"};

constexpr absl::string_view kCommunicationFlags[] = {
    "distributed-backend", "distributed-timeout-minutes", "distributed-timeout-seconds-after-init",
    "use-tp-pp-dp-mapping", "disable-gloo-process-groups", "high-priority-stream-groups",
    "high-priority-a2a-comm-stream", "use-sharp", "sharp-enabled-group",
    "tp-comm-bootstrap-backend", "pipeline-model-parallel-comm-backend",
    "disable-symmetric-registration", "overlap-grad-reduce", "overlap-param-gather",
    "overlap-param-gather-with-optimizer-step", "no-align-grad-reduce", "disable-align-grad-reduce",
    "no-align-param-gather", "no-overlap-p2p-communication",
    "overlap-p2p-communication-warmup-flush", "use-ring-exchange-p2p", "ddp-average-in-collective",
    "ddp-bucket-size", "ddp-num-buckets", "ddp-pad-buckets-for-high-nccl-busbw",
    // FSDP settings without memory of their own: NCCL registration of the
    // buffers counted, the gradient division's fusion.
    "fsdp-manual-registration", "no-gradient-reduce-div-fusion"};

constexpr absl::string_view kKernelFlags[] = {"use-mcore-models",
                                              "attention-softmax-in-fp32",
                                              "apply-query-key-layer-scaling",
                                              "no-bias-gelu-fusion",
                                              "no-bias-swiglu-fusion",
                                              "no-bias-dropout-fusion",
                                              "no-persist-layer-norm",
                                              "apply-residual-connection-post-layernorm",
                                              "openai-gelu",
                                              "te-rng-tracker",
                                              "norm-epsilon",
                                              "apply-layernorm-1p",
                                              "use-transformer-engine-op-fuser",
                                              "disable-jit-fuser",
                                              "disable-bf16-reduced-precision-matmul",
                                              "batch-invariant-mode",
                                              "batch-invariant-backend",
                                              "flash-attention-version",
                                              "use-te-activation-func",
                                              "use-fused-weighted-squared-relu",
                                              "fused-residual-rmsnorm",
                                              "mla-down-proj-fusion",
                                              "use-grouped-gemm-for-dense-mlp",
                                              "use-grouped-gemm-for-shared-expert",
                                              "moe-single-grouped-weight",
                                              "moe-single-grouped-bias",
                                              "moe-mlp-glu-interleave-size",
                                              "moe-shared-expert-glu-interleave-size",
                                              "onnx-safe",
                                              "softmax-type",
                                              "glu-linear-offset",
                                              "activation-func-clamp-value",
                                              "window-size",
                                              "window-attn-skip-freq"};

constexpr absl::string_view kPositionFlags[] = {
    "rotary-base", "rotary-interleaved", "rotary-percent", "rotary-scaling-factor",
    "rotary-seq-len-interpolation-factor", "use-rope-scaling", "rope-scaling-factor", "rope-type",
    "no-rope-freq", "mrope-section", "mscale", "mscale-all-dim", "yarn-beta-fast", "yarn-beta-slow",
    "yarn-correction-range-round-to-int", "no-yarn-correction-range-round-to-int",
    "yarn-original-max-position-embeddings",
    // Read only with --position-embedding-type relative (not modelled).
    "relative-attention-max-distance", "relative-attention-num-buckets"};

constexpr absl::string_view kMoeRoutingFlags[] = {"moe-aux-loss-coeff",
                                                  "moe-z-loss-coeff",
                                                  "moe-input-jitter-eps",
                                                  "moe-permute-fusion",
                                                  "moe-token-drop-policy",
                                                  "moe-router-bias-update-rate",
                                                  "moe-router-enable-expert-bias",
                                                  "moe-router-force-biased",
                                                  "moe-router-fusion",
                                                  "moe-router-group-topk",
                                                  "moe-router-load-balancing-type",
                                                  "moe-router-num-groups",
                                                  "moe-router-pre-softmax",
                                                  "moe-router-quantile-balancing-ema",
                                                  "moe-router-score-function",
                                                  "moe-router-topk-scaling-factor",
                                                  "moe-shared-expert-gate",
                                                  "moe-enable-routing-replay",
                                                  "mtp-loss-scaling-factor",
                                                  "mtp-detach-heads",
                                                  "mtp-standalone"};

constexpr absl::string_view kHybridEpFlags[] = {
    "moe-hybridep-num-blocks-permute", "moe-hybridep-num-blocks-unpermute",
    "moe-hybridep-num-sms-preprocessing", "moe-permute-fusion-into-hybridep",
    "moe-hybridep-pad-uneven-dispatch-inputs"};

constexpr absl::string_view kReadOnlyWithRefusedFlags[] = {
    // --fp4-recipe custom / --fp8-recipe custom (not-modelled choices).
    "fp4-quantizer-factory", "fp8-quantizer-factory",
    // --moe-paged-stash, which validation refuses.
    "moe-paged-stash-page-size", "moe-paged-stash-buffer-size-factor-cuda",
    "moe-paged-stash-buffer-size-factor-cpu"};

constexpr absl::string_view kFp8ScalingFlags[] = {"fp8-amax-compute-algo", "fp8-amax-history-len",
                                                  "fp8-interval", "fp8-margin"};

constexpr absl::string_view kHostOnlyFlags[] = {"cpu-offloading-retain-pinned-cpu-buffers",
                                                "no-pin-cpu-grads", "no-pin-cpu-params"};

constexpr absl::string_view kCudaGraphWarmupFlags[] = {"cuda-graph-warmup-steps"};

// A GPT model's layers are --num-layers, which oomguard requires:
// arguments.py reads this one only to size the virtual pipeline when
// --num-layers is absent (validate_args), and T5 and pretrain_vlm.py build
// their decoders from it (T5's --encoder-num-layers is not modelled).
constexpr absl::string_view kDecoderLayerFlags[] = {"decoder-num-layers"};

constexpr absl::string_view kOtherModelFlags[] = {"bert-no-binary-head",
                                                  "bert-embedder-type",
                                                  "bert-load",
                                                  "output-bert-embeddings",
                                                  "biencoder-projection-dim",
                                                  "biencoder-shared-query-context-model",
                                                  "block-data-path",
                                                  "embedding-path",
                                                  "evidence-data-path",
                                                  "titles-data-path",
                                                  "ict-head-size",
                                                  "ict-load",
                                                  "indexer-batch-size",
                                                  "indexer-log-interval",
                                                  "query-in-block-prob",
                                                  "retriever-report-topk-accuracies",
                                                  "retriever-score-scaling",
                                                  "use-one-sent-docs",
                                                  "short-seq-prob",
                                                  "mask-prob",
                                                  "mask-factor",
                                                  "mask-type",
                                                  "img-h",
                                                  "img-w",
                                                  "patch-dim",
                                                  "num-channels",
                                                  "num-classes",
                                                  "classes-fraction",
                                                  "data-per-class-fraction",
                                                  "iter-per-epoch",
                                                  "sample-rate",
                                                  "vision-pretraining",
                                                  "vision-pretraining-type",
                                                  "vision-backbone-type",
                                                  "swin-backbone-type",
                                                  "dino-bottleneck-size",
                                                  "dino-freeze-last-layer",
                                                  "dino-head-hidden-size",
                                                  "dino-local-crops-number",
                                                  "dino-local-img-size",
                                                  "dino-norm-last-layer",
                                                  "dino-teacher-temp",
                                                  "dino-warmup-teacher-temp",
                                                  "dino-warmup-teacher-temp-epochs"};

constexpr absl::string_view kInferenceServingFlags[] = {"inference-coordinator-port",
                                                        "inference-text-gen-server-logging",
                                                        "inference-wandb-logging",
                                                        "inference-logging-step-interval",
                                                        "inference-use-synchronous-zmq-collectives",
                                                        "inference-shards",
                                                        "inference-rng-tracker",
                                                        "max-tokens-to-oom",
                                                        "use-legacy-static-engine",
                                                        "inference-batch-times-seqlen-threshold",
                                                        "moe-pad-experts-for-cuda-graph-inference",
                                                        "mlp-chunks-for-prefill",
                                                        "nccl-all-reduce-for-prefill",
                                                        "inference-fuse-tp-communication",
                                                        "inference-disable-triton-nvls-kernels",
                                                        "inference-moe-disable-fused-quant-kernels",
                                                        "inference-moe-token-dispatcher-type",
                                                        "inference-grouped-gemm-backend",
                                                        "flash-decode",
                                                        "cache-mla-latents",
                                                        "enable-chunked-prefill",
                                                        "decode-only-cuda-graphs",
                                                        "use-same-sampling-seed-across-dp-ranks"};

// Spellings that older Megatron-LM versions had and 0.20.0's parser lacks
// (it exits on them); kept so that an older job's line is read as before.
constexpr absl::string_view kOlderSpellingFlags[] = {"batch-p2p-comm",
                                                     "check-for-nan-in-loss-and-grad",
                                                     "disable-vision-class-token",
                                                     "enable-one-logger",
                                                     "gradient-accumulation-fusion",
                                                     "legacy-tokenizer",
                                                     "mmap-bin-files",
                                                     "moe-use-legacy-grouped-gemm",
                                                     "no-async-tensor-model-parallel-allreduce",
                                                     "overlap-p2p-communication",
                                                     "use-packed-sequence",
                                                     "variable-seq-lengths"};

// Megatron-LM's RL loop: sampling, loss coefficients, scheduling of
// rollouts and profiling.
constexpr absl::string_view kRlNoMemoryFlags[] = {"langrl-env-config",
                                                  "grpo-clamp-eps-lower",
                                                  "grpo-clamp-eps-upper",
                                                  "grpo-filter-groups-with-same-reward",
                                                  "grpo-group-size",
                                                  "grpo-iterations",
                                                  "grpo-prompts-per-step",
                                                  "rl-default-temperature",
                                                  "rl-default-top-k",
                                                  "rl-default-top-p",
                                                  "rl-importance-sampling-truncation-coef",
                                                  "rl-inference-logprobs-is-correction",
                                                  "rl-inference-parsers",
                                                  "rl-profile",
                                                  "rl-profile-dir",
                                                  "rl-prompts-per-eval",
                                                  "rl-skip-bos-token",
                                                  "rl-consumption-granularity",
                                                  "rl-submission-granularity",
                                                  "rl-rollout-bank-dir",
                                                  "rl-sequence-packing-algo"};

// Only the output layer's initialisation scale (TransformerConfig
// .is_hybrid_model); --hybrid-layer-pattern alone makes a hybrid model
// (megatron/training/utils is_hybrid_model).
constexpr absl::string_view kHybridMarkerFlags[] = {"is-hybrid-model"};

constexpr FlagGroup kNoMemoryEffect[] = {
    {"logging, profiling and monitoring: host-side records and timers", kLoggingFlags},
    {"checkpoint saving and loading, between training steps (its host staging aside)",
     kCheckpointFlags},
    {"data, tokenizer and dataset files: the micro-batch shape is --micro-batch-size x "
     "--seq-length whatever the data",
     kDataFlags},
    {"learning rate, weight decay, loss scaling and optimizer hyper-parameters: the same "
     "tensors with other values",
     kOptimizerScheduleFlags},
    {"run control, seeds, initialization, checks and fault tolerance: no tensor of the training "
     "step changes",
     kRunControlFlags},
    {"process groups, communication scheduling and DDP bucketing: the buffers counted hold the "
     "same elements",
     kCommunicationFlags},
    {"a kernel choice or numerical setting that keeps the saved tensors' shapes and dtypes (the "
     "fused activation kernels take the clamp and the GLU offset)",
     kKernelFlags},
    {"position-embedding settings: the rotary/YaRN tables are a few KB", kPositionFlags},
    {"MoE routing, loss and MTP loss settings that keep tensor shapes (routing tables and "
     "expert biases are a few KB)",
     kMoeRoutingFlags},
    {"HybridEP kernel settings: SMs and blocks of its kernels and where the permute runs; its "
     "buffers are sized by tokens, hidden size, experts and ranks (moe_dispatch_memory.h); "
     "padding uneven inputs changes nothing for the equal-length micro-batches modelled",
     kHybridEpFlags},
    {"read only with a setting oomguard refuses or does not model (--fp8-recipe custom, "
     "--fp4-recipe custom, --moe-paged-stash)",
     kReadOnlyWithRefusedFlags},
    {"FP8 scaling settings: the amax history is a few values per tensor", kFp8ScalingFlags},
    {"marks a hybrid model for the output layer's initialisation only: --hybrid-layer-pattern "
     "makes the model hybrid",
     kHybridMarkerFlags},
    {"host memory only: pinned CPU buffers of offloading", kHostOnlyFlags},
    {"eager iterations before the capture: their cached memory is released by "
     "torch.cuda.graph.__enter__ (empty_cache) before each capture (estimator/cuda_graph_memory.h)",
     kCudaGraphWarmupFlags},
    {"a flag of another model family (BERT, ICT/REALM retrieval, vision, DINO) that changes "
     "nothing for a GPT model",
     kOtherModelFlags},
    {"the decoder's layers of encoder-decoder (T5) and vision-language models: a GPT model's "
     "layers are --num-layers",
     kDecoderLayerFlags},
    {"an inference server, kernel or dispatcher setting: a training step does not run the "
     "inference engine (Megatron-LM's RL loop does: --perform-rl-step makes an RL job, read by "
     "jobspec/rl_megatron_args.h)",
     kInferenceServingFlags},
    {"RL post-training sampling, loss coefficients, rollout scheduling or profiling of "
     "Megatron-LM's RL loop: no tensor of its phases changes size",
     kRlNoMemoryFlags},
    {"a spelling of an older Megatron-LM (not in Megatron-Core 0.20.0's parser) for logging, "
     "data, communication scheduling or a kernel choice",
     kOlderSpellingFlags},
};

// ---------------------------------------------------------------------------
// Not modelled: the flag may change per-rank GPU memory in a way oomguard
// does not model. Recorded in JobSpec.unmodelled_settings with the reason:
// the job is not judged unless the policy says to (Policy.judge_unmodelled).

// Hybrid (Mamba) models: what of them is not modelled (the pattern and the
// mamba_* sizes are, megatron_flags.cc).
constexpr absl::string_view kMambaPathFlags[] = {"disable-mamba-mem-eff-path"};
constexpr absl::string_view kHybridMtpFlags[] = {"mtp-hybrid-override-pattern"};
constexpr absl::string_view kLinearAttentionFlags[] = {
    "linear-attention-freq", "linear-conv-kernel-dim", "linear-key-head-dim",
    "linear-num-key-heads",  "linear-num-value-heads", "linear-value-head-dim"};

// Megatron-LM's RL loop: the flags jobspec/rl_megatron_args.h reads are in
// none of these groups (MegatronRlFlags); these change memory in ways the
// RL step's estimate does not model.
constexpr absl::string_view kRlFlags[] = {"refit-method",
                                          "grpo-entropy-term-weight",
                                          "rl-durable-rollout-bank",
                                          "rl-generation-lag",
                                          "rl-inference-expert-tensor-model-parallel-size",
                                          "rl-inference-model-unified-memory-level",
                                          "rl-max-inflight-requests",
                                          "rl-offload-inference-model-weights-when-idle",
                                          "rl-partial-rollouts",
                                          "rl-rollout-bank-max-bytes",
                                          "rl-sequence-packing-max-sequences-per-bin",
                                          "rl-verify-model-weights-swap"};

constexpr absl::string_view kRolloutInferenceFlags[] = {
    "inference-dynamic-batching-async-sched-mode",
    "inference-dynamic-batching-block-size",
    "inference-dynamic-batching-cuda-graph-mixed-prefill-count",
    "inference-dynamic-batching-cuda-graph-sizing-distribution",
    "inference-dynamic-batching-logprobs-mode",
    "inference-dynamic-batching-mamba-memory-ratio",
    "inference-dynamic-batching-num-cuda-graphs",
    "inference-dynamic-batching-paused-buffer-size-gb",
    "inference-dynamic-batching-prefix-caching",
    "inference-dynamic-batching-prefix-caching-coordinator-policy",
    "inference-dynamic-batching-prefix-caching-eviction-policy",
    "inference-dynamic-batching-prefix-caching-mamba-gb",
    "inference-dynamic-batching-prefix-caching-routing-alpha",
    "inference-dynamic-batching-sampling-backend",
    "inference-dynamic-batching-track-generated-token-events",
    "inference-dynamic-batching-track-paused-request-events",
    "inference-dynamic-batching-unified-memory-level",
    "inference-cuda-graph-all-prefills",
    "inference-cuda-graph-max-tokens",
    "inference-cuda-graph-scope",
    "inference-disable-ep-consensus",
    "inference-max-requests",
    "inference-max-seq-length",
    "mamba-inference-conv-states-dtype",
    "mamba-inference-ssm-states-dtype",
    "num-speculative-tokens"};

constexpr absl::string_view kArchitectureFlags[] = {"attention-output-gate",
                                                    "experimental-attention-variant",
                                                    "dsa-indexer-head-dim",
                                                    "dsa-indexer-k-norm-epsilon",
                                                    "dsa-indexer-k-norm-fp32",
                                                    "dsa-indexer-loss-coeff",
                                                    "dsa-indexer-n-heads",
                                                    "dsa-indexer-rope-interleaved",
                                                    "dsa-indexer-skip-topk-offset",
                                                    "dsa-indexer-topk",
                                                    "dsa-indexer-topk-freq",
                                                    "dsa-indexer-use-sparse-loss",
                                                    "dsa-kernel-backend",
                                                    "disable-dsa-indexer-rotate-activation",
                                                    "no-dsa-indexer-rotate-activation",
                                                    "disable-dsa-indexer-scoring-relu",
                                                    "no-dsa-indexer-scoring-relu",
                                                    "enable-mhc-connections",
                                                    "mhc-init-gating-factor",
                                                    "mhc-num-residual-streams",
                                                    "mhc-recompute-layer-num",
                                                    "mhc-sinkhorn-iterations",
                                                    "gdp-cutedsl-kernel",
                                                    "gdp-num-chunk-states-to-recompute",
                                                    "gdp-num-householder",
                                                    "heterogeneous-layers-config-path",
                                                    "heterogeneous-layers-config-encoded-json",
                                                    "use-kitchen-attention",
                                                    "kitchen-attention-backend",
                                                    "kitchen-config-file",
                                                    "kitchen-recipe-number",
                                                    "te-precision-config-file"};

constexpr absl::string_view kSavedActivationFlags[] = {
    "qk-l2-norm",
    "fp32-residual-connection",
    "fp16-lm-cross-entropy",
    "quick-geglu",
    "moe-apply-probs-on-input",
    "disable-fp8-wgrad",
    "no-fp8-wgrad",
    "fp8-output-proj",
    "disable-clone-scatter-output-in-embedding",
    "no-clone-scatter-output-in-embedding",
    "mlp-chunks-for-training",
    "overlap-dispatch-backward-with-experts-wgrad",
    "moe-layer-recompute",
    "distribute-saved-activations"};

constexpr absl::string_view kOffloadingFlags[] = {
    "activation-offload-fraction", "delay-offload-until-cuda-graph",
    "delta-offload-bytes-across-pp-ranks", "fine-grained-offloading-max-inflight-offloads",
    "min-offloaded-tensor-size"};

constexpr absl::string_view kCommunicationBufferFlags[] = {
    "symmetric-ar-type",
    "moe-ncclep-zero-copy",
    "moe-dispatch-fwd-dtype",
    "moe-combine-bwd-dtype",
    "ddp-reduce-scatter-with-fp32-accumulation",
    "ddp-param-name-patterns-for-fp32-local-accumulation",
    "fake-process-group"};

constexpr absl::string_view kTpOverlapFlags[] = {
    "tp-comm-overlap-cfg",        "tp-comm-overlap-rs-dgrad",   "disable-tp-comm-bulk-dgrad",
    "no-tp-comm-bulk-dgrad",      "disable-tp-comm-bulk-wgrad", "no-tp-comm-bulk-wgrad",
    "disable-tp-comm-overlap-ag", "no-tp-comm-overlap-ag",      "disable-tp-comm-overlap-rs",
    "no-tp-comm-overlap-rs",      "disable-tp-comm-split-ag",   "no-tp-comm-split-ag",
    "disable-tp-comm-split-rs",   "no-tp-comm-split-rs"};

constexpr absl::string_view kWeightShardingFlags[] = {
    "tensor-parallel-num-weight-shards", "expert-tensor-parallel-num-weight-shards",
    "gtp-remat-opt-in-modules",          "gtp-remat-nccl-ub",
    "gtp-expert-remat-nccl-ub",          "gtp-remat-reduce-scatter-with-fp32-accumulation"};

constexpr absl::string_view kOptimizerStateFlags[] = {"muon-scalar-optimizer",
                                                      "muon-tp-mode",
                                                      "no-use-layer-wise-param-layout",
                                                      "overlap-cpu-optimizer-d2h-h2d",
                                                      "use-torch-optimizer-for-cpu-offload",
                                                      "freeze-all-layers"};

constexpr absl::string_view kMoeShapeFlags[] = {
    "moe-latent-size",           "moe-use-grouped-tensor", "moe-use-upcycling",
    "moe-upcycling-granularity", "mtp-use-repeated-layer", "mtp-hsm"};

constexpr absl::string_view kVocabularyFlags[] = {"vocab-extra-ids", "padded-vocab-size",
                                                  "disable-pad-vocab-size", "no-pad-vocab-size"};

constexpr absl::string_view kT5Flags[] = {"encoder-num-layers", "encoder-seq-length",
                                          "decoder-seq-length"};

constexpr absl::string_view kPackedSequenceFlags[] = {"hybrid-context-parallel",
                                                      "max-seqlen-per-dp-cp-rank"};

constexpr absl::string_view kDebugDumpFlags[] = {"save-activations-interval",
                                                 "save-dgrads-interval",
                                                 "save-wgrads-interval",
                                                 "save-params-interval",
                                                 "save-tokens-per-expert-interval",
                                                 "moe-routing-trace-capture-hidden-states",
                                                 "moe-routing-trace-capture-logits",
                                                 "moe-routing-trace-dump-weights",
                                                 "moe-routing-trace-max-training-iters",
                                                 "moe-routing-trace-path",
                                                 "gpu-sniff-test-interval"};

constexpr absl::string_view kDistillationFlags[] = {"logits-load-dir",
                                                    "logits-load-decode-threads",
                                                    "logits-load-ignore-errors",
                                                    "logits-load-kd-loss-alpha",
                                                    "logits-load-msc-prefetch-depth",
                                                    "logits-load-prefetch-factor",
                                                    "logits-save-dir",
                                                    "logits-save-dtype",
                                                    "logits-save-top-k",
                                                    "logits-save-top-p",
                                                    "logits-save-top-p-min-k"};

constexpr absl::string_view kEvalBatchFlags[] = {"eval-micro-batch-size"};
constexpr absl::string_view kYamlFlags[] = {"yaml-cfg"};
constexpr absl::string_view kNcclConfigFlags[] = {"nccl-communicator-config-path"};
constexpr absl::string_view kLegacyModelFlags[] = {"use-legacy-models"};
constexpr absl::string_view kFsdpGradCommFlags[] = {"megatron-fsdp-grad-comm-dtype"};
constexpr absl::string_view kFsdpFineGrainedFlags[] = {
    "megatron-fsdp-enable-fine-grained-param-gather"};
constexpr absl::string_view kFp8TransposeCacheFlags[] = {"keep-fp8-transpose-cache"};
constexpr absl::string_view kFsdpPersistBufFlags[] = {"fsdp-db-use-persist-buf-on-alloc-fail"};
constexpr absl::string_view kAllGatherGroupFlags[] = {"create-all-gather-group"};
constexpr absl::string_view kHsdpFullShardingFlags[] = {"enable-full-sharding-in-hsdp"};

constexpr FlagGroup kNotModelled[] = {
    {"the Mamba mixer's non-memory-efficient path (its convolution and scan intermediates kept "
     "for backward) is not modelled; the memory-efficient path is assumed",
     kMambaPathFlags},
    {"the MTP layers of hybrid models are not modelled", kHybridMtpFlags},
    {"gated delta net (linear attention) layers are not modelled", kLinearAttentionFlags},
    {"RL post-training setting of Megatron-LM's RL loop that the RL step's estimate does not "
     "model (rollouts in flight across steps, a separate inference model's unified memory or "
     "offload, another expert TP for inference, weight-swap checks)",
     kRlFlags},
    {"RL post-training engine setting of Megatron-LM's RL loop that the RL step's estimate does "
     "not model (prefix caching, unified memory, the count and sizes of the engine's CUDA graphs, "
     "Mamba state, speculative tokens; the KV buffer, "
     "--inference-dynamic-batching-buffer-size-gb, is modelled)",
     kRolloutInferenceFlags},
    {"this attention or layer variant (gated attention output, DSA, mHC, Gated Delta Product, "
     "heterogeneous layers, Kitchen quantization or per-module precision) adds weights or saved "
     "tensors oomguard does not count",
     kArchitectureFlags},
    {"it changes which tensors are saved for backward (their size or dtype), and oomguard counts "
     "the default ones",
     kSavedActivationFlags},
    {"the tuning of fine-grained activation offloading is not modelled: oomguard assumes every "
     "offloadable activation of --offload-modules leaves the GPU",
     kOffloadingFlags},
    {"its communication buffers (symmetric memory, NCCL EP zero-copy, MXFP8 wire payloads, fp32 "
     "local accumulation, no NCCL at all) are not counted",
     kCommunicationBufferFlags},
    {"a custom TP communication overlap configuration is not read: Transformer Engine's default "
     "userbuffers are assumed",
     kTpOverlapFlags},
    {"weight sharding beyond tensor parallelism (GTP weight rematerialization) is not modelled: "
     "weights are counted sharded over TP only",
     kWeightShardingFlags},
    {"optimizer state and buffers are counted for the default layout (Adam states for Muon's "
     "other parameters, one TP mode, every parameter trained); this setting changes them",
     kOptimizerStateFlags},
    {"it changes the MoE or MTP layers' shapes or parameter count (latent projections, padded "
     "grouped tensors, upcycling, a repeated MTP layer, hidden-state mixing)",
     kMoeShapeFlags},
    {"the vocabulary is padded from --vocab-size (or the tokenizer) to a multiple of "
     "--make-vocab-size-divisible-by x TP; this setting changes it",
     kVocabularyFlags},
    {"encoder-decoder (T5) models are not modelled", kT5Flags},
    {"packed variable-length sequences balanced over CP ranks are not modelled: every micro-batch "
     "is --seq-length long",
     kPackedSequenceFlags},
    {"the tensors copied or captured for debug dumps and tracing (and the sniff tests' GEMM "
     "buffers) are not counted",
     kDebugDumpFlags},
    {"knowledge distillation from cached teacher logits (the teacher's top-k log-probabilities "
     "and the KD loss's logits-sized tensors), and saving them, are not modelled",
     kDistillationFlags},
    {"evaluation is not estimated: its forward-only step with another micro-batch size (logits of "
     "[eval micro-batch, seq, vocab]) may exceed the training step's memory",
     kEvalBatchFlags},
    {"the arguments in the YAML file are not read: write them on the argument line", kYamlFlags},
    {"per-communicator NCCL settings (CTAs, thread groups) change NCCL's channel buffers, which "
     "are "
     "counted for NCCL's defaults",
     kNcclConfigFlags},
    {"legacy (non-Core) models are not modelled", kLegacyModelFlags},
    // Megatron-FSDP settings whose memory is not counted
    // (estimator/fsdp_memory.h counts whole-layer buffers in the gradients'
    // own dtype).
    {"Megatron-FSDP's gradient communication buffers in another dtype are not counted",
     kFsdpGradCommFlags},
    {"Megatron-FSDP's per-module all-gathers are counted as whole-layer ones",
     kFsdpFineGrainedFlags},
    {"Megatron-FSDP's kept FP8 transpose caches are not counted", kFp8TransposeCacheFlags},
    {"Megatron-FSDP's persistent fallback buffers for units outside its double buffer are not "
     "counted",
     kFsdpPersistBufFlags},
    {"the NCCL buffers of Megatron-FSDP's (or the distributed optimizer's) separate all-gather "
     "communicator are not counted",
     kAllGatherGroupFlags},
    {"Megatron-FSDP's full sharding across the outer data-parallel groups of HSDP is not "
     "modelled: sharding within the inner group is counted",
     kHsdpFullShardingFlags},
};

// Choice values of modelled flags that oomguard does not model.
constexpr UnmodelledChoice kUnmodelledChoices[] = {
    {"fp8-recipe", "custom",
     "a custom FP8 recipe (a quantizer factory) is not modelled: its quantized copies are "
     "unknown"},
    {"fp4-recipe", "custom",
     "a custom NVFP4 recipe (a quantizer factory) is not modelled: its quantized copies are "
     "unknown"},
    {"optimizer", "lion", "the Lion optimizer (one state per parameter) is not modelled"},
    {"optimizer", "soap",
     "the SOAP optimizer (Kronecker preconditioners and their eigenbases per weight) is not "
     "modelled"},
    {"optimizer", "adaptive_muon",
     "adaptive Muon (second-moment states on top of Muon's momentum) is not modelled"},
    // The flag table reads fp64 as a router in fp32 (model.moe_router_dtype_fp32).
    {"moe-router-dtype", "fp64",
     "router logits and probabilities in fp64 (8 bytes each) are counted as fp32 (4 bytes)"},
    {"position-embedding-type", "relative", "relative position buckets (T5) are not modelled"},
};

std::optional<absl::string_view> GroupReason(absl::Span<const FlagGroup> groups,
                                             absl::string_view name) {
  for (const FlagGroup& group : groups) {
    if (std::find(group.flags.begin(), group.flags.end(), name) != group.flags.end()) {
      return group.reason;
    }
  }
  return std::nullopt;
}

std::vector<absl::string_view> GroupNames(absl::Span<const FlagGroup> groups) {
  std::vector<absl::string_view> names;
  for (const FlagGroup& group : groups)
    names.insert(names.end(), group.flags.begin(), group.flags.end());
  return names;
}

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

bool MegatronRefusesFlag(absl::string_view name) {
  for (const Unimplemented& entry : kUnimplementedFlags) {
    if (entry.flag == name) return entry.megatron_refuses;
  }
  return false;
}

bool IsSilentFlag(absl::string_view name) { return NoMemoryEffectReason(name).has_value(); }

std::optional<absl::string_view> NoMemoryEffectReason(absl::string_view name) {
  return GroupReason(kNoMemoryEffect, name);
}

std::vector<absl::string_view> NoMemoryEffectFlags() { return GroupNames(kNoMemoryEffect); }

std::optional<absl::string_view> UnmodelledFlagReason(absl::string_view name) {
  if (IsMegatronRlReaderFlag(name)) {
    // In a pretraining argv: the job is an RL job (rl_job_builder.h
    // LooksLikeRlArgv), which the caller should have sent as one.
    return "a flag of Megatron-LM's RL loop: with --perform-rl-step the job is an RL job, read by "
           "the RL reader (an RlJob's argv; `oomguard estimate --gpus N -- ARGS` sends it there), "
           "not as a pretraining step";
  }
  return GroupReason(kNotModelled, name);
}

std::vector<absl::string_view> UnmodelledFlags() { return GroupNames(kNotModelled); }

std::optional<absl::string_view> UnmodelledChoiceReason(absl::string_view flag,
                                                        absl::string_view value) {
  for (const UnmodelledChoice& entry : kUnmodelledChoices) {
    if (entry.flag == flag && entry.value == value) return entry.reason;
  }
  return std::nullopt;
}

absl::Span<const UnmodelledChoice> UnmodelledChoices() { return kUnmodelledChoices; }

absl::string_view UnknownFlagReason() {
  static const std::string* const reason = new std::string(absl::StrCat(
      "not a flag of Megatron-LM up to Megatron-Core ", kSupportedMegatronCoreVersion, " (commit ",
      kSupportedMegatronLmCommit, "): a newer version's flag, a custom script's or a typo"));
  return *reason;
}

}  // namespace oomguard
