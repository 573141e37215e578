// The GPU catalog: the GPU models a job can be checked against, by name.
//
// The built-in entries hold the device memory PyTorch reports for each model;
// a deployment can replace or add entries with a catalog in protobuf text
// format (v1::GpuCatalog), e.g. when its driver reserves more memory.
#ifndef OOMGUARD_ADMISSION_GPU_CATALOG_H_
#define OOMGUARD_ADMISSION_GPU_CATALOG_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "oomguard/v1/admission.pb.h"
#include "oomguard/v1/job.pb.h"

namespace oomguard {

class GpuCatalog {
 public:
  // The built-in catalog: the GPUs of gpu_catalog.cc, each with its name,
  // aliases and memory (the one list of GPU names; the planner's speed
  // table, planner/gpu_performance.cc, is keyed by these names).
  static GpuCatalog Builtin();

  // A catalog of `gpus`. InvalidArgument (naming the entry and field) for an
  // empty name, zero memory, or a name or alias used twice.
  static absl::StatusOr<GpuCatalog> Create(std::vector<v1::GpuSpec> gpus);

  // This catalog with the entries of `text` (a v1::GpuCatalog in protobuf
  // text format) merged in: an entry replaces the one with the same name,
  // other entries are added. InvalidArgument on a parse error or a bad entry.
  absl::StatusOr<GpuCatalog> WithOverrides(std::string_view text) const;

  // The entry whose name or alias matches `name`, ignoring case and treating
  // '_' like '-'. NotFound (listing the known names, `name` quoted and cut
  // short) otherwise.
  absl::StatusOr<v1::GpuSpec> Find(std::string_view name) const;

  // All entries, in catalog order.
  const std::vector<v1::GpuSpec>& gpus() const { return gpus_; }

 private:
  explicit GpuCatalog(std::vector<v1::GpuSpec> gpus) : gpus_(std::move(gpus)) {}

  std::vector<v1::GpuSpec> gpus_;
};

// The architecture of `gpu` by its compute capability (NVIDIA 9: Hopper;
// 10 and 11: Blackwell), UNSPECIFIED for any other or an unknown one.
v1::GpuArchitecture GpuArchitectureOf(const v1::GpuSpec& gpu);

// `job` as it runs on `gpu`: runtime.gpu_architecture from the GPU where the
// job leaves it unspecified (a job's own setting stays).
v1::JobSpec JobOnGpu(const v1::JobSpec& job, const v1::GpuSpec& gpu);

// True when MCore requires NCCL_GRAPH_REGISTER=0 for CUDA graphs with
// expandable segments on `gpu`: before Blackwell, or when unknown.
bool NeedsNcclGraphRegisterOff(const v1::GpuSpec& gpu);

}  // namespace oomguard

#endif  // OOMGUARD_ADMISSION_GPU_CATALOG_H_
