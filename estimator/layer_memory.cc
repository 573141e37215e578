#include "estimator/layer_memory.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "estimator/context_parallel_attention.h"
#include "estimator/fp8_memory.h"
#include "estimator/moe_dispatch_memory.h"
#include "estimator/reported_count.h"

namespace oomguard {
namespace {

using v1::RecomputeModule;

bool Offloads(const ValidatedJob& j, const char* module) {
  return std::find(j.recompute.offload_modules.begin(), j.recompute.offload_modules.end(),
                   module) != j.recompute.offload_modules.end();
}

// Muon updates 2-D hidden weights only; embeddings, the output layer and
// 1-D parameters (norm weights) stay with Adam. Linear biases are 1-D too
// but are counted with their weight (under 0.1% of a linear's elements).
// A Mamba mixer's in_proj (MambaMixer.__init__ sets use_muon False on it),
// its 3-D conv1d weight and its 1-D dt_bias, A_log and D also stay with Adam.
bool LeftToAdamByMuon(absl::string_view name, absl::string_view type) {
  return absl::StrContains(type, "Norm") || absl::StrContains(type, "Embedding") ||
         name == "output_layer" || name == "in_proj" || name == "conv1d" || name == "ssm";
}

// Adds a module to the block totals and, when a tree is wanted, as a node.
class BlockBuilder {
 public:
  BlockBuilder(BlockCost* cost, v1::ModuleNode* tree) : cost_(cost), tree_(tree) {}

  // A child node of `parent` (null = the block's root) holding `params`
  // elements and `act` bytes. Returns the node so children can hang off it.
  v1::ModuleNode* Module(v1::ModuleNode* parent, const char* name, const char* type,
                         double dense_params, double expert_params, double act) {
    cost_->dense_params += dense_params;
    cost_->expert_params += expert_params;
    if (LeftToAdamByMuon(name, type)) cost_->adam_params += dense_params;
    cost_->act_bytes += act;
    v1::ModuleNode* host = parent ? parent : tree_;
    if (host == nullptr) return nullptr;
    v1::ModuleNode* node = host->add_children();
    node->set_name(name);
    node->set_type(type);
    node->set_parameters(TruncatedCount(dense_params + expert_params));
    node->set_activation_bytes(TruncatedCount(act));
    return node;
  }
  // A grouping node with no parameters or activations of its own.
  v1::ModuleNode* Group(const char* name, const char* type) {
    if (tree_ == nullptr) return nullptr;
    v1::ModuleNode* node = tree_->add_children();
    node->set_name(name);
    node->set_type(type);
    return node;
  }

