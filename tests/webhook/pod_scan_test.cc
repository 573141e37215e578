// Tests of one pod template's scan: the launching container among sidecars,
// its GPUs, Kubernetes' $(VAR) expansion, the GPU product from the node
// affinity, and malformed fields named by path.
#include "webhook/pod_scan.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

TEST(PodScanTest, KubernetesReferences) {
  const std::map<std::string, std::string> env = {{"A", "x"}, {"B", "$(A)y"}};
  size_t budget = 100;
  std::vector<std::string> replaced;
  const absl::StatusOr<std::string> expanded =
      ExpandKubernetesReferences("$(B)-$(A)-$(B)-$(C)-$$(A)-$-$(A", env, budget, &replaced);
  ASSERT_TRUE(expanded.ok()) << expanded.status();
  EXPECT_EQ(*expanded, "$(A)y-x-$(A)y-$(C)-$(A)-$-$(A");
  EXPECT_EQ(budget, 100 - expanded->size());
  // The names replaced, once each, in order; not $(C) (undefined) nor the
  // escaped $$(A).
  EXPECT_THAT(replaced, ElementsAre("B", "A"));
}

// What the expansions produce is bounded: exactly the budget passes, one
// byte more does not, and a value that doubles the one before it stops
// there rather than grow without end.
TEST(PodScanTest, KubernetesReferencesStopAtTheirBudget) {
  const std::map<std::string, std::string> env = {{"A", "xyz"}};
  size_t budget = 7;
  EXPECT_EQ(*ExpandKubernetesReferences("$(A)-$(A)", env, budget), "xyz-xyz");
  EXPECT_EQ(budget, 0u);
  budget = 6;
  const absl::StatusOr<std::string> over = ExpandKubernetesReferences("$(A)-$(A)", env, budget);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(), HasSubstr("expand past 1048576 bytes"));
  budget = 2;
  EXPECT_FALSE(ExpandKubernetesReferences("abc", {}, budget).ok());  // Literal text counts too.
}

// The attack of the hardening issue: V0=x, Vi=$(Vi-1)$(Vi-1) up to V40 and
// args ending in $(V40), about 4 KB of Pod that expanded as written would
// need 2^40 bytes (depth 30 alone is 1 GiB). It is refused at the value
// that passes 1 MiB, naming it.
TEST(PodScanTest, DoublingEnvReferencesAreRefusedNotExpanded) {
  json env = json::array({{{"name", "V0"}, {"value", "x"}}});
  for (int i = 1; i <= 40; ++i) {
    env.push_back({{"name", absl::StrCat("V", i)},
                   {"value", absl::StrCat("$(V", i - 1, ")$(V", i - 1, ")")}});
  }
  const json spec = {
      {"containers", json::array({{{"name", "trainer"},
                                   {"command", json::array({"torchrun", "pretrain_gpt.py"})},
                                   {"args", json::array({"--data-path", "$(V40)"})},
                                   {"env", env},
                                   {"resources", {{"limits", {{"nvidia.com/gpu", 8}}}}}}})}};
  ASSERT_LT(spec.dump().size(), 4096u);
  const absl::StatusOr<PodScan> scan = ScanPodSpec(JsonNode{&spec, "spec", "/spec"});
  EXPECT_EQ(scan.status().code(), absl::StatusCode::kInvalidArgument);
  // V0..V19 produce 2^20 - 1 bytes of the container's 1 MiB; V20 (2^20
  // bytes) would pass it.
  EXPECT_THAT(scan.status().message(), AllOf(HasSubstr("spec.containers[0].env[20] (\"V20\")"),
                                             HasSubstr("expand past 1048576 bytes")));
}

