// Megatron-Core's layer-level activation offloading
// (`--cpu-offloading-num-layers N`), in one place: the release that has it,
// the settings Megatron-Core refuses it with (admission flags a job that
// breaks them; its ladder offers it only where they hold) and how many layers
// it offloads (estimator.cc counts what stays on the GPU).
#ifndef OOMGUARD_ESTIMATOR_ACTIVATION_CPU_OFFLOAD_H_
#define OOMGUARD_ESTIMATOR_ACTIVATION_CPU_OFFLOAD_H_

#include <cstdint>
#include <optional>
#include <string>

#include "estimator/software_versions.h"
#include "estimator/validated_job.h"

namespace oomguard {

// The first release with `--cpu-offloading-num-layers` (Megatron-LM merge
// request 4286, "Add cpu offloading interface", first tagged in
// core_v0.16.0). No release has a `--cpu-offloading` switch: validate_args
// (megatron/training/arguments.py) sets args.cpu_offloading from N > 0, and
// the TransformerConfig fields cpu_offloading, cpu_offloading_activations,
// cpu_offloading_weights and cpu_offloading_double_buffering have no flag
// (_add_network_size_args excludes them), so from the command line only
// activations are offloaded, without double buffering.
inline constexpr SoftwareVersion kFirstMegatronCoreWithCpuOffloading{0, 16};

// The most layers `j` may offload: Megatron-Core refuses N >= num_layers
// (TransformerConfig.__post_init__, "CPU offloading can be done only for
// layers less than ..."), and Transformer Engine's default synchronizer never
// offloads the last layer (get_cpu_offload_context in
// transformer_engine/pytorch/cpu_offload.py).
int64_t MaxCpuOffloadedLayers(const ValidatedJob& j);

// Why Megatron-Core refuses `j`'s `--cpu-offloading-num-layers`, or nullopt
// when `j` does not offload or it is accepted: a release before
// kFirstMegatronCoreWithCpuOffloading, or TransformerConfig.__post_init__
// (megatron/core/transformer/transformer_config.py): pipeline parallelism
// > 1, any recompute granularity, CUDA graphs other than the full-iteration
// graph, fine-grained activation offloading.
std::optional<std::string> CpuOffloadingConflict(const ValidatedJob& j);

// Whether Megatron-Core would accept offloading for `j`'s settings (whether
// or not `j` offloads): the same rule without the sentence.
bool CpuOffloadingAccepted(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_ACTIVATION_CPU_OFFLOAD_H_
