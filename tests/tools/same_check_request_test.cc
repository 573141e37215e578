// The three callers of jobscript's precedence rule (jobscript/job_sources.h)
// make the same CheckRequest of the same script and the same caller values:
// `oomguard check --script` with flags (tools/check_plan.h), POST
// /v1/check_script with the fields of a CheckScriptRequest
// (http/script_check.h), and the webhook with annotations on a Pod whose
// container runs the script (webhook/webhook_workload.h).
#include <nlohmann/json.hpp>
#include <string>

#include "admission/gpu_catalog.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "http/script_check.h"
#include "jobscript/job_script.h"
#include "tools/check_plan.h"
#include "webhook/admission_webhook.h"
#include "webhook/webhook_workload.h"

namespace oomguard {
namespace {

using google::protobuf::util::MessageDifferencer;

// The request `oomguard check --script` sends for `script` with these flags.
v1::CheckRequest FromCli(const std::string& script, const CheckFlags& flags) {
  absl::StatusOr<ScriptJob> job = ParseJobScript(script);
  EXPECT_TRUE(job.ok()) << job.status();
  const CheckPlan plan = MakeCheckPlan(flags, nullptr, job.value_or(ScriptJob{}));
  EXPECT_EQ(plan.not_judged, "");
  return plan.request;
}

v1::CheckRequest FromHttp(const v1::CheckScriptRequest& body) {
  absl::StatusOr<http::ScriptCheck> check = http::ReadScriptCheck(body);
  EXPECT_TRUE(check.ok()) << check.status();
  return check.ok() ? check->request : v1::CheckRequest{};
}

// What decides the answer: the job, the GPU and the safety margin (not
// how much of the answer the caller prints: omit_report, peak_bound).
void ExpectSameCheck(const v1::CheckRequest& a, const v1::CheckRequest& b) {
  std::string differences;
  MessageDifferencer differ;
  differ.ReportDifferencesToString(&differences);
  EXPECT_TRUE(differ.Compare(a.job(), b.job())) << differences;
  EXPECT_EQ(a.gpu_name(), b.gpu_name());
  EXPECT_EQ(a.policy().has_safety_margin(), b.policy().has_safety_margin());
  EXPECT_EQ(a.policy().safety_margin(), b.policy().safety_margin());
}

constexpr char kLlamaArgs[] =
    " pretrain_gpt.py --tensor-model-parallel-size 2 --micro-batch-size 1 --seq-length 4096 "
    "--bf16\n";

// #SBATCH --nodes=32 and torchrun --nnodes $SLURM_NNODES --nproc-per-node 8:
// 256 ranks for both.
TEST(SameCheckRequestTest, CliAndHttpReadTheLaunchsSize) {
  const std::string script = std::string(
                                 "#!/bin/bash\n#SBATCH --nodes=32\n#OOMGUARD preset=llama3-8b\n"
                                 "srun torchrun --nnodes $SLURM_NNODES --nproc-per-node 8") +
                             kLlamaArgs;
  CheckFlags flags;
  flags.gpu = "H100";
  v1::CheckScriptRequest body;
  body.set_script(script);
  body.set_gpu("H100");
  const v1::CheckRequest cli = FromCli(script, flags);
  EXPECT_EQ(cli.job().megatron().num_gpus(), 256u);
  EXPECT_EQ(cli.job().gpus_per_node(), 8u);
  ExpectSameCheck(cli, FromHttp(body));

  // The caller's values win, for both.
  flags.gpus = 64;
  flags.gpus_per_node = 4;
  flags.preset = "llama3-70b";
  flags.safety_margin = 0.1;
  body.set_gpus(64);
  body.set_gpus_per_node(4);
  body.set_preset("llama3-70b");
  body.mutable_policy()->set_safety_margin(0.1);
  const v1::CheckRequest overridden = FromCli(script, flags);
  EXPECT_EQ(overridden.job().megatron().num_gpus(), 64u);
  EXPECT_EQ(overridden.job().megatron().preset(), "llama3-70b");
  ExpectSameCheck(overridden, FromHttp(body));
}

// A Pod that is one node of a 16-GPU job: #OOMGUARD states the world size;
// the annotations are the caller's values, as the flags and the fields.
TEST(SameCheckRequestTest, CliHttpAndWebhookAgree) {
  const std::string script = std::string(
                                 "#OOMGUARD gpus=16 safety-margin=0.1\n"
                                 "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True\n"
                                 "torchrun --nnodes 2 --nproc-per-node 8") +
                             kLlamaArgs;
  CheckFlags flags;
  flags.gpu = "H100-SXM-80GB";
  flags.gpus_per_node = 8;
  flags.preset = "llama3-8b";
  v1::CheckScriptRequest body;
  body.set_script(script);
  body.set_gpu("H100-SXM-80GB");
  body.set_gpus_per_node(8);
  body.set_preset("llama3-8b");
  const nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", "trainer"},
        {"annotations",
         {{webhook::kGpuAnnotation, "H100-SXM-80GB"},
          {webhook::kGpusPerNodeAnnotation, "8"},
          {webhook::kPresetAnnotation, "llama3-8b"}}}}},
      {"spec",
       {{"containers",
         {{{"name", "megatron"},
           {"image", "megatron:latest"},
           {"command", {"bash", "-c", script}},
           {"resources", {{"limits", {{webhook::kGpuResource, "8"}}}}}}}}}}};
  absl::StatusOr<webhook::WorkloadJob> workload =
      webhook::ReadWorkload(pod, webhook::WorkloadKind::kPod);
  ASSERT_TRUE(workload.ok()) << workload.status();
  absl::StatusOr<v1::CheckRequest> from_webhook =
      webhook::CheckRequestFor(*workload, GpuCatalog::Builtin());
  ASSERT_TRUE(from_webhook.ok()) << from_webhook.status();

  const v1::CheckRequest cli = FromCli(script, flags);
  EXPECT_EQ(cli.job().megatron().num_gpus(), 16u);
  EXPECT_EQ(cli.job().megatron().preset(), "llama3-8b");
  EXPECT_EQ(cli.job().env().at("PYTORCH_CUDA_ALLOC_CONF"), "expandable_segments:True");
  EXPECT_DOUBLE_EQ(cli.policy().safety_margin(), 0.1);
  ExpectSameCheck(cli, FromHttp(body));
  ExpectSameCheck(cli, *from_webhook);
}

}  // namespace
}  // namespace oomguard
