// The job's environment variables that change its memory: PyTorch's
// caching-allocator configuration, NCCL's CUDA-graph buffer registration,
// the Megatron-Core / Transformer Engine versions the job runs, the GPU
// architecture it runs on and HybridEP's NVLink domain.
#ifndef OOMGUARD_JOBSPEC_ENVIRONMENT_H_
#define OOMGUARD_JOBSPEC_ENVIRONMENT_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// Applies the environment variables that change memory:
// PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF (expandable_segments:True)
// NCCL_GRAPH_REGISTER (=0), and OOMGUARD_MEGATRON_CORE_VERSION /
// OOMGUARD_TRANSFORMER_ENGINE_VERSION ("MAJOR.MINOR", copied to
// runtime.megatron_core_version / transformer_engine_version, which
// ValidateJob checks), OOMGUARD_OPTIMIZER_IMPLEMENTATION (fused or
// torch: runtime.optimizer_implementation), OOMGUARD_GPU_ARCHITECTURE
// (hopper or blackwell: runtime.gpu_architecture) and
// NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN (HybridEP's ranks per NVLink
// domain: runtime.hybrid_ep_ranks_per_nvlink_domain, a whole number). An
// expandable_segments value other than True or False, which PyTorch refuses
// at start-up, an optimizer implementation or GPU architecture other than
// those two, or a rank count that is not a whole number, is InvalidArgument
// naming the variable and the value.
absl::Status ApplyEnvironment(const std::map<std::string, std::string>& env, v1::JobSpec* job);

// The same for an RL job: to its Megatron-Core jobs (the actor's, and the
// critic's when it has one), which run in the one environment.
absl::Status ApplyEnvironment(const std::map<std::string, std::string>& env, v1::RlJobSpec* job);

}  // namespace oomguard

#endif  // OOMGUARD_JOBSPEC_ENVIRONMENT_H_
