// The values a JobSpec field takes when the job leaves it unset, for the
// fields read before a job is validated as well as by the validation: the
// parallel sizes, the GPUs per node and the optimizer offload fraction.
// validated_job resolves a job with them, and the layers that change a
// JobSpec before validating it (admission's recommendations, the planner)
// read them here, so that each default is stated once in code; the proto
// (proto/oomguard/v1/job.proto) documents each beside its field.
#ifndef OOMGUARD_ESTIMATOR_JOB_DEFAULTS_H_
#define OOMGUARD_ESTIMATOR_JOB_DEFAULTS_H_

#include <cstdint>

#include "oomguard/v1/job.pb.h"

namespace oomguard {

// GPUs per node where runtime.gpus_per_node is unset, and the planner's
// NVLink domain where neither the cluster nor a rack-scale GPU gives one:
// an HGX / DGX node's 8.
inline constexpr uint32_t kDefaultGpusPerNode = 8;

// runtime.gpus_per_node, else kDefaultGpusPerNode.
uint32_t GpusPerNode(const v1::RuntimeSpec& runtime);

// The parallel sizes: Megatron-LM's default for each is 1, except the
// expert tensor-parallel size, which defaults to the tensor-parallel size.
uint32_t TensorParallelSize(const v1::ParallelismSpec& p);
uint32_t PipelineParallelSize(const v1::ParallelismSpec& p);
uint32_t ContextParallelSize(const v1::ParallelismSpec& p);
uint32_t ExpertParallelSize(const v1::ParallelismSpec& p);
uint32_t ExpertTensorParallelSize(const v1::ParallelismSpec& p);

// The fraction of the optimizer's elements whose state is on the host with
// --optimizer-cpu-offload: precision.optimizer_offload_fraction, else
// Megatron-LM's 1.0 (all of them). Read only where the offload is on.
double OptimizerOffloadFraction(const v1::PrecisionSpec& precision);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_JOB_DEFAULTS_H_
