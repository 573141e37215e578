#include "estimator/moe_dispatch_memory.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace oomguard {
namespace {

// Bytes per element of the router's probabilities: the logits' dtype
// (moe_utils.py topk_routing_with_score_function casts them back with
// type_as(logits)); fp32 with `--moe-router-dtype fp32`.
double ProbsBytes(const ValidatedJob& j, const MicroBatchShape& s) {
  return j.moe.router_fp32 ? 4 : s.elt;
}

double LocalExperts(const ValidatedJob& j) {
  return static_cast<double>(j.moe.experts) / static_cast<double>(j.parallelism.ep);
}

// MoEAllGatherTokenDispatcher: token rows after token_dispatch's all-gather
// over the TP x EP group (the expert TP group here).
double GatheredTokens(const ValidatedJob& j, const MicroBatchShape& s) {
  return s.sp_tokens * static_cast<double>(j.parallelism.ep * j.parallelism.etp);
}

bool AllGatherGathers(const ValidatedJob& j) {
  return j.moe.allgather_dispatcher && j.parallelism.ep * j.parallelism.etp > 1;
}

// DeepEP's configurations (deep_ep Buffer.get_dispatch_config and
// get_combine_config, the legacy Buffer Megatron-Core uses): for G ranks,
// the tokens each channel sends at once over NVLink and its NVLink receive
// queue, and the same over RDMA (its queue 128 tokens).
struct DeepepConfig {
  int64_t ranks, nvl_send, nvl_recv, rdma_send;
};
constexpr DeepepConfig kDeepepDispatch[] = {
    {2, 24, 256, 6},   {4, 6, 256, 6},     {8, 6, 256, 6},     {16, 36, 288, 20},
    {24, 32, 288, 8},  {32, 32, 288, 8},   {48, 32, 288, 8},   {64, 32, 288, 8},
    {96, 20, 480, 12}, {128, 20, 560, 12}, {144, 32, 720, 12}, {160, 28, 720, 12}};
constexpr DeepepConfig kDeepepCombine[] = {{2, 10, 256, 6},  {4, 9, 256, 6},   {8, 4, 256, 6},
                                           {16, 4, 288, 12}, {24, 1, 288, 8},  {32, 1, 288, 8},
                                           {48, 1, 288, 8},  {64, 1, 288, 8},  {96, 1, 480, 8},
                                           {128, 1, 560, 8}, {144, 2, 720, 8}, {160, 2, 720, 8}};
constexpr int64_t kDeepepNvlPeers = 8;  // LEGACY_NUM_MAX_NVL_PEERS
constexpr int64_t kDeepepRdmaRecvTokens = 128;
constexpr int64_t kDeepepDefaultSms = 20;  // _DeepepManager's set_deepep_num_sms default
constexpr double kDeepepWorkspaceBytes = 32.0 * 1024 * 1024;  // LEGACY_NUM_WORKSPACE_BYTES

double AlignUp(double bytes, double to) { return std::ceil(bytes / to) * to; }

// Config::get_nvl_buffer_size_hint and get_rdma_buffer_size_hint.
double DeepepBufferBytes(const DeepepConfig& c, int64_t ranks, int64_t sms, double hidden_bytes) {
  const double channels = static_cast<double>(sms / 2);
  const double rdma_ranks = static_cast<double>(std::max<int64_t>(ranks / kDeepepNvlPeers, 1));
  const double nvl_ranks = static_cast<double>(std::min(ranks, kDeepepNvlPeers));
  // A received token: its row, SourceMeta (two ints), 128 int64 top-k
  // indices, 128 fp32 weights, 128 fp32 scales.
  const double token = hidden_bytes + 8 + 128 * 8 + 128 * 4 + 128 * 4;
  double nvl = channels * nvl_ranks * (2 * rdma_ranks + 3) * 4 +
               channels * nvl_ranks * static_cast<double>(c.nvl_recv) * token;
  double rdma = 0;
  if (ranks > kDeepepNvlPeers) {
    // Config's constructor rounds the RDMA queue up to whole sends.
    const double recv = AlignUp(kDeepepRdmaRecvTokens, static_cast<double>(c.rdma_send));
    rdma = channels * rdma_ranks * (kDeepepNvlPeers * 2 + 2) * 2 * 4 +
           channels * rdma_ranks * recv * 2 * (token + 16);
  }
  return AlignUp(nvl, 128) + AlignUp(rdma, 128);
}

double DeepepBytes(const ValidatedJob& j, const MicroBatchShape& s) {
  const int64_t ranks = j.parallelism.ep * j.parallelism.etp;
  const int64_t sms = j.moe.flex_num_sms > 0 ? j.moe.flex_num_sms : kDeepepDefaultSms;
  const double hidden_bytes = static_cast<double>(j.model.hidden) * std::max(s.elt, 2.0);
  double bytes = 0;
  for (const auto* table : {kDeepepDispatch, kDeepepCombine}) {
    for (size_t i = 0; i < std::size(kDeepepDispatch); ++i) {
      if (table[i].ranks == ranks) {
        bytes = std::max(bytes, DeepepBufferBytes(table[i], ranks, sms, hidden_bytes));
      }
    }
  }
  return bytes + kDeepepWorkspaceBytes;
}

double HybridepBytes(const ValidatedJob& j, const MicroBatchShape& s) {
  const double h = static_cast<double>(j.model.hidden);
  // Configurer: max_num_of_tokens_per_rank, at least 512, padded to the
  // 64-token combine chunk (NUM_OF_TOKENS_PER_CHUNK_COMBINE_API's default).
  const double tokens = AlignUp(std::max(std::ceil(s.sp_tokens), 512.0), 64);
  const double group = static_cast<double>(j.parallelism.ep * j.parallelism.etp);
  const double per_domain = static_cast<double>(j.runtime.hybrid_ep_ranks_per_domain);
  const double domains = group / per_domain;
  const double domain_experts = LocalExperts(j) * per_domain;
  // One token: a bf16 row, fp32 probabilities over the domain's experts,
  // fp32 scales per 128 elements.
  const double token = 2 * h + 4 * domain_experts + 4 * std::floor(h / 128);
  double bytes = tokens * group * token;               // NVLink buffer
  bytes += domain_experts * domains * tokens * group;  // routing-map gather, bool
  if (domains > 1) {
    const double others = tokens * (domains - 1);
    bytes += tokens * (2 * h + 4 * domain_experts * domains + 4 * std::floor(h / 128));
    bytes += others * token;                             // dispatch staging
    bytes += 2 * others * (2 * h + 4 * domain_experts);  // combine staging
  }
  return bytes;
}

}  // namespace

