// Kubernetes workload objects -> Megatron-LM job (see webhook_workload.h).
#include "webhook/webhook_workload.h"

#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "jobscript/job_script.h"
#include "jobscript/job_sources.h"
#include "jobspec/megatron_args.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxWorldSize = std::numeric_limits<uint32_t>::max();

absl::StatusOr<std::optional<std::string>> ReadAnnotation(const JsonNode& metadata,
                                                          absl::string_view key) {
  const JsonNode annotations = metadata.Get("annotations");
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(annotations));
  return ReadString(annotations.Get(key));
}

// The kind and name of the object's controller, or empty.
absl::StatusOr<std::string> Controller(const JsonNode& metadata) {
  const JsonNode owners = metadata.Get("ownerReferences");
  OOMGUARD_RETURN_IF_ERROR(ExpectArray(owners));
  const size_t n = owners ? owners.value->size() : 0;
  for (size_t i = 0; i < n; ++i) {
    const JsonNode owner = owners.At(i);
    const json* controller = owner.Get("controller").value;
    if (controller == nullptr || *controller != true) continue;
    OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> kind, ReadString(owner.Get("kind")));
    OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> name, ReadString(owner.Get("name")));
    return absl::StrCat(kind.value_or("?"), "/", name.value_or("?"));
  }
  return std::string();
}

absl::StatusOr<uint32_t> ReadGpusPerNode(const JsonNode& metadata) {
  OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> value,
                            ReadAnnotation(metadata, kGpusPerNodeAnnotation));
  if (!value.has_value()) return 0;
  uint32_t n = 0;
  if (!absl::SimpleAtoi(*value, &n) || n == 0 || n > kMaxGpusPerContainer) {
    return Malformed(metadata.Get("annotations").Get(kGpusPerNodeAnnotation),
                     absl::StrCat("must be a whole number in [1, ", kMaxGpusPerContainer, "]"));
  }
  return n;
}

// The pod groups' scans and the world size: Σ pods × training GPUs per pod.
struct ScannedPods {
  std::vector<PodScan> scans;  // One per pod group.
  uint64_t world = 0;
};

absl::StatusOr<ScannedPods> ScanPods(const std::vector<PodGroup>& groups,
                                     const Deadline& deadline) {
  ScannedPods pods;
  for (const PodGroup& group : groups) {
    OOMGUARD_ASSIGN_OR_RETURN(PodScan scan, ScanPodSpec(group.spec, deadline));
    const uint64_t per_pod = scan.PodGpus();
    pods.scans.push_back(std::move(scan));
    // Checked before multiplying: the factors come from the object.
    if (per_pod > kMaxWorldSize ||
        (per_pod > 0 && group.pods > (kMaxWorldSize - pods.world) / per_pod)) {
      return absl::InvalidArgumentError(absl::StrCat(
          group.spec.path, ": the object asks for more than ", kMaxWorldSize, " GPUs"));
    }
    pods.world += group.pods * per_pod;
    if (pods.world > kMaxWorldSize) {
      return absl::InvalidArgumentError(absl::StrCat(
          group.spec.path, ": the object asks for more than ", kMaxWorldSize, " GPUs"));
    }
  }
  return pods;
}

WorkloadJob NotJudged(std::string reason) {
  WorkloadJob job;
  job.not_judged = std::move(reason);
  return job;
}

}  // namespace

