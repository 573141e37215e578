// What a report (feedback.proto's ReportRequest) may hold: the one rule the
// server applies to every report it takes, whatever brought it (gRPC, POST
// /v1/report, `oomguard report`, the DCGM reader), and the CLI applies
// before sending. Bounds keep a record small (under 1 KiB per rank
// measurement) and the handles safe to put in a PromQL label matcher.
#ifndef OOMGUARD_FEEDBACK_REPORT_LIMITS_H_
#define OOMGUARD_FEEDBACK_REPORT_LIMITS_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::feedback {

// A check id: 32 lowercase hex digits, 128 random bits.
inline constexpr size_t kCheckIdLength = 32;
// Measurements in one report: one per GPU of the largest jobs.
inline constexpr int kMaxReportRanks = 131072;
// A global rank below this.
inline constexpr uint32_t kMaxRank = 1u << 24;
// A measured byte count at most this (1 PiB, as the estimator's limit).
inline constexpr uint64_t kMaxMeasuredBytes = uint64_t{1} << 50;
inline constexpr size_t kMaxDeviceBytes = 128;   // RankMeasurement.device
inline constexpr size_t kMaxPhaseBytes = 32;     // RankMeasurement.phase, oom_phase
inline constexpr size_t kMaxDetailBytes = 2048;  // The OOM line and its context.
inline constexpr size_t kMaxHandleBytes = 253;   // A Kubernetes name's limit.

// OK when `id` is a check id; else InvalidArgument naming `field`.
absl::Status ValidateCheckId(absl::string_view id, absl::string_view field = "check_id");

// OK when `handle`'s fields are empty or well formed: a Slurm job id (digits,
// an array's "_N" or a het job's "+N"), Kubernetes names (RFC 1123: lowercase
// letters, digits, '-', '.'), a Kubernetes kind (CamelCase, with a workload).
// InvalidArgument naming `field`.<its field>.
absl::Status ValidateJobHandle(const v1::JobHandle& handle, absl::string_view field = "handle");

// OK when `report` is one the server takes: a check id, a source, an
// outcome it knows, each measurement with a rank or a device and a value
// within the bounds above, no rank twice, and something to say (a
// measurement, an outcome or a handle). InvalidArgument naming the first
// bad field, e.g. "ranks[3].max_allocated_bytes".
absl::Status ValidateReport(const v1::ReportRequest& report);

}  // namespace oomguard::feedback

#endif  // OOMGUARD_FEEDBACK_REPORT_LIMITS_H_