double FlexDispatcherBufferBytes(const ValidatedJob& j, const MicroBatchShape& s) {
  if (!j.is_moe_model() || !j.moe.flex_dispatcher) return 0;
  switch (j.moe.flex_backend) {
    case v1::FLEX_DISPATCHER_BACKEND_DEEPEP:
      return DeepepBytes(j, s);
    case v1::FLEX_DISPATCHER_BACKEND_HYBRIDEP:
      return HybridepBytes(j, s);
    default:
      return 0;  // ncclep is refused by validation.
  }
}

double MoeDispatchForwardBytes(const ValidatedJob& j, const MicroBatchShape& s,
                               double sent_tokens) {
  const double h = static_cast<double>(j.model.hidden);
  const Parallelism& par = j.parallelism;
  // Routed token copies the local experts run (gathered over expert TP).
  const double routed = s.elt * sent_tokens * static_cast<double>(par.etp) * h;
  const double fc2_output = routed;
  if (j.moe.allgather_dispatcher) {
    if (!AllGatherGathers(j)) {
      // No gather: combine_preprocess's unpermute writes [tokens, h].
      return fc2_output + s.elt * s.sp_tokens * h;
    }
    const double gathered = GatheredTokens(j, s);
    const double pb = ProbsBytes(j, s);
    const double gathered_probs = pb * gathered * static_cast<double>(j.moe.experts);
    const double unpermuted = s.elt * gathered * h;
    const double cast = pb != s.elt ? pb * gathered * h : 0;
    const double reduce_scattered = pb * s.sp_tokens * h;
    return gathered_probs + std::max(fc2_output + unpermuted, unpermuted + cast + reduce_scattered);
  }
  const bool sorts = LocalExperts(j) > 1;
  const double sent = s.elt * sent_tokens * h;
  const double permuted = sent;  // dispatch_preprocess's permute output
  // token_dispatch's all_to_all returns its input for EP = 1; with one local
  // expert and no expert TP its output is the experts' saved fc1 input.
  const double dispatched = par.ep > 1 && (sorts || par.etp > 1) ? sent : 0;
  const double unsorted = sorts ? routed : 0;     // combine_preprocess's copy
  const double combined = par.ep > 1 ? sent : 0;  // token_combine's all_to_all
  return permuted + dispatched +
         std::max(fc2_output + unsorted, (sorts ? unsorted : fc2_output) + combined);
}

double MoeCombineBackwardBytes(const ValidatedJob& j, const MicroBatchShape& s,
                               double sent_tokens) {
  if (!AllGatherGathers(j)) return 0;
  const double h = static_cast<double>(j.model.hidden);
  const double gathered = GatheredTokens(j, s);
  const double pb = ProbsBytes(j, s);
  const double gathered_grad = pb * gathered * h;  // backward of reduce_scatter
  const double cast_grad = s.elt * gathered * h;   // backward of the cast
  const double routed_grad = s.elt * sent_tokens * static_cast<double>(j.parallelism.etp) * h;
  return std::max(gathered_grad + (pb != s.elt ? cast_grad : 0),
                  (pb != s.elt ? cast_grad : gathered_grad) + routed_grad);
}

double MoeDispatcherStateBytes(const ValidatedJob& j, const MicroBatchShape& s) {
  if (!j.is_moe_model()) return 0;
  const double pb = ProbsBytes(j, s);
  const double experts = static_cast<double>(j.moe.experts);
  const double routed_tokens =
      static_cast<double>(j.moe.topk) * s.sp_tokens * static_cast<double>(j.parallelism.etp);
  const double permutation_map = 8 * routed_tokens;  // int64 sorted indices
  if (j.moe.allgather_dispatcher) {
    return GatheredTokens(j, s) * LocalExperts(j) + pb * routed_tokens + permutation_map;
  }
  return s.sp_tokens * experts * (pb + 1) + permutation_map;
}

double RecomputedMoeLayers(const ValidatedJob& j, const StageContents& st) {
  const double moe_layers =
      st.num_layers - st.num_dense_layers + (j.moe.mtp_layer_is_moe ? st.num_mtp_layers : 0);
  if (j.recompute.HasModule(v1::RECOMPUTE_MODULE_MOE)) return moe_layers;
  if (j.recompute.granularity != v1::RECOMPUTE_GRANULARITY_FULL) return 0;
  if (j.recompute.method == v1::RECOMPUTE_METHOD_BLOCK) {
    return std::min(moe_layers, static_cast<double>(j.recompute.num_layers));
  }
  return moe_layers;
}

}  // namespace oomguard
