#include "estimator/checkpointed_attention_mask.h"

namespace oomguard {

double CheckpointedAttentionMaskBytes(const ValidatedJob& j, const StageContents& st) {
  if (!j.training.dense_mask) return 0;
  if (j.recompute.granularity != v1::RECOMPUTE_GRANULARITY_FULL) return 0;
  // get_batch returns Nones on the stages between the first and the last
  // (and the MTP stages).
  if (!st.has_embedding && !st.has_loss && st.num_mtp_layers == 0) return 0;
  // Only a checkpointed layer saves it: a decoder layer (uniform recompute
  // checkpoints every group; block recompute the first ones) or an MTP layer
  // (MultiTokenPredictionLayer._checkpointed_forward).
  if (st.num_layers == 0 && st.num_mtp_layers == 0) return 0;
  // [b, 1, s/CP, s] bool: get_batch_on_this_cp_rank (megatron/core/utils.py)
  // keeps this rank's rows of the mask.
  const double seq = static_cast<double>(j.training.seq);
  return static_cast<double>(j.training.micro_batch) *
         (seq / static_cast<double>(j.parallelism.cp)) * seq;
}

}  // namespace oomguard
