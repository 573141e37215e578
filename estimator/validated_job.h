// A JobSpec after validation: every default resolved (Megatron-LM's
// defaults), every derived size computed (DP, expert DP, padded vocabulary,
// micro-batches, the layer placement of every virtual pipeline stage).
// Everything downstream of validation reads only this struct.
//
// The sub-structs follow the JobSpec sections (model, parallelism, training,
// recompute, precision, runtime); latent attention and MoE, both part of
// JobSpec.model, have their own. The initial values are placeholders:
// ValidateJob sets every member.
#ifndef OOMGUARD_ESTIMATOR_VALIDATED_JOB_H_
#define OOMGUARD_ESTIMATOR_VALIDATED_JOB_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "estimator/hybrid_layer_pattern.h"
#include "estimator/job_defaults.h"
#include "estimator/software_versions.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Ranges. ValidateJob refuses a value outside its range as a typo, not a job
// (InvalidArgument naming the field): every size is at least 1 and at most
// its limit below. The limits keep every integer product the estimator
// forms far inside int64: micro-batch x DP and micro-batch x heads below
// 2^52, the padded vocabulary's multiple below 2^48; the product of three
// parallel sizes (up to 2^66) is formed only when it fits. Token, element
// and byte counts are formed in double, which does not wrap (an absurd
// capacity factor may reach infinity), and become report fields only
// through estimator/reported_count.h, which caps them, infinity included,
// at 2^50.
inline constexpr int64_t kMaxLayers = 100000;  // Decoder layers; layers per virtual stage.
// Widths: hidden, FFN, heads, query groups, head dims, MLA ranks, experts.
inline constexpr int64_t kMaxWidth = int64_t{1} << 22;
inline constexpr int64_t kMaxVocab = int64_t{1} << 26;  // Vocabulary; its divisor.
inline constexpr int64_t kMaxSeq = int64_t{1} << 24;    // Sequence length.
inline constexpr int64_t kMaxGpus = int64_t{1} << 22;   // GPUs; each parallel size.
// Virtual pipeline stages, PP x VPP. A report holds a rank per PP rank and a
// chunk per virtual stage, so this bounds its size (about 2 MB as JSON, well
// inside gRPC's default 4 MiB message limit); real pipelines have tens of
// stages (PP x VPP at most the decoder layers, a hundred or so).
inline constexpr int64_t kMaxVirtualStages = 1024;
// Micro-batch size, global batch size, micro-batch group per virtual stage.
inline constexpr int64_t kMaxBatch = int64_t{1} << 30;

// What one virtual pipeline stage (one model chunk) holds.
struct StageContents {
  bool has_embedding = false;
  bool has_loss = false;  // Final norm + output layer + loss.
  int first_layer = 0;    // Decoder layers [first_layer, first_layer + num_layers).
  int num_layers = 0;
  int num_dense_layers = 0;  // Of num_layers, how many have a dense MLP.
  // Of a hybrid model's num_dense_layers (its layers other than MoE), the
  // Mamba and the attention layers; the rest are MLP layers. 0 otherwise.
  int num_mamba_layers = 0;
  int num_attention_layers = 0;
  int num_mtp_layers = 0;
};

