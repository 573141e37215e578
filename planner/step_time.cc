// The step-time model (see step_time.h). Every constant is declared below
// with its source; values marked "fitted" were fitted once, jointly, to the
// measured tables of tests/planner/step_time_test.cc (Qwen3-235B-A22B on 256
// H800, seed 002; Llama-3 70B FP8 on 32 H100, seeds 001 and 003).
#include "planner/step_time.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "estimator/fp8_memory.h"

namespace oomguard {
namespace {

// --- GEMM efficiency -------------------------------------------------------
// A large BF16 GEMM on Hopper reaches ~75-80% of the dense peak (cuBLAS
// benchmarks at 8k x 8k x 8k); end-to-end Megatron runs reach less (fitted).
constexpr double kGemmPeakFraction = 0.72;
// Efficiency falls as a GEMM's rows (tokens of the micro-batch on one rank)
// or its width (hidden / FFN size per TP or ETP shard) shrink:
// eff = peak x M / (M + kHalfRows) x N / (N + kHalfWidth). A 1k-wide shard
// loses ~20% against an 8k one in cuBLAS sweeps; fitted to the TP4 -> TP8
// drop of seed 001 (-28%).
constexpr double kGemmHalfRows = 256;
constexpr double kGemmHalfWidth = 320;
// Grouped expert GEMMs are charged like dense GEMMs of their shape (rows =
// tokens one local expert receives): the fit to seed 002 left no separate
// grouped-GEMM penalty once the per-layer cost below is counted.
// FP8 GEMMs: the FP8 peak is 2x BF16, but casts, amax reductions and
// scaling keep end-to-end GEMM time at ~1.6x BF16 (Transformer Engine's
// Llama benchmarks report 1.3-1.7x per layer): fraction of the FP8 peak
// reached relative to the BF16 fraction (fitted to seed 001's FP8 runs).
constexpr double kFp8PeakUse = 0.85;
// NVFP4 GEMMs (--fp4-format e2m1): Transformer Engine's NVFP4BlockScaling
// runs fprop, dgrad and wgrad in FP4 (transformer_engine/common/recipe), at
// the GPU's dense FP4 peak. The casts that keep FP8 at kFp8PeakUse of its
// peak are memory traffic, not tensor-core work: they take the same time
// beside an FP4 GEMM as beside the FP8 one (at least: NVFP4's 16x16
// Hadamard transforms and stochastic rounding add to them; no NVFP4 table to
// fit that to). On a GPU without FP4 the job runs at the FP8 rate.
// Flash attention (forward + backward) reaches ~60% of the BF16 peak on
// Hopper at long sequences (FlashAttention-3 paper: 500-600 TFLOP/s fwd,
// less in backward); it falls at short per-rank sequences.
constexpr double kAttentionPeakFraction = 0.50;
constexpr double kAttentionHalfSeq = 512;

// --- Memory-bound work -----------------------------------------------------
// Bytes read and written per token and hidden element by the element-wise
// kernels of one layer's forward (norms, residual adds, RoPE, activation,
// bias-dropout-add, casts): ~20 tensors of 2 bytes; the backward moves twice
// as much. Fitted.
constexpr double kElementwiseBytesPerHidden = 40;
// Of those, the norms' share (what selective `layernorm` recompute redoes).
constexpr double kNormShare = 0.15;
// MoE token permutation and un-permutation (forward): each routed copy of a
// token read and written twice. Fitted (Megatron's permute fusion).
constexpr double kPermuteBytesPerRoutedHidden = 8;
// Fixed time per layer and micro-batch (forward + backward), whatever its
// size: kernel launches and, in an MoE layer, the dropless dispatcher's host
// synchronisation on the per-expert token counts (the alltoall dispatcher
// copies tokens_per_expert to the host every forward) with the ~100 small
// kernels of routing and permutation. Fitted in total: seed 002's
// micro-batch 4 with full recompute beats micro-batch 1 without recompute,
// which only a cost per micro-batch explains. A third of it is the forward
// (what recompute redoes).
constexpr double kLayerOverheadSeconds = 0.3e-3;
constexpr double kMoeLayerOverheadSeconds = 5e-3;
// The parts of those a CUDA graph replays without the host launching each
// kernel (Megatron-Core's cuda_graph_scope; Transformer Engine's
// make_graphed_callables captures forward and backward): a layer's
// attention and its MLP half of kLayerOverheadSeconds each (~30 kernels a
// block forward at ~5 us of host time each, three times over forward and
// backward); of an MoE layer's, the router's and the token preprocessing's
// ~100 kernels at ~10 us (PyTorch's eager dispatch of small ops), three
// times over: 3 ms of the 5. The rest is the host's wait on the token
// counts before the dispatch, which a graph does not remove (a dropless
// dispatch is not captured). Split by kernel counts, not fitted: the fitted
// tables run without graphs.
constexpr double kAttentionLaunchSeconds = kLayerOverheadSeconds / 2;
constexpr double kMlpLaunchSeconds = kLayerOverheadSeconds / 2;
constexpr double kMoeRoutingLaunchSeconds = 3e-3;
constexpr double kMoeHostWaitSeconds =
    kMoeLayerOverheadSeconds - kAttentionLaunchSeconds - kMoeRoutingLaunchSeconds;
// Adam's step reads and writes ~36 bytes per owned parameter (fp32 master,
// two moments, gradient, bf16 copy out).
constexpr double kOptimizerStepBytesPerParam = 36;

// --- Communication ---------------------------------------------------------
// Ring all-gather / reduce-scatter bus bandwidth as a fraction of the link
// rate (nccl-tests on H100 NVLink: ~360 of 450 GB/s; on 400 Gb/s IB ~40 of
// 50 GB/s).
constexpr double kRingEfficiency = 0.8;
// All-to-all as a fraction of the link rate, inside a node (NVLink) and
// across nodes (the NIC, shared by all off-node peers). Fitted to seed 002
// (EP 8 inside an H800 node against EP 32 over four nodes); nccl-tests
// all-to-all on 8 Hopper GPUs reaches 80-90% of the per-direction link
// rate at these message sizes (tens of MB).
constexpr double kAllToAllNvlinkEfficiency = 0.9;
constexpr double kAllToAllNetworkEfficiency = 0.8;
// --overlap-moe-expert-parallel-comm: in the combined 1F1B schedule
// (TransformerLayerSchedulePlan.run, megatron/core/models/common/
// model_chunk_schedule_plan.py) the communication kernels of one micro-batch
// run on their own stream while the other's compute runs, and take SMs from
// it: DeepEP and HybridEP kernels 16-24 of an H100's 132 SMs
// (--moe-hybridep-num-sms 16 in Megatron-Bridge's DeepSeek-V3 recipe), NCCL's
// all-to-all a similar share of channels. Compute that runs beside a
// transfer is charged this much longer.
constexpr double kOverlapComputeSlowdown = 0.15;
// Fixed cost of one collective launch (NCCL latency at these sizes).
constexpr double kCollectiveLatencySeconds = 15e-6;
// Share of CP's key/value ring hidden behind the attention it feeds
// (Megatron overlaps the next block's send with the current block's
// attention).
constexpr double kCpOverlap = 0.8;
// Data-parallel gradient reduce-scatter and parameter all-gather overlap
// with the last micro-batch's backward and the first one's forward
// (--overlap-grad-reduce --overlap-param-gather); at least this share stays
// exposed (the last bucket, the optimizer's wait). Seed 002: overlap barely
// matters at 128 micro-batches.
constexpr double kDpMinExposed = 0.1;
// Host Adam over offloaded optimizer state: seconds per parameter per GPU
// (a node's CPU cores shared by its 8 GPUs; Megatron's HybridDeviceOptimizer
// measures ~1 GParam/s per node).
constexpr double kHostAdamSecondsPerParam = 8e-9;

double Ratio(double x, double half) { return x / (x + half); }

// What a transfer run beside `compute` adds to it: the part of the transfer
// the compute does not cover, plus the SMs it takes from the compute.
double ExposedBeside(double transfer, double compute) {
  return std::max(transfer, compute) + kOverlapComputeSlowdown * std::min(transfer, compute) -
         compute;
}

// The EP time left exposed by the EP overlap for one MoE layer, forward of
// one micro-batch paired with the backward of another, each side's transfer
// `a2a` (one dispatch or one combine). The schedule of
// TransformerLayerSchedulePlan.run: the backward's combine beside the
// forward's attention and router; the forward's and the backward's
// dispatch beside the backward's and the forward's experts; the forward's
// combine beside the backward's attention.
double PairedExpertParallel(double a2a, double attention_forward, double attention_backward,
                            double experts_forward, double experts_backward) {
  return ExposedBeside(a2a, attention_forward) +
         ExposedBeside(2 * a2a, experts_backward + experts_forward) +
         ExposedBeside(a2a, attention_backward);
}

// The other nodes a token's `topk` experts fall on, on average, when its
// experts are drawn without repetition from `experts` spread evenly over
// `nodes` nodes (balanced routing): (nodes - 1) x P(a node gets at least
// one) = (nodes - 1) x (1 - C(experts - per_node, topk) / C(experts, topk)).
double RemoteNodesPerToken(double nodes, double experts, double topk) {
  const double per_node = experts / nodes;
  double none_here = 1;
  for (double i = 0; i < topk; ++i) {
    none_here *= std::max(0.0, experts - per_node - i) / (experts - i);
  }
  return (nodes - 1) * (1 - none_here);
}

// Per micro-batch, per GPU, forward + backward, of one layer or block.
// `ep_paired`: the EP time left exposed when the layer's forward and another
// micro-batch's backward run as one overlapped pair
// (--overlap-moe-expert-parallel-comm: EstimateStepTime).
struct Cost {
  double compute = 0, recompute = 0, tp = 0, cp = 0, ep = 0, ep_paired = 0;
  void Add(const Cost& o, double times) {
    compute += times * o.compute;
    recompute += times * o.recompute;
    tp += times * o.tp;
    cp += times * o.cp;
    ep += times * o.ep;
    ep_paired += times * o.ep_paired;
  }
  double Total() const { return compute + recompute + tp + cp + ep; }
};

class Model {
 public:
  Model(const ValidatedJob& j, const GpuPerformance& gpu) : j_(j), gpu_(gpu) {
    const Parallelism& par = j.parallelism;
    tp_ = static_cast<double>(par.tp);
    cp_ = static_cast<double>(par.cp);
    tokens_ = static_cast<double>(j.training.micro_batch * j.training.seq) / cp_;
    hidden_ = static_cast<double>(j.model.hidden);
    double gemm_peak = gpu.bf16_flops;
    if (j.precision.fp4 && gpu.fp4_flops > 0 && gpu.fp8_flops > 0) {
      gemm_peak = 1 / (1 / gpu.fp4_flops + (1 / kFp8PeakUse - 1) / gpu.fp8_flops);
    } else if ((j.precision.fp8 || j.precision.fp4) && gpu.fp8_flops > 0) {
      gemm_peak = gpu.fp8_flops * kFp8PeakUse;
    }
    gemm_flops_ = gemm_peak * kGemmPeakFraction;
    domain_ = static_cast<double>(
        NvlinkDomain(gpu, static_cast<uint32_t>(std::max<int64_t>(0, j.runtime.gpus_per_node))));
    tp_bw_ = Bandwidth(tp_ <= domain_);
    cp_bw_ = Bandwidth(tp_ * cp_ <= domain_);
  }

