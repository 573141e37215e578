// The memory CUDA graphs keep beyond what eager execution holds, per rank:
// the report's "cuda_graphs" (buffers inside PyTorch's allocator) and
// "cuda_graph_pool" (the graph pool that eager work cannot reuse).
//
// What a graph keeps, from the code that captures it:
// - Activations saved inside a graph live in its private memory pool at fixed
//   addresses instead of PyTorch's default pool: they replace the eager
//   activations, they do not add to them. Graphs sharing a pool are captured
//   in the order they replay (TE graph.py make_graphed_callables with
//   `_order`; Megatron-Core cuda_graphs.py _CudagraphGlobalRecord
//   ._create_cudagraphs; full_cuda_graph.py FullCudaGraphWrapper), so the
//   pool reuses a micro-batch's memory once its backward is captured, as the
//   eager schedule frees it: the pool is the graphed part of the live set.
// - Warm-up (`--cuda-graph-warmup-steps`, TE's own warm-up iterations) leaves
//   nothing: torch.cuda.graph.__enter__ empties PyTorch's cache before each
//   capture (TECudaGraphHelper._start_capturing and _finish_capturing too).
// - Transformer Engine graphs (TECudaGraphHelper): one graph per graphed
//   layer and captured micro-batch (one micro-batch without PP, all of them
//   with PP: _get_cuda_graph_input_data). Each keeps static inputs made
//   outside the pool (TransformerLayer.get_layer_static_inputs: the hidden
//   states and, where the graph starts at attention, a [b, 1, s/CP, s] bool
//   causal mask). _get_sample_arguments hands a micro-batch the inputs of one
//   whose backward has run, so a layer keeps one set per micro-batch in
//   flight; before TE 2.7 (no `_reuse_graph_input_output_buffers`) every
//   captured micro-batch also keeps its static outputs and input and output
//   gradients. An input that an eager tensor was
//   copied into replaces that tensor; the input of a layer whose predecessor
//   is graphed to its end is a second copy of that graph's static output.
//   The output gradients are one set per output signature (graph.py
//   static_grad_outputs_dict).
// - Local graphs (CudaGraphManager): inputs and outputs are allocated in the
//   pool and aliased graph to graph (_CudaGraphRunner.create_fwd_graph,
//   _resolve_input_buffer) and weakly referenced once captured: no buffers
//   beyond the pool.
// - The full-iteration graph (FullCudaGraphWrapper) captures the whole
//   forward-backward; StaticBufferLoader keeps a GPU copy of every
//   micro-batch of the iteration on the ranks that load data; the optimizer
//   step runs eagerly outside the pool unless `--optimizer-cuda-graph`
//   captures it into the same pool (optimizer_cuda_graph.py).
#ifndef OOMGUARD_ESTIMATOR_CUDA_GRAPH_MEMORY_H_
#define OOMGUARD_ESTIMATOR_CUDA_GRAPH_MEMORY_H_

#include "estimator/overheads.h"
#include "estimator/validated_job.h"

namespace oomguard {

// Bytes the graphs of virtual stage `st` keep outside their pool beyond
// eager execution, when the chunk holds `in_flight` micro-batches at the
// rank's peak (pipeline_schedule.h): TE static inputs (and, before TE 2.7,
// outputs and output gradients) and the full-iteration graph's static
// batches. 0 without such graphs.
double CudaGraphChunkBufferBytes(const ValidatedJob& j, const StageContents& st, double in_flight);

// Bytes of TE's static output gradients kept once per output signature
// (since TE 2.7) on a rank with graphed layers; 0 otherwise.
double CudaGraphGradOutputBytes(const ValidatedJob& j);

// Whether virtual stage `st` has a layer a per-layer graph captures.
bool HasGraphedLayers(const ValidatedJob& j, const StageContents& st);

// One overhead item of the report, with its basis and its standard
// deviation as a fraction of it.
struct CudaGraphItem {
  double bytes = 0;
  const char* basis = "";
  double sd_fraction = 0;
  const char* sd_basis = "";
};

// "cuda_graphs": the buffers (m.cuda_graph_buffer_bytes), inside PyTorch's
// allocator.
CudaGraphItem CudaGraphBuffers(const ValidatedJob& j, const RankMemory& m);

// "cuda_graph_pool": device memory beyond the eager peak because graph pools
// stay reserved while eager work needs memory of its own: pools + eager
// working set - eager peak. The forward-backward's pool holds the graphed
// activations and the graphed backward working set; `--optimizer-cuda-graph`
// keeps the step in the full-iteration graph's pool, else in one of its own.
// Outside
// torch.cuda.max_memory_allocated (pool blocks freed at capture are cached,
// not allocated).
CudaGraphItem CudaGraphPool(const ValidatedJob& j, const RankMemory& m);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_CUDA_GRAPH_MEMORY_H_
