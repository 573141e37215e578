// Tests of CheckIdPatch on the AdmissionReviews of tests/data/admission/ (as
// the API server sends them: every container's terminationMessagePolicy
// already defaulted to "File") and on hand-written objects: the exact
// operations, and the object they make once applied (nlohmann's RFC 6902
// patch, as the API server applies it): the annotation on the object and
// each pod template, the env and the termination message policy on the
// training containers only, nothing the user chose overwritten but the id.
#include "webhook/check_id_patch.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "webhook/webhook_workload.h"

namespace oomguard::webhook {
namespace {

using json = nlohmann::json;

constexpr char kId[] = "5f0c3a9e1b7d4c2a8e6f0b1d3c5a7e9f";

json LoadObject(const std::string& name) {
  std::ifstream in(absl::StrCat(OOMGUARD_SOURCE_DIR, "/tests/data/admission/", name));
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str())["request"]["object"];
}

// The patch of `object` read as `kind`.
json PatchOf(const json& object, WorkloadKind kind) {
  absl::StatusOr<WorkloadJob> job = ReadWorkload(object, kind);
  EXPECT_TRUE(job.ok()) << job.status();
  if (!job.ok()) return json::array();
  EXPECT_TRUE(job->judge) << job->not_judged;
  return CheckIdPatch(object, *job, kId);
}

json Env(const json& value) { return json{{"name", "OOMGUARD_CHECK_ID"}, {"value", value}}; }

TEST(CheckIdPatchTest, JobGetsTheIdOnItselfItsPodTemplateAndItsTrainer) {
  const json job = LoadObject("job_llama3_8b_8gpu.json");
  const json patch = PatchOf(job, WorkloadKind::kJob);
  const std::string trainer = "/spec/template/spec/containers/0";
  EXPECT_EQ(patch, json::parse(absl::StrCat(R"([
    {"op": "add", "path": "/metadata/annotations/oomguard.io~1check-id", "value": ")",
                                            kId, R"("},
    {"op": "add", "path": "/spec/template/metadata/annotations/oomguard.io~1check-id",
     "value": ")",
                                            kId, R"("},
    {"op": "add", "path": ")",
                                            trainer, R"(/env/-",
     "value": {"name": "OOMGUARD_CHECK_ID", "value": ")",
                                            kId, R"("}},
    {"op": "add", "path": ")",
                                            trainer, R"(/terminationMessagePolicy",
     "value": "FallbackToLogsOnError"}])")));

  const json patched = job.patch(patch);
  EXPECT_EQ(patched["metadata"]["annotations"]["oomguard.io/check-id"], kId);
  const json& pod_template = patched["spec"]["template"];
  EXPECT_EQ(pod_template["metadata"]["annotations"],
            (json{{"oomguard.io/gpu", "H100"}, {"oomguard.io/check-id", kId}}));
  const json& c = pod_template["spec"]["containers"][0];
  EXPECT_EQ(
      c["env"],
      json::array({json{{"name", "PYTORCH_CUDA_ALLOC_CONF"}, {"value", "expandable_segments:True"}},
                   Env(kId)}));
  EXPECT_EQ(c["terminationMessagePolicy"], "FallbackToLogsOnError");
  // Nothing else changed.
  json back = patched;
  back["metadata"]["annotations"].erase("oomguard.io/check-id");
  back["spec"]["template"]["metadata"]["annotations"].erase("oomguard.io/check-id");
  back["spec"]["template"]["spec"]["containers"][0]["env"].erase(1);
  back["spec"]["template"]["spec"]["containers"][0]["terminationMessagePolicy"] = "File";
  EXPECT_EQ(back, job);
}

TEST(CheckIdPatchTest, PyTorchJobMasterAndWorkersAllCarryTheId) {
  const json object = LoadObject("pytorchjob_deepseek_v3_1024gpu.json");
  const json patched = object.patch(PatchOf(object, WorkloadKind::kPyTorchJob));
  EXPECT_EQ(patched["metadata"]["annotations"], (json{{"oomguard.io/check-id", kId}}));
  for (const char* type : {"Master", "Worker"}) {
    SCOPED_TRACE(type);
    const json& replica = patched["spec"]["pytorchReplicaSpecs"][type]["template"];
    // The template had labels only: annotations are added beside them.
    EXPECT_EQ(replica["metadata"], (json{{"labels", {{"app", "dsv3"}}},
                                         {"annotations", {{"oomguard.io/check-id", kId}}}}));
    const json& c = replica["spec"]["containers"][0];
    EXPECT_EQ(c["env"].back(), Env(kId));
    EXPECT_EQ(c["terminationMessagePolicy"], "FallbackToLogsOnError");
  }
}

TEST(CheckIdPatchTest, JobSetTemplatesWithoutMetadataGetItAndOnlyGpuContainersTheEnv) {
  const json object = LoadObject("jobset_deepseek_v3_256gpu.json");
  const json patched = object.patch(PatchOf(object, WorkloadKind::kJobSet));
  EXPECT_EQ(patched["metadata"]["annotations"],
            (json{{"oomguard.io/preset", "deepseek-v3"}, {"oomguard.io/check-id", kId}}));
  const json& jobs = patched["spec"]["replicatedJobs"];
  for (int i : {0, 1}) {
    // Both pod templates had no metadata: made whole. (The Job template's
    // metadata is not a pod's.)
    EXPECT_EQ(jobs[i]["template"]["spec"]["template"]["metadata"],
              (json{{"annotations", {{"oomguard.io/check-id", kId}}}}));
    EXPECT_FALSE(jobs[i]["template"].contains("metadata"));
  }
  // The etcd sidecar job asks for no GPUs: not a training container.
  const json& etcd = jobs[0]["template"]["spec"]["template"]["spec"]["containers"][0];
  EXPECT_FALSE(etcd.contains("env"));
  EXPECT_EQ(etcd["terminationMessagePolicy"], "File");
  // The trainer had no env: a list is made.
  const json& trainer = jobs[1]["template"]["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(trainer["env"], json::array({Env(kId)}));
  EXPECT_EQ(trainer["terminationMessagePolicy"], "FallbackToLogsOnError");
}

// A Pod written by hand: no annotations, a sidecar, an id already in the
// env (an object copied from a checked one), the policy chosen by the user.
json HandWrittenPod() {
  return json::parse(R"({
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "smoke", "namespace": "ml",
                 "labels": {"oomguard.io/check-id": "not-an-annotation"}},
    "spec": {
      "containers": [
        {"name": "log-shipper", "image": "fluent-bit"},
        {"name": "trainer", "image": "megatron",
         "command": ["torchrun", "--nproc-per-node", "4", "pretrain_gpt.py",
                     "--num-layers", "2", "--hidden-size", "256", "--num-attention-heads", "4",
                     "--seq-length", "128", "--max-position-embeddings", "128",
                     "--micro-batch-size", "1", "--vocab-size", "1024"],
         "env": [{"name": "OOMGUARD_CHECK_ID", "value": "ffffffffffffffffffffffffffffffff"},
                 {"name": "NCCL_DEBUG", "value": "WARN"}],
         "terminationMessagePolicy": "FallbackToLogsOnError",
         "resources": {"limits": {"nvidia.com/gpu": "4"}}}
      ]
    }
  })");
}

TEST(CheckIdPatchTest, PodReplacesAStaleIdAndKeepsTheUsersPolicy) {
  json pod = HandWrittenPod();
  pod["metadata"]["annotations"] = {{"oomguard.io/gpu", "H100"}};
  const json patch = PatchOf(pod, WorkloadKind::kPod);
  // One metadata (the Pod is its own pod template), one container; the
  // stale id replaced where it is; the policy already falls back to logs.
  EXPECT_EQ(patch, json::parse(absl::StrCat(R"([
    {"op": "add", "path": "/metadata/annotations/oomguard.io~1check-id", "value": ")",
                                            kId, R"("},
    {"op": "replace", "path": "/spec/containers/1/env/0",
     "value": {"name": "OOMGUARD_CHECK_ID", "value": ")",
                                            kId, R"("}}])")));
  const json patched = pod.patch(patch);
  EXPECT_EQ(patched["spec"]["containers"][1]["env"][0], Env(kId));
  EXPECT_EQ(patched["spec"]["containers"][1]["env"][1]["name"], "NCCL_DEBUG");
  EXPECT_EQ(patched["spec"]["containers"][0], pod["spec"]["containers"][0]);
  EXPECT_EQ(patched["metadata"]["labels"], pod["metadata"]["labels"]);
}

TEST(CheckIdPatchTest, MissingOrNullAnnotationsAreMadeWhole) {
  json pod = HandWrittenPod();
  pod["metadata"]["annotations"] = {{"oomguard.io/gpu", "H100"}};
  absl::StatusOr<WorkloadJob> job = ReadWorkload(pod, WorkloadKind::kPod);
  ASSERT_TRUE(job.ok()) << job.status();
  json absent = pod;
  absent["metadata"].erase("annotations");
  json null = pod;
  null["metadata"]["annotations"] = nullptr;
  for (const json& object : {absent, null}) {
    const json patch = CheckIdPatch(object, *job, kId);
    EXPECT_EQ(patch[0], json::parse(absl::StrCat(
                            R"({"op": "add", "path": "/metadata/annotations",
                                "value": {"oomguard.io/check-id": ")",
                            kId, R"("}})")));
    EXPECT_EQ(object.patch(patch)["metadata"]["annotations"],
              (json{{"oomguard.io/check-id", kId}}));
  }
}

TEST(CheckIdPatchTest, ThePointersOfTheWorkloadAreTheTrainingContainers) {
  json pod = HandWrittenPod();
  pod["metadata"]["annotations"] = {{"oomguard.io/gpu", "H100"}};
  absl::StatusOr<WorkloadJob> job = ReadWorkload(pod, WorkloadKind::kPod);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->pod_metadata, std::vector<std::string>{"/metadata"});
  EXPECT_EQ(job->training_containers, std::vector<std::string>{"/spec/containers/1"});
}

}  // namespace
}  // namespace oomguard::webhook