  // Seconds of a GEMM of `flops` with `rows` rows and a `width`-wide shard.
  double Gemm(double flops, double rows, double width) const {
    const double eff = Ratio(rows, kGemmHalfRows) * Ratio(width, kGemmHalfWidth);
    return flops / (gemm_flops_ * eff);
  }
  double Elementwise(double bytes) const { return bytes / gpu_.hbm_bytes_per_second; }
  double Bandwidth(bool nvlink) const {
    return (nvlink ? gpu_.nvlink_bytes_per_second : gpu_.network_bytes_per_second) *
           kRingEfficiency;
  }
  // One all-gather or reduce-scatter of `bytes` (the full tensor) over `n`.
  double Collective(double bytes, double n, double bw) const {
    if (n <= 1) return 0;
    return bytes * (n - 1) / n / bw + kCollectiveLatencySeconds;
  }

  // Forward FLOPs of the attention's linear layers, per token (whole layer).
  double AttentionLinearFlops() const {
    const ModelShape& m = j_.model;
    const double h = hidden_;
    if (j_.mla.enabled) {
      const LatentAttentionShape& a = j_.mla;
      const double heads = static_cast<double>(m.heads);
      const double qk = static_cast<double>(a.qk_head_dim + a.qk_pos_head_dim);
      const double q =
          a.q_lora_rank > 0 ? h * a.q_lora_rank + a.q_lora_rank * heads * qk : h * heads * qk;
      const double kv = h * (a.kv_lora_rank + a.qk_pos_head_dim) +
                        a.kv_lora_rank * heads * (a.qk_head_dim + a.v_head_dim);
      return 2 * (q + kv + heads * a.v_head_dim * h);
    }
    const double hd = static_cast<double>(m.head_dim);
    return 2 * h * hd * (2.0 * m.heads + 2.0 * m.query_groups);
  }
  // Forward FLOPs of causal attention scores and values, per token.
  double AttentionCoreFlops() const {
    const double s = static_cast<double>(j_.training.seq);
    const double heads = static_cast<double>(j_.model.heads);
    const double width =
        j_.mla.enabled
            ? static_cast<double>(j_.mla.qk_head_dim + j_.mla.qk_pos_head_dim + j_.mla.v_head_dim)
            : 2.0 * j_.model.head_dim;
    return 2 * s * heads * width * 0.5;  // Causal: half the score matrix.
  }
  double MlpFlops(double ffn) const { return 2 * (j_.model.gated ? 3 : 2) * hidden_ * ffn; }