absl::StatusOr<WorkloadJob> ReadWorkload(const json& object_json, WorkloadKind kind,
                                         const Deadline& deadline) {
  const JsonNode object{&object_json, "", ""};
  if (!object_json.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("object = ", ShowJson(object_json), ": expected an object"));
  }
  const JsonNode metadata = object.Get("metadata");
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(metadata));

  OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> skip,
                            ReadAnnotation(metadata, kSkipAnnotation));
  if (skip.has_value() && absl::EqualsIgnoreCase(*skip, "true")) {
    return NotJudged(absl::StrCat("annotation ", kSkipAnnotation));
  }
  if (kind == WorkloadKind::kPod || kind == WorkloadKind::kJob) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::string controller, Controller(metadata));
    if (!controller.empty() &&
        (kind == WorkloadKind::kPod || !absl::StartsWith(controller, "CronJob/"))) {
      return NotJudged(absl::StrCat("controlled by ", controller));
    }
  }

  OOMGUARD_ASSIGN_OR_RETURN(const std::vector<PodGroup> groups, PodGroups(object, kind));
  OOMGUARD_ASSIGN_OR_RETURN(const ScannedPods pods, ScanPods(groups, deadline));
  const uint64_t world = pods.world;
  const PodGroup* launch_group = nullptr;
  const PodScan* launch = nullptr;
  for (size_t i = 0; i < pods.scans.size(); ++i) {
    if (pods.scans[i].launch) {
      launch_group = &groups[i];
      launch = &pods.scans[i];
      break;
    }
  }
  if (launch == nullptr) return NotJudged("no Megatron-LM launch");
  const ScriptJob& script = launch->script;
  if (script.skip) return NotJudged("#OOMGUARD skip");

  WorkloadJob job;
  job.judge = true;
  job.container = launch->container;
  job.pod_metadata.push_back(metadata.pointer);
  for (size_t i = 0; i < groups.size(); ++i) {
    if (groups[i].metadata.pointer != metadata.pointer) {
      job.pod_metadata.push_back(groups[i].metadata.pointer);
    }
    for (std::string& container : pods.scans[i].TrainingContainers()) {
      job.training_containers.push_back(std::move(container));
    }
  }
  for (const std::string& word : script.unresolved) {
    if (MayChangeMemory(word)) job.unresolved.push_back(word);
  }
  if (launch->launches > 1) {
    job.warnings.push_back(absl::StrCat("oomguard: ", launch->launches,
                                        " containers of one pod launch Megatron-LM; judged "
                                        "the first, ",
                                        job.container));
  }

  // The sources, chosen between by jobscript's one rule. The caller's are
  // the annotations (the GPU's: the object's, then the launch template's).
  // The launch line's world size is not one: in Kubernetes torchrun takes
  // its sizes from the training operator's PET_NNODES / PET_NPROC_PER_NODE,
  // which its words do not show; the object's GPUs are what the job
  // requests.
  JobSources sources = ScriptSources(script);
  sources.launch = ScriptSize{};
  sources.caller_name = "the annotations";
  OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> preset,
                            ReadAnnotation(metadata, kPresetAnnotation));
  sources.caller.preset = preset.value_or("");
  OOMGUARD_ASSIGN_OR_RETURN(sources.caller.gpus_per_node, ReadGpusPerNode(metadata));
  std::string annotated_gpu_source;
  for (const JsonNode* annotated : {&metadata, &launch_group->metadata}) {
    OOMGUARD_ASSIGN_OR_RETURN(const std::optional<std::string> gpu,
                              ReadAnnotation(*annotated, kGpuAnnotation));
    if (gpu.has_value() && !gpu->empty()) {
      sources.caller.gpu = *gpu;
      annotated_gpu_source = annotated->Get("annotations").Get(kGpuAnnotation).path;
      break;
    }
  }
  sources.request =
      ScriptSize{static_cast<uint32_t>(world), static_cast<uint32_t>(launch->launch_gpus), ""};
  sources.request_gpu = launch->gpu_product;
  sources.request_name = "the object";
  for (const char* name : {"PYTORCH_CUDA_ALLOC_CONF", "NCCL_GRAPH_REGISTER"}) {
    if (auto it = launch->env.find(name); it != launch->env.end()) {
      sources.start_env[name] = it->second;
    }
  }
  const ChosenLaunch chosen =
      ChooseLaunch(sources, script.megatron_args, script.megatron_arg_sources);
  job.launch = chosen.launch;

  if (chosen.gpus_from == JobValueSource::kDirective && kind != WorkloadKind::kPod && world > 0 &&
      script.num_gpus != world) {
    job.warnings.push_back(absl::StrCat("oomguard: judged with ", script.num_gpus,
                                        " GPUs from #OOMGUARD gpus=; the object requests ", world,
                                        " ", kGpuResource));
  }
  if (job.launch.num_gpus == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        job.container, " launches Megatron-LM but the object requests no ", kGpuResource,
        " (set resources.limits[\"", kGpuResource, "\"] or an #OOMGUARD gpus=N directive)"));
  }

  // The GPU stays a name until the catalog resolves it (CheckRequestFor).
  job.gpu = std::exchange(job.launch.gpu_name, "");
  switch (chosen.gpu_from) {
    case JobValueSource::kCaller:
      job.gpu_source = annotated_gpu_source;
      break;
    case JobValueSource::kDirective:
      job.gpu_source = absl::StrCat(job.container, " #OOMGUARD gpu=");
      break;
    case JobValueSource::kRequest:
      job.gpu_source = launch->gpu_product_source;
      break;
    default:
      return absl::FailedPreconditionError(
          absl::StrCat("the GPU type is unknown: set annotation ", kGpuAnnotation,
                       " (e.g. H100-SXM-80GB) or nodeSelector ", kGpuProductLabel));
  }
  return job;
}

}  // namespace oomguard::webhook
