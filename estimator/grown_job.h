// A job grown along one of the sizes no count of any rank may shrink with
// (CheckGrowsWith, report_invariants.h): the micro-batch, the sequence, the
// layers, the hidden size, the experts. The tests' sweeps and the
// estimator's fuzz target grow jobs through it, so that a grown job is never
// a smaller one in disguise (a size that no longer fits its 32-bit field
// would wrap around).
#ifndef OOMGUARD_ESTIMATOR_GROWN_JOB_H_
#define OOMGUARD_ESTIMATOR_GROWN_JOB_H_

#include <cstdint>
#include <optional>

#include "oomguard/v1/job.pb.h"

namespace oomguard {

enum class Growth {
  // training.micro_batch_size, and the global batch with it (a set one), so
  // that the micro-batches per iteration stay as they were.
  kMicroBatch,
  // training.seq_length, and a set model.max_position_embeddings with it.
  kSequence,
  // model.num_layers: more of the same layers, so a model with an explicit
  // MoE layer pattern, or a --moe-layer-freq period that does not divide its
  // layers, has no grown job.
  kLayers,
  // model.hidden_size (a default FFN width, 4 x hidden, grows with it).
  kHidden,
  // model.num_experts of a model with experts.
  kExperts,
};
inline constexpr Growth kGrowths[] = {Growth::kMicroBatch, Growth::kSequence, Growth::kLayers,
                                      Growth::kHidden, Growth::kExperts};

// The size's name, as in the JobSpec ("training.micro_batch_size", ...).
const char* GrowthName(Growth growth);

// `job` with the size of `growth` multiplied by `factor` (>= 2); nullopt
// when there is no such job: the size is unset or 0 (a dense model has no
// experts to grow), or a grown size would not fit its uint32 field.
std::optional<v1::JobSpec> GrownJob(const v1::JobSpec& job, Growth growth, uint32_t factor);

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_GROWN_JOB_H_
