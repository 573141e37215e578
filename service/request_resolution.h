// Request -> core inputs: turns the job source of a request into one
// JobSpec (or, for an RL job, one RlJobSpec), and the GPU of a CheckRequest
// or EstimateRequest into a catalog entry. Every error is
// InvalidArgument whose message starts with the request field path and shows
// the bad value, and which carries that path as a BadRequest detail
// (WithBadField, status_mapping.h); or Unimplemented for a valid job oomguard
// does not model (FSDP).
#ifndef OOMGUARD_SERVICE_REQUEST_RESOLUTION_H_
#define OOMGUARD_SERVICE_REQUEST_RESOLUTION_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "admission/gpu_catalog.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"
#include "oomguard/v1/rl_job.pb.h"
#include "oomguard/v1/service.pb.h"

namespace oomguard::service {

struct ResolvedJob {
  // The job, unless it is an RL job.
  v1::JobSpec spec;
  // An RL job: JobSource.rl or rl_spec, or a MegatronJob whose argv is an
  // RL loop's (slime's, Megatron-LM's --perform-rl-step), which is judged
  // as the RL job it is. The source's env and gpus_per_node apply to its
  // actor (and critic).
  std::optional<v1::RlJobSpec> rl;
  // What the parsers noticed (ignored flags, assumed defaults).
  std::vector<std::string> notes;
};

// Resolves `source`, the request field named `field` (e.g. "job").
absl::StatusOr<ResolvedJob> ResolveJobSource(const v1::JobSource& source, absl::string_view field);

// The GPU of `request`: its catalog entry, or an entry holding just the
// explicit memory size.
absl::StatusOr<v1::GpuSpec> ResolveGpu(const v1::CheckRequest& request, const GpuCatalog& catalog);

// The GPU an RL job's estimate assumes (its engine takes a fraction of the
// GPU): the request's gpu_name (by the catalog) or gpu_memory_bytes, else
// AssumedRlGpu (admission/rl_admission.h), noted in `notes`.
absl::StatusOr<v1::GpuSpec> ResolveEstimateGpu(const v1::EstimateRequest& request,
                                               const GpuCatalog& catalog,
                                               std::vector<std::string>* notes);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_REQUEST_RESOLUTION_H_
