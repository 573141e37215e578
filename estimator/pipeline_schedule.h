// How many micro-batches each model chunk of a pipeline rank holds at the
// rank's activation peak, following Megatron-Core's 1F1B and interleaved
// 1F1B schedules (warm-up length, chunk order from its schedule table of
// micro-batch groups, a last partial group included), capped by the number
// of micro-batches per iteration.
#ifndef OOMGUARD_ESTIMATOR_PIPELINE_SCHEDULE_H_
#define OOMGUARD_ESTIMATOR_PIPELINE_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "common/deadline.h"
#include "estimator/validated_job.h"

namespace oomguard {

// Counts per model chunk, inline for up to 4 chunks (the common VPP sizes):
// the estimator walks every rank's schedule for every estimate.
using ChunkCounts = absl::InlinedVector<int64_t, 4>;

struct InFlight {
  ChunkCounts per_chunk;  // Micro-batches held by each chunk at the peak.
  double held_bytes = 0;  // Sum over chunks of count x chunk bytes.
};

// `chunk_bytes[c]` = activation bytes one micro-batch leaves on chunk c of
// `pp_rank`. The peak is the largest live set over the schedule: the end of
// the warm-up, counted in closed form, or a state of the steady 1F1B phase.
// While its forwards run the whole groups of g (v chunks) the states repeat
// every g x v steps; the steps whose forward runs the last, partial group
// (n mod g micro-batches) are walked one by one: at most (g + n mod g) x v
// steps in all. It stops with `deadline`'s error once that passes.
absl::StatusOr<InFlight> PeakInFlight(const ValidatedJob& j, int64_t pp_rank,
                                      const std::vector<double>& chunk_bytes,
                                      const Deadline& deadline = Deadline());

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_PIPELINE_SCHEDULE_H_
