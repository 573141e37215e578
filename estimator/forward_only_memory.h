// The working memory of a forward-only pass of a Megatron-Core model (no
// gradients: an RL step's old-policy and reference log-prob passes), on one
// pipeline rank: what one decoder layer allocates while it runs, the hidden
// states between layers, the pipeline's received input, and on the last
// stage the logits with the copies the log-prob computation makes. What the
// model keeps resident (its weights) is the caller's (rl_step.h).
//
// A no-grad forward saves nothing for backward: each intermediate of a layer
// lives from the op that makes it to the last op that reads it, then returns
// to the allocator. The tensors a layer's forward makes are the ones its
// training forward saves (layer_memory.h, at micro-batch 1 and the pass's
// tokens, recompute off) plus temporaries that no backward keeps (a
// kernel's workspace, a few MiB); at no instant are all of them alive at
// once, so the saved set bounds the live set from above. The bound is loose
// for wide MLPs (fc1's output and the activation's output are both counted)
// and tight for attention with flash kernels; it carries a 25 % spread
// (rl_step.h) like the backward working set.
//
// The logits, per logit element at the worst moment: the output layer's
// bf16 result and Float16Module's fp32 copy of it, 6 B; then the fp32
// logits beside the log-softmax's and entropy's fp32 copies, 4 B each.
// Measured with PyTorch's allocator (max_memory_allocated, no_grad, 16384
// tokens x 151936): the upcast and Megatron's in-place cross entropy 6.0 B,
// a clone then the in-place cross entropy 8.0 B, an out-of-place
// log_softmax 8.0 B (bench/device/README.md, H200); veRL's sequence with
// the entropy (clone, _VocabParallelEntropy with its compiled mul_reduce,
// the in-place cross entropy on the clone) 12.0 B, 16.0 B with an eager
// product (H100, PyTorch 2.11, 2026-11-27).
#ifndef OOMGUARD_ESTIMATOR_FORWARD_ONLY_MEMORY_H_
#define OOMGUARD_ESTIMATOR_FORWARD_ONLY_MEMORY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "estimator/validated_job.h"

namespace oomguard {

// One forward-only pass: its packed micro-batch and how the framework turns
// logits into log-probabilities (RlJobSpec.log_prob, LogProbSpec).
struct ForwardOnlyPass {
  // Tokens of one packed micro-batch over the context-parallel group (each
  // rank holds tokens / CP), > 0.
  int64_t tokens = 0;
  // Tokens whose log-probabilities are computed at once; 0 = all of them.
  int64_t chunk_tokens = 0;
  // The log-probs come from Megatron's cross entropy run in place on the
  // model's fp32 logits (veRL's vocab_parallel_log_probs_from_logits): no
  // copy of its own. False: the framework clones the logits or takes an
  // out-of-place log-softmax (slime, NeMo-RL): one fp32 copy.
  bool in_place_log_softmax = false;
  // The entropy is computed from the logits: the logits are kept for it
  // (veRL clones them before the in-place cross entropy) and its softmax is
  // one more fp32 tensor (veRL's _VocabParallelEntropy; its p x logits
  // product is fused by torch.compile).
  bool entropy = false;
  bool defer_fp32_logits = false;  // The model returns bf16 logits.
  bool fused_kernels = false;      // No vocabulary logits materialised.
};

enum class ForwardOnlyTermKind {
  kActivations,  // Moves with the pass's tokens.
  kLogits,       // Moves with the tokens or the chunk.
};

struct ForwardOnlyTerm {
  std::string name;
  double bytes = 0;
  std::string basis;  // Source file and function, the sizes used.
  ForwardOnlyTermKind kind = ForwardOnlyTermKind::kActivations;
};

// The terms of the rank's worst moment: the largest decoder layer running,
// or on the rank with the output layer, the logits and their log-softmax
// (whichever is larger; the layers' intermediates are freed by then).
struct ForwardOnlyMemory {
  std::vector<ForwardOnlyTerm> terms;
  bool logits_moment = false;  // The worst moment is the logits'.
  double Bytes() const;
};

// The forward-only working memory of PP rank `pp_rank` of `job` (the
// trained model's layout) for `pass`. `pass.tokens` is at most kMaxSeq
// (validated by the caller).
ForwardOnlyMemory ForwardOnlyPassMemory(const ValidatedJob& job, int64_t pp_rank,
                                        const ForwardOnlyPass& pass);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_FORWARD_ONLY_MEMORY_H_