  // The fixed time of one layer per micro-batch (forward + backward): its
  // kernel launches, less those a CUDA graph replays, and an MoE layer's
  // wait on the token counts unless they are the capacity. The graphed parts: the whole layer
  // without a scope, else the scope's modules (attn; mlp of a dense layer; moe, moe_router or
  // moe_preprocess the routing's kernels).
  double LayerOverhead(bool moe) const {
    double overhead = moe ? kMoeLayerOverheadSeconds : kLayerOverheadSeconds;
    // Expert inputs padded to the capacity (drop and pad): every count is
    // the capacity, known on the host, and no wait is needed
    // (MoEAlltoAllTokenDispatcher.preprocess returns before the counts'
    // device-to-host copy; _HybridEPManager.setup_metadata sizes
    // num_permuted_tokens from it, megatron/core/transformer/moe/
    // token_dispatcher.py).
    if (moe && j_.moe.pad_to_capacity) overhead -= kMoeHostWaitSeconds;
    const RuntimeSettings& rt = j_.runtime;
    // Per-layer graphs only (the full-iteration graph's launches are not
    // modelled).
    if (!rt.per_layer_cuda_graphs()) return overhead;
    const CudaGraphModules& m = rt.cuda_graph_modules;
    if (m.whole_layers() || m.attn) overhead -= kAttentionLaunchSeconds;
    if (moe) {
      if (m.whole_layers() || m.moe || m.moe_router || m.moe_preprocess) {
        overhead -= kMoeRoutingLaunchSeconds;
      }
    } else if (m.whole_layers() || m.mlp) {
      overhead -= kMlpLaunchSeconds;
    }
    return overhead;
  }

