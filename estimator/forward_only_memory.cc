#include "estimator/forward_only_memory.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "estimator/fp8_memory.h"
#include "estimator/layer_memory.h"
#include "estimator/overheads.h"

namespace oomguard {
namespace {

// `j` at one packed micro-batch of `tokens` and nothing recomputed or
// offloaded: what a layer's forward makes (a no-grad forward keeps none of
// it, so recompute has nothing to drop).
ValidatedJob AtTokens(const ValidatedJob& j, int64_t tokens) {
  ValidatedJob t = j;
  t.training.micro_batch = 1;
  t.training.seq = tokens;
  t.training.dense_mask = false;  // Packed (THD) micro-batches carry no [s, s] mask.
  t.recompute = RecomputeSettings();
  return t;
}

// The most one decoder layer of rank `r` allocates while it runs, bounded
// by what its training forward would save, with the routing-imbalance margin
// on its routed tokens where routing is not balanced (overheads.h).
double LargestLayerBytes(const ValidatedJob& t, int64_t r) {
  const double margin = RoutingMayBeImbalanced(t) ? kMoeImbalanceMargin : 0;
  const auto bytes = [margin](const BlockCost& c) {
    return c.act_bytes + margin * c.routed_act_bytes;
  };
  // Each kind of layer once: dense / MoE, in FP8 or kept in bf16; a hybrid
  // model's by its mixer.
  bool seen[2][2] = {{false, false}, {false, false}};
  bool seen_hybrid[4] = {false, false, false, false};
  double largest = 0;
  const Parallelism& par = t.parallelism;
  for (int64_t c = 0; c < par.vpp; ++c) {
    const StageContents& st = t.stages[r + c * par.pp];
    for (int l = st.first_layer; l < st.first_layer + st.num_layers; ++l) {
      if (t.hybrid.on) {
        const HybridLayer kind = t.hybrid.layers[l];
        const int slot = kind == HybridLayer::kMamba       ? 0
                         : kind == HybridLayer::kAttention ? 1
                         : kind == HybridLayer::kMoe       ? 2
                                                           : 3;
        if (seen_hybrid[slot]) continue;
        seen_hybrid[slot] = true;
        largest = std::max(largest, bytes(HybridLayerCost(t, kind, nullptr)));
        continue;
      }
      const bool moe = t.moe.is_moe_layer[l];
      const bool bf16 = KeptInBf16(t, l);
      if (seen[moe][bf16]) continue;
      seen[moe][bf16] = true;
      largest = std::max(largest, bytes(DecoderLayerCost(t, moe, nullptr, bf16)));
    }
  }
  return largest;
}

bool HasOutputLayer(const ValidatedJob& j, int64_t r) {
  for (int64_t c = 0; c < j.parallelism.vpp; ++c) {
    if (j.stages[r + c * j.parallelism.pp].has_loss) return true;
  }
  return false;
}

double Sum(const std::vector<ForwardOnlyTerm>& terms) {
  double sum = 0;
  for (const ForwardOnlyTerm& t : terms) sum += t.bytes;
  return sum;
}

}  // namespace

double ForwardOnlyMemory::Bytes() const { return Sum(terms); }

ForwardOnlyMemory ForwardOnlyPassMemory(const ValidatedJob& job, int64_t pp_rank,
                                        const ForwardOnlyPass& pass) {
  const ValidatedJob t = AtTokens(job, pass.tokens);
  const MicroBatchShape s(t);
  const double h = static_cast<double>(t.model.hidden);
  const double cp = static_cast<double>(t.parallelism.cp);
  const std::string shape = absl::StrCat(pass.tokens, " tokens", cp > 1 ? " / CP " : "",
                                         cp > 1 ? absl::StrCat(t.parallelism.cp) : "");

  // What both moments hold: the pipeline's received input.
  std::vector<ForwardOnlyTerm> common;
  if (pp_rank > 0) {
    common.push_back(
        {"pipeline input", s.sp_tokens * h * s.elt,
         absl::StrCat("the [", shape, ", hidden ", t.model.hidden,
                      "] activation received from the previous stage, held until the stage's "
                      "forward ends (megatron/core/pipeline_parallel/schedules.py "
                      "forward_backward_pipelining_without_interleaving, forward_only)"),
         ForwardOnlyTermKind::kActivations});
  }

  ForwardOnlyMemory layer_moment;
  layer_moment.terms = common;
  layer_moment.terms.push_back(
      {"hidden states between layers", 2 * s.sp_tokens * h * s.elt,
       absl::StrCat("a layer's input and output on the residual stream, [", shape,
                    t.parallelism.sp ? " / TP (sequence parallel)" : "", ", ", t.model.hidden,
                    "] x ", s.elt, " B each (TransformerBlock.forward)"),
       ForwardOnlyTermKind::kActivations});
  layer_moment.terms.push_back(
      {"decoder layer working set (no grad)", LargestLayerBytes(t, pp_rank),
       absl::StrCat("the largest decoder layer's intermediates at ", shape,
                    ", bounded by what its training forward saves (layer_memory.cc "
                    "DecoderLayerCost at micro-batch 1, recompute off",
                    t.is_moe_model() && RoutingMayBeImbalanced(t)
                        ? ", routed tokens +25 % for imbalance"
                        : "",
                    "): a no-grad forward frees each as it is consumed"),
       ForwardOnlyTermKind::kActivations});
  if (!HasOutputLayer(t, pp_rank)) return layer_moment;

  ForwardOnlyMemory logits_moment;
  logits_moment.logits_moment = true;
  logits_moment.terms = common;
  logits_moment.terms.push_back(
      {"final hidden states", (s.sp_tokens + s.full_tokens) * h * s.elt,
       absl::StrCat("the final norm's output and the output layer's input",
                    t.parallelism.sp ? " (gathered over TP)" : "", ", [", shape, ", ",
                    t.model.hidden, "] x ", s.elt, " B (GPTModel._postprocess)"),
       ForwardOnlyTermKind::kActivations});
  const double width = OutputWidth(t);
  const double logits = s.full_tokens * width;  // Elements of the micro-batch's logits.
  const std::string logits_shape = absl::StrCat(
      "[", shape, ", ", t.model.value_head ? "1" : "padded vocabulary ",
      t.model.value_head ? "" : absl::StrCat(t.model.padded_vocab), "]",
      !t.model.value_head && t.parallelism.tp > 1 ? absl::StrCat(" / TP ", t.parallelism.tp) : "");
  // The tokens whose log-softmax runs at once.
  const double window = pass.chunk_tokens > 0
                            ? static_cast<double>(std::min(pass.chunk_tokens, pass.tokens)) / cp
                            : s.full_tokens;
  // The fp32 copies beside the logits: the log-softmax's own unless it runs
  // in place on them (or the entropy keeps them: then on a clone), and the
  // entropy's softmax.
  const double copies =
      (!pass.in_place_log_softmax || pass.entropy ? 1 : 0) + (pass.entropy ? 1 : 0);
  const std::string copies_basis = absl::StrCat(
      pass.in_place_log_softmax
          ? "Megatron's vocab_parallel_cross_entropy runs in place on the logits "
            "(megatron/core/tensor_parallel/cross_entropy.py calculate_predicted_logits; "
            "veRL vocab_parallel_log_probs_from_logits)"
          : "the log-softmax works on an fp32 copy of the logits (slime "
            "compute_log_probs(logits.clone()), slime/backends/megatron_utils/loss.py; an "
            "out-of-place log-softmax)",
      pass.entropy ? "; the entropy keeps the logits (veRL logits_processor's logits.clone(), "
                     "verl/workers/actor/megatron_actor.py) and its softmax is one more fp32 "
                     "tensor (_VocabParallelEntropy, verl/utils/megatron/tensor_parallel.py)"
                   : "",
      ": ",
      pass.chunk_tokens > 0 ? absl::StrCat("a chunk of ", pass.chunk_tokens, " tokens")
                            : "every token at once",
      " x ", width, " x 4 B x ", copies);
  if (pass.fused_kernels) {
    if (pass.chunk_tokens > 0) {
      logits_moment.terms.push_back(
          {absl::StrCat("fp32 logits of one chunk (fused kernel", pass.entropy ? ", 2 copies" : "",
                        ")"),
           window * width * 4 * copies,
           absl::StrCat("veRL use_fused_kernels computes log-probs from the hidden states chunk "
                        "by chunk (verl/utils/kernel/linear_cross_entropy.py): no vocabulary "
                        "logits of the whole micro-batch; a chunk of ",
                        pass.chunk_tokens, " tokens x ", width, " x 4 B"),
           ForwardOnlyTermKind::kLogits});
    }
  } else {
    const double output_elt = pass.defer_fp32_logits ? s.elt : 4;
    const double output = logits * output_elt;
    const double working = window * width * 4 * copies;
    // Float16Module's upcast holds the bf16 logits and their fp32 copy at
    // once; the log-softmax holds the fp32 logits and its working copies.
    const double upcast = pass.defer_fp32_logits ? 0 : logits * (s.elt + 4);
    if (upcast > output + working) {
      logits_moment.terms.push_back(
          {"bf16 logits (output layer)", logits * s.elt,
           absl::StrCat("the output layer's ", logits_shape, " x ", s.elt,
                        " B, alive while Float16Module upcasts them (megatron/core/"
                        "transformer/module.py Float16Module.forward, fp32_output)"),
           ForwardOnlyTermKind::kLogits});
      logits_moment.terms.push_back(
          {"fp32 logits", logits * 4,
           absl::StrCat(logits_shape,
                        " x 4 B: Float16Module.forward's float16_to_fp32 of the last stage's "
                        "output (megatron/core/transformer/module.py)"),
           ForwardOnlyTermKind::kLogits});
    } else {
      logits_moment.terms.push_back(
          {pass.defer_fp32_logits ? "bf16 logits (fp32 deferred)" : "fp32 logits", output,
           pass.defer_fp32_logits
               ? absl::StrCat(logits_shape, " x ", s.elt,
                              " B: the model returns them unconverted (NeMo-RL "
                              "defer_fp32_logits: Float16Module fp32_output false)")
               : absl::StrCat(logits_shape,
                              " x 4 B: Float16Module.forward's float16_to_fp32 of the last "
                              "stage's output (megatron/core/transformer/module.py)"),
           ForwardOnlyTermKind::kLogits});
      if (working > 0) {
        logits_moment.terms.push_back({absl::StrCat("fp32 log-softmax copies (", copies, ")"),
                                       working, copies_basis, ForwardOnlyTermKind::kLogits});
      }
    }
  }
  return logits_moment.Bytes() > layer_moment.Bytes() ? logits_moment : layer_moment;
}

}  // namespace oomguard
