// What the rollout engine of a colocated RL step holds on each GPU: its
// weights at its own layout and dtype, its KV pool as its memory rule sizes
// it (vLLM: a fraction of the GPU's total; SGLang: a fraction of the total
// less what others hold; Megatron: a fixed buffer), its CUDA graphs and
// runtime workspace, what stays while it sleeps and what it moves to the
// host. Pure computation on an RlJobSpec (rl_step.h validates the rest).
#ifndef OOMGUARD_ESTIMATOR_ROLLOUT_ENGINE_MEMORY_H_
#define OOMGUARD_ESTIMATOR_ROLLOUT_ENGINE_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "oomguard/v1/rl_job.pb.h"

namespace oomguard {

// One GPU's share of the engine: its busiest GPU (with engine PP > 1, the
// pipeline stage holding the most while it generates). Each count is in
// bytes, each basis one line naming the source (file and function) and the
// config values used.
//
// vLLM and SGLang size the KV pool as what their budget leaves after the
// terms they profile (weights, activation workspace; vLLM >= 0.21 also its
// CUDA-graph estimate), so an error in those terms moves the pool the other
// way and their sum stays the budget: kv_pool_bytes has no uncertainty of
// its own. The `*_sd_bytes` are one standard deviation of the terms whose
// figure is uncertain (0 where exact).
struct EngineMemory {
  uint64_t weight_bytes = 0;  // At the engine's TP/PP/EP and weight dtype.
  std::string weight_basis;
  // Megatron's engine uses the trainer's own weights (same layout): then
  // weight_bytes is 0 and nothing is synchronised.
  bool shares_trainer_weights = false;
  // The KV pool as the engine sizes it (0 when its budget leaves none: then
  // `failure` says why), and the tokens it holds at the KV dtype.
  uint64_t kv_pool_bytes = 0;
  uint64_t kv_tokens = 0;
  uint64_t kv_bytes_per_token = 0;  // On this GPU, all its layers.
  std::string kv_basis;
  // The forward pass's workspace while generating (the engine's profiled
  // activation peak at max_num_batched_tokens, the sampler's logits at
  // max_num_seqs), outside the KV pool.
  uint64_t activation_bytes = 0;
  uint64_t activation_sd_bytes = 0;
  std::string activation_basis;
  // The CUDA graphs' private pool (0 without graphs).
  uint64_t cuda_graph_bytes = 0;
  uint64_t cuda_graph_sd_bytes = 0;
  std::string cuda_graph_basis;
  // Allocated outside PyTorch by the engine: NCCL communicators of its TP
  // group and the custom all-reduce buffers (none at TP 1), and where the
  // engine runs in a process of its own (NeMo-RL, slime) that process's
  // CUDA context; veRL's and Megatron's engines share the trainer's.
  uint64_t runtime_bytes = 0;
  uint64_t runtime_sd_bytes = 0;
  std::string runtime_basis;
  // What the engine frees while the trainer runs, resolved
  // (ROLLOUT_SLEEP_UNSPECIFIED becomes the engine's or framework's rule).
  // For Megatron's engine NONE / LEVEL_1 / LEVEL_2 are
  // --rl-kv-cache-management-mode persist / offload (the KV buffer to the
  // host) / recompute, and a separate inference model's weights stay.
  v1::RolloutSleep sleep = v1::ROLLOUT_SLEEP_UNSPECIFIED;
  // What stays on the GPU while the engine sleeps (graphs, runtime, the
  // weights or KV pool where the sleep mode keeps them).
  uint64_t asleep_bytes = 0;
  std::string asleep_basis;
  // What sleeping moves to the host (vLLM level 1's weights; Megatron's KV
  // buffer under offload).
  uint64_t host_bytes = 0;
  // One standard deviation of GenerateBytes() and of asleep_bytes, the
  // engines' budgets taken into account (a term inside vLLM's budget moves
  // the pool the other way; SGLang's weights and pool fill its fraction).
  uint64_t generate_sd_bytes = 0;
  uint64_t asleep_sd_bytes = 0;
  // Non-empty when the engine cannot start: its budget does not hold its
  // weights, workspace and one max_model_len sequence's KV cache, or the
  // GPU's free memory is below what it requests. The engine's own message
  // where it prints one.
  std::string failure;

  // Everything on the GPU while it generates.
  uint64_t GenerateBytes() const {
    return weight_bytes + kv_pool_bytes + activation_bytes + cuda_graph_bytes + runtime_bytes;
  }
};

// The engine of `job` on a GPU of `gpu_memory_bytes`, with
// `others_resident_bytes` held by the trainer (and the reference, critic)
// when the engine starts (vLLM's start check and SGLang's pool read it).
// InvalidArgument naming the RlJobSpec field ("rollout.tensor_parallel",
// "rollout.memory_fraction", ...) for a value out of range or a layout the
// model does not divide (heads, KV heads, experts by the engine's TP/EP);
// the actor's own errors name "actor.<JobSpec path>".
absl::StatusOr<EngineMemory> EstimateEngineMemory(const v1::RlJobSpec& job,
                                                  uint64_t gpu_memory_bytes,
                                                  uint64_t others_resident_bytes);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_ROLLOUT_ENGINE_MEMORY_H_
