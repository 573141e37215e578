#include "estimator/estimator.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "estimator/checkpointed_attention_mask.h"
#include "estimator/cuda_graph_memory.h"
#include "estimator/fp8_memory.h"
#include "estimator/fsdp_memory.h"
#include "estimator/layer_memory.h"
#include "estimator/module_tree.h"
#include "estimator/moe_dispatch_memory.h"
#include "estimator/overheads.h"
#include "estimator/peak_bound.h"
#include "estimator/pipeline_schedule.h"
#include "estimator/reported_count.h"
#include "estimator/te_weight_gradients.h"
#include "estimator/unmodelled_settings.h"
#include "estimator/validated_job.h"

namespace oomguard {
namespace {

// Costs of the few distinct blocks, computed once per estimate.
struct BlockCosts {
  BlockCost dense_layer, moe_layer, embedding, mtp;
  // The layers --first-last-layers-bf16 keeps out of FP8 (fp8_memory.h).
  BlockCost dense_layer_bf16, moe_layer_bf16;
  // A hybrid model's Mamba, attention-only and MLP-only layers (its MoE
  // layers are moe_layer, MoE-only; dense_layer is unused).
  BlockCost mamba_layer, attention_layer, mlp_layer;
  double layer_input = 0;
};

// One model chunk's parameters and per-micro-batch activations.
struct ChunkCost {
  BlockCost total;       // params, act_bytes after full recompute
  double transient = 0;  // backward working set while this chunk runs
  double layer_act = 0;  // decoder-layer part of act_bytes
  double routed_act = 0;
  double pre_dispatch_act = 0;  // the largest pre_dispatch_act_bytes of its layers
  double layer_transient = 0;   // the decoder layers' part of transient
};

// The cost of a hybrid model's layer of kind `layer`.
const BlockCost& HybridBlock(const BlockCosts& b, HybridLayer layer) {
  switch (layer) {
    case HybridLayer::kMamba:
      return b.mamba_layer;
    case HybridLayer::kAttention:
      return b.attention_layer;
    case HybridLayer::kMoe:
      return b.moe_layer;
    default:  // MLP; ValidateJob refuses the other mixers.
      return b.mlp_layer;
  }
}

// The cost of decoder layer `l`: dense or MoE, in FP8 or kept in bf16; a
// hybrid model's by its kind.
const BlockCost& LayerCost(const ValidatedJob& j, const BlockCosts& b, int64_t l) {
  if (j.hybrid.on) return HybridBlock(b, j.hybrid.layers[l]);
  const bool bf16 = KeptInBf16(j, l);
  if (j.moe.is_moe_layer[l]) return bf16 ? b.moe_layer_bf16 : b.moe_layer;
  return bf16 ? b.dense_layer_bf16 : b.dense_layer;
}

ChunkCost CostOfChunk(const ValidatedJob& j, const StageContents& st, const BlockCosts& b) {
  ChunkCost c;
  const int moe_layers = st.num_layers - st.num_dense_layers;
  int bf16_dense = 0, bf16_moe = 0;  // Layers of an FP8 job kept in bf16.
  for (int l = st.first_layer; l < st.first_layer + st.num_layers; ++l) {
    if (KeptInBf16(j, l)) ++(j.moe.is_moe_layer[l] ? bf16_moe : bf16_dense);
  }
  BlockCost layers;
  double per_layer_full = 0;  // The largest activations of one of its layers.
  if (j.hybrid.on) {
    // Only the kinds the chunk has (their backward working sets included).
    const int mlp_layers = st.num_dense_layers - st.num_mamba_layers - st.num_attention_layers;
    for (const auto& [block, count] :
         {std::pair{&b.mamba_layer, st.num_mamba_layers},
          std::pair{&b.attention_layer, st.num_attention_layers},
          std::pair{&b.mlp_layer, mlp_layers}, std::pair{&b.moe_layer, moe_layers}}) {
      if (count == 0) continue;
      layers.Add(*block, count);
      per_layer_full = std::max(per_layer_full, block->act_bytes);
    }
  } else {
    layers.Add(b.dense_layer, st.num_dense_layers - bf16_dense);
    layers.Add(b.moe_layer, moe_layers - bf16_moe);
    layers.Add(b.dense_layer_bf16, bf16_dense);
    layers.Add(b.moe_layer_bf16, bf16_moe);
    per_layer_full = std::max({st.num_dense_layers ? b.dense_layer.act_bytes : 0.0,
                               moe_layers ? b.moe_layer.act_bytes : 0.0,
                               bf16_dense ? b.dense_layer_bf16.act_bytes : 0.0,
                               bf16_moe ? b.moe_layer_bf16.act_bytes : 0.0});
  }
  double layer_act = layers.act_bytes;
  double remat = 0;   // rematerialised activations during a recomputed backward
  double reload = 0;  // a layer's offloaded activations brought back for its backward
  const int n = st.num_layers;
  const bool full = j.recompute.granularity == v1::RECOMPUTE_GRANULARITY_FULL && n > 0;
  const bool uniform = full && j.recompute.method == v1::RECOMPUTE_METHOD_UNIFORM;
  const bool block = full && !uniform;
  const int64_t k = j.recompute.num_layers;
  if (uniform) {
    // Each group of k layers keeps its input only.
    const int64_t groups = (n + k - 1) / k;
    layer_act = static_cast<double>(groups) * b.layer_input;
    remat = static_cast<double>(std::min<int64_t>(k, n)) * per_layer_full;
  }
  // Layer by layer where which layers matters: the block method recomputes
  // the chunk's first recompute_num_layers layers (transformer_block.py
  // _checkpointed_forward, method "block"), each keeping only its input;
  // CPU offloading sends the activations of the chunk's first
  // --cpu-offloading-num-layers layers to the host (Transformer Engine's
  // cpu_offload.py, DefaultOffloadSynchronizer: layers 0 .. N-1 of a
  // forward, the last layer never; activation_cpu_offload.h) and brings each
  // back for its backward, which is counted as one reloaded layer beside the
  // kept ones (TE's default synchronizer promises (layers - N) layers; the one
  // more covers its v1 path, NVTE_CPU_OFFLOAD_V1, which oomguard does not
  // read). The layers kept are the chunk's last
  // ones, counted exactly (a mean over the chunk's mix of dense and MoE
  // layers would change with that mix, not with what is kept). Megatron-Core
  // refuses offloading with any recompute (TransformerConfig.__post_init__,
  // "CPU offloading does not work when activation recomputation is
  // enabled"; validation notes it): such a job keeps its recompute's memory.
  const bool offloads = j.recompute.cpu_offloading_layers > 0 &&
                        j.recompute.granularity == v1::RECOMPUTE_GRANULARITY_NONE && n > 1;
  if (block || offloads) {
    const int64_t recomputed = block ? std::min<int64_t>(k, n) : 0;
    const int64_t offloaded =
        offloads ? std::min<int64_t>(j.recompute.cpu_offloading_layers, n - 1) : 0;
    if (recomputed > 0) remat = per_layer_full;
    layer_act = 0;
    for (int64_t i = 0; i < n; ++i) {
      // What layer i keeps for its backward.
      const double held =
          i < recomputed ? b.layer_input : LayerCost(j, b, st.first_layer + i).act_bytes;
      if (i < offloaded) {
        reload = std::max(reload, held);
      } else {
        layer_act += held;
      }
    }
  }
  c.total.dense_params = layers.dense_params;
  c.total.expert_params = layers.expert_params;
  c.total.adam_params = layers.adam_params;
  c.total.fp8_dense_weights = layers.fp8_dense_weights;
  c.total.fp8_expert_weights = layers.fp8_expert_weights;
  c.total.act_bytes = layer_act;
  // The data loader's attention mask, saved by every checkpointed group
  // (checkpointed_attention_mask.h).
  c.total.act_bytes += CheckpointedAttentionMaskBytes(j, st);
  c.layer_act = layer_act;
  c.pre_dispatch_act = layers.pre_dispatch_act_bytes;
  c.layer_transient = layers.transient_bytes;
  c.routed_act =
      j.recompute.granularity == v1::RECOMPUTE_GRANULARITY_FULL ? 0 : layers.routed_act_bytes;
  c.transient = std::max(layers.transient_bytes + remat, 0.0) + reload;
  if (st.has_embedding) c.total.Add(b.embedding);
  const bool builds_embedding = st.has_embedding || st.num_mtp_layers > 0;
  if (builds_embedding) c.transient = std::max(c.transient, EmbeddingWgradTransientBytes(j));
  if (st.num_mtp_layers > 0) {
    if (!st.has_embedding) {
      c.total.dense_params += b.embedding.params();
      c.total.adam_params += b.embedding.adam_params;
    }
    BlockCost mtp = b.mtp;
    if (j.recompute.granularity == v1::RECOMPUTE_GRANULARITY_FULL) {
      const BlockCost& inner = j.moe.mtp_layer_is_moe ? b.moe_layer : b.dense_layer;
      mtp.act_bytes -= inner.act_bytes - b.layer_input;
      c.transient = std::max(c.transient, inner.act_bytes + inner.transient_bytes);
    }
    c.total.Add(mtp, st.num_mtp_layers);
    c.transient = std::max(c.transient, mtp.transient_bytes);
    if (j.recompute.granularity != v1::RECOMPUTE_GRANULARITY_FULL) {
      c.routed_act +=
          (j.moe.mtp_layer_is_moe ? b.moe_layer.routed_act_bytes : 0) * st.num_mtp_layers;
    }
  }
  if (st.has_loss) {
    const bool owns_output = !j.model.tied_embeddings || !builds_embedding;
    BlockCost loss = LossCost(j, owns_output, nullptr);
    c.total.Add(loss);
    c.transient = std::max(c.transient, loss.transient_bytes);
  }
  return c;
}

// How many GPUs share the optimizer state of one dense and one expert
// element: each distributed-optimizer instance shards over its part of the
// data-parallel group; FSDP as its strategy says (fsdp_memory.h).
std::pair<double, double> OptimizerShards(const ValidatedJob& j) {
  if (j.fsdp.on()) {
    const FsdpShards shards = FsdpStateShards(j);
    return {shards.dense.optimizer, shards.expert.optimizer};
  }
  if (!j.precision.distributed_optimizer) return {1, 1};
  const Parallelism& par = j.parallelism;
  const double instances = static_cast<double>(j.precision.optimizer_instances);
  return {static_cast<double>(par.dp * par.cp) / instances,
          static_cast<double>(par.edp) / instances};
}

// `adam` of the `dense` elements take Adam's moments under Muon;
// `fp8_dense` and `fp8_expert` are weights of FP8 linears (fp8_memory.h);
// `te_dummy_wgrad` is TeDummyWgradBytes of the rank.
void FillStatic(const ValidatedJob& j, double dense, double adam, double expert, double fp8_dense,
                double fp8_expert, double te_dummy_wgrad, v1::StaticBytes* s) {
  const auto [r_dense, r_expert] = OptimizerShards(j);
  const PrecisionSettings& precision = j.precision;
  // With --optimizer-cpu-offload the master copy and moments of the
  // offloaded fraction of the elements live on the host, beside their pinned
  // gradient copy (ResolveOptimizerState).
  const double f = precision.offload_fraction;
  const double state = precision.master_bytes + precision.moment_bytes;
  const double gpu_opt = state * (1 - f);
  const double host_opt = (state + precision.offloaded_host_extra_bytes) * f;
  const double extra_moments = adam * (precision.adam_moment_bytes - precision.moment_bytes);
  const double fp8_param = Fp8LinearParamBytesPerElement(j);
  // The weights and gradients each rank keeps a share of under FSDP.
  const FsdpShards shards = FsdpStateShards(j);
  s->set_dense_param_bytes(RoundedCount(
      ((dense - fp8_dense) * precision.param_bytes + fp8_dense * fp8_param) / shards.dense.params));
  s->set_dense_grad_bytes(RoundedCount(dense * precision.grad_bytes / shards.dense.grads));
  s->set_dense_optimizer_bytes(RoundedCount((dense * gpu_opt + extra_moments * (1 - f)) / r_dense));
  s->set_expert_param_bytes(
      RoundedCount(((expert - fp8_expert) * precision.param_bytes + fp8_expert * fp8_param) /
                   shards.expert.params));
  s->set_expert_grad_bytes(RoundedCount(expert * precision.grad_bytes / shards.expert.grads));
  s->set_expert_optimizer_bytes(RoundedCount(expert * gpu_opt / r_expert));
  s->set_host_optimizer_bytes(RoundedCount((dense * host_opt + extra_moments * f) / r_dense +
                                           expert * host_opt / r_expert));
  s->set_te_dummy_wgrad_bytes(RoundedCount(te_dummy_wgrad));
  uint64_t total = 0;
  for (const uint64_t part :
       {s->dense_param_bytes(), s->dense_grad_bytes(), s->dense_optimizer_bytes(),
        s->expert_param_bytes(), s->expert_grad_bytes(), s->expert_optimizer_bytes(),
        s->te_dummy_wgrad_bytes()}) {
    total = AddCounts(total, part);
  }
  s->set_total_bytes(total);
}

// The fp32 gradient copies the optimizer step makes of the 16-bit gradients
// of the elements it updates on the GPU (ResolveOptimizerState).
double OptimizerStepBytes(const ValidatedJob& j, double dense, double expert) {
  const PrecisionSettings& precision = j.precision;
  if (precision.step_grad_copy_bytes == 0) return 0;
  const auto [r_dense, r_expert] = OptimizerShards(j);
  return precision.step_grad_copy_bytes * (1 - precision.offload_fraction) *
         (dense / r_dense + expert / r_expert);
}

// torch's foreach AdamW temporary during the step (torch/optim/adamw.py
// _multi_tensor_adamw: the sqrt of exp_avg_sq, one fp32 tensor per
// parameter of the group): 4 bytes per Adam-updated element of the rank's
// shard (under Muon, the `adam` part of the dense elements). FusedAdam
// makes none.
double OptimizerStepTemporaryBytes(const ValidatedJob& j, double dense, double adam,
                                   double expert) {
  if (!j.runtime.torch_adam) return 0;
  const auto [r_dense, r_expert] = OptimizerShards(j);
  if (j.precision.optimizer == v1::OPTIMIZER_ADAM) return 4 * (dense / r_dense + expert / r_expert);
  if (j.precision.optimizer == v1::OPTIMIZER_MUON) return 4 * adam / r_dense;
  return 0;
}

// Chunk `c` (virtual stage `st`) as FSDP sees it: its decoder and MTP
// layers are the units (Megatron-FSDP's fsdp_unit_modules: TransformerLayer,
// MoETransformerLayer; an MTP layer counted as one), the rest the embedding,
// output layer and final norm.
FsdpChunk FsdpChunkOf(const ValidatedJob& j, const StageContents& st, const BlockCosts& b,
                      const ChunkCost& c) {
  FsdpChunk out;
  const int moe_layers = st.num_layers - st.num_dense_layers;
  const double fp8 = Fp8LinearParamBytesPerElement(j), p = j.precision.param_bytes;
  const auto consider = [&out, fp8, p](const BlockCost& unit, int count) {
    if (count <= 0) return;
    out.units += count;
    out.units_elements += count * unit.params();
    if (unit.params() <= out.unit_elements) return;
    const double fp8_weights = unit.fp8_dense_weights + unit.fp8_expert_weights;
    out.unit_elements = unit.params();
    out.unit_weight_bytes = (unit.params() - fp8_weights) * p + fp8_weights * fp8;
  };
  consider(b.dense_layer, st.num_dense_layers);
  consider(b.moe_layer, moe_layers);
  consider(b.mtp, st.num_mtp_layers);
  const bool embedding = st.has_embedding || st.num_mtp_layers > 0;
  out.embedding_elements = embedding ? b.embedding.params() : 0;
  out.other_elements =
      std::max(0.0, c.total.params() - out.units_elements - out.embedding_elements);
  return out;
}

// The costs of the few distinct blocks of `j`.
BlockCosts CostsOfBlocks(const ValidatedJob& j) {
  BlockCosts b;
  if (j.hybrid.on) {
    b.mamba_layer = HybridLayerCost(j, HybridLayer::kMamba, nullptr);
    b.attention_layer = HybridLayerCost(j, HybridLayer::kAttention, nullptr);
    b.mlp_layer = HybridLayerCost(j, HybridLayer::kMlp, nullptr);
    if (j.is_moe_model()) b.moe_layer = HybridLayerCost(j, HybridLayer::kMoe, nullptr);
    b.embedding = EmbeddingCost(j, nullptr);
    b.layer_input = LayerInputBytes(j);
    return b;  // ValidateJob refuses a hybrid model's MTP and bf16 layers.
  }
  b.dense_layer = DecoderLayerCost(j, false, nullptr);
  if (j.is_moe_model()) b.moe_layer = DecoderLayerCost(j, true, nullptr);
  if (j.precision.bf16_layers_at_start + j.precision.bf16_layers_at_end > 0) {
    b.dense_layer_bf16 = DecoderLayerCost(j, false, nullptr, /*kept_in_bf16=*/true);
    if (j.is_moe_model()) b.moe_layer_bf16 = DecoderLayerCost(j, true, nullptr, true);
  }
  b.embedding = EmbeddingCost(j, nullptr);
  if (j.model.mtp_layers > 0) b.mtp = MtpLayerCost(j, nullptr);
  b.layer_input = LayerInputBytes(j);
  return b;
}

// One PP rank's memory: what the report and the peaks-only path both read.
struct RankTotals {
  double dense = 0, adam = 0, expert = 0, transient = 0;
  std::vector<ChunkCost> chunks;       // Per model chunk.
  std::vector<double> chunk_act;       // Per model chunk: activation bytes of one micro-batch.
  std::vector<FsdpChunk> fsdp_chunks;  // Per model chunk, under FSDP.
  // Of the parameters, the weights of FP8 linears.
  double fp8_dense = 0, fp8_expert = 0;
  InFlight in_flight;
  RankMemory mem;
  v1::StaticBytes static_bytes;
  uint64_t activation_bytes = 0, transient_bytes = 0, optimizer_step_bytes = 0;
  uint64_t optimizer_step_temporary_bytes = 0;
  uint64_t peak_allocated_bytes = 0, peak_device_bytes = 0;
  uint64_t peak_allocated_upper_bytes = 0, peak_device_upper_bytes = 0;
  // Whether a count of the rank (its module tree aside) reached the limit of
  // reported_count.h: RankReport.exceeds_limit.
  bool exceeds_limit = false;
};

// Whether a count `t` reports (the rank's, its static split's, its
// overheads' through the peaks they add to, its chunks') reached the limit.
bool HasCappedCount(const RankTotals& t) {
  const v1::StaticBytes& s = t.static_bytes;
  const uint64_t dense = RoundedCount(t.dense), expert = RoundedCount(t.expert);
  for (const uint64_t count : {dense,
                               expert,
                               AddCounts(dense, expert),
                               s.dense_param_bytes(),
                               s.dense_grad_bytes(),
                               s.dense_optimizer_bytes(),
                               s.expert_param_bytes(),
                               s.expert_grad_bytes(),
                               s.expert_optimizer_bytes(),
                               s.host_optimizer_bytes(),
                               s.te_dummy_wgrad_bytes(),
                               s.total_bytes(),
                               t.activation_bytes,
                               t.transient_bytes,
                               t.optimizer_step_bytes,
                               t.optimizer_step_temporary_bytes,
                               t.peak_allocated_bytes,
                               t.peak_device_bytes,
                               t.peak_allocated_upper_bytes,
                               t.peak_device_upper_bytes}) {
    if (IsCapped(count)) return true;
  }
  for (size_t c = 0; c < t.chunks.size(); ++c) {
    const double count = static_cast<double>(t.in_flight.per_chunk[c]);
    if (IsCapped(RoundedCount(t.chunks[c].total.params())) ||
        IsCapped(RoundedCount(t.chunk_act[c])) || IsCapped(RoundedCount(count * t.chunk_act[c]))) {
      return true;
    }
  }
  return false;
}

// Where a rank's itemised overheads and uncertainties go (null: nowhere),
// and whether they carry their basis.
struct RankItems {
  google::protobuf::RepeatedPtrField<v1::Overhead>* overheads = nullptr;
  google::protobuf::RepeatedPtrField<v1::Uncertainty>* uncertainties = nullptr;
  bool with_basis = false;
};

// Fills `t` (its vectors reused between ranks) with PP rank `r`'s memory,
// its upper bounds at the coverage whose normal quantile is `z`; itemises
// the rank's overheads and uncertainties into `items`. Stops with the
// deadline's error once it passes.
absl::Status ComputeRank(const ValidatedJob& j, const BlockCosts& b, int64_t r, double z,
                         const Deadline& deadline, const RankItems& items, RankTotals& t) {
  if (deadline.Passed()) {
    return deadline.Check(absl::StrCat("estimating pipeline rank ", r, " of ", j.parallelism.pp));
  }
  const Parallelism& par = j.parallelism;
  t.chunks.resize(par.vpp);
  t.chunk_act.resize(par.vpp);
  t.dense = t.adam = t.expert = t.transient = t.fp8_dense = t.fp8_expert = 0;
  for (int64_t c = 0; c < par.vpp; ++c) {
    t.chunks[c] = CostOfChunk(j, j.stages[r + c * par.pp], b);
    t.chunk_act[c] = t.chunks[c].total.act_bytes;
    t.dense += t.chunks[c].total.dense_params;
    t.adam += t.chunks[c].total.adam_params;
    t.expert += t.chunks[c].total.expert_params;
    t.fp8_dense += t.chunks[c].total.fp8_dense_weights;
    t.fp8_expert += t.chunks[c].total.fp8_expert_weights;
    t.transient = std::max(t.transient, t.chunks[c].transient);
  }
  OOMGUARD_ASSIGN_OR_RETURN(t.in_flight, PeakInFlight(j, r, t.chunk_act, deadline));
  if (t.in_flight.combined_steps) {
    // A combined 1F1B step of the EP overlap: the forward's first node of a
    // layer runs before the backward frees the layer it is paired with
    // (TransformerLayerSchedulePlan.run: pre_dispatch_computation.forward
    // before mlp.backward), beside the backward layer's working set. The
    // loss's backward runs before the layers (post_process.backward), beside
    // the forward's embedding only.
    double layer = 0, working = 0;
    for (const ChunkCost& c : t.chunks) {
      layer = std::max(layer, c.pre_dispatch_act);
      working = std::max(working, c.layer_transient);
    }
    t.transient = std::max(t.transient, working + layer);
  }
  t.mem = RankMemory();
  t.mem.in_embedding_group = r == 0 || r == par.pp - 1;
  t.mem.held_activation_bytes = t.in_flight.held_bytes;
  t.mem.transient_bytes = t.transient;
  for (int64_t c = 0; c < par.vpp; ++c) {
    const double count = static_cast<double>(t.in_flight.per_chunk[c]);
    t.mem.has_output_layer = t.mem.has_output_layer || j.stages[r + c * par.pp].has_loss;
    t.mem.recomputed_moe_layers += RecomputedMoeLayers(j, j.stages[r + c * par.pp]);
    t.mem.routed_activation_bytes += count * t.chunks[c].routed_act;
    t.mem.layer_activation_bytes += count * t.chunks[c].layer_act;
    const StageContents& st = j.stages[r + c * par.pp];
    t.mem.cuda_graph_buffer_bytes += CudaGraphChunkBufferBytes(j, st, count);
    t.mem.has_graphed_layers = t.mem.has_graphed_layers || HasGraphedLayers(j, st);
  }
  if (t.mem.has_graphed_layers) t.mem.cuda_graph_buffer_bytes += CudaGraphGradOutputBytes(j);
  t.mem.fp8_weight_cache_bytes = (t.fp8_dense + t.fp8_expert) * Fp8WeightCacheBytesPerElement(j);
  if (j.fsdp.on()) {
    t.fsdp_chunks.resize(par.vpp);
    for (int64_t c = 0; c < par.vpp; ++c) {
      t.fsdp_chunks[c] = FsdpChunkOf(j, j.stages[r + c * par.pp], b, t.chunks[c]);
    }
    t.mem.fsdp = FsdpBufferBytes(j, t.fsdp_chunks);
  }
  FillStatic(j, t.dense, t.adam, t.expert, t.fp8_dense, t.fp8_expert, TeDummyWgradBytes(j, r),
             &t.static_bytes);
  t.activation_bytes = RoundedCount(t.in_flight.held_bytes);
  t.transient_bytes = RoundedCount(t.transient);
  t.optimizer_step_bytes = RoundedCount(OptimizerStepBytes(j, t.dense, t.expert));
  t.optimizer_step_temporary_bytes =
      RoundedCount(OptimizerStepTemporaryBytes(j, t.dense, t.adam, t.expert));
  UncertaintyList spread(items.uncertainties, items.with_basis);
  AddModelUncertainties(
      ModelTerms{.static_bytes = static_cast<double>(t.static_bytes.total_bytes()),
                 .held_activation_bytes = t.in_flight.held_bytes,
                 .transient_bytes = t.transient},
      spread);
  // The optimizer step's peak on top of static memory.
  const uint64_t step = AddCounts(t.optimizer_step_bytes, t.optimizer_step_temporary_bytes);
  t.mem.optimizer_step_bytes = static_cast<double>(step);
  const OverheadSums sums = AddOverheads(j, t.mem, items.with_basis, items.overheads, spread);
  t.peak_allocated_bytes =
      AddCounts(AddCounts(t.static_bytes.total_bytes(),
                          std::max(AddCounts(t.activation_bytes, t.transient_bytes), step)),
                sums.in_allocated);
  t.peak_device_bytes = AddCounts(t.peak_allocated_bytes, sums.device_only);
  const PeakVariance& v = spread.variance();
  t.peak_allocated_upper_bytes = UpperBound(t.peak_allocated_bytes, v.in_allocated, z);
  t.peak_device_upper_bytes = UpperBound(t.peak_device_bytes, v.in_allocated + v.device_only, z);
  t.exceeds_limit = HasCappedCount(t);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<v1::EstimateReport> Estimate(const v1::JobSpec& job,
                                            const EstimateOptions& options) {
  v1::EstimateReport report;
  // What the estimate leaves out comes first.
  std::vector<std::string> notes = UnmodelledSettingNotes(job);
  OOMGUARD_RETURN_IF_ERROR(
      ValidateUpperBoundCoverage(options.upper_bound_coverage, "upper_bound_coverage"));
  OOMGUARD_ASSIGN_OR_RETURN(const ValidatedJob j, ValidateJob(job, &notes));
  const Parallelism& par = j.parallelism;
  const double z = CoverageQuantile(options.upper_bound_coverage);
  const BlockCosts b = CostsOfBlocks(j);

  report.set_num_gpus(par.world);
  report.set_tensor_parallel(par.tp);
  report.set_pipeline_parallel(par.pp);
  report.set_virtual_pipeline_chunks(par.vpp);
  report.set_context_parallel(par.cp);
  report.set_expert_parallel(par.ep);
  report.set_expert_tensor_parallel(par.etp);
  report.set_data_parallel(par.dp);
  report.set_expert_data_parallel(par.edp);
  report.set_num_microbatches(j.training.num_microbatches);
  report.set_padded_vocab_size(j.model.padded_vocab);
  report.set_upper_bound_coverage(options.upper_bound_coverage);

  double total_params = 0;
  uint64_t worst_peak = 0;
  std::vector<int64_t> over_limit;  // PP ranks with a capped count.
  int64_t tree_nodes_left = kMaxModuleTreeNodes;
  RankTotals t;
  for (int64_t r = 0; r < par.pp; ++r) {
    v1::RankReport* rank = report.add_ranks();
    rank->set_pp_rank(r);
    OOMGUARD_RETURN_IF_ERROR(ComputeRank(j, b, r, z, options.deadline,
                                         RankItems{.overheads = rank->mutable_overheads(),
                                                   .uncertainties = rank->mutable_uncertainties(),
                                                   .with_basis = options.overhead_basis},
                                         t));
    std::stable_sort(rank->mutable_uncertainties()->begin(), rank->mutable_uncertainties()->end(),
                     [](const v1::Uncertainty& a, const v1::Uncertainty& b) {
                       return a.sd_bytes() > b.sd_bytes();
                     });
    for (int64_t c = 0; c < par.vpp; ++c) {
      const StageContents& st = j.stages[r + c * par.pp];
      const double count = static_cast<double>(t.in_flight.per_chunk[c]);
      v1::ChunkReport* cr = rank->add_chunks();
      cr->set_chunk(c);
      cr->set_virtual_stage(r + c * par.pp);
      cr->set_num_decoder_layers(st.num_layers);
      cr->set_num_mtp_layers(st.num_mtp_layers);
      cr->set_has_embedding(st.has_embedding);
      cr->set_has_loss(st.has_loss);
      cr->set_parameters(RoundedCount(t.chunks[c].total.params()));
      cr->set_in_flight_microbatches(t.in_flight.per_chunk[c]);
      cr->set_activation_bytes_per_microbatch(RoundedCount(t.chunk_act[c]));
      cr->set_activation_bytes(RoundedCount(count * t.chunk_act[c]));
    }
    rank->set_dense_parameters(RoundedCount(t.dense));
    rank->set_expert_parameters(RoundedCount(t.expert));
    rank->set_parameters(AddCounts(rank->dense_parameters(), rank->expert_parameters()));
    *rank->mutable_static_() = t.static_bytes;
    rank->set_static_bytes(t.static_bytes.total_bytes());
    rank->set_activation_bytes(t.activation_bytes);
    rank->set_transient_bytes(t.transient_bytes);
    rank->set_optimizer_step_bytes(t.optimizer_step_bytes);
    rank->set_optimizer_step_temporary_bytes(t.optimizer_step_temporary_bytes);
    rank->set_peak_allocated_bytes(t.peak_allocated_bytes);
    rank->set_peak_device_bytes(t.peak_device_bytes);
    rank->set_peak_allocated_upper_bytes(t.peak_allocated_upper_bytes);
    rank->set_peak_device_upper_bytes(t.peak_device_upper_bytes);
    if (rank->peak_device_bytes() > worst_peak) {
      worst_peak = rank->peak_device_bytes();
      report.set_worst_rank(static_cast<uint32_t>(r));
    }
    // Whole-model parameters: every rank's share times its TP/EP replication.
    total_params += t.dense * par.tp + t.expert * par.ep * par.etp;
    bool capped = t.exceeds_limit;
    if (options.module_tree) {
      v1::ModuleNode* tree = report.add_rank_trees();
      OOMGUARD_RETURN_IF_ERROR(BuildRankTree(j, r, &tree_nodes_left, tree));
      // Sums stop at the limit, so a capped node caps the root.
      capped = capped || IsCapped(tree->parameters()) || IsCapped(tree->activation_bytes());
    }
    rank->set_exceeds_limit(capped);
    if (capped) over_limit.push_back(r);
  }
  report.set_total_parameters(RoundedCount(total_params));
  if (!over_limit.empty()) {
    notes.push_back(absl::StrCat("PP rank", over_limit.size() > 1 ? "s " : " ",
                                 absl::StrJoin(over_limit, ", "),
                                 over_limit.size() > 1 ? " need " : " needs ", kOverLimitWording,
                                 ": counts of 2^50 or more are shown as 2^50 = ", kMaxReportedCount,
                                 " and flagged exceeds_limit"));
  }
  if (IsCapped(report.total_parameters())) {
    notes.push_back(absl::StrCat("total_parameters is 2^50 or more, shown as 2^50 = ",
                                 kMaxReportedCount, " and flagged exceeds_limit"));
  }
  report.set_exceeds_limit(!over_limit.empty() || IsCapped(report.total_parameters()));
  for (std::string& n : notes) report.add_notes(std::move(n));
  return report;
}

namespace {

absl::StatusOr<PeakEstimate> PeaksOf(const ValidatedJob& j, double coverage,
                                     const Deadline& deadline) {
  const BlockCosts b = CostsOfBlocks(j);
  const double z = CoverageQuantile(coverage);
  PeakEstimate out;
  out.ranks.reserve(j.parallelism.pp);
  RankTotals t;
  for (int64_t r = 0; r < j.parallelism.pp; ++r) {
    OOMGUARD_RETURN_IF_ERROR(ComputeRank(j, b, r, z, deadline, RankItems(), t));
    out.ranks.push_back(RankPeak{.static_bytes = t.static_bytes.total_bytes(),
                                 .activation_bytes = t.activation_bytes,
                                 .peak_allocated_bytes = t.peak_allocated_bytes,
                                 .peak_device_bytes = t.peak_device_bytes,
                                 .peak_allocated_upper_bytes = t.peak_allocated_upper_bytes,
                                 .peak_device_upper_bytes = t.peak_device_upper_bytes,
                                 .exceeds_limit = t.exceeds_limit});
    if (t.peak_device_bytes > out.ranks[out.worst_rank].peak_device_bytes) out.worst_rank = r;
    if (t.peak_device_upper_bytes > out.ranks[out.worst_upper_rank].peak_device_upper_bytes) {
      out.worst_upper_rank = r;
    }
  }
  return out;
}

}  // namespace

PeakEstimate EstimatePeaks(const ValidatedJob& j, double coverage) {
  // A deadline that never passes never stops the computation.
  return *PeaksOf(j, coverage, Deadline());
}

bool FitsWithin(const ValidatedJob& j, double coverage, bool upper, uint64_t usable) {
  const BlockCosts b = CostsOfBlocks(j);
  const double z = CoverageQuantile(coverage);
  const int64_t pp = j.parallelism.pp;
  RankTotals t;
  // Rank 0, the last rank, then the ones between.
  for (int64_t i = 0; i < pp; ++i) {
    const int64_t r = i == 0 ? 0 : (i == 1 ? pp - 1 : i - 1);
    // A deadline that never passes: ComputeRank cannot fail.
    (void)ComputeRank(j, b, r, z, Deadline(), RankItems(), t);
    if ((upper ? t.peak_device_upper_bytes : t.peak_device_bytes) > usable) return false;
  }
  return true;
}

absl::StatusOr<PeakEstimate> EstimatePeaks(const v1::JobSpec& job, const Deadline& deadline,
                                           double coverage) {
  OOMGUARD_RETURN_IF_ERROR(ValidateUpperBoundCoverage(coverage, "upper_bound_coverage"));
  OOMGUARD_ASSIGN_OR_RETURN(const ValidatedJob j, ValidateJob(job, nullptr));
  return PeaksOf(j, coverage, deadline);
}

}  // namespace oomguard
