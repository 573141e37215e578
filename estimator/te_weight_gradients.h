// Weight-gradient tensors outside the gradient buffer (main_grad) that
// Megatron-Core's DDP and Transformer Engine create in backward:
//
//  * the dummy weight gradients of gradient-accumulation fusion. The GEMM
//    accumulates into param.main_grad, and the layer still returns a tensor
//    of the weight's shape as its gradient so that the DDP backward hook
//    (distributed_data_parallel.py, DistributedDataParallel._make_backward_post_hook)
//    runs on the main thread. From TE 2.3 that tensor comes from
//    transformer_engine/pytorch/module/base.py get_dummy_wgrad, which caches
//    one tensor per (shape, dtype) for the life of the process: static
//    memory, once per distinct weight shape on the GPU (not per layer, and
//    one for all the experts of a GroupedLinear). From Megatron-Core 0.14 the
//    output layer (tensor_parallel/layers.py,
//    LinearWithGradAccumulationAndAsyncCommunication.backward) uses it too.
//  * the dense word-embedding gradient of the first stage
//    (VocabParallelEmbedding.forward uses F.embedding, whose backward builds
//    a [vocab/TP, h] gradient in the weight's dtype; the DDP hook adds it to
//    main_grad and drops it): transient in the embedding's backward.
#ifndef OOMGUARD_ESTIMATOR_TE_WEIGHT_GRADIENTS_H_
#define OOMGUARD_ESTIMATOR_TE_WEIGHT_GRADIENTS_H_

#include <cstdint>

#include "estimator/validated_job.h"

namespace oomguard {

// Bytes of the dummy weight gradients TE's get_dummy_wgrad keeps on PP rank
// `pp_rank` (all its model chunks share one cache). 0 without
// gradient-accumulation fusion or with TE older than 2.3.
double TeDummyWgradBytes(const ValidatedJob& j, int64_t pp_rank);

// Bytes of the dense word-embedding gradient F.embedding's backward
// creates on a stage holding the embedding (transient, freed by the DDP
// hook once added to main_grad).
double EmbeddingWgradTransientBytes(const ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_TE_WEIGHT_GRADIENTS_H_
