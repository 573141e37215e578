// What context parallelism's exchange of keys and values (--cp-comm-type,
// Transformer Engine's context_parallel.py) keeps beyond attention without
// it, per layer and micro-batch. Measured against p2p, the default, whose
// numbers are the rest of layer_memory's: AttnFuncWithCPAndKVP2P saves q,
// the last K/V chunk it received (the size of the local K/V it replaces) and
// its output, as attention without CP does.
//  - a2a and a2a+p2p (AttnFuncWithCPAndQKVOA2A, and the p2p function with
//    its a2a group): core attention saves the q, k, v it got from the
//    all-to-all and its output before the reverse all-to-all, a second copy
//    of the output; linear_qkv's output and the RoPE'd q and k are freed.
//  - all_gather (AttnFuncWithCPAndKVAllGather): saves the local q, k, v and
//    output as without CP; the full-sequence K and V it gathers (forward and
//    again in backward) and their full-sequence gradients are the working set.
#ifndef OOMGUARD_ESTIMATOR_CONTEXT_PARALLEL_ATTENTION_H_
#define OOMGUARD_ESTIMATOR_CONTEXT_PARALLEL_ATTENTION_H_

#include "absl/status/status.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Sets j.parallelism.cp_comm from parallelism.cp_comm_type and checks it
// and parallelism.hierarchical_context_parallel_sizes as Megatron-LM and TE
// do. Needs j.model and j.parallelism's sizes. INVALID_ARGUMENT naming the
// field; UNIMPLEMENTED for a per-layer mix of types (not modelled).
absl::Status ResolveContextParallelComm(const v1::ParallelismSpec& p, ValidatedJob& j);

// Whether core attention keeps the all-to-all's own q, k, v and a second
// copy of its output (a2a, a2a+p2p with CP > 1).
bool CpAttentionKeepsAllToAllCopies(const ValidatedJob& j);

// The backward working set all_gather adds: the gathered K and V and their
// full-sequence gradients, 2 x CP x the local K and V, `kv_bytes` (elements
// x bytes of the micro-batch's local keys and values). 0 for the others.
double CpAllGatherTransientBytes(const ValidatedJob& j, double kv_bytes);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_CONTEXT_PARALLEL_ATTENTION_H_
