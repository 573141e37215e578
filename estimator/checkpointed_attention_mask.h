// The dense causal attention mask Megatron-LM's data loader materialises
// (megatron/core/datasets/gpt_dataset.py _get_ltor_masks_and_position_ids,
// on by default; `--no-create-attention-mask-in-dataloader` turns it off),
// as the memory of one model chunk and micro-batch.
//
// pretrain_gpt.py get_batch loads a batch, and with it the [b, 1, s, s] bool
// mask, only on the virtual stages that hold the embedding, the loss or MTP
// layers (megatron/training/utils/common_utils.py
// is_first_or_last_pipeline_stage, mtp_on_this_rank); the other stages get
// None. Transformer Engine's causal attention never reads it, so without
// full recompute it is freed when the forward step returns. Under full
// recompute every checkpointed group saves its arguments, the mask among
// them (megatron/core/recompute.py checkpointed_forward's chunk_runner ->
// tensor_parallel/random.py CheckpointFunction.forward's
// ctx.save_for_backward(*args)), so the mask lives until the chunk's
// backward: one per micro-batch the chunk holds.
#ifndef OOMGUARD_ESTIMATOR_CHECKPOINTED_ATTENTION_MASK_H_
#define OOMGUARD_ESTIMATOR_CHECKPOINTED_ATTENTION_MASK_H_

#include "estimator/validated_job.h"

namespace oomguard {

// Bytes of the attention mask virtual stage `st` keeps per micro-batch:
// b x s x s (bool) when the data loader creates the mask, the stage loads a
// batch and full recompute checkpoints at least one of its layers
// (decoder or MTP); else 0.
double CheckpointedAttentionMaskBytes(const ValidatedJob& j, const StageContents& st);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_CHECKPOINTED_ATTENTION_MASK_H_
