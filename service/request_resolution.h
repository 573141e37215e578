// Request -> core inputs: turns the job source of a request into one
// JobSpec, and the GPU of a CheckRequest into a catalog entry. Every error is
// InvalidArgument whose message starts with the request field path and shows
// the bad value, and which carries that path as a BadRequest detail
// (WithBadField, status_mapping.h); or Unimplemented for a valid job oomguard
// does not model (FSDP).
#ifndef OOMGUARD_SERVICE_REQUEST_RESOLUTION_H_
#define OOMGUARD_SERVICE_REQUEST_RESOLUTION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "admission/gpu_catalog.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard::service {

struct ResolvedJob {
  v1::JobSpec spec;
  // What the parsers noticed (ignored flags, assumed defaults).
  std::vector<std::string> notes;
};

// Resolves `source`, the request field named `field` (e.g. "job").
absl::StatusOr<ResolvedJob> ResolveJobSource(const v1::JobSource& source, absl::string_view field);

// The GPU of `request`: its catalog entry, or an entry holding just the
// explicit memory size.
absl::StatusOr<v1::GpuSpec> ResolveGpu(const v1::CheckRequest& request, const GpuCatalog& catalog);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_REQUEST_RESOLUTION_H_
