// What the rollout engine of a colocated RL step holds on each GPU: its
// weights at its own layout and dtype, its KV pool as its memory rule sizes
// it (vLLM: a fraction of the GPU's total; SGLang: a fraction of the total
// less what others hold; Megatron: a fixed buffer), its CUDA graphs and
// runtime workspace, what stays while it sleeps and what it moves to the
// host. Pure computation on an RlJobSpec already validated (rl_step.h).
#ifndef OOMGUARD_ESTIMATOR_ROLLOUT_ENGINE_MEMORY_H_
#define OOMGUARD_ESTIMATOR_ROLLOUT_ENGINE_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// One GPU's share of the engine. Each count is in bytes, each basis one line
// naming the source (file and function) and the config values used.
struct EngineMemory {
  uint64_t weight_bytes = 0;  // At the engine's TP/PP/EP and weight dtype.
  std::string weight_basis;
  // The KV pool as the engine sizes it (0 when its budget leaves none: then
  // `failure` says why), and the tokens it holds at the KV dtype.
  uint64_t kv_pool_bytes = 0;
  uint64_t kv_tokens = 0;
  std::string kv_basis;
  // The forward pass's workspace while generating (the engine's profiled
  // activation peak at max_num_batched_tokens), outside the KV pool.
  uint64_t activation_bytes = 0;
  std::string activation_basis;
  // The CUDA graphs' private pool (0 without graphs).
  uint64_t cuda_graph_bytes = 0;
  std::string cuda_graph_basis;
  // CUDA context's share allocated outside PyTorch by the engine: NCCL
  // communicators of its TP group, cuBLAS workspaces.
  uint64_t runtime_bytes = 0;
  std::string runtime_basis;
  // What stays on the GPU while the engine sleeps (graphs, runtime, the
  // weights or KV pool where the sleep mode keeps them).
  uint64_t asleep_bytes = 0;
  std::string asleep_basis;
  // What sleeping moves to the host (vLLM level 1's weights).
  uint64_t host_bytes = 0;
  // Non-empty when the engine cannot start: its budget does not hold its
  // weights, workspace and one max_model_len sequence's KV cache.
  std::string failure;

  // Everything on the GPU while it generates.
  uint64_t GenerateBytes() const {
    return weight_bytes + kv_pool_bytes + activation_bytes + cuda_graph_bytes + runtime_bytes;
  }
};

// The engine of `job` on a GPU of `gpu_memory_bytes`, with
// `others_resident_bytes` held by the trainer (and the reference, critic)
// when the engine starts (SGLang's pool is what its fraction leaves of it).
// InvalidArgument naming the RlJobSpec field for a layout the model does not
// divide (heads, experts by the engine's TP/EP).
absl::StatusOr<EngineMemory> EstimateEngineMemory(const v1::RlJobSpec& job,
                                                  uint64_t gpu_memory_bytes,
                                                  uint64_t others_resident_bytes);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_ROLLOUT_ENGINE_MEMORY_H_
