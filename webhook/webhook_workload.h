// Kubernetes workload objects -> the Megatron-LM job they launch, for the
// admission webhook (admission_webhook.h): Pods, batch/v1 Jobs, Kubeflow
// PyTorchJobs and JobSets.
//
// Reads the object only (JSON as the API server sends it, json_node.h):
// - The launch: the first container (in pod-template order: PyTorchJob
//   Master before the other replica types, JobSet replicatedJobs in order,
//   workload_kinds.h) whose `command` + `args` hold a Megatron-LM launch,
//   after Kubernetes' own `$(VAR)` expansion with the container's literal
//   `env` values (pod_scan.h; jobscript/job_script.h reads the words). Init
//   containers never count.
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
// These orders are jobscript's one rule (jobscript/job_sources.h): the
// annotations are the caller's values, the object's GPUs and GPU product
// what the job requests. The launch line's own world size is not read: in
// Kubernetes torchrun takes its sizes from the training operator's
// PET_NNODES / PET_NPROC_PER_NODE, which the container's words do not show.
//
// Not judged (and so allowed): objects annotated oomguard.io/skip: "true" or
// whose script says `#OOMGUARD skip`, objects without a Megatron-LM launch,
// Pods with a controller (their Job, PyTorchJob, JobSet, StatefulSet... is
// judged, or not, as a whole: a pod's own GPUs are not the job's world size),
// and Jobs whose controller is not a CronJob (a JobSet's Jobs).
#ifndef OOMGUARD_WEBHOOK_WEBHOOK_WORKLOAD_H_
#define OOMGUARD_WEBHOOK_WEBHOOK_WORKLOAD_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/deadline.h"
#include "jobscript/check_request.h"
// The parts ReadWorkload is made of declare the rest of its API:
// WorkloadKind, WorkloadKindOf, WorkloadKindName (workload_kinds.h);
// kGpuProductLabel, kGpuResource, ExpandKubernetesReferences (pod_scan.h).
#include "webhook/pod_scan.h"
#include "webhook/workload_kinds.h"

namespace oomguard::webhook {

inline constexpr char kSkipAnnotation[] = "oomguard.io/skip";
inline constexpr char kGpuAnnotation[] = "oomguard.io/gpu";
inline constexpr char kPresetAnnotation[] = "oomguard.io/preset";
inline constexpr char kGpusPerNodeAnnotation[] = "oomguard.io/gpus-per-node";

// The job an object launches.
struct WorkloadJob {
  // False: not judged, for the reason in `not_judged`.
  bool judge = false;
  std::string not_judged;
  // Where the launch is, e.g. `spec.containers[0] ("trainer")`.
  std::string container;
  // What the check judges (the Megatron-LM flags, the preset, the world
  // size, GPUs per node, the environment, the safety margin), as
  // BuildCheckRequest takes it. Its GPU is left unset: `gpu` is resolved
  // against the catalog first (CheckRequestFor in admission_webhook.h).
  LaunchCheck launch;
  // The GPU type as written, and where it was found; empty when unknown.
  std::string gpu;
  std::string gpu_source;
  // Launch words only known at run time that may change memory (see
  // MayChangeMemory in jobspec/megatron_args.h), as written, e.g. "--micro-batch-size $MBS": the
  // verdict is a guess without them.
  std::vector<std::string> unresolved;
  // For the submitter (count mismatches, several launches).
  std::vector<std::string> warnings;
  // Where a mutating answer puts the check id (check_id_patch.h), as JSON
  // Pointers into the object: the metadata of the object and of each pod
  // template (present or not), and each pod group's training containers
  // (PodScan::TrainingContainers: the ones whose GPUs are counted).
  std::vector<std::string> pod_metadata;
  std::vector<std::string> training_containers;
};

// Reads `object` (an AdmissionRequest's `object`) of kind `kind`.
// InvalidArgument naming the field path and value for a field of the wrong
// type or a malformed value (a GPU quantity that is not a whole number, a
// negative replica count, a bad annotation); FailedPrecondition when a launch
// is found but the job cannot be judged (no GPUs, no GPU type); the job script
// reader's ResourceExhausted / DeadlineExceeded (jobscript/job_script.h) for a
// launch it cannot read within its bounds or before `deadline`.
absl::StatusOr<WorkloadJob> ReadWorkload(const nlohmann::json& object, WorkloadKind kind,
                                         const Deadline& deadline = Deadline());

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_WEBHOOK_WORKLOAD_H_
