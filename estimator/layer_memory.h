// Per-module parameters and activation memory of the building blocks of a
// Megatron-Core GPT model on one GPU: a decoder layer (dense or MoE MLP,
// standard or latent attention), the embedding, the final norm + output
// layer + loss, and an MTP layer.
//
// Activations are the tensors Megatron-Core + Transformer Engine keep for
// backward, per micro-batch, after TP/SP/CP splitting and after selective
// recompute and activation offload have removed what they discard.
#ifndef OOMGUARD_ESTIMATOR_LAYER_MEMORY_H_
#define OOMGUARD_ESTIMATOR_LAYER_MEMORY_H_

#include "estimator/validated_job.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {

// Token counts and widths of one micro-batch on one GPU.
struct MicroBatchShape {
  explicit MicroBatchShape(const ValidatedJob& j);
  double full_tokens;  // b * s / CP: tokens inside the tensor-parallel region.
  double sp_tokens;    // Tokens in the sequence-parallel region (= full without SP).
  double tp;
  double elt;         // Bytes per activation element (bf16/fp16: 2).
  double norm_stats;  // Bytes per token of saved norm statistics (fp32).
  // Bytes per element of the input an FP8 or NVFP4 linear saves (one
  // quantized copy per linear, estimator/fp8_memory.h); 0 outside FP8 and
  // NVFP4 layers.
  double fp8_input = 0;
  // Bytes per element of the norm output a fused TE LayerNormLinear saves
  // in such a layer (Fp8NormLinearSavedInputBytesPerElement).
  double fp8_norm_input = 0;
  // Bytes per element of a tensor that `readers` linears save as their
  // input: their FP8 copies in an FP8 layer, else the one bf16 tensor.
  double LinearInput(int readers = 1) const { return fp8_input > 0 ? readers * fp8_input : elt; }
};

// Elements of one micro-batch's [b, heads, s/CP, s] attention scores.
double ScoreElements(const ValidatedJob& j, double heads_per_rank);

struct BlockCost {
  double dense_params = 0;   // Elements replicated over DP (sharded over DP x CP).
  double expert_params = 0;  // Routed-expert elements (sharded over expert DP).
  // Of dense_params, the embeddings, output layer and norms: what Muon
  // leaves to Adam (Megatron's get_megatron_muon_optimizer).
  double adam_params = 0;
  // Bytes kept for backward per micro-batch.
  double act_bytes = 0;
  // Of act_bytes, the routed-expert tokens and their FFN intermediates
  // (what grows with routing imbalance).
  double routed_act_bytes = 0;
  // Working memory of the block's backward on top of what it keeps
  // (activation gradients, weight-gradient temporaries).
  double transient_bytes = 0;
  // Of act_bytes, what a decoder layer's first schedule node keeps under
  // --overlap-moe-expert-parallel-comm (pre_dispatch_computation, built by
  // build_transformer_layer_callables in megatron/core/models/gpt/
  // fine_grained_callables.py): attention, and in an MoE layer also the
  // pre-MLP norm, the shared experts, the router and the dispatch
  // preprocess; the routed experts and the dense MLP are later nodes. In a
  // combined 1F1B step the forward micro-batch holds it beside the backward
  // micro-batch's layers (pipeline_schedule.h). The largest over the blocks
  // added.
  double pre_dispatch_act_bytes = 0;
  // Of the parameters, the weights of linears running in FP8 (dense and
  // routed-expert): what TE keeps FP8 weight copies of (fp8_memory.h).
  double fp8_dense_weights = 0;
  double fp8_expert_weights = 0;

  double params() const { return dense_params + expert_params; }
  void Add(const BlockCost& o, double times = 1);
};

// One decoder layer. `moe` picks the MLP kind. `tree` (optional) receives
// the layer's module nodes as children. In an FP8 job the layer runs in FP8
// unless `kept_in_bf16` (--first-last-layers-bf16, fp8_memory.h).
BlockCost DecoderLayerCost(const ValidatedJob& j, bool moe, v1::ModuleNode* tree,
                           bool kept_in_bf16 = false);

// One layer of a hybrid model (HybridSettings): a Mamba layer (its in_proj
// with the fused pre-norm, conv1d, dt_bias / A_log / D, the gated RMSNorm,
// out_proj), or a layer with only self-attention, only a dense MLP or only
// an MoE MLP, each with its own pre-norm (hybrid_layer_specs.py
// hybrid_stack_spec). `tree` (optional) receives the module nodes.
BlockCost HybridLayerCost(const ValidatedJob& j, HybridLayer layer, v1::ModuleNode* tree);

// Word (and position) embedding of the first stage.
BlockCost EmbeddingCost(const ValidatedJob& j, v1::ModuleNode* tree);

// Columns of the output layer on one GPU, the logits per token: the padded
// vocabulary over TP, or 1 for a value head (ModelShape.value_head: veRL's
// LinearForLastLayer is a plain hidden x 1 linear, not split by TP).
double OutputWidth(const ValidatedJob& j);

// Final norm + output layer + cross-entropy of the last stage. The output
// weight is counted when the stage owns one (untied, or tied with PP > 1).
BlockCost LossCost(const ValidatedJob& j, bool owns_output_weight, v1::ModuleNode* tree);

// One MTP layer: norms, eh_proj, a decoder layer, its final norm and a
// second output/loss pass (sharing the output weight).
BlockCost MtpLayerCost(const ValidatedJob& j, v1::ModuleNode* tree);

// Bytes of the checkpoint a fully recomputed group of layers keeps: the
// group's input hidden states.
double LayerInputBytes(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_LAYER_MEMORY_H_