// The transformer's sizes and layer options (JobSpec.model).
struct ModelShape {
  int64_t num_layers = 0;    // Decoder layers, MTP layers not included.
  int64_t hidden = 0;        // Hidden size h.
  int64_t ffn = 0;           // Dense MLP intermediate size.
  int64_t heads = 0;         // Attention (query) heads.
  int64_t query_groups = 0;  // Key/value heads (GQA); = heads without GQA.
  int64_t head_dim = 0;      // kv_channels: width of one attention head.
  int64_t vocab = 0;
  int64_t padded_vocab = 0;        // vocab rounded up to make_vocab_size_divisible_by x TP.
  int64_t max_positions = 0;       // Rows of the learned position embedding; 0 without one.
  int64_t mtp_layers = 0;          // Multi-token-prediction layers after the decoder.
  bool gated = false;              // SwiGLU / GeGLU: fc1 is two matrices wide.
  bool layer_norm = false;         // LayerNorm (weight + bias); false = RMSNorm.
  bool rope = false;               // Rotary position embedding.
  bool learned_positions = false;  // Learned absolute position embedding.
  bool linear_bias = false;        // Biases on the linear layers.
  bool qkv_bias = false;           // Bias on the QKV projection.
  bool qk_layernorm = false;       // Norms on the queries and keys.
  bool tied_embeddings = false;    // The output layer shares the word embedding.
  bool value_head = false;         // The output layer is hidden x 1 (OutputWidth).
  double hidden_dropout = 0;       // Probability; > 0 keeps a dropout mask.
  double attention_dropout = 0;    // Probability; > 0 keeps a dropout mask.
};

// Multi-head latent attention (DeepSeek's MLA; JobSpec.model).
struct LatentAttentionShape {
  bool enabled = false;         // MLA replaces the standard self-attention.
  int64_t q_lora_rank = 0;      // Query compression width; 0 = no query compression.
  int64_t kv_lora_rank = 0;     // Key/value compression width.
  int64_t qk_head_dim = 0;      // Per-head width of the query/key part without RoPE.
  int64_t qk_pos_head_dim = 0;  // Per-head width of the query/key RoPE part.
  int64_t v_head_dim = 0;       // Per-head value width.
};

// Mixture of experts (JobSpec.model's moe_* fields).
struct MoeSettings {
  int64_t experts = 0;                // Routed experts; 0 = a dense model.
  int64_t expert_ffn = 0;             // Intermediate size of one routed expert.
  int64_t topk = 0;                   // Experts each token is routed to.
  int64_t shared_ffn = 0;             // Shared-expert intermediate size; 0 = none.
  std::vector<bool> is_moe_layer;     // Per decoder layer: an MoE MLP (else dense).
  bool mtp_layer_is_moe = false;      // MTP layers copy the last decoder layer's MLP kind.
  bool grouped_gemm = false;          // TEGroupedMLP instead of SequentialMLP.
  bool router_fp32 = false;           // Router logits in fp32.
  bool force_balance = false;         // Routing forced to balance: no imbalance margin.
  bool allgather_dispatcher = false;  // The allgather token dispatcher.
  bool flex_dispatcher = false;       // The flex dispatcher (DeepEP / HybridEP kernels).
  double capacity_factor = 0;         // 0 = dropless.
  bool pad_to_capacity = false;       // Expert inputs padded to the capacity.
  // The flex dispatcher's backend (--moe-enable-deepep read as deepep) and
  // its SM count (0 = the backend's default), which size its buffers
  // (moe_dispatch_memory.h FlexDispatcherBufferBytes).
  v1::FlexDispatcherBackend flex_backend = v1::FLEX_DISPATCHER_BACKEND_DEEPEP;
  int64_t flex_num_sms = 0;
  // HybridEP's per-rank token budget where it applies (the hybridep flex
  // dispatcher, not padding to capacity); 0 = none.
  double rank_capacity_factor = 0;
};

// A hybrid (Mamba) model (JobSpec.model.hybrid_layer_pattern and the
// mamba_* sizes): which mixer each decoder layer is, and the Mamba mixer's
// sizes as megatron/core/ssm/mamba_mixer.py MambaMixer.__init__ derives
// them. Its MoE layers are also moe.is_moe_layer.
struct HybridSettings {
  bool on = false;                  // A hybrid pattern is set.
  std::vector<HybridLayer> layers;  // Per decoder layer.
  // Decoder layers per pipeline segment ('|' in the pattern); empty
  // without pipes. Segment i is virtual stage i / PP of pipeline rank i % PP.
  std::vector<int64_t> segment_layers;
  int64_t state_dim = 0;  // N, --mamba-state-dim.
  int64_t head_dim = 0;   // P, --mamba-head-dim.
  int64_t groups = 0;     // G, --mamba-num-groups.
  int64_t heads = 0;      // H, --mamba-num-heads.
  int64_t inner = 0;      // d_inner = H x P.
  // MambaMixer's constructor defaults, which no flag changes: the causal
  // convolution's width (d_conv) and the chunked scan's chunk length.
  int64_t conv_kernel = 4;
  int64_t chunk = 128;
  // Bytes per element of the inter-chunk SSM states the scan materialises
  // (--mamba-training-ssm-states-dtype; default the parameters' dtype).
  double ssm_state_bytes = 2;
};

