// Kubernetes workload objects -> the Megatron-LM job they launch, for the
// admission webhook (admission_webhook.h): Pods, batch/v1 Jobs, Kubeflow
// PyTorchJobs and JobSets.
//
// Reads the object only (JSON as the API server sends it):
// - The launch: the first container (in pod-template order: PyTorchJob
//   Master before the other replica types, JobSet replicatedJobs in order)
//   whose `command` + `args` hold a Megatron-LM launch, after Kubernetes'
//   own `$(VAR)` expansion with the container's literal `env` values
//   (jobscript/job_script.h reads the words). Init containers never count.
// - Its environment: the container's `env` entries with a literal `value`
//   (valueFrom/envFrom cannot be seen), then what the script exports. A
//   `bash -c SCRIPT` sees those entries as exported variables.
// - The world size: Σ over pod groups of pods × GPUs per pod, where a pod's
//   GPUs are `resources.limits["nvidia.com/gpu"]` (else `requests`) of the
//   launching container when the template has one, else the sum over its
//   containers (sidecars are not training ranks). Pods per group: Pod 1; Job
//   `parallelism` (default 1) capped by `completions` when set (all ranks
//   must run at once); PyTorchJob `replicas` (default 1) of each replica
//   type; JobSet `replicas` (default 1) × that Job's pods. An `#OOMGUARD
//   gpus=N` directive in the launch overrides the count (a standalone Pod is
//   often one node of a larger job); in the replicated kinds a warning says
//   so when the two disagree.
// - The GPU type: annotation oomguard.io/gpu (object, then the launch
//   template), `#OOMGUARD gpu=`, then the launch template's nodeSelector
//   nvidia.com/gpu.product, then a required node affinity `In` on that label
//   with one value.
// - The model preset (oomguard.io/preset, else `#OOMGUARD preset=`), GPUs
//   per node (oomguard.io/gpus-per-node, `#OOMGUARD gpus-per-node=`, else
//   the launching pod's GPUs) and the safety margin (`#OOMGUARD
//   safety-margin=`).
//
// Not judged (and so allowed): objects annotated oomguard.io/skip: "true" or
// whose script says `#OOMGUARD skip`, objects without a Megatron-LM launch,
// Pods with a controller (their Job, PyTorchJob, JobSet, StatefulSet... is
// judged, or not, as a whole: a pod's own GPUs are not the job's world size),
// and Jobs whose controller is not a CronJob (a JobSet's Jobs).
#ifndef OOMGUARD_WEBHOOK_WEBHOOK_WORKLOAD_H_
#define OOMGUARD_WEBHOOK_WEBHOOK_WORKLOAD_H_

#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oomguard::webhook {

enum class WorkloadKind { kPod, kJob, kPyTorchJob, kJobSet };

// The kind named by an AdmissionRequest's `kind` (API group and kind; the
// version is not looked at); nullopt for kinds the webhook does not judge.
std::optional<WorkloadKind> WorkloadKindOf(absl::string_view group, absl::string_view kind);

// "Pod", "Job", "PyTorchJob", "JobSet".
absl::string_view WorkloadKindName(WorkloadKind kind);

inline constexpr char kSkipAnnotation[] = "oomguard.io/skip";
inline constexpr char kGpuAnnotation[] = "oomguard.io/gpu";
inline constexpr char kPresetAnnotation[] = "oomguard.io/preset";
inline constexpr char kGpusPerNodeAnnotation[] = "oomguard.io/gpus-per-node";
inline constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";
inline constexpr char kGpuResource[] = "nvidia.com/gpu";

// The job an object launches.
struct WorkloadJob {
  // False: not judged, for the reason in `not_judged`.
  bool judge = false;
  std::string not_judged;
  // Where the launch is, e.g. `spec.containers[0] ("trainer")`.
  std::string container;
  // The Megatron-LM flags, one word per element.
  std::vector<std::string> megatron_args;
  std::string preset;  // Empty = the flags describe the whole model.
  // The GPU type as written, and where it was found; empty when unknown.
  std::string gpu;
  std::string gpu_source;
  uint32_t num_gpus = 0;
  uint32_t gpus_per_node = 0;  // 0 = unknown.
  std::optional<double> safety_margin;
  // PYTORCH_CUDA_ALLOC_CONF / NCCL_GRAPH_REGISTER as the launch sees them.
  std::map<std::string, std::string> env;
  // Launch words only known at run time that may change memory (see
  // MayChangeMemory in jobspec/megatron_args.h), as written, e.g. "--micro-batch-size $MBS": the
  // verdict is a guess without them.
  std::vector<std::string> unresolved;
  // For the submitter (count mismatches, several launches).
  std::vector<std::string> warnings;
};

// Reads `object` (an AdmissionRequest's `object`) of kind `kind`.
// InvalidArgument naming the field path and value for a field of the wrong
// type or a malformed value (a GPU quantity that is not a whole number, a
// negative replica count, a bad annotation); FailedPrecondition when a launch
// is found but the job cannot be judged (no GPUs, no GPU type).
absl::StatusOr<WorkloadJob> ReadWorkload(const nlohmann::json& object, WorkloadKind kind);

// Kubernetes' expansion of `$(NAME)` in command, args and env values:
// references to names in `env` are replaced, `$$` is a literal `$`, anything
// else stays as written.
std::string ExpandKubernetesReferences(absl::string_view text,
                                       const std::map<std::string, std::string>& env);

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_WEBHOOK_WORKLOAD_H_
