#include "estimator/overheads.h"

#include <algorithm>
#include <string>

#include "estimator/cuda_graph_memory.h"
#include "estimator/fp8_memory.h"
#include "estimator/layer_memory.h"
#include "estimator/moe_dispatch_memory.h"
#include "estimator/reported_count.h"
#include "estimator/tp_comm_overlap.h"

namespace oomguard {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;

// Sums the overhead items and, when there is a list, appends each (the
// basis only when it is wanted). An item whose size is uncertain declares
// one standard deviation of its error, as a fraction of the item, to the
// rank's upper bound (peak_bound.h), with the evidence for it.
class OverheadList {
 public:
  OverheadList(google::protobuf::RepeatedPtrField<v1::Overhead>* out, bool with_basis,
               UncertaintyList& spread)
      : out_(out), with_basis_(with_basis), spread_(spread) {}
  void Add(const char* name, double bytes, bool in_allocated, const char* basis,
           double sd_fraction = 0, const char* sd_basis = "") {
    if (bytes <= 0) return;
    spread_.Add(name, sd_fraction * bytes, in_allocated, sd_basis);
    const uint64_t count = RoundedCount(bytes);
    uint64_t& sum = in_allocated ? sums_.in_allocated : sums_.device_only;
    sum = AddCounts(sum, count);
    if (out_ == nullptr) return;
    v1::Overhead* o = out_->Add();
    o->set_name(name);
    o->set_bytes(count);
    o->set_in_allocated(in_allocated);
    if (with_basis_) o->set_basis(basis);
  }
  const OverheadSums& sums() const { return sums_; }

 private:
  google::protobuf::RepeatedPtrField<v1::Overhead>* out_;
  bool with_basis_;
  UncertaintyList& spread_;
  OverheadSums sums_;
};

// Process groups with more than one member that the rank belongs to, which
// NCCL sets up buffers for.
int CommunicatorCount(const ValidatedJob& j, const RankMemory& m) {
  const Parallelism& par = j.parallelism;
  int n = 0;
  if (par.tp > 1) ++n;
  if (par.pp > 1) {
    ++n;  // The pipeline group's send/receive.
    // The embedding group (word-embedding and output-layer gradients tied
    // across the pipeline: parallel_state.default_embedding_ranks) holds
    // only the first and the last stage.
    if (m.in_embedding_group) ++n;
  }
  if (par.cp > 1) ++n;
  if (par.dp * par.cp > 1) ++n;
  if (j.is_moe_model()) {
    if (par.ep > 1) ++n;
    if (par.etp > 1 && par.etp != par.tp) ++n;
    if (par.edp > 1 && par.edp != par.dp * par.cp) ++n;
  }
  return n;
}

}  // namespace

bool RoutingMayBeImbalanced(const ValidatedJob& j) {
  return j.is_moe_model() && !j.moe.force_balance && j.moe.capacity_factor == 0 &&
         j.moe.rank_capacity_factor == 0;
}

AllocatorSlack AllocatorSlackOf(const ValidatedJob& j, double churn) {
  if (j.runtime.expandable_segments) {
    const double slack = 64 * kMiB + 0.01 * churn;
    return {slack,
            "reserved minus allocated with expandable_segments: 74-307 MiB "
            "measured",
            std::max(0.5, 128 * kMiB / slack), "sd 50%, at least 128 MiB: 74-307 MiB measured"};
  }
  const double slack = 512 * kMiB + 0.10 * churn;
  return {slack,
          "reserved minus allocated without expandable_segments "
          "(fragmentation): 0.3-5.8 GiB "
          "measured, growing with the allocations an iteration makes and frees",
          std::max(0.5, kGiB / slack),
          "fragmentation depends on the order of allocations: sd 50%, at least 1 GiB "
          "(0.1-5.8 GiB measured on one H100 with no predictor better than the churn, "
          "up to 8 GiB with EP overlap)"};
}