// Parallel group sizes (JobSpec.parallelism) and the ones they imply.
struct Parallelism {
  int64_t world = 1;  // GPUs in the job.
  int64_t tp = 1;     // Tensor parallel.
  int64_t pp = 1;     // Pipeline parallel.
  int64_t cp = 1;     // Context parallel.
  // With CP > 1, the K/V exchange of every layer (context_parallel_attention.h).
  v1::CpCommType cp_comm = v1::CP_COMM_TYPE_P2P;
  int64_t cp_a2a = 1;           // Ranks of its all-to-all: CP for a2a, the inner size for a2a+p2p.
  int64_t ep = 1;               // Expert parallel.
  int64_t etp = 1;              // Expert tensor parallel.
  int64_t dp = 1;               // Data parallel: world / (TP x PP x CP).
  int64_t edp = 1;              // Expert data parallel: world / (PP x EP x ETP).
  int64_t vpp = 1;              // Virtual pipeline stages (model chunks) per PP rank.
  int64_t group_size = 1;       // Micro-batches per virtual stage in a row (interleaved 1F1B).
  bool sp = false;              // Sequence parallel (off at TP = 1).
  bool overlap_moe_ep = false;  // EP communication overlapped: combined 1F1B steps.
  bool shared_expert_overlap = false;  // Shared experts beside the dispatcher's communication.
  bool tp_comm_overlap = false;        // TP communication beside the GEMMs (TE userbuffers).
  bool delay_wgrad = false;            // --delay-wgrad-compute (with overlap_moe_ep).
};

// Batch, sequence and the kernels that run them (JobSpec.training).
struct TrainingSettings {
  int64_t micro_batch = 0;          // Sequences per micro-batch (b).
  int64_t global_batch = 0;         // Sequences per iteration over all DP ranks.
  int64_t seq = 0;                  // Sequence length in tokens (s).
  int64_t num_microbatches = 0;     // Per iteration and DP rank.
  bool flash_attention = false;     // Flash/fused: no s^2 tensors kept.
  bool local_attention = false;     // Megatron's own unfused attention.
  bool transformer_engine = false;  // TE layers (fused norm+linear).
  v1::CrossEntropyFusion ce_fusion = v1::CROSS_ENTROPY_FUSION_UNSPECIFIED;
  double logit_bytes = 0;   // --output-logit-dtype's element size; 0 = the output layer's input's.
  bool logit_cast = false;  // The logits' dtype is not the input's (their gradient is cast back).
  bool rope_fused = false;  // RoPE by the fused kernel (no cos/sin tables kept).
  // Unfused attention's softmax runs the fused kernel (TE's or, for local
  // attention, Megatron's), which keeps only its 16-bit output.
  bool fused_softmax = false;
  bool defer_embedding_wgrad = false;  // Output-layer weight gradients wait for the flush.
  int64_t wgrad_deferral_limit = 0;    // 0 = every micro-batch.
  bool dense_mask = false;             // The data loader makes the [b, 1, s, s] mask.
};

// Activation recompute and offload (JobSpec.recompute).
struct RecomputeSettings {
  v1::RecomputeGranularity granularity = v1::RECOMPUTE_GRANULARITY_NONE;
  v1::RecomputeMethod method = v1::RECOMPUTE_METHOD_UNSPECIFIED;  // Of full recompute.
  int64_t num_layers = 0;  // Of full recompute: layers per group (uniform) or in all (block).
  uint32_t modules = 0;    // Of selective recompute: bit (1 << RecomputeModule).
  // `--cpu-offloading-num-layers`: the first layers whose activations go to
  // the host; 0 = no offloading (estimator/activation_cpu_offload.h).
  int64_t cpu_offloading_layers = 0;
  std::vector<std::string> offload_modules;  // Fine-grained activation offload.