 private:
  BlockCost* cost_;
  v1::ModuleNode* tree_;
};

// The norm in front of attention or MLP: keeps its input and output (the
// output is the next linear's saved input) and fp32 statistics.
// `separate` = a module of its own (not fused into a TE LayerNormLinear),
// which is what `layernorm` recompute can discard. In an FP8 layer the
// output is kept as the FP8 copies its `fp8_readers` linears save (TE
// _Linear.forward), which discarding the bf16 output does not free.
double NormActivation(const ValidatedJob& j, const MicroBatchShape& s, bool separate,
                      bool offloaded, int fp8_readers = 0) {
  if (offloaded) return 0;
  const double input = s.elt * s.sp_tokens * j.model.hidden;
  double output_elt = s.elt;
  if (fp8_readers > 0 && s.fp8_input > 0) {
    output_elt = separate ? fp8_readers * s.fp8_input : s.fp8_norm_input;
  }
  double output = output_elt * s.sp_tokens * j.model.hidden + s.norm_stats * s.sp_tokens;
  if (separate && j.recompute.HasModule(v1::RECOMPUTE_MODULE_LAYERNORM)) {
    output = fp8_readers > 0 && s.fp8_input > 0 ? output_elt * s.sp_tokens * j.model.hidden : 0;
  }
  return input + output;
}

double NormParams(const ValidatedJob& j, int64_t width) {
  return static_cast<double>(width) * (j.model.layer_norm ? 2 : 1);
}

double DropoutMask(const ValidatedJob& j, const MicroBatchShape& s) {
  return j.model.hidden_dropout > 0 ? s.sp_tokens * j.model.hidden : 0;  // bool mask
}

// Bytes per element of the [b, heads/TP, s/CP, s] scores that unfused
// attention (TE's UnfusedDotProductAttention, Megatron's local
// DotProductAttention) keeps for backward. The softmax keeps its output:
// 16-bit from the fused kernel, fp32 from the framework softmax
// (forward_torch_softmax runs it in fp32). The probabilities @ V bmm keeps
// its input: with attention dropout on, the dropout output (16-bit) beside
// the dropout's bool mask; else the fused softmax's own output, or the
// framework softmax's 16-bit cast. The raw scores and the cast before the
// dropout are not kept (native_dropout keeps only its mask).
double ScoreBytesPerElement(const ValidatedJob& j, double elt) {
  const bool cast = !j.training.fused_softmax && elt < 4;
  const double softmax = j.training.fused_softmax ? elt : 4;
  if (j.model.attention_dropout > 0) return softmax + 1 + elt;
  return softmax + (cast ? elt : 0);
}

// Core attention internals beyond its q/k/v inputs and output: the fp32
// log-sum-exp of flash attention, or the s^2 probabilities of unfused
// attention. Selective `core_attn` recompute discards them.
double CoreAttentionInternals(const ValidatedJob& j, const MicroBatchShape& s,
                              double heads_per_rank) {
  if (j.recompute.HasModule(v1::RECOMPUTE_MODULE_CORE_ATTN)) return 0;
  if (j.training.flash_attention) return 4 * s.full_tokens * heads_per_rank;
  return ScoreElements(j, heads_per_rank) * ScoreBytesPerElement(j, s.elt);
}

// Backward working set of core attention: unfused attention's fp32 score
// gradient (plus the probabilities `core_attn` recompute brings back), or
// flash attention's q/k/v gradients, with all_gather CP its gathered keys
// and values and their gradients (`kv_width_per_rank`: k and v per token).
double AttentionTransient(const ValidatedJob& j, const MicroBatchShape& s, double heads_per_rank,
                          double qkv_width_per_rank, double kv_width_per_rank) {
  if (!j.training.flash_attention) {
    const double recomputed =
        j.recompute.HasModule(v1::RECOMPUTE_MODULE_CORE_ATTN) ? ScoreBytesPerElement(j, s.elt) : 0;
    return (4 + recomputed) * ScoreElements(j, heads_per_rank);
  }
  return 2 * s.elt * s.full_tokens * qkv_width_per_rank +
         CpAllGatherTransientBytes(j, s.elt * s.full_tokens * kv_width_per_rank);
}

// Core attention's output kept again under a2a CP (context_parallel_attention.h).
double AllToAllOutputCopy(const ValidatedJob& j, double out_bytes) {
  return CpAttentionKeepsAllToAllCopies(j) ? out_bytes : 0;
}

// RoPE without the fused kernel keeps cos/sin tables per layer.
double RopeTables(const ValidatedJob& j, const MicroBatchShape& s, int64_t rot_dim) {
  if (!j.model.rope || j.training.rope_fused) return 0;
  return 4.0 * s.elt * (static_cast<double>(j.training.seq) / j.parallelism.cp) * rot_dim;
}

void StandardAttention(const ValidatedJob& j, const MicroBatchShape& s, BlockBuilder& b,
                       BlockCost& c) {
  const double heads = static_cast<double>(j.model.heads) / j.parallelism.tp;
  const double groups = static_cast<double>(j.model.query_groups) / j.parallelism.tp;
  const double d = static_cast<double>(j.model.head_dim);
  const double h = static_cast<double>(j.model.hidden);
  const double qkv_width = (heads + 2 * groups) * d;
  b.Module(nullptr, "input_layernorm", j.training.transformer_engine ? "TENorm(fused)" : "RMSNorm",
           NormParams(j, j.model.hidden), 0,
           NormActivation(j, s, !j.training.transformer_engine, Offloads(j, "attn_norm"), 1));
  v1::ModuleNode* attn = b.Group("self_attention", "SelfAttention");
  double qkv_act = s.elt * s.full_tokens * qkv_width;  // fused QKV output (v is a view)
  if (CpAttentionKeepsAllToAllCopies(j)) {
    // The q, k, v core attention got from the all-to-all, in place of the
    // fused output and the RoPE'd or reshaped copies.
  } else if (j.model.rope) {
    qkv_act += s.elt * s.full_tokens * (heads + groups) * d;  // q, k after RoPE
  } else if (j.model.heads != j.model.query_groups) {
    qkv_act += s.elt * s.full_tokens * heads * d;  // q reshaped out of the GQA layout
  }
  qkv_act += RopeTables(j, s, j.model.head_dim);
  if (Offloads(j, "qkv_linear")) qkv_act = 0;
  b.Module(attn, "linear_qkv", "ColumnParallelLinear",
           h * qkv_width + (j.model.qkv_bias ? qkv_width : 0), 0, qkv_act);
  if (j.model.qk_layernorm) {
    b.Module(attn, "q_layernorm", "RMSNorm", NormParams(j, j.model.head_dim), 0, 0);
    b.Module(attn, "k_layernorm", "RMSNorm", NormParams(j, j.model.head_dim), 0, 0);
  }
  const double out = s.elt * s.full_tokens * heads * d;  // attention output = proj input
  b.Module(attn, "core_attention",
           j.training.flash_attention ? "TEDotProductAttention" : "UnfusedAttention", 0, 0,
           Offloads(j, "core_attn")
               ? 0
               : CoreAttentionInternals(j, s, heads) + AllToAllOutputCopy(j, out) +
                     (Offloads(j, "attn_proj") ? 0 : out));
  // FP8: linear_proj saves an FP8 copy of the attention output, which
  // core attention keeps in bf16 for its own backward.
  b.Module(attn, "linear_proj", "RowParallelLinear", heads * d * h + (j.model.linear_bias ? h : 0),
           0, Offloads(j, "attn_proj") ? 0 : s.fp8_input * s.full_tokens * heads * d);
  b.Module(nullptr, "self_attn_bda", "BiasDropoutAdd", 0, 0, DropoutMask(j, s));
  c.transient_bytes =
      std::max(c.transient_bytes, AttentionTransient(j, s, heads, qkv_width, 2 * groups * d));
}

void LatentAttention(const ValidatedJob& j, const MicroBatchShape& s, BlockBuilder& b,
                     BlockCost& c) {
  const double heads = static_cast<double>(j.model.heads) / j.parallelism.tp;
  const double h = static_cast<double>(j.model.hidden);
  const double ql = static_cast<double>(j.mla.q_lora_rank);
  const double kl = static_cast<double>(j.mla.kv_lora_rank);
  const double dn = static_cast<double>(j.mla.qk_head_dim);
  const double dr = static_cast<double>(j.mla.qk_pos_head_dim);
  const double dv = static_cast<double>(j.mla.v_head_dim);
  const double bias = j.model.linear_bias ? 1 : 0;
  const bool up_recompute = j.recompute.HasModule(v1::RECOMPUTE_MODULE_MLA_UP_PROJ);
  b.Module(nullptr, "input_layernorm", "TENorm", NormParams(j, j.model.hidden), 0,
           NormActivation(j, s, true, Offloads(j, "attn_norm"), 2));  // q and kv down-projections
  v1::ModuleNode* attn = b.Group("self_attention", "MLASelfAttention");
  const bool qkv_offloaded = Offloads(j, "qkv_linear");
  // Compressed (latent) tensors live in the sequence-parallel region. The
  // latent norms are fused into the up-projections (TE LayerNormLinear),
  // which keep the normed latent (its FP8 copy in an FP8 layer) and 1/rms;
  // `mla_up_proj` recompute checkpoints them, keeping only the down
  // outputs, while `layernorm` recompute covers input_layernorm and
  // pre_mlp_layernorm only (Megatron-Core TransformerLayer).
  auto latent_norm = [&](double width) {
    return qkv_offloaded || up_recompute ? 0.0
                                         : s.LinearInput() * s.sp_tokens * width + 4 * s.sp_tokens;
  };
  auto latent = [&](double width, bool has_norm) {
    if (qkv_offloaded) return 0.0;
    double bytes = s.elt * s.sp_tokens * width;  // down-projection output
    if (has_norm) bytes += latent_norm(width);
    return bytes;
  };
  if (j.mla.q_lora_rank > 0) {
    b.Module(attn, "linear_q_down_proj", "Linear", h * ql + bias * ql, 0,
             latent(ql, j.model.qk_layernorm));
    if (j.model.qk_layernorm) b.Module(attn, "q_layernorm", "RMSNorm", ql, 0, 0);
    b.Module(attn, "linear_q_up_proj", "ColumnParallelLinear",
             ql * heads * (dn + dr) + bias * heads * (dn + dr), 0, 0);
  } else {
    b.Module(attn, "linear_q_proj", "ColumnParallelLinear",
             h * heads * (dn + dr) + bias * heads * (dn + dr), 0, 0);
  }
  // kv_down output keeps the RoPE part too; only the latent part is normed.
  double kv_latent = latent(kl + dr, false);
  if (j.model.qk_layernorm) kv_latent += latent_norm(kl);
  b.Module(attn, "linear_kv_down_proj", "Linear", h * (kl + dr) + bias * (kl + dr), 0, kv_latent);
  if (j.model.qk_layernorm) b.Module(attn, "kv_layernorm", "RMSNorm", kl, 0, 0);
  // Up-projection outputs after RoPE and concatenation: the q, k, v that
  // core attention keeps. `mla_up_proj` recompute discards them.
  double up = s.elt * s.full_tokens * heads * (2 * (dn + dr) + dv) +
              RopeTables(j, s, j.mla.qk_pos_head_dim);
  if (j.recompute.HasModule(v1::RECOMPUTE_MODULE_MLA_UP_PROJ) || Offloads(j, "core_attn")) up = 0;
  b.Module(attn, "linear_kv_up_proj", "ColumnParallelLinear",
           kl * heads * (dn + dv) + bias * heads * (dn + dv), 0, up);
  const double out = s.elt * s.full_tokens * heads * dv;
  b.Module(attn, "core_attention",
           j.training.flash_attention ? "TEDotProductAttention" : "UnfusedAttention", 0, 0,
           Offloads(j, "core_attn")
               ? 0
               : CoreAttentionInternals(j, s, heads) + AllToAllOutputCopy(j, out) +
                     (Offloads(j, "attn_proj") ? 0 : out));
  b.Module(attn, "linear_proj", "RowParallelLinear", heads * dv * h + bias * h, 0,
           Offloads(j, "attn_proj") ? 0 : s.fp8_input * s.full_tokens * heads * dv);
  b.Module(nullptr, "self_attn_bda", "BiasDropoutAdd", 0, 0, DropoutMask(j, s));
  c.transient_bytes = std::max(
      c.transient_bytes,
      AttentionTransient(j, s, heads, heads * (2 * (dn + dr) + dv), heads * (dn + dr + dv)));
}

void DenseMlp(const ValidatedJob& j, const MicroBatchShape& s, BlockBuilder& b, BlockCost& c) {
  const double h = static_cast<double>(j.model.hidden);
  const double f = static_cast<double>(j.model.ffn) / j.parallelism.tp;
  const double g = j.model.gated ? 2 : 1, bias = j.model.linear_bias ? 1 : 0;
  const bool mlp_recompute = j.recompute.HasModule(v1::RECOMPUTE_MODULE_MLP);
  // With TE the pre-MLP norm is fused into fc1, so `mlp` recompute covers it.
  double norm = NormActivation(j, s, !j.training.transformer_engine, Offloads(j, "mlp_norm"), 1);
  if (mlp_recompute && j.training.transformer_engine) {
    norm = s.elt * s.sp_tokens * h;  // checkpoint input
  }
  b.Module(nullptr, "pre_mlp_layernorm",
           j.training.transformer_engine ? "TENorm(fused)" : "RMSNorm",
           NormParams(j, j.model.hidden), 0, norm);
  v1::ModuleNode* mlp = b.Group("mlp", "MLP");
  const double fc1 = mlp_recompute ? 0 : s.elt * s.full_tokens * g * f;
  const double act = mlp_recompute ? 0 : s.LinearInput() * s.full_tokens * f;  // fc2's input
  b.Module(mlp, "linear_fc1", "ColumnParallelLinear", h * g * f + bias * g * f, 0, fc1);
  b.Module(mlp, "linear_fc2", "RowParallelLinear", f * h + bias * h, 0, act);
  b.Module(nullptr, "mlp_bda", "BiasDropoutAdd", 0, 0, DropoutMask(j, s));
  c.transient_bytes = std::max(c.transient_bytes, s.elt * s.full_tokens * (g + 1) * f);
}

void MoeMlp(const ValidatedJob& j, const MicroBatchShape& s, BlockBuilder& b, BlockCost& c) {
  const double h = static_cast<double>(j.model.hidden), g = j.model.gated ? 2 : 1;
  const double bias = j.model.linear_bias ? 1 : 0;
  const double k = static_cast<double>(j.moe.topk), fe = static_cast<double>(j.moe.expert_ffn);
  const double local_experts = static_cast<double>(j.moe.experts) / j.parallelism.ep;
  const bool moe_recompute = j.recompute.HasModule(v1::RECOMPUTE_MODULE_MOE);
  // A TENorm of its own: `layernorm` recompute frees its output
  // (CheckpointWithoutOutput releases the storage), the copy the `moe`
  // checkpoint saved as its input included.
  b.Module(nullptr, "pre_mlp_layernorm", "TENorm", NormParams(j, j.model.hidden), 0,
           NormActivation(j, s, /*separate=*/true, Offloads(j, "mlp_norm")));
  v1::ModuleNode* moe = b.Group("mlp", "MoELayer");
  const double router_bytes_per_logit = (j.moe.router_fp32 ? 4 : s.elt) + 4 + 4 + 1;
  b.Module(moe, "router", "TopKRouter", h * static_cast<double>(j.moe.experts), 0,
           moe_recompute
               ? 0
               : s.sp_tokens * static_cast<double>(j.moe.experts) * router_bytes_per_logit);
  // Routed tokens per GPU: top-k copies of the local tokens, gathered over
  // ETP (EP cancels: each GPU receives as many as it sends, when balanced).
  double capacity = 1;
  if (j.moe.capacity_factor > 0) {
    capacity = j.moe.capacity_factor;
    if (!j.moe.pad_to_capacity) capacity = std::min(1.0, capacity);
  }
  // HybridEP's per-rank budget (--moe-expert-rank-capacity-factor):
  // _HybridEPManager.setup_metadata passes factor x top-k x the rank's tokens
  // as num_permuted_tokens, the size the dispatched tokens are allocated at
  // (tokens over it are dropped). The quantization alignment it rounds up
  // to is left out.
  if (j.moe.rank_capacity_factor > 0) capacity = j.moe.rank_capacity_factor;
  // FP8 grouped GEMMs pad each local expert's tokens (fp8_memory.h).
  const double routed_tokens = k * s.sp_tokens * static_cast<double>(j.parallelism.etp) * capacity +
                               (s.fp8_input > 0 ? local_experts * Fp8PaddingTokensPerExpert(j) : 0);
  const double ffn_per_rank = fe / j.parallelism.etp;
  // Tokens (fc1's input: its FP8 copy in an FP8 layer) + fp32 probs.
  double dispatched = s.LinearInput() * routed_tokens * h + 4 * routed_tokens;
  double fc1 = s.elt * routed_tokens * g * ffn_per_rank;
  double act = s.LinearInput() * routed_tokens * ffn_per_rank;  // fc2's input
  if (moe_recompute) dispatched = fc1 = act = 0;
  if (j.recompute.HasModule(v1::RECOMPUTE_MODULE_MOE_ACT) || Offloads(j, "moe_act")) act = 0;
  if (Offloads(j, "expert_fc1")) dispatched = 0;
  v1::ModuleNode* experts =
      b.Module(moe, "experts", j.moe.grouped_gemm ? "TEGroupedMLP" : "SequentialMLP", 0, 0, 0);
  b.Module(experts, "linear_fc1", "GroupedColumnParallelLinear", 0,
           local_experts * (h * g * ffn_per_rank + bias * g * ffn_per_rank), dispatched + fc1);
  b.Module(experts, "linear_fc2", "GroupedRowParallelLinear", 0,
           local_experts * (ffn_per_rank * h + bias * h), act);
  c.routed_act_bytes += dispatched + fc1 + act;
  if (j.moe.shared_ffn > 0) {
    const double fs = static_cast<double>(j.moe.shared_ffn) / j.parallelism.tp;
    const bool drop = moe_recompute || j.recompute.HasModule(v1::RECOMPUTE_MODULE_SHARED_EXPERTS);
    b.Module(moe, "shared_experts", "SharedExpertMLP", h * g * fs + fs * h + bias * (g * fs + h), 0,
             drop ? 0
                  : s.elt * s.full_tokens * g * fs + s.LinearInput() * s.full_tokens * fs +
                        s.fp8_input * s.sp_tokens * h);  // + fc1's FP8 copy of the norm output
  }
  b.Module(nullptr, "mlp_bda", "BiasDropoutAdd", 0, 0, DropoutMask(j, s));
  double experts_backward =
      s.elt * routed_tokens * (g + 1) * ffn_per_rank + s.elt * routed_tokens * h;
  if (j.parallelism.delay_wgrad) {
    // --delay-wgrad-compute: the experts' backward leaves its weight
    // gradients to mlp.backward_dw, which the combined step runs after the
    // forward micro-batch's dispatch (TransformerLayerSchedulePlan.run:
    // mlp.backward, moe_dispatch.forward, mlp.backward_dw; Transformer
    // Engine's GroupedLinear keeps the inputs and output gradients for it):
    // the other micro-batch's dispatched tokens arrive beside them.
    experts_backward += s.LinearInput() * routed_tokens * h + 4 * routed_tokens;
  }
  c.transient_bytes = std::max(c.transient_bytes, experts_backward);
  // The dispatcher's working set (moe_dispatch_memory.h): MoELayer.forward's
  // custom_forward locals and combine copies, in the forward and in the
  // forward CheckpointFunction.backward replays; the allgather combine's
  // reduce-scatter gradient in backward.
  const double sent_tokens = routed_tokens / static_cast<double>(j.parallelism.etp);
  c.transient_bytes = std::max({c.transient_bytes, MoeDispatchForwardBytes(j, s, sent_tokens),
                                MoeCombineBackwardBytes(j, s, sent_tokens)});
}

// A Mamba layer (megatron/core/ssm/mamba_layer.py MambaLayer, its norm
// fused into the mixer's in_proj, a TELayerNormColumnParallelLinear) with
// its MambaMixer (mamba_mixer.py) on the memory-efficient path
// (_ssm_training: mamba_split_conv1d_scan_combined, whose
// MambaSplitConv1dScanCombinedFn saves the packed in_proj output and the
// scan's ungated output, and recomputes the convolution and the chunk
// states in its backward). Widths per TP rank; under CP the mixer works on
// the whole sequence with 1/CP of the heads (mamba_context_parallel.py
// MambaContextParallel), the same elements, but B and C are repeated on
// each CP rank when there are fewer groups per TP rank than CP ranks.
// Selective recompute has no module for it; full recompute is the
// caller's.
void MambaMixerModules(const ValidatedJob& j, const MicroBatchShape& s, BlockBuilder& b,
                       BlockCost& c) {
  const HybridSettings& m = j.hybrid;
  const double h = static_cast<double>(j.model.hidden), tp = s.tp;
  const double cp = static_cast<double>(j.parallelism.cp);
  const double inner = static_cast<double>(m.inner), heads = static_cast<double>(m.heads);
  const double groups = static_cast<double>(m.groups), n = static_cast<double>(m.state_dim);
  // B and C per token on this GPU, over the CP ranks' share of the heads:
  // ngroups_local_tpcp x CP groups (at least CP).
  const double bc_groups = std::max(groups / tp, cp);
  const double in_proj_width = (2 * inner + heads) / tp + 2 * bc_groups * n;  // z x B C dt
  const double conv_width = inner / tp + 2 * bc_groups * n;                   // x B C
  const double in_proj_weight = h * (2 * inner + 2 * groups * n + heads) / tp;
  b.Module(nullptr, "in_proj", "TELayerNormColumnParallelLinear",
           NormParams(j, j.model.hidden) + in_proj_weight, 0,
           NormActivation(j, s, /*separate=*/!j.training.transformer_engine, false, 1));
  v1::ModuleNode* mixer = b.Group("mixer", "MambaMixer");
  const double conv_channels = (inner + 2 * groups * n) / tp;
  b.Module(mixer, "conv1d", "Conv1d",
           conv_channels * static_cast<double>(m.conv_kernel) + conv_channels, 0, 0);
  // dt_bias, A_log, D (one per head); the kernel keeps zxBCdt and out_x.
  b.Module(mixer, "ssm", "MambaSplitConv1dScanCombined", 3 * heads / tp, 0,
           s.elt * s.full_tokens * (in_proj_width + inner / tp));
  // Gated RMSNorm (mamba_ssm RMSNormGated): its input and fp32 1/rms per
  // group.
  b.Module(mixer, "norm", "RMSNormGated", inner / tp, 0,
           s.elt * s.full_tokens * inner / tp + 4 * s.full_tokens * groups / tp);
  b.Module(mixer, "out_proj", "RowParallelLinear", inner * h / tp, 0,
           s.LinearInput() * s.full_tokens * inner / tp);
  b.Module(nullptr, "mamba_bda", "BiasDropoutAdd", 0, 0, DropoutMask(j, s));
  // Backward: the packed gradient dzxBCdt, the recomputed convolution output
  // and its gradient, and the chunk states (b x chunks x heads x P x N,
  // --mamba-training-ssm-states-dtype) with their gradient.
  const double chunks = std::ceil(static_cast<double>(j.training.seq) / m.chunk);
  const double states = static_cast<double>(j.training.micro_batch) * chunks * heads / (tp * cp) *
                        static_cast<double>(m.head_dim) * n;
  c.transient_bytes =
      std::max(c.transient_bytes, s.elt * s.full_tokens * (in_proj_width + 2 * conv_width) +
                                      2 * m.ssm_state_bytes * states);
  if (s.fp8_input > 0) c.fp8_dense_weights += in_proj_weight + inner * h / tp;
}

}  // namespace

MicroBatchShape::MicroBatchShape(const ValidatedJob& j)
    : full_tokens(static_cast<double>(j.training.micro_batch) * j.training.seq / j.parallelism.cp),
      sp_tokens(j.parallelism.sp ? full_tokens / j.parallelism.tp : full_tokens),
      tp(static_cast<double>(j.parallelism.tp)),
      elt(j.precision.param_bytes >= 4 ? 4.0 : 2.0),
      norm_stats(j.model.layer_norm ? 8.0 : 4.0) {}

double ScoreElements(const ValidatedJob& j, double heads_per_rank) {
  return static_cast<double>(j.training.micro_batch) * heads_per_rank *
         (static_cast<double>(j.training.seq) / j.parallelism.cp) *
         static_cast<double>(j.training.seq);
}

void BlockCost::Add(const BlockCost& o, double times) {
  dense_params += o.dense_params * times;
  expert_params += o.expert_params * times;
  adam_params += o.adam_params * times;
  act_bytes += o.act_bytes * times;
  routed_act_bytes += o.routed_act_bytes * times;
  fp8_dense_weights += o.fp8_dense_weights * times;
  fp8_expert_weights += o.fp8_expert_weights * times;
  transient_bytes = std::max(transient_bytes, o.transient_bytes);
  if (times > 0)
    pre_dispatch_act_bytes = std::max(pre_dispatch_act_bytes, o.pre_dispatch_act_bytes);
}

double LayerInputBytes(const ValidatedJob& j) {
  MicroBatchShape s(j);
  return s.elt * s.sp_tokens * j.model.hidden;
}

BlockCost DecoderLayerCost(const ValidatedJob& j, bool moe, v1::ModuleNode* tree,
                           bool kept_in_bf16) {
  BlockCost c;
  MicroBatchShape s(j);
  if (!kept_in_bf16) {
    s.fp8_input = Fp8SavedInputBytesPerElement(j);
    s.fp8_norm_input = Fp8NormLinearSavedInputBytesPerElement(j);
  }
  BlockBuilder b(&c, tree);
  if (j.mla.enabled) {
    LatentAttention(j, s, b, c);
  } else {
    StandardAttention(j, s, b, c);
  }
  const double attention = c.act_bytes;
  if (moe) {
    MoeMlp(j, s, b, c);
    // All but the routed experts and mlp_bda (submodule_combine_forward).
    c.pre_dispatch_act_bytes = c.act_bytes - c.routed_act_bytes - DropoutMask(j, s);
  } else {
    DenseMlp(j, s, b, c);
    c.pre_dispatch_act_bytes = attention;  // A dense layer's MLP node holds the rest.
  }
  if (s.fp8_input > 0) {
    // Every linear of the layer runs in FP8 but the router (TopKRouter's
    // gating GEMM is not a TE module); norms are the layer's Adam-only
    // parameters. Linear biases stay in (under 0.1%).
    const double router = moe ? static_cast<double>(j.model.hidden) * j.moe.experts : 0;
    c.fp8_dense_weights = c.dense_params - c.adam_params - router;
    c.fp8_expert_weights = c.expert_params;
  }
  return c;
}

BlockCost HybridLayerCost(const ValidatedJob& j, HybridLayer layer, v1::ModuleNode* tree) {
  BlockCost c;
  MicroBatchShape s(j);
  s.fp8_input = Fp8SavedInputBytesPerElement(j);
  s.fp8_norm_input = Fp8NormLinearSavedInputBytesPerElement(j);
  BlockBuilder b(&c, tree);
  switch (layer) {
    case HybridLayer::kMamba:
      MambaMixerModules(j, s, b, c);
      return c;
    case HybridLayer::kAttention:
      StandardAttention(j, s, b, c);
      break;
    case HybridLayer::kMlp:
      DenseMlp(j, s, b, c);
      break;
    case HybridLayer::kMoe:
      MoeMlp(j, s, b, c);
      break;
    default:  // ValidateJob refuses the other mixers.
      return c;
  }
  if (s.fp8_input > 0) {
    // As in DecoderLayerCost: every linear in FP8 but the router.
    const double router =
        layer == HybridLayer::kMoe ? static_cast<double>(j.model.hidden) * j.moe.experts : 0;
    c.fp8_dense_weights = c.dense_params - c.adam_params - router;
    c.fp8_expert_weights = c.expert_params;
  }
  return c;
}

BlockCost EmbeddingCost(const ValidatedJob& j, v1::ModuleNode* tree) {
  BlockCost c;
  MicroBatchShape s(j);
  BlockBuilder b(&c, tree);
  b.Module(nullptr, "word_embeddings", "VocabParallelEmbedding",
           static_cast<double>(j.model.padded_vocab) * j.model.hidden / j.parallelism.tp, 0,
           DropoutMask(j, s));
  if (j.model.learned_positions) {
    b.Module(nullptr, "position_embeddings", "Embedding",
             static_cast<double>(j.model.max_positions) * j.model.hidden, 0, 0);
  }
  return c;
}

double OutputWidth(const ValidatedJob& j) {
  if (j.model.value_head) return 1;
  return static_cast<double>(j.model.padded_vocab) / j.parallelism.tp;
}

BlockCost LossCost(const ValidatedJob& j, bool owns_output_weight, v1::ModuleNode* tree) {
  BlockCost c;
  MicroBatchShape s(j);
  BlockBuilder b(&c, tree);
  b.Module(nullptr, "final_layernorm", "TENorm", NormParams(j, j.model.hidden), 0,
           NormActivation(j, s, false, false));
  const double logits = s.full_tokens * OutputWidth(j);
  // --output-logit-dtype: the logits in another dtype than the output
  // layer's input; its backward casts the logits gradient back to the
  // input's dtype (tensor_parallel/layers.py, grad_output.to(input_dtype)).
  const double logit_elt = j.training.logit_bytes > 0 ? j.training.logit_bytes : s.elt;
  const double cast_back = j.training.logit_cast ? s.elt * logits : 0;
  double kept = 4 * logits;  // fp32 softmax kept by the cross entropy
  // The logits gradient in the logits' dtype (the backward of the cross
  // entropy's fp32 copy; none for fp32 logits, which it works in place).
  double transient =
      (logit_elt < 4 || j.training.logit_bytes == 0 ? logit_elt * logits : 0) + cast_back;
  if (j.training.ce_fusion == v1::CROSS_ENTROPY_FUSION_NATIVE) transient += 4 * logits;
  if (j.training.ce_fusion == v1::CROSS_ENTROPY_FUSION_TE) {
    kept = logit_elt * logits;  // gradient written in place into the logits
    transient = cast_back;
  }
  b.Module(nullptr, "output_layer", "ColumnParallelLinear",
           owns_output_weight ? OutputWidth(j) * static_cast<double>(j.model.hidden) : 0, 0, kept);
  c.transient_bytes = transient;
  return c;
}

BlockCost MtpLayerCost(const ValidatedJob& j, v1::ModuleNode* tree) {
  BlockCost c;
  MicroBatchShape s(j);
  BlockBuilder b(&c, tree);
  const double h = static_cast<double>(j.model.hidden);
  b.Module(nullptr, "enorm", "TENorm", NormParams(j, j.model.hidden), 0,
           DropoutMask(j, s) + NormActivation(j, s, true, false));
  b.Module(nullptr, "hnorm", "TENorm", NormParams(j, j.model.hidden), 0,
           NormActivation(j, s, true, false));
  // MTP runs under Megatron's global FP8 context (multi_token_prediction.py
  // get_fp8_context(config)): eh_proj saves an FP8 copy of its input. FP4
  // leaves MTP layers in bf16 (_proj_and_transformer_layer enters no FP4
  // context, and their weights are built outside fp8_model_init).
  const bool bf16 = j.precision.fp4;
  if (!bf16) s.fp8_input = Fp8SavedInputBytesPerElement(j);
  const double eh_weight = 2 * h * h / j.parallelism.tp;
  b.Module(nullptr, "eh_proj", "ColumnParallelLinear",
           eh_weight + (j.model.linear_bias ? h / j.parallelism.tp : 0), 0,
           s.LinearInput() * s.sp_tokens * 2 * h);
  if (s.fp8_input > 0) c.fp8_dense_weights += eh_weight;
  v1::ModuleNode* layer = b.Group("transformer_layer", "TransformerLayer");
  c.Add(DecoderLayerCost(j, j.moe.mtp_layer_is_moe, layer, bf16));
  BlockCost loss = LossCost(j, false, tree);
  c.Add(loss);
  return c;
}

}  // namespace oomguard
