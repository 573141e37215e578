// The defaults of the JobSpec fields read before validation (see
// job_defaults.h).
#include "estimator/job_defaults.h"

namespace oomguard {

uint32_t GpusPerNode(const v1::RuntimeSpec& runtime) {
  return runtime.has_gpus_per_node() ? runtime.gpus_per_node() : kDefaultGpusPerNode;
}

uint32_t TensorParallelSize(const v1::ParallelismSpec& p) {
  return p.has_tensor_model_parallel_size() ? p.tensor_model_parallel_size() : 1;
}

uint32_t PipelineParallelSize(const v1::ParallelismSpec& p) {
  return p.has_pipeline_model_parallel_size() ? p.pipeline_model_parallel_size() : 1;
}

uint32_t ContextParallelSize(const v1::ParallelismSpec& p) {
  return p.has_context_parallel_size() ? p.context_parallel_size() : 1;
}

uint32_t ExpertParallelSize(const v1::ParallelismSpec& p) {
  return p.has_expert_model_parallel_size() ? p.expert_model_parallel_size() : 1;
}

uint32_t ExpertTensorParallelSize(const v1::ParallelismSpec& p) {
  return p.has_expert_tensor_parallel_size() ? p.expert_tensor_parallel_size()
                                             : TensorParallelSize(p);
}

double OptimizerOffloadFraction(const v1::PrecisionSpec& precision) {
  return precision.has_optimizer_offload_fraction() ? precision.optimizer_offload_fraction() : 1.0;
}

}  // namespace oomguard
