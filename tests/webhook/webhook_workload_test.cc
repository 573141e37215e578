// Tests of ReadWorkload on real objects (tests/data/admission/): what goes
// into the check (WorkloadJob::launch), the GPU type and its source, and
// the objects that are not judged. The world size per kind is tested
// through reviews in admission_webhook_test.
#include "webhook/webhook_workload.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::Pair;

// The `object` of the AdmissionReview tests/data/admission/`name`.
json LoadObject(const std::string& name) {
  std::ifstream in(absl::StrCat(OOMGUARD_SOURCE_DIR, "/tests/data/admission/", name));
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str())["request"]["object"];
}

TEST(ReadWorkloadTest, TheLaunchIsWhatTheCheckJudges) {
  json pod = LoadObject("pod_deepseek_v3_8gpu.json");
  absl::StatusOr<WorkloadJob> job = ReadWorkload(pod, WorkloadKind::kPod);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(job->judge);
  EXPECT_EQ(job->container, "spec.containers[0] (\"megatron\")");
  EXPECT_THAT(job->launch.megatron_args,
              ElementsAre("--expert-model-parallel-size", "8", "--seq-length", "4096",
                          "--micro-batch-size", "1", "--use-distributed-optimizer", "--bf16",
                          "--data-path", "/data/dsv3/text_document"));
  EXPECT_EQ(job->launch.preset, "deepseek-v3");
  EXPECT_EQ(job->launch.num_gpus, 8u);
  EXPECT_EQ(job->launch.gpus_per_node, 8u);  // The launching pod's GPUs.
  EXPECT_THAT(job->launch.env, IsEmpty());
  EXPECT_FALSE(job->launch.safety_margin.has_value());
  // The GPU stays a name until the catalog resolves it (CheckRequestFor).
  EXPECT_EQ(job->launch.gpu_name, "");
  EXPECT_EQ(job->launch.gpu_memory_bytes, 0u);
  EXPECT_EQ(job->gpu, "H100-SXM-80GB");
  EXPECT_EQ(job->gpu_source, "metadata.annotations[\"oomguard.io/gpu\"]");
  EXPECT_THAT(job->unresolved, IsEmpty());
  EXPECT_THAT(job->warnings, IsEmpty());

  // Annotations and directives; only the memory variables of the env.
  json& container = pod["spec"]["containers"][0];
  pod["metadata"]["annotations"][kGpusPerNodeAnnotation] = "4";
  pod["metadata"]["annotations"].erase(kGpuAnnotation);
  container["env"].push_back({{"name", "NCCL_GRAPH_REGISTER"}, {"value", "0"}});
  container["command"] = json::array({"bash", "-c"});
  container["args"] = json::array(
      {"#OOMGUARD safety-margin=0.2 gpu=A100-SXM-80GB\n"
       "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
       "torchrun pretrain_gpt.py --micro-batch-size 2 --recompute-granularity $RECOMPUTE\n"});
  job = ReadWorkload(pod, WorkloadKind::kPod);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_THAT(job->launch.megatron_args, ElementsAre("--micro-batch-size", "2"));
  EXPECT_EQ(job->launch.gpus_per_node, 4u);
  EXPECT_EQ(job->launch.safety_margin, 0.2);
  EXPECT_THAT(job->launch.env,
              ElementsAre(Pair("NCCL_GRAPH_REGISTER", "0"),
                          Pair("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")));
  EXPECT_EQ(job->gpu, "A100-SXM-80GB");
  EXPECT_EQ(job->gpu_source, "spec.containers[0] (\"megatron\") #OOMGUARD gpu=");
  EXPECT_THAT(job->unresolved, ElementsAre("--recompute-granularity $RECOMPUTE"));
}

TEST(ReadWorkloadTest, WhatIsNotJudgedSaysWhy) {
  absl::StatusOr<WorkloadJob> job =
      ReadWorkload(LoadObject("pod_not_training.json"), WorkloadKind::kPod);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->judge);
  EXPECT_EQ(job->not_judged, "no Megatron-LM launch");

  json pod = LoadObject("pod_deepseek_v3_8gpu.json");
  pod["metadata"]["annotations"][kSkipAnnotation] = "True";
  job = ReadWorkload(pod, WorkloadKind::kPod);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_FALSE(job->judge);
  EXPECT_EQ(job->not_judged, "annotation oomguard.io/skip");

  // A launch without GPUs or a GPU type cannot be judged.
  pod = LoadObject("pod_deepseek_v3_8gpu.json");
  pod["spec"]["containers"][0].erase("resources");
  EXPECT_EQ(ReadWorkload(pod, WorkloadKind::kPod).status().code(),
            absl::StatusCode::kFailedPrecondition);
  pod = LoadObject("pod_deepseek_v3_8gpu.json");
  pod["metadata"]["annotations"].erase(kGpuAnnotation);
  EXPECT_EQ(ReadWorkload(pod, WorkloadKind::kPod).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ReadWorkload(json::array(), WorkloadKind::kPod).status().message(),
            "object = []: expected an object");
}

}  // namespace
}  // namespace oomguard::webhook