  // One decoder layer (dense or MoE), per micro-batch on one GPU.
  Cost Layer(bool moe) const {
    const Parallelism& par = j_.parallelism;
    const MoeSettings& me = j_.moe;
    Cost c;
    // Attention: linear layers and the core.
    const double attn_linear = Gemm(tokens_ * AttentionLinearFlops() / tp_, tokens_, hidden_ / tp_);
    const double core_rate = gpu_.bf16_flops * kAttentionPeakFraction *
                             Ratio(static_cast<double>(j_.training.seq) / cp_, kAttentionHalfSeq);
    const double attn_core = tokens_ * AttentionCoreFlops() / tp_ / core_rate;
    // Element-wise work on the sequence-parallel shard.
    const double elementwise = Elementwise(tokens_ / tp_ * hidden_ * kElementwiseBytesPerHidden);
    double mlp = 0, permute = 0, act = 0, a2a = 0, shared = 0, dense_mlp = 0, router = 0;
    double tp_collectives = 2;  // Attention: all-gather in, reduce-scatter out.
    if (!moe) {
      const double ffn = static_cast<double>(j_.model.ffn);
      dense_mlp = Gemm(tokens_ * MlpFlops(ffn) / tp_, tokens_, ffn / tp_);
      mlp = dense_mlp;
      act = Elementwise(tokens_ / tp_ * ffn * 6);
      tp_collectives += 2;
    } else {
      const double ep = static_cast<double>(par.ep), etp = static_cast<double>(par.etp);
      const double experts = static_cast<double>(me.experts);
      const double topk = static_cast<double>(me.topk);
      const double eff = static_cast<double>(me.expert_ffn);
      // Tokens entering the MoE on one GPU (the sequence-parallel shard),
      // and the rows one local expert sees (all ranks of its EP x ETP group
      // route to it; ETP gathers them).
      const double tokens_in = tokens_ / tp_;
      const double rows = tokens_in * topk * ep * etp / experts;
      router = Gemm(tokens_in * 2 * hidden_ * experts, tokens_in, experts);
      const double expert_gemm = Gemm(tokens_in * topk * MlpFlops(eff), rows, eff / etp);
      if (me.shared_ffn > 0) {
        const double sf = static_cast<double>(me.shared_ffn);
        shared = Gemm(tokens_ * MlpFlops(sf) / tp_, tokens_, sf / tp_);
        tp_collectives += 2;
      }
      mlp = router + expert_gemm + shared;
      permute = Elementwise(tokens_in * topk * hidden_ * kPermuteBytesPerRoutedHidden);
      act = Elementwise(tokens_in * topk * eff * 6);
      // All-to-all: every routed copy that leaves the GPU, 2 bytes a value.
      const double bytes = tokens_in * topk * hidden_ * 2 * (1 - 1 / ep);
      const double in_node = std::min(ep, std::max(1.0, domain_ / etp));
      const double inter_share = (ep - in_node) / ep;
      double network_bytes = bytes * inter_share;
      if (me.flex_dispatcher && ep > in_node) {
        // The flex dispatcher's DeepEP kernels send a token to each remote
        // node once, however many of its experts are there, and forward it
        // on NVLink inside that node (DeepEP's internode dispatch/combine;
        // Megatron-Core's MoEFlexTokenDispatcher). Seed 002: at EP 32 over
        // four H800 nodes it turns 926 tokens/GPU/s into 1274.
        network_bytes = tokens_in * hidden_ * 2 * RemoteNodesPerToken(ep / in_node, experts, topk);
      }
      if (ep > 1) {
        // The NVLink and network parts run at once; the slower one decides.
        a2a =
            std::max(bytes * (1 - inter_share) /
                         (gpu_.nvlink_bytes_per_second * kAllToAllNvlinkEfficiency),
                     network_bytes / (gpu_.network_bytes_per_second * kAllToAllNetworkEfficiency)) +
            kCollectiveLatencySeconds;
      }
      if (etp > 1) a2a += Collective(tokens_in * topk * hidden_ * 2 * etp, etp, tp_bw_);
    }
    // Forward + backward: 3x the forward GEMMs; element-wise work 3x.
    const double overhead = LayerOverhead(moe);
    const double forward = attn_linear + attn_core + mlp + elementwise + act + permute;
    c.compute = 3 * forward + overhead;
    const double tp_one = par.tp > 1 ? Collective(tokens_ * hidden_ * 2, tp_, tp_bw_) : 0;
    const double a2a_fwd = 2 * a2a;  // Dispatch + combine.
    // TP: an all-gather into and a reduce-scatter out of each TP-split block
    // (attention, dense MLP, shared experts), forward, and as many backward.
    double tp_forward = tp_collectives * tp_one;
    c.tp = 2 * tp_forward;
    if (par.tp_comm_overlap && par.tp > 1) {
      // --tp-comm-overlap: Transformer Engine's userbuffers run each block's
      // all-gather and reduce-scatter beside the block's GEMMs, chunk by
      // chunk (initialize_ub's ring-exchange, pipeline and bulk overlaps,
      // transformer_engine/pytorch/module/base.py); the backward's beside
      // its dgrad and wgrad GEMMs (twice the forward's).
      const double block_gemms[] = {attn_linear, dense_mlp, shared};
      tp_forward = 0;
      c.tp = 0;
      for (const double gemm : block_gemms) {
        if (gemm <= 0) continue;
        tp_forward += ExposedBeside(2 * tp_one, gemm);
        c.tp += ExposedBeside(2 * tp_one, gemm) + ExposedBeside(2 * tp_one, 2 * gemm);
      }
    }
    c.ep = 2 * a2a_fwd;
    if (moe && par.shared_expert_overlap && shared > 0) {
      // --moe-shared-expert-overlap: the token dispatcher runs the shared
      // experts on their own stream beside its dispatch and combine
      // (MoELayer.__init__'s token_dispatcher.set_shared_experts,
      // megatron/core/transformer/moe/moe_layer.py), and autograd their
      // backward beside the backward's.
      c.ep = ExposedBeside(a2a_fwd, shared) + ExposedBeside(a2a_fwd, 2 * shared);
    }
    if (par.cp > 1) {
      const double kv_width =
          j_.mla.enabled ? static_cast<double>(j_.model.heads) *
                               (j_.mla.qk_head_dim + j_.mla.qk_pos_head_dim + j_.mla.v_head_dim)
                         : 2.0 * j_.model.query_groups * j_.model.head_dim;
      const double kv_bytes = tokens_ * kv_width / tp_ * 2;
      const double ring = 3 * (cp_ - 1) * kv_bytes / cp_bw_;  // fwd KV, bwd KV + dKV.
      c.cp = std::max(0.0, ring - kCpOverlap * 3 * attn_core);
    }
    // The extra forward of recompute, in the attention's backward and in
    // the experts'.
    const RecomputeSettings& r = j_.recompute;
    double attention_recompute = 0, experts_recompute = 0;
    if (r.granularity == v1::RECOMPUTE_GRANULARITY_SELECTIVE) {
      if (r.HasModule(v1::RECOMPUTE_MODULE_CORE_ATTN)) attention_recompute += attn_core;
      if (r.HasModule(v1::RECOMPUTE_MODULE_LAYERNORM)) {
        attention_recompute += kNormShare * elementwise;
      }
      if (r.HasModule(v1::RECOMPUTE_MODULE_MLA_UP_PROJ)) attention_recompute += 0.5 * attn_linear;
      if (!moe && r.HasModule(v1::RECOMPUTE_MODULE_MLP)) {
        experts_recompute += dense_mlp + act + (par.tp > 1 ? tp_one : 0);
      }
      if (moe && r.HasModule(v1::RECOMPUTE_MODULE_MOE)) {
        experts_recompute += mlp + act + permute + a2a_fwd + overhead / 3;
      } else if (moe) {
        if (r.HasModule(v1::RECOMPUTE_MODULE_MOE_ACT)) experts_recompute += act;
        if (r.HasModule(v1::RECOMPUTE_MODULE_SHARED_EXPERTS)) experts_recompute += shared;
      }
    }
    c.recompute = attention_recompute + experts_recompute;
    c.ep_paired = c.ep;
    if (moe && par.ep > 1) {
      // Attention, norms and router before the dispatch (with half the
      // permutation); the experts after it (with the other half).
      const double attention = forward - mlp - act - permute + router + permute / 2;
      const double experts = mlp - router + act + permute / 2;
      c.ep_paired = PairedExpertParallel(a2a, attention, 2 * attention + attention_recompute,
                                         experts, 2 * experts + experts_recompute);
    }
    full_forward_ = forward + tp_forward + a2a_fwd + overhead / 3;
    return c;
  }
  // The forward of one whole layer, as full recompute redoes it (set by the
  // last Layer() call).
  double full_forward() const { return full_forward_; }

