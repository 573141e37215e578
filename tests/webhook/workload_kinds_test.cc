// Tests of the workload kinds and the pod groups each runs at once.
#include "webhook/workload_kinds.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;

TEST(WorkloadKindsTest, KindsAreMatchedByGroupAndKind) {
  EXPECT_EQ(WorkloadKindOf("", "Pod"), WorkloadKind::kPod);
  EXPECT_EQ(WorkloadKindOf("batch", "Job"), WorkloadKind::kJob);
  EXPECT_EQ(WorkloadKindOf("kubeflow.org", "PyTorchJob"), WorkloadKind::kPyTorchJob);
  EXPECT_EQ(WorkloadKindOf("jobset.x-k8s.io", "JobSet"), WorkloadKind::kJobSet);
  EXPECT_EQ(WorkloadKindOf("apps", "Deployment"), std::nullopt);
  EXPECT_EQ(WorkloadKindOf("example.com", "Job"), std::nullopt);
  EXPECT_EQ(WorkloadKindName(WorkloadKind::kPyTorchJob), "PyTorchJob");
}

TEST(WorkloadKindsTest, PodGroupsOfEachKind) {
  const json pod = json::parse(R"({"metadata": {}, "spec": {}})");
  absl::StatusOr<std::vector<PodGroup>> groups =
      PodGroups(JsonNode{&pod, "", ""}, WorkloadKind::kPod);
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].pods, 1u);
  EXPECT_EQ((*groups)[0].spec.path, "spec");
  EXPECT_EQ((*groups)[0].metadata.path, "metadata");

  // All ranks run at once: parallelism, capped by completions.
  const json job = json::parse(R"({"spec": {"parallelism": 4, "completions": 2,
                                            "template": {"spec": {}}}})");
  groups = PodGroups(JsonNode{&job, "", ""}, WorkloadKind::kJob);
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].pods, 2u);
  EXPECT_EQ((*groups)[0].spec.path, "spec.template.spec");

  const json pytorch = json::parse(R"({"spec": {"pytorchReplicaSpecs": {
      "Worker": {"replicas": 3, "template": {"spec": {}}},
      "Master": {"template": {"spec": {}}}}}})");
  groups = PodGroups(JsonNode{&pytorch, "", ""}, WorkloadKind::kPyTorchJob);
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 2u);
  EXPECT_EQ((*groups)[0].spec.path, "spec.pytorchReplicaSpecs.Master.template.spec");
  EXPECT_EQ((*groups)[0].pods, 1u);
  EXPECT_EQ((*groups)[1].pods, 3u);

  const json jobset = json::parse(R"({"spec": {"replicatedJobs": [
      {"replicas": 2, "template": {"spec": {"parallelism": 3, "template": {"spec": {}}}}}]}})");
  groups = PodGroups(JsonNode{&jobset, "", ""}, WorkloadKind::kJobSet);
  ASSERT_TRUE(groups.ok()) << groups.status();
  ASSERT_EQ(groups->size(), 1u);
  EXPECT_EQ((*groups)[0].pods, 6u);
  EXPECT_EQ((*groups)[0].spec.path, "spec.replicatedJobs[0].template.spec.template.spec");
}

TEST(WorkloadKindsTest, BadCountsAreNamed) {
  const json pytorch = json::parse(R"({"spec": {"pytorchReplicaSpecs": {
      "Worker": {"replicas": "3", "template": {"spec": {}}}}}})");
  EXPECT_EQ(PodGroups(JsonNode{&pytorch, "", ""}, WorkloadKind::kPyTorchJob).status().message(),
            "spec.pytorchReplicaSpecs.Worker.replicas = \"3\": expected a whole number");
  const json job = json::parse(R"({"spec": {"parallelism": 1000001}})");
  EXPECT_EQ(PodGroups(JsonNode{&job, "", ""}, WorkloadKind::kJob).status().message(),
            "spec.parallelism = 1000001: must be in [0, 1000000]");
}

}  // namespace
}  // namespace oomguard::webhook
