// Fully sharded data parallelism (Megatron-FSDP, `--use-megatron-fsdp`, and
// Torch FSDP2, `--use-torch-fsdp2`): the settings Megatron-LM accepts, how
// many ranks share each persistent state of a parameter element (weights,
// main gradients, main weights with the optimizer's moments), and the
// buffers the sharding allocates while a step runs (the all-gathered
// weights of the layers in flight, the unsharded gradients queued for
// reduce-scatter, Megatron-FSDP's kept copies of the weights outside its
// units). Each rule names the Megatron-Core code it comes from.
#ifndef OOMGUARD_ESTIMATOR_FSDP_MEMORY_H_
#define OOMGUARD_ESTIMATOR_FSDP_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Resolves `job`'s FSDP fields into `j.fsdp` (defaults as Megatron-LM's:
// optim_grads_params, no outer sharding, no double buffer) and refuses what
// Megatron-LM refuses (InvalidArgument naming the field and value) or what
// oomguard does not model (Unimplemented: Megatron-FSDP version 2, optimizer
// CPU offload under FSDP). Needs j.parallelism and j.model resolved; runs
// before the precision is resolved, which reads j.fsdp.
absl::Status ResolveFsdp(const v1::JobSpec& job, ValidatedJob& j, std::vector<std::string>* notes);

// Bytes per element of the states FSDP keeps in its own buffers, and the
// gradient copy the optimizer step makes.
struct FsdpStateBytes {
  double grad = 0;            // The main-gradient buffer.
  double master = 0;          // The main weights; 0 where the weights themselves are updated.
  double step_grad_copy = 0;  // The gradient cast to the main weights' dtype for the step.
};
// `precision` with its parameter bytes resolved; `precision_aware`:
// --use-precision-aware-optimizer.
FsdpStateBytes FsdpOptimizerStateBytes(const v1::ParallelismSpec& s,
                                       const PrecisionSettings& precision, bool precision_aware);

// How many ranks share one element of each persistent state.
struct StateShards {
  double params = 1;     // The model's weights.
  double grads = 1;      // The main-gradient buffer.
  double optimizer = 1;  // The main weights and the optimizer's moments.
};

// The shards of a dense and of an expert element (1 everywhere without
// FSDP). Dense elements shard over DP x CP, expert ones over expert DP
// (mcore_fsdp_adapter.py _init_dist_index: dp_cp and expt_dp groups), each
// divided by the distributed-optimizer instances under hybrid sharding,
// whose outer `optim` strategy shards the optimizer state over the
// instances too (param_and_grad_buffer.py
// _init_each_parameter_group_buffers: main_buf_dp_group).
struct FsdpShards {
  StateShards dense, expert;
};
FsdpShards FsdpStateShards(const ValidatedJob& j);

// One model chunk of a rank as FSDP sees it: its units (decoder and MTP
// layers) and the rest (embedding, output layer, final norm).
struct FsdpChunk {
  int64_t units = 0;
  double unit_elements = 0;       // The largest unit's elements.
  double unit_weight_bytes = 0;   // Its weights' bytes when gathered (FP8 weights 1 byte).
  double units_elements = 0;      // All units' elements.
  double embedding_elements = 0;  // The word (and position) embedding.
  double other_elements = 0;      // Output layer and final norm: what is neither.
};

// What the sharding allocates on top of the persistent shards during the
// forward and backward of one rank.
struct FsdpBuffers {
  // Gathered weights of the units in flight (the one running and the
  // prefetched ones), bytes.
  double all_gather = 0;
  // Unsharded gradients of the units waiting for their reduce-scatter.
  double reduce_scatter = 0;
  // Megatron-FSDP with optim_grads_params keeps the weights outside its
  // units gathered once all-gathered (AllGatherPipeline.reset
  // preserve_non_fsdp_units).
  double non_unit_weights = 0;
  // Whether the buffers above are allocated once and kept (double buffer)
  // rather than allocated and freed layer by layer.
  bool persistent = false;
};
FsdpBuffers FsdpBufferBytes(const ValidatedJob& j, const std::vector<FsdpChunk>& chunks);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_FSDP_MEMORY_H_