  // The output layer and loss (forward + backward), per micro-batch.
  double Output() const {
    const double v = static_cast<double>(j_.model.padded_vocab);
    return 3 * Gemm(tokens_ * 2 * hidden_ * v / tp_, tokens_, v / tp_);
  }

  double tokens() const { return tokens_; }
  // GPUs one NVLink domain joins: the node's, or the rack's on GB200/GB300
  // NVL72 (NvlinkDomain, gpu_performance.h), whatever gpus_per_node says.
  double domain() const { return domain_; }
  double tp() const { return tp_; }
  double hidden() const { return hidden_; }

 private:
  const ValidatedJob& j_;
  const GpuPerformance& gpu_;
  double tp_ = 1, cp_ = 1, domain_ = 1, tokens_ = 0, hidden_ = 0, gemm_flops_ = 0, tp_bw_ = 0,
         cp_bw_ = 0;
  mutable double full_forward_ = 0;
};

// Forward FLOPs per token of the whole model (the MFU's numerator / 3).
double ForwardFlopsPerToken(const ValidatedJob& j, const Model& m) {
  double dense_layers = 0, moe_layers = 0;
  for (const bool is_moe : j.moe.is_moe_layer) (is_moe ? moe_layers : dense_layers) += 1;
  const double attention = m.AttentionLinearFlops() + m.AttentionCoreFlops();
  double moe_mlp = 0;
  if (j.is_moe_model()) {
    moe_mlp = 2 * m.hidden() * j.moe.experts +
              j.moe.topk * m.MlpFlops(static_cast<double>(j.moe.expert_ffn)) +
              (j.moe.shared_ffn > 0 ? m.MlpFlops(static_cast<double>(j.moe.shared_ffn)) : 0);
  }
  const double dense_mlp = m.MlpFlops(static_cast<double>(j.model.ffn));
  const double output = 2 * m.hidden() * static_cast<double>(j.model.padded_vocab);
  const double mtp_layer = attention + (j.moe.mtp_layer_is_moe ? moe_mlp : dense_mlp) +
                           2 * 2 * m.hidden() * m.hidden() + output;
  return dense_layers * (attention + dense_mlp) + moe_layers * (attention + moe_mlp) + output +
         static_cast<double>(j.model.mtp_layers) * mtp_layer;
}

}  // namespace

StepTime EstimateStepTime(const ValidatedJob& j, const GpuPerformance& gpu) {
  const Parallelism& par = j.parallelism;
  const Model m(j, gpu);
  const Cost dense = m.Layer(false);
  const double dense_forward = m.full_forward();
  Cost moe;
  double moe_forward = 0;
  if (j.is_moe_model()) {
    moe = m.Layer(true);
    moe_forward = m.full_forward();
  }
  const double output = m.Output();

  // The slowest pipeline rank's cost per micro-batch (all its chunks).
  Cost worst;
  double worst_total = -1;
  const RecomputeSettings& r = j.recompute;
  for (int64_t rank = 0; rank < par.pp; ++rank) {
    Cost c;
    for (int64_t chunk = 0; chunk < par.vpp; ++chunk) {
      const StageContents& st = j.stages[rank + chunk * par.pp];
      const int moe_layers = st.num_layers - st.num_dense_layers;
      c.Add(dense, st.num_dense_layers);
      c.Add(moe, moe_layers);
      if (r.granularity == v1::RECOMPUTE_GRANULARITY_FULL && st.num_layers > 0) {
        // Uniform recomputes every layer; block the first num_layers of the
        // chunk (Megatron's TransformerBlock._checkpointed_forward).
        const int n = r.method == v1::RECOMPUTE_METHOD_UNIFORM
                          ? st.num_layers
                          : static_cast<int>(std::min<int64_t>(r.num_layers, st.num_layers));
        const double share = static_cast<double>(n) / st.num_layers;
        c.recompute += share * (st.num_dense_layers * dense_forward + moe_layers * moe_forward);
      }
      if (st.has_loss) c.compute += output;
      for (int k = 0; k < st.num_mtp_layers; ++k) {
        c.Add(j.moe.mtp_layer_is_moe ? moe : dense, 1);
        c.compute += output;
      }
    }
    if (c.Total() > worst_total) {
      worst_total = c.Total();
      worst = c;
    }
  }

  const double micro = static_cast<double>(j.training.num_microbatches);
  const double vpp = static_cast<double>(par.vpp);
  StepTime t;
  t.compute = micro * worst.compute;
  t.recompute = micro * worst.recompute;
  t.tensor_parallel = micro * worst.tp;
  t.context_parallel = micro * worst.cp;
  t.expert_parallel = micro * worst.ep;
  {
    // --overlap-moe-expert-parallel-comm pairs each forward of a model chunk
    // with the backward of another in the 1F1B steady state (combined_1f1b.py);
    // the warm-up forwards (one more than without the overlap:
    // pipeline_schedule.h, rank 0's count) and as many cool-down backwards
    // run alone, with their all-to-all exposed.
    const double chunk_steps = micro * static_cast<double>(par.vpp);
    const double warmup =
        par.pp == 1 ? 1.0
                    : static_cast<double>(2 * (par.pp - 1) + (par.vpp - 1) * par.group_size + 1);
    const double paired = std::max(0.0, chunk_steps - warmup) / chunk_steps;
    t.expert_parallel_overlapped = micro * (paired * worst.ep_paired + (1 - paired) * worst.ep);
    if (par.overlap_moe_ep) t.expert_parallel = t.expert_parallel_overlapped;
  }
  // Bubble: (p - 1) / v micro-batches of the rank's time. Without
  // interleaving, the stage-to-stage send/receive is exposed too
  // (interleaved 1F1B overlaps it).
  const double node = m.domain();
  const double stride = static_cast<double>(par.world / par.pp);
  double p2p = 0;
  if (par.pp > 1 && par.vpp == 1) {
    const double bytes = m.tokens() * m.hidden() * 2 / (par.sp ? m.tp() : 1);
    const double bw = (stride < node ? gpu.nvlink_bytes_per_second : gpu.network_bytes_per_second) *
                      kRingEfficiency;
    p2p = micro * 2 * (bytes / bw + kCollectiveLatencySeconds);
  }
  t.pipeline_bubble = static_cast<double>(par.pp - 1) / vpp * worst_total + p2p;

  // Data parallel: parameters each GPU holds, from the shapes.
  double dense_params = 0, expert_params = 0;
  {
    const double h = m.hidden();
    const double attention = m.AttentionLinearFlops() / 2;
    double dense_layers = 0, moe_layers = 0;
    for (const bool is_moe : j.moe.is_moe_layer) (is_moe ? moe_layers : dense_layers) += 1;
    const double gate = j.model.gated ? 3 : 2;
    dense_params = dense_layers * (attention + gate * h * j.model.ffn) +
                   moe_layers * (attention + h * j.moe.experts + gate * h * j.moe.shared_ffn) +
                   2 * h * static_cast<double>(j.model.padded_vocab);
    expert_params = moe_layers * j.moe.experts * gate * h * j.moe.expert_ffn;
    dense_params /= static_cast<double>(par.tp * par.pp);
    expert_params /= static_cast<double>(par.ep * par.etp * par.pp);
  }
  const double dense_dp = static_cast<double>(par.dp * par.cp);
  const double expert_dp = static_cast<double>(par.edp);
  const double weight_bytes = ParamAllGatherBytesPerElement(j);
  double bytes_per_param = j.precision.grad_bytes + weight_bytes;
  if (j.fsdp.on()) {
    // FSDP (estimator/fsdp_memory.h) moves the sharded states every
    // micro-batch: full sharding all-gathers the weights for each forward and
    // backward (once when Torch FSDP2 keeps them gathered) and
    // reduce-scatters the gradients; optim_grads reduce-scatters the
    // gradients and gathers the updated weights once. optim and no_shard
    // reduce once per iteration, as the distributed optimizer does.
    const double micro_batches = static_cast<double>(j.training.num_microbatches);
    const double gathers = j.fsdp.reshard_after_forward ? 2 : 1;
    if (j.fsdp.strategy == v1::SHARDING_STRATEGY_OPTIM_GRADS_PARAMS) {
      bytes_per_param = micro_batches * (gathers * weight_bytes + j.precision.grad_bytes);
    } else if (j.fsdp.strategy == v1::SHARDING_STRATEGY_OPTIM_GRADS) {
      bytes_per_param = micro_batches * j.precision.grad_bytes + weight_bytes;
    }
  }
  const bool dense_in_node = static_cast<double>(par.tp * par.cp * par.dp) <= node;
  const bool expert_in_node = stride <= node;
  const double dp_comm =
      m.Collective(dense_params * bytes_per_param, dense_dp, m.Bandwidth(dense_in_node)) +
      m.Collective(expert_params * bytes_per_param, expert_dp, m.Bandwidth(expert_in_node));
  t.data_parallel = std::max(kDpMinExposed * dp_comm, dp_comm - worst_total);
  // The optimizer step over the owned shard, on the GPU or the host.
  // FSDP shards the optimizer state itself unless it shards nothing.
  const bool sharded = j.fsdp.on() ? j.fsdp.strategy != v1::SHARDING_STRATEGY_NO_SHARD
                                   : j.precision.distributed_optimizer;
  const double shards = sharded ? 1.0 : 0.0;
  const double owned =
      dense_params / (shards > 0 ? dense_dp : 1) + expert_params / (shards > 0 ? expert_dp : 1);
  const double f = j.precision.offload_fraction;
  t.offload = owned * f * (kHostAdamSecondsPerParam + (4 + 2) / gpu.pcie_bytes_per_second);
  t.data_parallel += owned * (1 - f) * kOptimizerStepBytesPerParam / gpu.hbm_bytes_per_second;

  t.seconds = t.compute + t.recompute + t.tensor_parallel + t.context_parallel + t.expert_parallel +
              t.pipeline_bubble + t.data_parallel + t.offload;
  const double tokens = static_cast<double>(j.training.global_batch * j.training.seq);
  t.tokens_per_gpu_per_second = tokens / static_cast<double>(par.world) / t.seconds;
  t.model_flops_per_token = 3 * ForwardFlopsPerToken(j, m);
  t.mfu = t.model_flops_per_token * t.tokens_per_gpu_per_second / gpu.bf16_flops;
  return t;
}

}  // namespace oomguard
