// What a server with a store keeps of a check (feedback.proto's
// CheckRecord): the canonical resolved job, the GPU, the verdict and the
// estimate of each pipeline stage as the verdict compared it. This part is
// a function of the check alone, so the response cache keeps it beside the
// answer's bytes; the id, the time and the job's handle are each call's
// (request_handlers.cc stamps them).
#ifndef OOMGUARD_SERVICE_CHECK_RECORD_H_
#define OOMGUARD_SERVICE_CHECK_RECORD_H_

#include "absl/strings/string_view.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/feedback.pb.h"
#include "service/request_resolution.h"

namespace oomguard::service {

// The record of `job` checked with `response` (which holds the estimate of
// each stage: a Megatron job's report; an RL step's phases, and its actor
// update's report unless omitted), by oomguard `version` serving `cluster`.
v1::CheckRecord CheckRecordOf(const ResolvedJob& job, const v1::CheckResponse& response,
                              absl::string_view version, absl::string_view cluster);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_CHECK_RECORD_H_
