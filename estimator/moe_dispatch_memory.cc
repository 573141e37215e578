#include "estimator/moe_dispatch_memory.h"

#include <algorithm>

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

}  // namespace

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