  bool HasModule(v1::RecomputeModule m) const {
    return granularity == v1::RECOMPUTE_GRANULARITY_SELECTIVE && (modules & (1u << m)) != 0;
  }
};

// Precision and optimizer (JobSpec.precision): bytes per parameter element.
struct PrecisionSettings {
  double param_bytes = 0;  // Model weights.
  double grad_bytes = 0;   // Main gradients (the gradient buffer).
  // The optimizer's state per element of its shard (ResolveOptimizerState in
  // validated_job.cc, which names the Megatron-Core and Transformer Engine
  // code each term comes from): the main (master) copy of the weights, 0
  // where the optimizer updates the weights themselves (fp32 parameters
  // without a precision-aware master copy), and the moments, all of them.
  double master_bytes = 0;
  double moment_bytes = 0;
  // Moment bytes of the parameters Muon leaves to Adam (embeddings, output
  // layer, 1-D); equal to moment_bytes for the other optimizers.
  double adam_moment_bytes = 0;
  v1::Optimizer optimizer = v1::OPTIMIZER_ADAM;  // UNSPECIFIED resolved to ADAM.
  bool distributed_optimizer = false;
  int64_t optimizer_instances = 1;  // Distributed-optimizer copies over DP.
  // --optimizer-cpu-offload: the fraction of the shard's elements whose
  // master copy and moments live on the host (0 without offload), and the
  // host bytes per such element beside them (the pinned gradient copy, and
  // the host copy of an fp32 parameter).
  double offload_fraction = 0;
  double offloaded_host_extra_bytes = 0;
  // The fp32 copy of a 16-bit gradient the optimizer step makes per element
  // it updates on the GPU; 0 where it reads the gradient buffer directly.
  double step_grad_copy_bytes = 0;
  bool fp8 = false;               // An FP8 recipe (or FP8 weights).
  bool fp8_param_gather = false;  // FP8 weights.
  bool fp4 = false;               // NVFP4 (--fp4-format e2m1).
  bool fp4_param_gather = false;  // NVFP4 weights.
  // --reuse-grad-buf-for-mxfp8-param-ag: quantized weights keep their own
  // storage; their all-gather runs in the gradient buffer.
  bool param_gather_in_grad_buffer = false;
  // With fp8: the recipe (UNSPECIFIED resolved to DELAYED). With fp8 or fp4:
  // the decoder layers kept in bf16 at each end (0 without
  // --first-last-layers-bf16), and whether the router pads tokens per
  // expert (estimator/fp8_memory.h).
  v1::PrecisionSpec::Fp8Recipe fp8_recipe = v1::PrecisionSpec::FP8_RECIPE_UNSPECIFIED;
  int64_t bf16_layers_at_start = 0;
  int64_t bf16_layers_at_end = 0;
  bool moe_router_padding_for_fp8 = false;
};

// Which CUDA graphs a job captures, after Megatron-LM's migration of the
// deprecated `--cuda-graph-modules` values (estimator/cuda_graph_rules.h).
enum class CudaGraphImpl {
  kNone,
  kLocal,              // Megatron-Core's CudaGraphManager: per-layer graphs.
  kTransformerEngine,  // TECudaGraphHelper + TE make_graphed_callables: per-layer graphs.
  kFullIteration,      // FullCudaGraphWrapper: the whole forward-backward.
};

// What a per-layer graph captures (`--cuda-graph-modules`); none set = the
// whole layer.
struct CudaGraphModules {
  bool attn = false, mlp = false, moe = false, moe_router = false, moe_preprocess = false,
       mamba = false;
  bool whole_layers() const {
    return !attn && !mlp && !moe && !moe_router && !moe_preprocess && !mamba;
  }
};

