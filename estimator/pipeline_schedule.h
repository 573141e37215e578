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
  // With --overlap-moe-expert-parallel-comm, whether a step runs one
  // micro-batch's forward beside another's backward, layer by layer
  // (Megatron-Core's combined 1F1B): the forward's layer i runs while the
  // backward frees layer L - 1 - i, so the step holds its live set plus what
  // one layer of the forward keeps before the backward frees its counterpart
  // (the estimator adds that layer, estimator.cc).
  bool combined_steps = false;
};

// `chunk_bytes[c]` = activation bytes one micro-batch leaves on chunk c of
// `pp_rank`. The peak is the largest live set over the schedule: the end of
// the warm-up, counted in closed form, or a state of the steady 1F1B phase.
// While its forwards run the whole groups of g (v chunks) the states repeat
// every g x v steps; the steps whose forward runs the last, partial group
// (n mod g micro-batches) are walked one by one: at most (g + n mod g) x v
// steps in all. It stops with `deadline`'s error once that passes.
//
// With the EP overlap a steady step is one combined forward-backward
// (combined_1f1b.py): its live set is counted after the step, the forward
// added and the backward removed, never with both micro-batches whole; at
// PP 1 (combined_1f1b_schedule_for_no_pipelining) that is one micro-batch.
absl::StatusOr<InFlight> PeakInFlight(const ValidatedJob& j, int64_t pp_rank,
                                      const std::vector<double>& chunk_bytes,
                                      const Deadline& deadline = Deadline());

}  // namespace oomguard

#endif  // OOMGUARD_ESTIMATOR_PIPELINE_SCHEDULE_H_
