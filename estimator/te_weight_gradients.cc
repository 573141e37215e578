#include "estimator/te_weight_gradients.h"

#include <algorithm>
#include <utility>

#include "absl/container/inlined_vector.h"

namespace oomguard {
namespace {

using Shape = std::pair<int64_t, int64_t>;  // [out, in] of a weight on one GPU.

// The distinct shapes of a rank's weights: a dozen at most (a dense and an
// MoE layer's, MTP's and the output layer's), so a scan beats a tree.
class ShapeSet {
 public:
  void insert(const Shape& s) {
    if (std::find(shapes_.begin(), shapes_.end(), s) == shapes_.end()) shapes_.push_back(s);
  }
  auto begin() const { return shapes_.begin(); }
  auto end() const { return shapes_.end(); }

 private:
  absl::InlinedVector<Shape, 16> shapes_;
};

// From TE 2.3 (commit "Enable reuse of dummy wgrad tensor", TE #1651).
constexpr SoftwareVersion kTeCachedDummyWgrad{2, 3};
// From Megatron-Core 0.14 tensor_parallel/layers.py imports get_dummy_wgrad.
constexpr SoftwareVersion kCoreOutputLayerDummyWgrad{0, 14};

// Bytes per element of the dummy: TE takes the weight's dtype, Megatron's
// layers.py the input's; both are the 16-bit training dtype (fp32 without
// --bf16/--fp16). FP8 weights keep a 16-bit nominal dtype.
double DummyElementBytes(const ValidatedJob& j) { return j.precision.param_bytes >= 4 ? 4 : 2; }

// Shapes of the linear weights of one decoder layer whose backward goes
// through TE's Linear / LayerNormLinear / GroupedLinear (the TE layer spec),
// or, without TE layers, Megatron's ColumnParallelLinear / RowParallelLinear.
// The router (TopKRouter, a plain matmul) and norms take no dummy.
void AddAttentionShapes(const ValidatedJob& j, ShapeSet& shapes) {
  const Parallelism& par = j.parallelism;
  const int64_t h = j.model.hidden;
  if (j.mla.enabled) {
    // MLASelfAttention: the down-projections are duplicated over TP.
    const int64_t heads = j.model.heads / par.tp;
    const int64_t qk = j.mla.qk_head_dim + j.mla.qk_pos_head_dim;
    if (j.mla.q_lora_rank > 0) {
      shapes.insert({j.mla.q_lora_rank, h});
      shapes.insert({heads * qk, j.mla.q_lora_rank});
    } else {
      shapes.insert({heads * qk, h});
    }
    shapes.insert({j.mla.kv_lora_rank + j.mla.qk_pos_head_dim, h});
    shapes.insert({heads * (j.mla.qk_head_dim + j.mla.v_head_dim), j.mla.kv_lora_rank});
    shapes.insert({h, heads * j.mla.v_head_dim});
  } else {
    const int64_t q = j.model.heads * j.model.head_dim / par.tp;
    const int64_t kv = j.model.query_groups * j.model.head_dim / par.tp;
    shapes.insert({q + 2 * kv, h});  // linear_qkv
    shapes.insert({h, q});           // linear_proj
  }
}

void AddMlpShapes(const ValidatedJob& j, bool moe, ShapeSet& shapes) {
  const Parallelism& par = j.parallelism;
  const int64_t h = j.model.hidden, g = j.model.gated ? 2 : 1;
  if (!moe) {
    const int64_t f = j.model.ffn / par.tp;
    shapes.insert({g * f, h});  // linear_fc1
    shapes.insert({h, f});      // linear_fc2
    return;
  }
  // Every local expert's weight has the same shape: one cached dummy.
  const int64_t fe = j.moe.expert_ffn / par.etp;
  shapes.insert({g * fe, h});
  shapes.insert({h, fe});
  if (j.moe.shared_ffn > 0) {
    const int64_t fs = j.moe.shared_ffn / par.tp;
    shapes.insert({g * fs, h});
    shapes.insert({h, fs});
  }
}

void AddLayerShapes(const ValidatedJob& j, bool moe, ShapeSet& shapes) {
  AddAttentionShapes(j, shapes);
  AddMlpShapes(j, moe, shapes);
}

// A hybrid model's layer of kind `layer`: a Mamba mixer's in_proj and
// out_proj (TE linears), or the attention or MLP of the others.
void AddHybridLayerShapes(const ValidatedJob& j, HybridLayer layer, ShapeSet& shapes) {
  const HybridSettings& m = j.hybrid;
  const int64_t tp = j.parallelism.tp, h = j.model.hidden;
  switch (layer) {
    case HybridLayer::kMamba:
      shapes.insert({(2 * m.inner + 2 * m.groups * m.state_dim + m.heads) / tp, h});
      shapes.insert({h, m.inner / tp});
      return;
    case HybridLayer::kAttention:
      AddAttentionShapes(j, shapes);
      return;
    default:
      AddMlpShapes(j, layer == HybridLayer::kMoe, shapes);
  }
}

}  // namespace

double TeDummyWgradBytes(const ValidatedJob& j, int64_t pp_rank) {
  const RuntimeSettings& rt = j.runtime;
  if (!rt.gradient_accumulation_fusion || rt.transformer_engine < kTeCachedDummyWgrad) return 0;
  // Megatron's own linear layers (the output layer; every linear without TE
  // layers) call get_dummy_wgrad from Megatron-Core 0.14.
  const bool core_uses_cache = rt.megatron_core >= kCoreOutputLayerDummyWgrad;
  if (!j.training.transformer_engine && !core_uses_cache) return 0;
  const Parallelism& par = j.parallelism;
  const int64_t h = j.model.hidden;
  ShapeSet shapes;
  bool added[2] = {false, false};  // A dense / an MoE layer's shapes (all alike).
  for (int64_t c = 0; c < par.vpp; ++c) {
    const StageContents& st = j.stages[pp_rank + c * par.pp];
    for (int l = st.first_layer; l < st.first_layer + st.num_layers; ++l) {
      if (j.hybrid.on) {
        AddHybridLayerShapes(j, j.hybrid.layers[l], shapes);
        continue;
      }
      const bool moe = j.moe.is_moe_layer[l];
      if (added[moe]) continue;
      AddLayerShapes(j, moe, shapes);
      added[moe] = true;
    }
    if (st.num_mtp_layers > 0) {
      AddLayerShapes(j, j.moe.mtp_layer_is_moe, shapes);
      shapes.insert({h / par.tp, 2 * h});  // MultiTokenPredictionLayer.eh_proj
    }
    // The output layer (a Megatron ColumnParallelLinear, also when it
    // borrows the tied embedding weight) runs on the loss and MTP stages; a
    // value head is a plain torch linear (ModelShape.value_head), which has none.
    if (core_uses_cache && !j.model.value_head && (st.has_loss || st.num_mtp_layers > 0)) {
      shapes.insert({j.model.padded_vocab / par.tp, h});
    }
  }
  double elements = 0;
  for (const auto& [rows, cols] : shapes) {
    elements += static_cast<double>(rows) * static_cast<double>(cols);
  }
  return elements * DummyElementBytes(j);
}

double EmbeddingWgradTransientBytes(const ValidatedJob& j) {
  return static_cast<double>(j.model.padded_vocab) / j.parallelism.tp *
         static_cast<double>(j.model.hidden) * DummyElementBytes(j);
}

}  // namespace oomguard
