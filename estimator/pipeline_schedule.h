// How many micro-batches each model chunk of a pipeline rank holds at the
// rank's activation peak, following Megatron-Core's 1F1B and interleaved
// 1F1B schedules (warm-up length, chunk order by micro-batch groups), capped
// by the number of micro-batches per iteration.
#ifndef OOMGUARD_ESTIMATOR_PIPELINE_SCHEDULE_H_
#define OOMGUARD_ESTIMATOR_PIPELINE_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "common/deadline.h"
#include "estimator/validated_job.h"

namespace oomguard {

struct InFlight {
  std::vector<int64_t> per_chunk;  // Micro-batches held by each chunk at the peak.
  double held_bytes = 0;           // Sum over chunks of count x chunk bytes.
};

// `chunk_bytes[c]` = activation bytes one micro-batch leaves on chunk c of
// `pp_rank`. The peak is the largest live set over the schedule. The walk
// takes up to (v + 2) x g x v steps for v chunks and micro-batch groups of g;
// it stops with `deadline`'s error once that passes.
absl::StatusOr<InFlight> PeakInFlight(const ValidatedJob& j, int64_t pp_rank,
                                      const std::vector<double>& chunk_bytes,
                                      const Deadline& deadline = Deadline());

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_PIPELINE_SCHEDULE_H_
