// Memory outside the model's own tensors, itemised: library workspaces,
// pipeline send/receive buffers, routing imbalance, CUDA graphs (all inside
// PyTorch's allocator), and the CUDA context, NCCL buffers and allocator
// slack (outside what torch.cuda.max_memory_allocated reports).
//
// Constants come from measurements (../shared/calibration): each carries its
// basis in the report so a user can see where a number comes from.
#ifndef OOMGUARD_ESTIMATOR_OVERHEADS_H_
#define OOMGUARD_ESTIMATOR_OVERHEADS_H_

#include <cstdint>
#include <vector>

#include "estimator/fsdp_memory.h"
#include "estimator/peak_bound.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/report.pb.h"

namespace oomguard {

struct RankMemory {
  double held_activation_bytes = 0;    // In-flight activations at the peak.
  double routed_activation_bytes = 0;  // Of those, routed-expert tokens.
  double transient_bytes = 0;
  double layer_activation_bytes = 0;  // Decoder-layer part of held activations.
  bool has_output_layer = false;      // The rank runs the output layer and loss.
  // The rank is the first or the last pipeline stage: a member of Megatron's
  // embedding group (parallel_state.default_embedding_ranks).
  bool in_embedding_group = false;
  // What the optimizer step allocates (kept copies and temporaries).
  double optimizer_step_bytes = 0;
  double recomputed_moe_layers = 0;   // MoE layers whose forward runs under a checkpoint.
  double fp8_weight_cache_bytes = 0;  // FP8 weight copies TE keeps (fp8_memory.h).
  FsdpBuffers fsdp;                   // FSDP's gathered and scattered buffers (fsdp_memory.h).
  // CUDA graphs (cuda_graph_memory.h): the buffers they keep outside their
  // pool, and whether the rank has a layer a per-layer graph captures.
  double cuda_graph_buffer_bytes = 0;
  bool has_graphed_layers = false;
};

// The overheads of one rank summed (each item rounded to a count, sums
// capped at the limit): what lives inside PyTorch's allocator and what lives
// outside it.
struct OverheadSums {
  uint64_t in_allocated = 0;
  uint64_t device_only = 0;
};

// Sums the overheads of one rank and, when `out` is not null, appends each
// item to it, with its basis when `with_basis`; adds the uncertainty of each
// uncertain item to `spread`. The report and the peaks-only path
// (estimator.h) both call it, so their numbers agree.
OverheadSums AddOverheads(const ValidatedJob& j, const RankMemory& m, bool with_basis,
                          google::protobuf::RepeatedPtrField<v1::Overhead>* out,
                          UncertaintyList& spread);

// Reserved minus allocated memory of PyTorch's caching allocator when an
// iteration allocates and frees `churn` bytes (outside
// torch.cuda.max_memory_allocated), with one standard deviation of its
// error as a fraction of it and the evidence for both.
struct AllocatorSlack {
  double bytes = 0;
  const char* basis = "";
  double sd_fraction = 0;
  const char* sd_basis = "";
};
AllocatorSlack AllocatorSlackOf(const ValidatedJob& j, double churn);

// Fraction of extra routed-expert tokens a GPU receives over the balanced
// share when routing is not forced to balance.
inline constexpr double kMoeImbalanceMargin = 0.25;

// Whether routed-expert activations get kMoeImbalanceMargin: an MoE model
// whose routing is neither forced to balance nor capped by a capacity.
bool RoutingMayBeImbalanced(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_OVERHEADS_H_