// Allocator, CUDA graphs and NCCL (JobSpec.runtime).
struct RuntimeSettings {
  bool expandable_segments = false;  // PyTorch's expandable_segments allocator.
  CudaGraphImpl cuda_graph_impl = CudaGraphImpl::kNone;
  CudaGraphModules cuda_graph_modules;  // Per-layer graphs only.
  bool optimizer_cuda_graph = false;    // `--optimizer-cuda-graph`.
  // Layers captured in per-layer CUDA graphs (local or transformer_engine).
  bool per_layer_cuda_graphs() const {
    return cuda_graph_impl == CudaGraphImpl::kLocal ||
           cuda_graph_impl == CudaGraphImpl::kTransformerEngine;
  }
  bool nccl_ub = false;                         // `--use-nccl-ub`: NCCL user buffers.
  bool nccl_graph_register_disabled = false;    // NCCL_GRAPH_REGISTER=0.
  int64_t gpus_per_node = kDefaultGpusPerNode;  // runtime.gpus_per_node.
  // HybridEP's ranks per NVLink domain (NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_
  // DOMAIN; default min(EP x ETP, gpus_per_node)); read with the hybridep
  // flex dispatcher only.
  int64_t hybrid_ep_ranks_per_domain = 0;
  // torch.optim.AdamW's foreach step (OPTIMIZER_IMPLEMENTATION_TORCH).
  bool torch_adam = false;
  SoftwareVersion megatron_core = kNewestMegatronCore;
  SoftwareVersion transformer_engine = kNewestTransformerEngine;
  // Megatron's gradient_accumulation_fusion (off: --no-gradient-accumulation-fusion).
  bool gradient_accumulation_fusion = true;
  // runtime.gpu_architecture, UNSPECIFIED resolved (estimator/fp8_memory.h).
  v1::GpuArchitecture gpu_architecture = v1::GPU_ARCHITECTURE_HOPPER;
};

// Fully sharded data parallelism (JobSpec.parallelism's FSDP fields;
// estimator/fsdp_memory.h resolves them and holds the rules).
struct FsdpSettings {
  v1::FsdpImplementation implementation = v1::FSDP_IMPLEMENTATION_NONE;
  // What is sharded: Megatron-FSDP's --data-parallel-sharding-strategy;
  // OPTIM_GRADS_PARAMS for Torch FSDP2, which shards everything.
  v1::ShardingStrategy strategy = v1::SHARDING_STRATEGY_NO_SHARD;
  // Hybrid sharding with --outer-dp-sharding-strategy optim: the main
  // weights and moments also shard over the distributed-optimizer instances.
  bool outer_shards_optimizer = false;
  bool double_buffer = false;               // Megatron-FSDP's persistent double buffer.
  int64_t communication_unit_elements = 0;  // 0 = Megatron-FSDP's default.
  bool reshard_after_forward = true;        // Torch FSDP2.

  bool on() const { return implementation != v1::FSDP_IMPLEMENTATION_NONE; }
  bool megatron() const { return implementation == v1::FSDP_IMPLEMENTATION_MEGATRON_FSDP; }
};

struct ValidatedJob {
  ModelShape model;
  LatentAttentionShape mla;
  MoeSettings moe;
  HybridSettings hybrid;
  Parallelism parallelism;
  std::vector<StageContents> stages;  // pp * vpp virtual stages; index = pp_rank + chunk * pp.
  TrainingSettings training;
  RecomputeSettings recompute;
  PrecisionSettings precision;
  RuntimeSettings runtime;
  FsdpSettings fsdp;

  bool is_moe_model() const { return moe.experts > 0; }
};

// Validates `job` and resolves it. InvalidArgument names the field
// (JobSpec path, e.g. "parallelism.tensor_model_parallel_size") and value.
// Notes about assumptions are appended to `notes` when not null.
absl::StatusOr<ValidatedJob> ValidateJob(const v1::JobSpec& job, std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_VALIDATED_JOB_H_