OverheadSums AddOverheads(const ValidatedJob& j, const RankMemory& m, bool with_basis,
                          google::protobuf::RepeatedPtrField<v1::Overhead>* out,
                          UncertaintyList& spread) {
  OverheadList list(out, with_basis, spread);
  const Parallelism& par = j.parallelism;
  const MicroBatchShape shape(j);
  const double elt = shape.elt, tokens = shape.full_tokens, sp_tokens = shape.sp_tokens;
  list.Add("library_workspaces", 64 * kMiB + (j.training.transformer_engine ? 32 * kMiB : 0), true,
           "cuBLAS/cuBLASLt workspaces allocated through PyTorch (64 MiB "
           "measured on H100) plus "
           "Transformer Engine's 32 MiB GEMM workspace");
  if (j.training.transformer_engine && j.moe.grouped_gemm && j.is_moe_model()) {
    list.Add("grouped_gemm_workspaces", 4 * 32 * kMiB, true,
             "Transformer Engine's grouped GEMM runs on 4 cuBLAS streams, each "
             "with its own 32 MiB "
             "workspace on Hopper and newer (0.13 GiB measured in Megatron's "
             "grouped-GEMM MoE tests)");
  }
  {
    // Megatron's GlobalMemoryBuffer keeps the largest tensor it served per
    // dtype for reuse: the local attention's [b * heads, s, s] score
    // buffer, the allgather MoE dispatcher's hidden states (gathered over
    // EP x ETP) and, without TE, the sequence-parallel linears' inputs.
    double buffer = 0;
    if (j.training.local_attention) {
      buffer = elt * ScoreElements(j, static_cast<double>(j.model.heads) / par.tp);
    }
    if (j.is_moe_model() && j.moe.allgather_dispatcher && par.ep * par.etp > 1) {
      buffer = std::max(buffer,
                        elt * sp_tokens * static_cast<double>(par.ep * par.etp) * j.model.hidden);
    }
    if (!j.training.transformer_engine && par.sp && par.tp > 1) {
      buffer = std::max(buffer, elt * tokens * j.model.hidden);
    }
    list.Add("global_memory_buffer", buffer, true,
             "Megatron's GlobalMemoryBuffer keeps the largest tensor it "
             "served: the local attention's "
             "[b*heads, s, s] score buffer, the allgather MoE dispatcher's "
             "hidden states over EP x ETP, "
             "sequence-parallel inputs of non-TE linears");
  }
  if (j.training.defer_embedding_wgrad && m.has_output_layer) {
    // Backward of micro-batch i keeps i-1 earlier ones (at most the limit).
    double deferred = static_cast<double>(j.training.num_microbatches - 1);
    if (j.training.wgrad_deferral_limit > 0) {
      deferred = std::min(deferred, static_cast<double>(j.training.wgrad_deferral_limit));
    }
    const double logits_grad = elt * tokens * OutputWidth(j);
    const double input = elt * sp_tokens * static_cast<double>(j.model.hidden);
    list.Add("deferred_embedding_wgrad", deferred * (logits_grad + input), true,
             "--defer-embedding-wgrad-compute: the last stage keeps the logits "
             "gradient and the "
             "output layer's input of each deferred micro-batch until the "
             "pipeline flush");
  }
  const WeightCacheTerm weight_cache = Fp8WeightCacheTerm(j);
  list.Add(weight_cache.name, m.fp8_weight_cache_bytes, true, weight_cache.description);
  list.Add("tp_comm_overlap_workspace", TpCommOverlapWorkspaceBytes(j), true,
           "--tp-comm-overlap: the overlapped GEMMs' cuBLAS workspace, 32 MiB for each of the 3 "
           "userbuffers streams (Transformer Engine's get_cublas_workspace with ub=True)");
  if (par.pp > 1) {
    list.Add("pipeline_p2p_buffers", 2 * elt * sp_tokens * j.model.hidden, true,
             "one received activation and one outgoing gradient of shape "
             "[s/CP/(SP?TP:1), b, h]");
  }
  if (RoutingMayBeImbalanced(j)) {
    list.Add("moe_imbalance", kMoeImbalanceMargin * m.routed_activation_bytes, true,
             "routing is not forced to balance: hot ranks receive more tokens "
             "than the balanced "
             "share; margin of 25% on routed-expert activations (measured "
             "peaks grow ~10% over the "
             "first 50 steps of Megatron's MoE test)",
             0.6,
             "which ranks run hot and by how much depends on the data: sd 15% of routed-expert "
             "activations, so the 95% bound (25% + 1.645 x 15%) reaches the 50% over the "
             "balanced share measured on hot ranks");
  }
  list.Add("moe_dispatcher_state", m.recomputed_moe_layers * MoeDispatcherStateBytes(j, shape),
           true,
           "token_dispatcher.py: each recomputed MoE layer's dispatcher keeps its last "
           "forward's probs, routing map and permutation mapping as attributes "
           "(MoEAlltoAllTokenDispatcher.dispatch_preprocess, "
           "MoEAllGatherTokenDispatcher.dispatch_postprocess)");
  const CudaGraphItem graph_buffers = CudaGraphBuffers(j, m);
  list.Add("cuda_graphs", graph_buffers.bytes, true, graph_buffers.basis, graph_buffers.sd_fraction,
           graph_buffers.sd_basis);
  const CudaGraphItem graph_pool = CudaGraphPool(j, m);
  list.Add("cuda_graph_pool", graph_pool.bytes, false, graph_pool.basis, graph_pool.sd_fraction,
           graph_pool.sd_basis);
  // FSDP (fsdp_memory.h): what the sharding gathers and scatters while the
  // forward and backward run. How many units coexist depends on Megatron-FSDP's
  // bucket grouping (a MoE layer's dense and expert buckets are separate
  // collectives) and on when the caching allocator reuses a freed bucket.
  list.Add("fsdp_all_gather_buffers", m.fsdp.all_gather, true,
           "FSDP's all-gathered weights of the layers in flight: the running unit and the "
           "prefetched ones (Megatron-FSDP AllGatherPipeline.all_gather_params, up to half of "
           "--suggested-communication-unit-size, at least 5x10^8 elements; two units with "
           "--fsdp-double-buffer; Torch FSDP2 one unit ahead)",
           0.3,
           "bucket groups and prefetch granularity decide how many layers coexist: sd 30% of "
           "the gathered units");
  list.Add("fsdp_reduce_scatter_buffers", m.fsdp.reduce_scatter, true,
           "FSDP's unsharded gradients of the layers queued for reduce-scatter "
           "(Megatron-FSDP GradReducePipeline.wait_for_previous_grad_reduce frees them beyond "
           "--suggested-communication-unit-size elements, at least 10^9; two units with "
           "--fsdp-double-buffer; Torch FSDP2 two units)",
           0.3,
           "when a queued reduce-scatter completes and frees its bucket depends on the network: "
           "sd 30% of the queued units");
  list.Add("fsdp_unsharded_non_unit_weights", m.fsdp.non_unit_weights, true,
           "Megatron-FSDP optim_grads_params keeps the weights outside its units (embedding, "
           "output layer, final norm) gathered after their first all-gather "
           "(AllGatherPipeline.reset preserve_non_fsdp_units)");
  list.Add("cuda_context", 2.5 * kGiB, false,
           "CUDA context, cuBLAS/cuDNN handles and NCCL initialisation outside "
           "PyTorch's allocator "
           "(2.4-2.8 GiB measured on one H100)",
           0.06, "sd 0.15 GiB: 2.4-2.8 GiB measured across CUDA and driver versions");
  list.Add("flex_dispatcher_buffers", FlexDispatcherBufferBytes(j, shape), false,
           "--moe-token-dispatcher-type flex: DeepEP's NVLink (and across nodes NVSHMEM) "
           "receive queues per channel and peer plus its 32 MiB workspace, or HybridEP's "
           "dispatch/combine buffers of the rank's tokens times the group, its routing-map "
           "gather and across NVLink domains its RDMA staging; allocated once outside "
           "PyTorch's allocator (moe_dispatch_memory.h FlexDispatcherBufferBytes)");
  list.Add("tp_comm_overlap_userbuffers", TpCommOverlapUserbufferBytes(j), false,
           "--tp-comm-overlap: Transformer Engine registers one [s*b/CP, h] buffer per "
           "overlapped GEMM outside PyTorch's allocator (initialize_ub: 10 GEMMs before TE 2.7, "
           "12 from it; all-gather buffers 1-byte in FP8 runs, the rest bf16)");
  const int comms = CommunicatorCount(j, m);
  list.Add("nccl_buffers", 0.9 * kGiB * comms, false,
           "NCCL channel buffers, ~0.9 GiB per process group of the rank with more than one "
           "member (6.4 GB "
           "non-PyTorch memory measured on 64 H100s with DP, PP and EP groups)",
           0.35,
           "NCCL sizes buffers by channels and algorithms it picks at run time: sd 0.3 GiB per "
           "group (1.6 GB measured for one communicator, ~6 GB for three or more)");
  // What the allocator allocates and frees again within an iteration: the
  // activations and backward working set, or the optimizer step's copies
  // and temporaries, whichever is larger.
  // FSDP's per-layer buffers are allocated and freed with each layer unless
  // double-buffered.
  const double fsdp_churn = m.fsdp.persistent ? 0 : m.fsdp.all_gather + m.fsdp.reduce_scatter;
  const double churn =
      std::max(m.held_activation_bytes + m.transient_bytes + fsdp_churn, m.optimizer_step_bytes);
  const AllocatorSlack slack = AllocatorSlackOf(j, churn);
  list.Add("allocator_slack", slack.bytes, false, slack.basis, slack.sd_fraction, slack.sd_basis);
  return list.sums();
}

}  // namespace oomguard
