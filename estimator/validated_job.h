// A JobSpec after validation: every default resolved (Megatron-LM's
// defaults), every derived size computed (DP, expert DP, padded vocabulary,
// micro-batches, the layer placement of every virtual pipeline stage).
// Everything downstream of validation reads only this struct.
#ifndef OOMGUARD_ESTIMATOR_VALIDATED_JOB_H_
#define OOMGUARD_ESTIMATOR_VALIDATED_JOB_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// What one virtual pipeline stage (one model chunk) holds.
struct StageContents {
  bool has_embedding = false;
  bool has_loss = false;  // Final norm + output layer + loss.
  int first_layer = 0;    // Decoder layers [first_layer, first_layer + num_layers).
  int num_layers = 0;
  int num_dense_layers = 0;  // Of num_layers, how many have a dense MLP.
  int num_mtp_layers = 0;
};

struct ValidatedJob {
  // Model.
  int64_t num_layers, hidden, ffn, heads, query_groups, head_dim;
  int64_t vocab, padded_vocab, max_positions;
  bool gated, layer_norm, rope, learned_positions, linear_bias, qkv_bias;
  bool qk_layernorm, tied_embeddings;
  double hidden_dropout, attention_dropout;
  bool mla;
  int64_t q_lora_rank;  // 0 = no query compression.
  int64_t kv_lora_rank, qk_head_dim, qk_pos_head_dim, v_head_dim;
  int64_t experts, expert_ffn, topk, shared_ffn;
  std::vector<bool> is_moe_layer;  // Per decoder layer.
  bool mtp_layer_is_moe;
  bool grouped_gemm, router_fp32, force_balance;
  bool allgather_dispatcher;
  double capacity_factor;  // 0 = dropless.
  bool pad_to_capacity;
  int64_t mtp_layers;

  // Parallelism.
  int64_t world, tp, pp, cp, ep, etp, dp, edp, vpp, group_size;
  bool sp, overlap_moe_ep;
  std::vector<StageContents> stages;  // pp * vpp virtual stages.

  // Training.
  int64_t micro_batch, global_batch, seq, num_microbatches;
  bool flash_attention;     // Flash/fused: no s^2 tensors kept.
  bool local_attention;     // Megatron's own unfused attention.
  bool transformer_engine;  // TE layers (fused norm+linear).
  v1::CrossEntropyFusion ce_fusion;
  bool rope_fused;
  bool defer_embedding_wgrad;
  bool fused_softmax;            // Local attention keeps 2-byte probabilities only.
  int64_t wgrad_deferral_limit;  // 0 = every micro-batch.

  // Recompute.
  v1::RecomputeGranularity recompute;
  v1::RecomputeMethod recompute_method;
  int64_t recompute_num_layers;
  uint32_t recompute_modules;  // Bit (1 << RecomputeModule).
  bool cpu_offloading;
  int64_t cpu_offloading_layers;
  std::vector<std::string> offload_modules;

  // Precision and optimizer: bytes per parameter element.
  double param_bytes, grad_bytes, master_bytes, moment_bytes;
  // Moment bytes of the parameters Muon leaves to Adam (embeddings, output
  // layer, 1-D); equal to moment_bytes for the other optimizers.
  double adam_moment_bytes;
  bool distributed_optimizer;
  int64_t optimizer_instances;  // Distributed-optimizer copies over DP.
  double offload_fraction;      // Of the optimizer moments, on the host.
  bool fp8, fp8_param_gather;

  // Runtime.
  bool expandable_segments;
  bool cuda_graphs;
  bool cuda_graph_te_scoped;
  std::vector<std::string> cuda_graph_modules;
  bool nccl_ub, nccl_graph_register_disabled;
  int64_t gpus_per_node;

  bool HasRecomputeModule(v1::RecomputeModule m) const {
    return recompute == v1::RECOMPUTE_GRANULARITY_SELECTIVE && (recompute_modules & (1u << m)) != 0;
  }
  bool is_moe_model() const { return experts > 0; }
};

// Validates `job` and resolves it. InvalidArgument names the field
// (JobSpec path, e.g. "parallelism.tensor_model_parallel_size") and value.
// Notes about assumptions are appended to `notes` when not null.
absl::StatusOr<ValidatedJob> ValidateJob(const v1::JobSpec& job, std::vector<std::string>* notes);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_VALIDATED_JOB_H_
