#include "estimator/cuda_graph_memory.h"

#include <algorithm>

#include "estimator/layer_memory.h"
#include "estimator/software_versions.h"

namespace oomguard {
namespace {

// First Transformer Engine whose make_graphed_callables shares static
// buffers between micro-batches (`_reuse_graph_input_output_buffers`, which
// TECudaGraphHelper._get_cuda_graph_input_data sets from TE 2.7).
constexpr SoftwareVersion kFirstTeReusingGraphBuffers{2, 7};

// Bytes of one micro-batch of the data loader's batch on the GPU
// (gpt_dataset.py GPTDataset.__getitem__: tokens, labels and position_ids
// int64, loss_mask fp32, and the [b, 1, s, s] bool mask when the loader
// makes it), copied before get_batch cuts it to the CP rank's share.
double StaticBatchBytes(const ValidatedJob& j) {
  const double b = static_cast<double>(j.training.micro_batch);
  const double seq = static_cast<double>(j.training.seq);
  return b * seq * (8 + 8 + 8 + 4) + (j.training.dense_mask ? b * seq * seq : 0);
}

// Per-layer graphs: which layers a graph covers, and how far.
struct GraphedLayers {
  double graphed = 0;         // Layers with a graph.
  double from_attention = 0;  // Of those, graphs that start at the layer input.
  double whole = 0;           // Of those, graphs that cover the whole layer.
};

GraphedLayers CountGraphed(const ValidatedJob& j, const StageContents& st) {
  const CudaGraphModules& m = j.runtime.cuda_graph_modules;
  const bool all = m.whole_layers();
  // cuda_graphs.py _layer_is_graphable; transformer_layer.py
  // _get_submodules_under_cudagraphs for what a graph covers.
  const bool dense_graphed = all || m.attn || m.mlp;
  const bool moe_graphed = all || m.attn || m.moe || m.moe_router || m.moe_preprocess;
  const bool dense_whole = all || (m.attn && m.mlp);
  const bool moe_whole = all || (m.attn && m.moe);
  const double dense = st.num_dense_layers;
  const double moe = st.num_layers - st.num_dense_layers;
  // MTP layers' transformer layers are graphed too (TECudaGraphHelper
  // ._discover_layers); their input is eh_proj's eager output.
  const double mtp = st.num_mtp_layers;
  const bool mtp_graphed = j.moe.mtp_layer_is_moe ? moe_graphed : dense_graphed;
  GraphedLayers g;
  g.graphed = (dense_graphed ? dense : 0) + (moe_graphed ? moe : 0) + (mtp_graphed ? mtp : 0);
  g.from_attention = all || m.attn ? st.num_layers + mtp : 0;
  g.whole = (dense_whole ? dense : 0) + (moe_whole ? moe : 0);
  return g;
}

// Graphed activations held at the peak: all of them for the full-iteration
// graph; the decoder layers' for whole-layer graphs; without the routed
// experts' (which only the `moe` module captures) for scoped graphs, an
// upper bound (the graphed share of a scoped layer is not split further).
double GraphedActivationBytes(const ValidatedJob& j, const RankMemory& m) {
  if (j.runtime.cuda_graph_impl == CudaGraphImpl::kFullIteration) return m.held_activation_bytes;
  const CudaGraphModules& mods = j.runtime.cuda_graph_modules;
  if (mods.whole_layers() || mods.moe) return m.layer_activation_bytes;
  return m.layer_activation_bytes - m.routed_activation_bytes;
}

}  // namespace

bool HasGraphedLayers(const ValidatedJob& j, const StageContents& st) {
  return j.runtime.per_layer_cuda_graphs() && CountGraphed(j, st).graphed > 0;
}

double CudaGraphChunkBufferBytes(const ValidatedJob& j, const StageContents& st, double in_flight) {
  const double microbatches = static_cast<double>(j.training.num_microbatches);
  if (j.runtime.cuda_graph_impl == CudaGraphImpl::kFullIteration) {
    // full_cuda_graph.py FullCudaGraphWrapper.data_read: every micro-batch
    // of the iteration into StaticBufferLoader.static_buffers, for each model
    // chunk with a data iterator (pretrain_gpt.py is_dataset_built_on_rank:
    // the first and last stages and MTP; tensor-parallel rank 0).
    if (!st.has_embedding && !st.has_loss && st.num_mtp_layers == 0) return 0;
    return microbatches * StaticBatchBytes(j);
  }
  if (j.runtime.cuda_graph_impl != CudaGraphImpl::kTransformerEngine) return 0;
  const GraphedLayers g = CountGraphed(j, st);
  if (g.graphed == 0) return 0;
  // One micro-batch is captured without PP, every one with it
  // (TECudaGraphHelper._get_cuda_graph_input_data); _get_sample_arguments
  // gives a micro-batch the static inputs of one whose backward has run, so a
  // layer keeps one set per micro-batch in flight.
  const double captured = j.parallelism.pp == 1 ? 1 : microbatches;
  const double samples = std::min(in_flight, captured);
  const double hidden = LayerInputBytes(j);
  // TransformerLayer.get_layer_static_inputs: ~tril(ones(s/CP, s)) tiled b
  // times, bool.
  const double mask = static_cast<double>(j.training.micro_batch) *
                      (static_cast<double>(j.training.seq) / j.parallelism.cp) *
                      static_cast<double>(j.training.seq);
  // A chunk's first layer takes its input from the embedding or the pipeline
  // (eager): its copy replaces that tensor.
  const double second_copies = std::max(0.0, g.whole - 1);
  double bytes = samples * (second_copies * hidden + g.from_attention * mask);
  if (j.runtime.transformer_engine < kFirstTeReusingGraphBuffers) {
    // Before TE 2.7 make_graphed_callables keeps every captured micro-batch's
    // static outputs and input gradients (per_callable_static_outputs,
    // per_callable_static_grad_inputs), beyond those of the micro-batches in
    // flight that eager execution holds too, and output gradients of its own
    // for each.
    const double beyond = std::max(0.0, captured - in_flight);
    bytes += (2 * beyond + captured) * g.graphed * hidden;
  }
  return bytes;
}

double CudaGraphGradOutputBytes(const ValidatedJob& j) {
  if (j.runtime.cuda_graph_impl != CudaGraphImpl::kTransformerEngine ||
      j.runtime.transformer_engine < kFirstTeReusingGraphBuffers) {
    return 0;
  }
  const CudaGraphModules& m = j.runtime.cuda_graph_modules;
  const MicroBatchShape s(j);
  const double hidden = LayerInputBytes(j);
  const bool has_moe =
      std::any_of(j.moe.is_moe_layer.begin(), j.moe.is_moe_layer.end(), [](bool b) { return b; });
  const bool has_dense =
      std::any_of(j.moe.is_moe_layer.begin(), j.moe.is_moe_layer.end(), [](bool b) { return !b; });
  // A graph that ends at a hidden-state output: [s', b, h].
  const bool hidden_signature =
      (has_dense && (m.whole_layers() || m.attn || m.mlp)) ||
      (has_moe && (m.whole_layers() || m.moe || (m.attn && !m.moe_router)));
  double bytes = hidden_signature ? hidden : 0;
  if (has_moe && m.moe_router) {
    // TransformerLayer._te_cuda_graph_replay_impl: residual, the pre-MLP
    // norm output, the router's fp32 probs and, when graphed, the shared
    // experts' output.
    const bool shared = j.moe.shared_ffn > 0 && !j.parallelism.shared_expert_overlap;
    bytes += (shared ? 3 : 2) * hidden + 4 * s.sp_tokens * static_cast<double>(j.moe.experts);
  }
  return bytes;
}

CudaGraphItem CudaGraphBuffers(const ValidatedJob& j, const RankMemory& m) {
  CudaGraphItem item;
  item.bytes = m.cuda_graph_buffer_bytes;
  item.sd_fraction = 0.2;
  if (j.runtime.cuda_graph_impl == CudaGraphImpl::kFullIteration) {
    item.basis =
        "full-iteration graph: FullCudaGraphWrapper's StaticBufferLoader keeps every micro-batch "
        "of the iteration on the GPU (tokens, labels, position ids, loss mask and, when the data "
        "loader makes it, the [b, 1, s, s] mask) on the ranks that load data";
    item.sd_basis = "sd 20%: the batch's fields depend on the dataset";
  } else {
    item.basis =
        "Transformer Engine graphs (make_graphed_callables): the static inputs of each graphed "
        "layer and micro-batch in flight made outside the graph pool (hidden states where the "
        "previous layer's graph ends at its output; the [b, 1, s/CP, s] causal mask where the "
        "graph starts at attention), one set of static output gradients per output shape; "
        "activations saved inside the graphs live in the pool instead of eager memory";
    item.sd_basis =
        "sd 20%: shapes from TransformerLayer.get_layer_static_inputs; which outputs a scoped "
        "graph returns varies with the release";
  }
  return item;
}

CudaGraphItem CudaGraphPool(const ValidatedJob& j, const RankMemory& m) {
  CudaGraphItem item;
  const CudaGraphImpl impl = j.runtime.cuda_graph_impl;
  const bool full_iteration = impl == CudaGraphImpl::kFullIteration;
  const bool layer_graphs = j.runtime.per_layer_cuda_graphs() && m.has_graphed_layers;
  const bool step_graph = j.runtime.optimizer_cuda_graph;
  if (!full_iteration && !layer_graphs && !step_graph) return item;
  const double held = m.held_activation_bytes, transient = m.transient_bytes;
  const double step = m.optimizer_step_bytes;
  const double graphed =
      full_iteration || layer_graphs ? std::clamp(GraphedActivationBytes(j, m), 0.0, held) : 0;
  // The forward-backward's pool: the graphed activations and the graphed
  // backward working set. Eager: the rest of the activations with their
  // backward working set (none under the full-iteration graph).
  double pools = graphed > 0 ? graphed + transient : 0;
  const double eager_backward = held - graphed + (full_iteration ? 0 : transient);
  double eager = eager_backward;
  if (!step_graph) {
    eager = std::max(eager, step);  // The eager step cannot use a graph pool.
  } else if (full_iteration) {
    // OptimizerCudaGraphWrapper captures the step into the full-iteration
    // graph's pool (get_graph_pool with use_single_mempool), after the
    // forward-backward freed it.
    pools = std::max(pools, step);
  } else {
    pools += step;  // A pool of its own (per-layer graphs use TE's or MCore's).
  }
  item.bytes = std::max(0.0, pools + eager - std::max(held + transient, step));
  item.basis =
      "graph pools stay reserved: the full-iteration graph's holds the forward-backward's "
      "activations and working set (FullCudaGraphWrapper captures forward_backward_func), "
      "per-layer graphs' the graphed activations and backward working set beside the eager "
      "one, --optimizer-cuda-graph's the step (in the full-iteration pool when there is one); "
      "eager work cannot reuse them";
  item.sd_fraction = 0.5;
  item.sd_basis =
      "sd 50%: the graphed and the eager working sets are each taken as the rank's largest "
      "backward working set, not split by module";
  return item;
}

}  // namespace oomguard
