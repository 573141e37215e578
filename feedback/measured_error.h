// A record's measurements against its estimate (feedback.proto): for each
// measured peak, the pipeline stage whose estimate it is compared with, the
// relative error of the point estimate and whether the upper bound held.
//
// Two measures, each against its own estimate:
//  - "allocated": RankMeasurement.max_allocated_bytes (the allocator's
//    torch.cuda.max_memory_allocated) against RankEstimate.
//    peak_allocated_bytes / peak_allocated_upper_bytes;
//  - "device": RankMeasurement.device_used_bytes (NVML / DCGM FB_USED)
//    against peak_device_bytes / peak_device_upper_bytes.
// A measurement with a rank is compared with its stage, rank r on stage
// r / CheckRecord.gpus_per_pipeline_stage (Megatron-LM's default rank order
// tp-cp-ep-dp-pp puts PP outermost). Measurements without a rank (DCGM's
// per-GPU values: which stage a GPU holds is not known) are taken together:
// their largest is compared with the job's largest stage, since comparing
// every GPU with the largest stage would count the other stages' GPUs as
// overestimates.
#ifndef OOMGUARD_FEEDBACK_MEASURED_ERROR_H_
#define OOMGUARD_FEEDBACK_MEASURED_ERROR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::feedback {

enum class Measure { kAllocated, kDevice };

// The metrics' `measure` label: "allocated" or "device".
absl::string_view MeasureName(Measure measure);

struct MeasuredError {
  Measure measure = Measure::kAllocated;
  // The stage compared (RankEstimate.pp_rank).
  uint32_t pp_rank = 0;
  uint64_t measured_bytes = 0;
  // The stage's point estimate and upper bound of this measure.
  uint64_t estimate_bytes = 0;
  uint64_t upper_bytes = 0;
  // (estimate - measured) / measured: > 0 the estimate was above.
  double error = 0;
  // measured <= upper.
  bool under_bound = false;
};

// The errors of `report`'s measurements against `record`'s estimate, one
// per measure a measurement holds, in the order of its ranks
// (those without a rank last: allocated, then device). Skipped: a measured
// value of 0 (no ratio), a rank whose stage the record has no estimate for
// (or a record without gpus_per_pipeline_stage), a record without an
// estimate.
std::vector<MeasuredError> MeasuredErrors(const v1::CheckRecord& record,
                                          const v1::StoredReport& report);

// Every error of every report the record holds, in the order received.
std::vector<MeasuredError> RecordErrors(const v1::CheckRecord& record);

// Whether the record's verdict admitted the job (FITS, FITS_WITH_SETTINGS).
bool Admitted(const v1::CheckRecord& record);

// Whether any of the record's reports says the job died of a CUDA OOM.
bool DiedOfCudaOom(const v1::CheckRecord& record);

}  // namespace oomguard::feedback

#endif  // OOMGUARD_FEEDBACK_MEASURED_ERROR_H_
