// Which attention kernel a job's layers run: training.attention_backend
// resolved against the GPU architecture and the dtype as Transformer Engine's
// get_attention_backend picks it, and which softmax the unfused attention
// runs (the fused kernel keeps 16-bit probabilities only). A backend or a
// dtype the GPU cannot run is refused, as Megatron-LM / TE fail on it.
#ifndef OOMGUARD_ESTIMATOR_ATTENTION_BACKEND_H_
#define OOMGUARD_ESTIMATOR_ATTENTION_BACKEND_H_

#include "absl/status/status.h"
#include "estimator/validated_job.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

// Sets j.training.flash_attention, local_attention and fused_softmax from
// `job`. Needs j.training.transformer_engine, j.parallelism, j.model and
// j.runtime.gpu_architecture resolved. INVALID_ARGUMENT naming the field
// for flash or fused attention on a GPU of compute capability 7 or in fp32,
// unfused attention with context parallelism, and BF16 or FP8 on compute
// capability 7.
absl::Status ResolveAttentionBackend(const v1::JobSpec& job, ValidatedJob& j);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_ATTENTION_BACKEND_H_
