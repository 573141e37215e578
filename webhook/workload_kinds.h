// The Kubernetes workload kinds the admission webhook judges (Pods,
// batch/v1 Jobs, Kubeflow PyTorchJobs, JobSets) and the groups of identical
// pods each runs at once, from which the world size is counted. Pods per
// group: Pod 1; Job `parallelism` (default 1) capped by `completions` when
// set (all ranks must run at once); PyTorchJob `replicas` (default 1) of
// each replica type, Master first; JobSet `replicas` (default 1) × that
// Job's pods, replicatedJobs in order.
#ifndef OOMGUARD_WEBHOOK_WORKLOAD_KINDS_H_
#define OOMGUARD_WEBHOOK_WORKLOAD_KINDS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "webhook/json_node.h"

namespace oomguard::webhook {

enum class WorkloadKind { kPod, kJob, kPyTorchJob, kJobSet };

// The kind named by an AdmissionRequest's `kind` (API group and kind; the
// version is not looked at); nullopt for kinds the webhook does not judge.
std::optional<WorkloadKind> WorkloadKindOf(absl::string_view group, absl::string_view kind);

// "Pod", "Job", "PyTorchJob", "JobSet".
absl::string_view WorkloadKindName(WorkloadKind kind);

// A set of identical pods of the object, running at once.
struct PodGroup {
  JsonNode metadata;  // The pod template's (the Pod's own for a Pod).
  JsonNode spec;      // A PodSpec.
  uint64_t pods = 1;
};

// The pod groups of `object`, of kind `kind`, in pod-template order.
// InvalidArgument naming the field path and value for a field of the wrong
// type or a count out of [0, 1000000].
absl::StatusOr<std::vector<PodGroup>> PodGroups(const JsonNode& object, WorkloadKind kind);

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_WORKLOAD_KINDS_H_