TEST(PodScanTest, TheLaunchingContainerAmongSidecars) {
  const json spec = json::parse(R"json({
    "containers": [
      {"name": "profiler", "resources": {"limits": {"nvidia.com/gpu": 1}}},
      {"name": "trainer",
       "command": ["torchrun", "--nproc-per-node", "8", "pretrain_gpt.py"],
       "args": ["--micro-batch-size", "$(MBS)", "--seq-length", "$(SEQ)"],
       "env": [{"name": "MBS", "value": "2"},
               {"name": "SEQ", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
               {"name": "PYTORCH_CUDA_ALLOC_CONF", "value": "expandable_segments:True"}],
       "resources": {"requests": {"nvidia.com/gpu": "8"}}},
      {"name": "second", "command": ["python", "pretrain_gpt.py"]}
    ],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
      "nodeSelectorTerms": [{"matchExpressions": [
        {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
      ]}]}}}
  })json");
  absl::StatusOr<PodScan> scan = ScanPodSpec(JsonNode{&spec, "spec", "/spec"});
  ASSERT_TRUE(scan.ok()) << scan.status();
  ASSERT_TRUE(scan->launch);
  EXPECT_EQ(scan->container, "spec.containers[1] (\"trainer\")");
  EXPECT_EQ(scan->launches, 2);
  EXPECT_EQ(scan->launch_gpus, 8u);
  EXPECT_EQ(scan->total_gpus, 9u);
  EXPECT_EQ(scan->PodGpus(), 8u);
  // $(SEQ) comes from valueFrom: unknown here, left out with its flag.
  EXPECT_THAT(scan->script.megatron_args, ElementsAre("--micro-batch-size", "2"));
  EXPECT_THAT(scan->script.unresolved, ElementsAre("--seq-length $(SEQ)"));
  EXPECT_THAT(scan->env, ElementsAre(Pair("MBS", "2"),
                                     Pair("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")));
  EXPECT_EQ(scan->gpu_product, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(scan->gpu_product_source,
            "spec.affinity (required node affinity on nvidia.com/gpu.product)");
}

TEST(PodScanTest, ANodeSelectorPinsTheProductAndNoLaunchCountsEveryGpu) {
  const json spec = json::parse(R"({
    "containers": [{"name": "a", "command": ["sleep", "infinity"],
                    "resources": {"limits": {"nvidia.com/gpu": "2"}}},
                   {"name": "b", "resources": {"limits": {"nvidia.com/gpu": "2"}}}],
    "nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
  })");
  absl::StatusOr<PodScan> scan = ScanPodSpec(JsonNode{&spec, "spec", "/spec"});
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_FALSE(scan->launch);
  EXPECT_EQ(scan->PodGpus(), 4u);
  EXPECT_EQ(scan->gpu_product, "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(scan->gpu_product_source, "spec.nodeSelector[\"nvidia.com/gpu.product\"]");
}

TEST(PodScanTest, WithoutACommandTheArgumentIsAScript) {
  const json spec = json::parse(R"({"containers": [{"name": "t",
      "args": ["torchrun pretrain_gpt.py --micro-batch-size $MBS"],
      "env": [{"name": "MBS", "value": "4"}]}]})");
  absl::StatusOr<PodScan> scan = ScanPodSpec(JsonNode{&spec, "spec", "/spec"});
  ASSERT_TRUE(scan.ok()) << scan.status();
  ASSERT_TRUE(scan->launch);
  EXPECT_THAT(scan->script.megatron_args, ElementsAre("--micro-batch-size", "4"));
}

TEST(PodScanTest, MalformedFieldsAreNamed) {
  json spec = json::parse(R"({"containers": [{"name": "t",
      "command": ["torchrun", "pretrain_gpt.py"],
      "resources": {"limits": {"nvidia.com/gpu": "8.5"}}}]})");
  EXPECT_EQ(ScanPodSpec(JsonNode{&spec, "spec", "/spec"}).status().message(),
            "spec.containers[0].resources.limits[\"nvidia.com/gpu\"] = \"8.5\": not a whole "
            "number of GPUs in [0, 4096]");
  spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 8;
  spec["containers"][0]["command"] = json::array({"bash", "-c", "torchrun pretrain_gpt.py \"x"});
  EXPECT_THAT(std::string(ScanPodSpec(JsonNode{&spec, "spec", "/spec"}).status().message()),
              AllOf(StartsWith("spec.containers[0] (\"t\") command/args: line 1: "),
                    HasSubstr("unterminated double quote")));
  spec["containers"][0]["env"] = json::array({{{"name", 3}}});
  EXPECT_EQ(ScanPodSpec(JsonNode{&spec, "spec", "/spec"}).status().message(),
            "spec.containers[0].env[0].name = 3: expected a string");
}

}  // namespace
}  // namespace oomguard::webhook
