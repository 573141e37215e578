// Request -> core inputs (see request_resolution.h).
#include "service/request_resolution.h"

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "admission/rl_admission.h"
#include "common/status_macros.h"
#include "jobspec/environment.h"
#include "jobspec/job_builder.h"
#include "jobspec/megatron_args.h"
#include "jobspec/rl_job_builder.h"
#include "service/status_mapping.h"

namespace oomguard::service {
namespace {

// InvalidArgument with `message`, about the request field `field`.
absl::Status InvalidField(absl::string_view field, absl::string_view message) {
  return WithBadField(absl::InvalidArgumentError(message), field);
}

// `status` (from a parser or a lookup) as InvalidArgument about `field`;
// Unimplemented (a valid job oomguard does not model, e.g. FSDP) stays so,
// without a BadRequest detail (nothing in the request is wrong) and with the
// reason JOB_NOT_MODELLED, which tells clients it is oomguard's answer.
absl::Status FieldError(absl::string_view field, const absl::Status& status) {
  const std::string message = absl::StrCat(field, ": ", status.message());
  if (absl::IsUnimplemented(status)) return MarkJobNotModelled(absl::UnimplementedError(message));
  return InvalidField(field, message);
}

// MegatronJob.argv_sources, one per argv word (empty: no word holds a
// variable's value).
std::vector<std::string> ArgvSources(const v1::MegatronJob& megatron) {
  if (megatron.argv_sources().empty()) return {};
  std::vector<std::string> sources(megatron.argv_size());
  for (const auto& [index, source] : megatron.argv_sources()) {
    if (index < sources.size()) sources[index] = source;
  }
  return sources;
}

absl::StatusOr<v1::RlJobSpec> BuildRl(const v1::RlJob& rl, const std::string& field,
                                      std::vector<std::string>* notes) {
  absl::StatusOr<v1::RlJobSpec> spec = BuildRlJob(rl, notes);
  if (!spec.ok()) return FieldError(field, spec.status());
  return spec;
}

// The MegatronJob `megatron` as the RL job its argv is (LooksLikeRlArgv), or
// nullopt when it is not one.
absl::StatusOr<std::optional<v1::RlJobSpec>> MegatronAsRlJob(const v1::MegatronJob& megatron,
                                                             const std::string& field,
                                                             std::vector<std::string>* notes) {
  std::vector<std::string> words(megatron.argv().begin(), megatron.argv().end());
  if (!megatron.args().empty()) {
    absl::StatusOr<std::vector<std::string>> split = SplitArgumentLine(megatron.args());
    if (!split.ok()) return std::nullopt;  // BuildMegatronJob names the error.
    words = *std::move(split);
  }
  if (!LooksLikeRlArgv(words)) return std::nullopt;
  v1::RlJob rl;
  rl.mutable_argv()->Assign(words.begin(), words.end());
  rl.set_num_gpus(megatron.num_gpus());
  if (megatron.has_preset()) rl.set_preset(megatron.preset());
  if (megatron.has_hf_config_json()) rl.set_hf_config_json(megatron.hf_config_json());
  OOMGUARD_ASSIGN_OR_RETURN(v1::RlJobSpec spec, BuildRl(rl, field, notes));
  return spec;
}

absl::StatusOr<v1::JobSpec> BuildMegatronJob(const v1::MegatronJob& megatron,
                                             const std::map<std::string, std::string>& env,
                                             const std::string& field,
                                             std::vector<std::string>* notes) {
  if (megatron.num_gpus() == 0) {
    return InvalidField(
        absl::StrCat(field, ".num_gpus"),
        absl::StrCat(field, ".num_gpus = 0: the job's world size is required (> 0)"));
  }
  if (!megatron.argv().empty() && !megatron.args().empty()) {
    return InvalidField(
        absl::StrCat(field, ".args"),
        absl::StrCat(field, ".args: set argv (the words) or args (one line), not both"));
  }
  if (megatron.model_case() == v1::MegatronJob::MODEL_NOT_SET && megatron.argv().empty() &&
      megatron.args().empty()) {
    return InvalidField(absl::StrCat(field, ".argv"),
                        absl::StrCat(field,
                                     ".argv: empty: the arguments are required without a preset "
                                     "or hf_config_json"));
  }
  std::vector<std::string> words(megatron.argv().begin(), megatron.argv().end());
  if (!megatron.args().empty()) {
    absl::StatusOr<std::vector<std::string>> split = SplitArgumentLine(megatron.args());
    if (!split.ok()) return FieldError(absl::StrCat(field, ".args"), split.status());
    words = *std::move(split);
  }
  const JobInputs source{.preset = megatron.preset(),
                         .hf_config_json = megatron.hf_config_json(),
                         .megatron_args = std::move(words),
                         .megatron_arg_sources = ArgvSources(megatron),
                         .env = env,
                         .num_gpus = megatron.num_gpus()};
  absl::StatusOr<v1::JobSpec> spec = BuildJob(source, notes);
  if (!spec.ok()) return FieldError(field, spec.status());
  return spec;
}

}  // namespace

absl::StatusOr<ResolvedJob> ResolveJobSource(const v1::JobSource& source, absl::string_view field) {
  const std::map<std::string, std::string> env(source.env().begin(), source.env().end());
  ResolvedJob job;
  switch (source.source_case()) {
    case v1::JobSource::kSpec:
      job.spec = source.spec();
      if (absl::Status status = ApplyEnvironment(env, &job.spec); !status.ok()) {
        return FieldError(absl::StrCat(field, ".env"), status);
      }
      break;
    case v1::JobSource::kMegatron: {
      const std::string megatron_field = absl::StrCat(field, ".megatron");
      OOMGUARD_ASSIGN_OR_RETURN(job.rl,
                                MegatronAsRlJob(source.megatron(), megatron_field, &job.notes));
      if (job.rl) break;
      OOMGUARD_ASSIGN_OR_RETURN(
          job.spec, BuildMegatronJob(source.megatron(), env, megatron_field, &job.notes));
      break;
    }
    case v1::JobSource::kRl: {
      OOMGUARD_ASSIGN_OR_RETURN(job.rl,
                                BuildRl(source.rl(), absl::StrCat(field, ".rl"), &job.notes));
      break;
    }
    case v1::JobSource::kRlSpec:
      job.rl = source.rl_spec();
      break;
    case v1::JobSource::SOURCE_NOT_SET:
      return InvalidField(field,
                          absl::StrCat(field, ": missing; set spec, megatron, rl or rl_spec"));
  }
  if (job.rl) {
    if (absl::Status status = ApplyEnvironment(env, &*job.rl); !status.ok()) {
      return FieldError(absl::StrCat(field, ".env"), status);
    }
    if (source.gpus_per_node() > 0) {
      job.rl->mutable_actor()->mutable_runtime()->set_gpus_per_node(source.gpus_per_node());
      if (job.rl->has_critic()) {
        job.rl->mutable_critic()->mutable_job()->mutable_runtime()->set_gpus_per_node(
            source.gpus_per_node());
      }
    }
    return job;
  }
  if (source.gpus_per_node() > 0) {
    job.spec.mutable_runtime()->set_gpus_per_node(source.gpus_per_node());
  }
  return job;
}

namespace {

// A request's `gpu` oneof: its catalog entry by gpu_name, or an entry
// holding just gpu_memory_bytes; nullopt when neither is set.
absl::StatusOr<std::optional<v1::GpuSpec>> GpuChoice(bool has_name, const std::string& name,
                                                     bool has_bytes, uint64_t bytes,
                                                     const GpuCatalog& catalog) {
  if (has_name) {
    absl::StatusOr<v1::GpuSpec> gpu = catalog.Find(name);
    if (!gpu.ok()) return FieldError("gpu_name", gpu.status());
    return *std::move(gpu);
  }
  if (has_bytes) {
    if (bytes == 0) return InvalidField("gpu_memory_bytes", "gpu_memory_bytes = 0: must be > 0");
    v1::GpuSpec gpu;
    gpu.set_memory_bytes(bytes);
    return gpu;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<v1::GpuSpec> ResolveGpu(const v1::CheckRequest& request, const GpuCatalog& catalog) {
  OOMGUARD_ASSIGN_OR_RETURN(
      std::optional<v1::GpuSpec> gpu,
      GpuChoice(request.gpu_case() == v1::CheckRequest::kGpuName, request.gpu_name(),
                request.gpu_case() == v1::CheckRequest::kGpuMemoryBytes, request.gpu_memory_bytes(),
                catalog));
  if (gpu) return *std::move(gpu);
  // "gpu" is the oneof of gpu_name and gpu_memory_bytes.
  return InvalidField("gpu", "gpu: missing; set gpu_name (see ListGpus) or gpu_memory_bytes");
}

absl::StatusOr<v1::GpuSpec> ResolveEstimateGpu(const v1::EstimateRequest& request,
                                               const GpuCatalog& catalog,
                                               std::vector<std::string>* notes) {
  OOMGUARD_ASSIGN_OR_RETURN(
      std::optional<v1::GpuSpec> gpu,
      GpuChoice(request.gpu_case() == v1::EstimateRequest::kGpuName, request.gpu_name(),
                request.gpu_case() == v1::EstimateRequest::kGpuMemoryBytes,
                request.gpu_memory_bytes(), catalog));
  if (gpu) return *std::move(gpu);
  return AssumedRlGpu(catalog, notes);
}

}  // namespace oomguard::service
