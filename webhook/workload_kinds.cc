// Workload kinds and their pod groups (see workload_kinds.h).
#include "webhook/workload_kinds.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace oomguard::webhook {
namespace {

// Far above any real object; keeps the world size arithmetic exact.
constexpr uint64_t kMaxReplicas = 1000000;

// A count (replicas, parallelism): absent = `fallback`.
absl::StatusOr<uint64_t> ReadCount(const JsonNode& node, uint64_t fallback) {
  if (!node) return fallback;
  if (!node.value->is_number_integer()) return Malformed(node, "expected a whole number");
  std::optional<uint64_t> n = WholeNumber(*node.value);
  if (n.has_value() && *n <= kMaxReplicas) return *n;
  return Malformed(node, absl::StrCat("must be in [0, ", kMaxReplicas, "]"));
}

// Pods of a batch/v1 JobSpec running at once.
absl::StatusOr<uint64_t> JobPods(const JsonNode& job_spec) {
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(job_spec));
  OOMGUARD_ASSIGN_OR_RETURN(const uint64_t parallelism, ReadCount(job_spec.Get("parallelism"), 1));
  const JsonNode completions_node = job_spec.Get("completions");
  OOMGUARD_ASSIGN_OR_RETURN(const uint64_t completions, ReadCount(completions_node, parallelism));
  return std::min(parallelism, completions);
}

absl::StatusOr<PodGroup> PodTemplateGroup(const JsonNode& pod_template, uint64_t pods) {
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(pod_template));
  PodGroup group{pod_template.Get("metadata"), pod_template.Get("spec"), pods};
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(group.metadata));
  return group;
}

}  // namespace

std::optional<WorkloadKind> WorkloadKindOf(absl::string_view group, absl::string_view kind) {
  if (group.empty() && kind == "Pod") return WorkloadKind::kPod;
  if (group == "batch" && kind == "Job") return WorkloadKind::kJob;
  if (group == "kubeflow.org" && kind == "PyTorchJob") return WorkloadKind::kPyTorchJob;
  if (group == "jobset.x-k8s.io" && kind == "JobSet") return WorkloadKind::kJobSet;
  return std::nullopt;
}

absl::string_view WorkloadKindName(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kPod:
      return "Pod";
    case WorkloadKind::kJob:
      return "Job";
    case WorkloadKind::kPyTorchJob:
      return "PyTorchJob";
    case WorkloadKind::kJobSet:
      return "JobSet";
  }
  return "?";
}

absl::StatusOr<std::vector<PodGroup>> PodGroups(const JsonNode& object, WorkloadKind kind) {
  const JsonNode spec = object.Get("spec");
  OOMGUARD_RETURN_IF_ERROR(ExpectObject(spec));
  std::vector<PodGroup> groups;
  switch (kind) {
    case WorkloadKind::kPod:
      groups.push_back(PodGroup{object.Get("metadata"), spec, 1});
      break;
    case WorkloadKind::kJob: {
      OOMGUARD_ASSIGN_OR_RETURN(const uint64_t pods, JobPods(spec));
      OOMGUARD_ASSIGN_OR_RETURN(PodGroup group, PodTemplateGroup(spec.Get("template"), pods));
      groups.push_back(std::move(group));
      break;
    }
    case WorkloadKind::kPyTorchJob: {
      const JsonNode replica_specs = spec.Get("pytorchReplicaSpecs");
      OOMGUARD_RETURN_IF_ERROR(ExpectObject(replica_specs));
      if (!replica_specs) break;
      // Master first: it is rank 0 and usually holds the full launch.
      std::vector<std::string> types;
      for (const auto& [type, unused] : replica_specs.value->items()) types.push_back(type);
      std::stable_partition(types.begin(), types.end(),
                            [](const std::string& t) { return t == "Master"; });
      for (const std::string& type : types) {
        const JsonNode replica = replica_specs.Get(type);
        OOMGUARD_RETURN_IF_ERROR(ExpectObject(replica));
        if (!replica) continue;
        OOMGUARD_ASSIGN_OR_RETURN(const uint64_t replicas, ReadCount(replica.Get("replicas"), 1));
        OOMGUARD_ASSIGN_OR_RETURN(PodGroup group,
                                  PodTemplateGroup(replica.Get("template"), replicas));
        groups.push_back(std::move(group));
      }
      break;
    }
    case WorkloadKind::kJobSet: {
      const JsonNode jobs = spec.Get("replicatedJobs");
      OOMGUARD_RETURN_IF_ERROR(ExpectArray(jobs));
      const size_t n = jobs ? jobs.value->size() : 0;
      for (size_t i = 0; i < n; ++i) {
        const JsonNode job = jobs.At(i);
        OOMGUARD_RETURN_IF_ERROR(ExpectObject(job));
        OOMGUARD_ASSIGN_OR_RETURN(const uint64_t replicas, ReadCount(job.Get("replicas"), 1));
        const JsonNode job_template = job.Get("template");
        OOMGUARD_RETURN_IF_ERROR(ExpectObject(job_template));
        const JsonNode job_spec = job_template.Get("spec");
        OOMGUARD_ASSIGN_OR_RETURN(const uint64_t pods, JobPods(job_spec));
        OOMGUARD_ASSIGN_OR_RETURN(PodGroup group,
                                  PodTemplateGroup(job_spec.Get("template"), replicas * pods));
        groups.push_back(std::move(group));
      }
      break;
    }
  }
  return groups;
}

}  // namespace oomguard::webhook
