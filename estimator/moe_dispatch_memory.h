// Working memory of a Megatron-Core MoE layer's token dispatch and combine
// that the layer does not save for backward but holds while it runs: the
// copies of the routed tokens that MoELayer.forward's custom_forward keeps in
// locals until it returns (megatron/core/transformer/moe/moe_layer.py), the
// copies the token dispatchers make while combining
// (megatron/core/transformer/moe/token_dispatcher.py), and the gradients of
// the allgather dispatcher's reduce-scatter in backward.
//
// The forward working set matters twice per micro-batch: in the forward
// itself, and under full or `moe` recompute in the forward that
// CheckpointFunction.backward (megatron/core/tensor_parallel/random.py)
// replays under torch.enable_grad() before it runs the layer's backward,
// when the layer's rematerialised saved set is already alive.
#ifndef OOMGUARD_ESTIMATOR_MOE_DISPATCH_MEMORY_H_
#define OOMGUARD_ESTIMATOR_MOE_DISPATCH_MEMORY_H_

#include "estimator/layer_memory.h"
#include "estimator/validated_job.h"

namespace oomguard {

// Bytes one MoE layer's forward holds on top of what it saves, at its
// largest, for `sent_tokens` token copies leaving this GPU (top-k x the
// sequence-parallel tokens x the capacity factor).
//
// MoEAlltoAllTokenDispatcher: the permuted tokens of dispatch_preprocess
// (moe_utils.py permute; custom_forward's `hidden_states`), the all_to_all
// output of token_dispatch (`dispatched_input`; with EP > 1, and a copy of
// its own only when dispatch_postprocess sorts it by local expert or gathers
// it over expert TP), and at the combine the experts' fc2 output, its
// un-sorted copy (combine_preprocess's sort_chunks_by_idxs, with more than
// one local expert) and the combine all_to_all's output (token_combine).
//
// MoEAllGatherTokenDispatcher (EP x expert TP > 1): the probabilities
// gathered over EP x expert TP (custom_forward's `probs`), and at the
// combine the fc2 output, combine_preprocess's unpermute output of the
// gathered shape, token_combine's cast of it to the probabilities' dtype
// (a copy when the router runs in fp32) and the reduce-scatter output. The
// gathered hidden states live in the GlobalMemoryBuffer (overheads.cc).
double MoeDispatchForwardBytes(const ValidatedJob& j, const MicroBatchShape& s, double sent_tokens);

// Bytes the allgather dispatcher's combine needs in backward beyond the
// experts' own gradients: the all-gather of the reduce-scatter's gradient
// (in the probabilities' dtype), its cast back to the activation dtype, and
// the routed-token gradient unpermute's backward gathers from it. 0 for the
// alltoall dispatcher, whose all_to_all gradients are [routed tokens, h]
// like the experts' input gradient already counted in MoeMlp.
double MoeCombineBackwardBytes(const ValidatedJob& j, const MicroBatchShape& s, double sent_tokens);

// Bytes the token dispatcher of one MoE layer keeps as attributes from one
// forward of the layer to the next: MoEAlltoAllTokenDispatcher's
// dispatch_preprocess stores `self.probs` and `self.routing_map` ([tokens,
// experts], the probabilities in the router's dtype, the map in bool) and
// `self.reversed_local_input_permutation_mapping` (moe_utils.py permute's
// sorted indices, [top-k x tokens] int64); MoEAllGatherTokenDispatcher's
// dispatch_postprocess stores `self.local_map` ([gathered tokens, local
// experts] bool), `self.local_probs` and the same permutation mapping.
// Without recompute they are tensors the newest micro-batch saves anyway;
// when the layer runs under a checkpoint (full recompute, or `moe`
// selective recompute) its forward saves nothing else, so they are extra:
// once per recomputed MoE layer, not per micro-batch.
double MoeDispatcherStateBytes(const ValidatedJob& j, const MicroBatchShape& s);

// Bytes of the flex token dispatcher's communication buffers on one GPU,
// allocated once (when the first MoE layer dispatches) outside PyTorch's
// allocator and kept for the run; 0 for the other dispatchers. The group is
// the dispatcher's TP x EP group, G = EP x ETP ranks
// (MoEFlexTokenDispatcher's tp_ep_group).
//
// DeepEP (megatron/core/transformer/moe/fused_a2a.py get_buffer: the larger
// of the dispatch and combine configurations' size hints for G ranks,
// deep_ep Buffer.get_dispatch_config / get_combine_config; Config
// get_nvl_buffer_size_hint / get_rdma_buffer_size_hint in csrc/config.hpp):
// per channel (SMs / 2; Megatron-Core's default 20 SMs) and NVLink peer
// (min(G, 8)), the receive queue of that configuration's tokens, each token
// its hidden row (h x max(2, element bytes)), its source metadata (8 bytes),
// 128 top-k indices (int64), 128 weights and 128 scales (fp32); with G > 8
// the RDMA queue, per channel and node (G / 8), twice that of its tokens
// (16 more bytes each), in NVSHMEM memory; and the 32 MiB workspace
// (cudaMalloc). NVSHMEM's own reservation beyond it is not counted.
//
// HybridEP (deep_ep HybridEPBuffer, csrc/hybrid_ep buffer/intranode.cu,
// buffer/internode_doca.cu, extension/allgather.cu; Megatron-Core's
// init_hybrid_ep_buffer passes the rank's tokens): T = the rank's tokens
// (at least 512, rounded up to 64-token chunks); with R ranks per NVLink
// domain (runtime.hybrid_ep_ranks_per_nvlink_domain) and N = G / R domains,
// the shared dispatch/combine buffer of T x G tokens (bf16 rows, fp32
// probabilities over the domain's E x R local experts, fp32 scales per 128
// elements), the routing-map all-gather (bool, all experts x T x G) and,
// across domains, the RDMA staging of dispatch and combine (T tokens of the
// rank's own and T x (N - 1) of the other domains, rows and probabilities).
// Sync flags and the preprocessing scratch (kilobytes) are left out.
double FlexDispatcherBufferBytes(const ValidatedJob& j, const MicroBatchShape& s);

// How many of the MoE layers of virtual stage `st` (MTP layers included)
// run their forward under a checkpoint: every one under uniform full or
// `moe` selective recompute; under block full recompute the first
// recompute.num_layers layers of the stage, counted as MoE layers first.
double RecomputedMoeLayers(const ValidatedJob& j, const StageContents& st);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_MOE_DISPATCH_MEMORY_H_
