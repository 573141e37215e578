// What the DCGM reader (dcgm_reader.h) asks Prometheus and how it reads the
// answer, without I/O: the PromQL of a checked job's peak device memory
// (the DCGM exporter's DCGM_FI_DEV_FB_USED, MiB per GPU, its max over the
// job's lifetime), the answer of Prometheus's HTTP API /api/v1/query turned
// into measurements (bytes, one per GPU), and whether they say more than
// the DCGM reports a record already holds.
//
// The exporter's labels (../shared/design/FEEDBACK_SOURCES.md, section 2):
// `hpc_job` (the Slurm job id, with --hpc-job-mapping-dir), `pod` /
// `namespace` (with --kubernetes), `gpu` (the index), `hostname`
// (`Hostname` before dcgm-exporter PR #655), `GPU_I_ID` (a MIG instance).
#ifndef OOMGUARD_SERVICE_DCGM_QUERY_H_
#define OOMGUARD_SERVICE_DCGM_QUERY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "oomguard/v1/feedback.pb.h"

namespace oomguard::service {

// The DCGM exporter's framebuffer-used gauge (MiB).
inline constexpr char kDcgmFbUsedMetric[] = "DCGM_FI_DEV_FB_USED";
// The range of max_over_time: at least this, so that a job checked a moment
// ago still has a window with a sample in it.
inline constexpr absl::Duration kMinDcgmRange = absl::Minutes(1);

// The PromQL of the peak framebuffer use of each GPU of the job `handle`
// names over the last `range` (rounded up to whole seconds, at least
// kMinDcgmRange):
//   max by (hostname, Hostname, pod, gpu, GPU_I_ID)
//     (max_over_time(DCGM_FI_DEV_FB_USED{hpc_job="ID"}[Rs]))
// for a Slurm job id, with {namespace="NS",pod=~"WORKLOAD-.+"} for a
// Kubernetes workload (its pods are named "<workload>-..."), both joined by
// `or` when both are set. InvalidArgument naming the handle's field when it
// is not one feedback::ValidateJobHandle takes (so every value in a matcher
// is one that needs no quoting), or when it names no job.
absl::StatusOr<std::string> DcgmPeakQuery(const v1::JobHandle& handle, absl::Duration range);

// The device a series' labels name: "<pod or hostname>/<gpu>", with
// "/mig<GPU_I_ID>" for a MIG instance; "-" for a part the labels lack. At
// most feedback::kMaxDeviceBytes (a long pod name is cut).
std::string DcgmDevice(absl::string_view pod, absl::string_view hostname, absl::string_view gpu,
                       absl::string_view mig_instance);

// The measurements in the body of a Prometheus /api/v1/query answer to
// DcgmPeakQuery: per device (DcgmDevice), device_used_bytes = the value in
// MiB x 2^20; series naming the same device are merged (the larger value);
// sorted by device. A value that is not a number of MiB a GPU can hold
// (negative, NaN, over feedback::kMaxMeasuredBytes) is left out. Unavailable
// with Prometheus's own errorType and error for an answer with status
// "error"; Internal for a body that is not such an answer (not JSON, not a
// vector); ResourceExhausted beyond feedback::kMaxReportRanks series.
absl::StatusOr<std::vector<v1::RankMeasurement>> ParseDcgmPeaks(absl::string_view body);

// What a new DCGM report for `record` should hold given the peaks just read:
// per device, the larger of `measured` and every DCGM report the record has
// (so a sample that has left Prometheus's retention lowers nothing), sorted
// by device; nullopt when that says nothing the record's DCGM reports do not
// (no new device, no higher value), so that a job is reported only when its
// peak changed.
std::optional<std::vector<v1::RankMeasurement>> NewDcgmPeaks(
    const v1::CheckRecord& record, const std::vector<v1::RankMeasurement>& measured);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_DCGM_QUERY_H_
