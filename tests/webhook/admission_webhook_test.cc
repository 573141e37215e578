// Admission webhook without HTTP: real AdmissionReview documents
// (tests/data/admission/, as the API server sends them) through
// ReviewAdmission with the service's in-process Check, the answers checked
// field by field; the workload reading (GPU counts, GPU type, $(VAR)
// expansion, skips) and hostile input.
#include "webhook/admission_webhook.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobscript/check_request.h"
#include "jobspec/megatron_args.h"
#include "service/metrics.h"
#include "service/request_handlers.h"
#include "store/check_store.h"
#include "store/store_url.h"
#include "tests/jobscript/job_script_test_util.h"
#include "tests/testing/service_test_jobs.h"
#include "webhook/webhook_workload.h"

namespace oomguard {
namespace {

using json = nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

json Load(const std::string& name) {
  std::ifstream in(absl::StrCat(OOMGUARD_SOURCE_DIR, "/tests/data/admission/", name));
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

class WebhookAdmissionTest : public ::testing::Test {
 protected:
  WebhookAdmissionTest()
      : metrics_("test"),
        service_(Config(), &metrics_),
        dir_(MakeDir()),
        store_(OpenStore(dir_)),
        keeping_(KeepingConfig(store_.get()), &metrics_) {}

  // The open store's files go with the directory (unlinked, still open).
  ~WebhookAdmissionTest() override { std::filesystem::remove_all(dir_); }

  static std::string MakeDir() {
    std::string dir = absl::StrCat(::testing::TempDir(), "/admission_webhook_test_XXXXXX");
    EXPECT_NE(mkdtemp(dir.data()), nullptr);
    return dir;
  }

  // A store of checks in `dir`, as `oomguard serve --store sqlite:...`
  // opens.
  static std::unique_ptr<store::CheckStore> OpenStore(const std::string& dir) {
    absl::StatusOr<store::StoreUrl> url =
        store::ParseStoreUrl(absl::StrCat("sqlite:", dir, "/checks.db"));
    EXPECT_TRUE(url.ok()) << url.status();
    absl::StatusOr<std::unique_ptr<store::CheckStore>> opened =
        store::OpenCheckStore(*url, store::StoreOptions());
    EXPECT_TRUE(opened.ok()) << opened.status();
    return opened.ok() ? *std::move(opened) : nullptr;
  }

  static service::ServiceConfig KeepingConfig(store::CheckStore* store) {
    service::ServiceConfig config = Config();
    config.store = store;
    config.cluster = "test";
    return config;
  }

  // The record the server kept of check `id`.
  v1::CheckRecord Kept(const std::string& id) {
    EXPECT_TRUE(store_->Flush().ok());
    v1::GetCheckRequest request;
    request.set_check_id(id);
    absl::StatusOr<v1::CheckRecord> record = keeping_.GetCheck(request, absl::InfiniteFuture());
    EXPECT_TRUE(record.ok()) << record.status();
    return record.ok() ? *std::move(record) : v1::CheckRecord();
  }

  static service::ServiceConfig Config() {
    service::ServiceConfig config;
    config.log_requests = false;
    // The policy of before the upper bound (the point estimate, 5% kept
    // free), under which the 1024-GPU DeepSeek-V3 review fits only with
    // settings (service_test checks it is refused at its upper bound).
    config.default_safety_margin = 0.05;
    config.default_peak_bound = v1::PEAK_BOUND_POINT;
    return config;
  }

  webhook::AdmissionAnswer ReviewText(
      const std::string& body, absl::Time deadline = absl::InfiniteFuture(),
      webhook::AdmissionMode mode = webhook::AdmissionMode::kValidate) {
    if (deadline == absl::InfiniteFuture()) deadline = absl::Now() + absl::Seconds(30);
    return webhook::ReviewAdmission(
        body, catalog_, deadline,
        [&](const v1::CheckRequest& request, const v1::JobHandle& handle, absl::Time d,
            v1::CheckResponse* response) {
          last_handle_ = handle;
          return (keep_checks_ ? keeping_ : service_).RunCheck(request, d, response, handle);
        },
        mode);
  }

  // Reviews `review`; the answer's AdmissionReview, checked for the fields
  // every answer must have (uid echoed, apiVersion/kind, `allowed`).
  json Review(const json& review, absl::Time deadline = absl::InfiniteFuture(),
              webhook::AdmissionMode mode = webhook::AdmissionMode::kValidate) {
    last_ = ReviewText(review.dump(), deadline, mode);
    EXPECT_EQ(last_.http_status, 200) << last_.body;
    json answer = json::parse(last_.body);
    EXPECT_EQ(answer["apiVersion"], "admission.k8s.io/v1");
    EXPECT_EQ(answer["kind"], "AdmissionReview");
    EXPECT_EQ(answer["response"]["uid"], review["request"]["uid"]);
    EXPECT_TRUE(answer["response"].contains("allowed"));
    EXPECT_TRUE(answer["response"]["allowed"].is_boolean());
    return answer["response"];
  }

  // What a gRPC client sending the same job gets.
  v1::CheckResponse Direct(const v1::JobSource& job, const std::string& gpu) {
    v1::CheckRequest request;
    *request.mutable_job() = job;
    request.set_gpu_name(gpu);
    v1::CheckResponse response;
    EXPECT_TRUE(service_.RunCheck(request, absl::InfiniteFuture(), &response).ok());
    return response;
  }

  service::ServiceMetrics metrics_;
  service::RequestHandlers service_;
  GpuCatalog catalog_ = GpuCatalog::Builtin();
  // A server with a store: ids and records.
  std::string dir_;
  std::unique_ptr<store::CheckStore> store_;
  service::RequestHandlers keeping_;
  webhook::AdmissionAnswer last_;
  // The handle the last check was given; whether checks are kept (by
  // `keeping_`).
  v1::JobHandle last_handle_;
  bool keep_checks_ = false;
};

json& PodSpecOf(json& review) { return review["request"]["object"]["spec"]; }

// The DeepSeek-V3 smoke Pod's container running `script` with bash -ec; the
// container, for its env.
json& RunScript(json& review, const std::string& script) {
  json& container = PodSpecOf(review)["containers"][0];
  container["command"] = json::array({"/bin/bash", "-ec"});
  container["args"] = json::array({script});
  return container;
}

// The DeepSeek-V3 smoke Pod (8 GPUs) with `extra` after its arguments.
json DeepSeekPodWith(std::initializer_list<const char*> extra) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  json& args = PodSpecOf(review)["containers"][0]["args"];
  for (const char* word : extra) args.push_back(word);
  return review;
}

TEST_F(WebhookAdmissionTest, PodThatDoesNotFitIsDenied) {
  const json review = Load("pod_deepseek_v3_8gpu.json");
  const json r = Review(review);
  EXPECT_EQ(r["uid"], "3f1e0d2c-5b4a-4e8f-9a7b-6c5d4e3f2a10");
  EXPECT_EQ(r["allowed"], false);
  // `allowed` is printed even when false.
  EXPECT_THAT(last_.body, HasSubstr("\"allowed\":false"));
  ASSERT_TRUE(r.contains("status"));
  EXPECT_EQ(r["status"]["code"], 403);
  EXPECT_EQ(r["status"]["reason"], "Forbidden");

  // The verdict is the gRPC Check's for the same job.
  const v1::CheckResponse direct =
      Direct(testing::MegatronSource("deepseek-v3",
                                     "--expert-model-parallel-size 8 --seq-length 4096 "
                                     "--micro-batch-size 1 --use-distributed-optimizer --bf16 "
                                     "--data-path /data/dsv3/text_document",
                                     8),
             "H100-SXM-80GB");
  ASSERT_EQ(direct.verdict(), v1::VERDICT_DOES_NOT_FIT);
  const std::string message = r["status"]["message"];
  EXPECT_THAT(message, StartsWith("oomguard: Pod llm-training/dsv3-smoke (8 GPUs, H100-SXM-80GB) "
                                  "would run out of GPU memory. Does not fit: PP rank "));
  EXPECT_THAT(message,
              HasSubstr(direct.summary()));  // Worst rank, peak vs capacity.
  EXPECT_THAT(message, HasSubstr("GiB usable on H100-SXM-80GB"));
  EXPECT_THAT(message, HasSubstr("oomguard.io/skip: \"true\""));
  EXPECT_EQ(r["auditAnnotations"]["verdict"], "DOES_NOT_FIT");
  EXPECT_EQ(r["auditAnnotations"]["peak-device-bytes"], absl::StrCat(direct.peak_device_bytes()));
  EXPECT_EQ(r["auditAnnotations"]["worst-pp-rank"], absl::StrCat(direct.worst_pp_rank()));
  EXPECT_EQ(r["auditAnnotations"]["num-gpus"], "8");
  // The recommended changes, as warnings.
  ASSERT_TRUE(r.contains("warnings"));
  ASSERT_FALSE(r["warnings"].empty());
  EXPECT_THAT(r["warnings"][0].get<std::string>(), StartsWith("oomguard: try "));
  for (const json& w : r["warnings"]) {
    EXPECT_LE(w.get<std::string>().size(), webhook::kMaxWarningBytes);
  }
  EXPECT_TRUE(last_.outcome.judged);
  EXPECT_FALSE(last_.outcome.allowed);
  EXPECT_EQ(last_.outcome.peak_bytes, direct.peak_device_bytes());
}

TEST_F(WebhookAdmissionTest, PyTorchJobThatFitsWithSettingsIsAllowedWithAWarning) {
  const json review = Load("pytorchjob_deepseek_v3_1024gpu.json");
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("status"));
  // 1 Master + 127 Workers of 8 GPUs; the GPU from the node selector GFD
  // sets; the flags from the bash array in `bash -c`.
  EXPECT_EQ(r["auditAnnotations"]["num-gpus"], "1024");
  EXPECT_EQ(r["auditAnnotations"]["gpu"], "H100-SXM-80GB");
  EXPECT_EQ(r["auditAnnotations"]["verdict"], "FITS_WITH_SETTINGS");
  const v1::CheckResponse direct =
      Direct(testing::MegatronSource("deepseek-v3", testing::DeepSeekV3With1024GpusArgs(), 1024),
             "H100-SXM-80GB");
  EXPECT_EQ(r["auditAnnotations"]["peak-device-bytes"], absl::StrCat(direct.peak_device_bytes()));
  ASSERT_EQ(r["warnings"].size(), 1u);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              AllOf(StartsWith("oomguard: fits on H100-SXM-80GB only with "
                               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: PP rank "),
                    HasSubstr("GiB usable")));
}

TEST_F(WebhookAdmissionTest, IndexedJobThatFitsIsAllowedSilently) {
  const json r = Review(Load("job_llama3_8b_8gpu.json"));
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("status"));
  EXPECT_FALSE(r.contains("warnings"));
  EXPECT_EQ(r["auditAnnotations"]["verdict"], "FITS");
  EXPECT_EQ(r["auditAnnotations"]["num-gpus"], "8");  // 2 pods x 4.
  // The template's annotation, an alias.
  EXPECT_EQ(r["auditAnnotations"]["gpu"], "H100-SXM-80GB");
}

TEST_F(WebhookAdmissionTest, JobSetCountsEveryReplicatedJob) {
  const json r = Review(Load("jobset_deepseek_v3_256gpu.json"));
  // 4 replicas x 8 pods x 8 GPUs; the coordinator has none.
  EXPECT_EQ(r["auditAnnotations"]["num-gpus"], "256");
  // From the required node affinity.
  EXPECT_EQ(r["auditAnnotations"]["gpu"], "H200-141GB");
  EXPECT_TRUE(last_.outcome.judged);
  EXPECT_EQ(r["allowed"], last_.outcome.verdict != v1::VERDICT_DOES_NOT_FIT);
}

TEST_F(WebhookAdmissionTest, PodThatTrainsNothingIsAllowedSilently) {
  const json r = Review(Load("pod_not_training.json"));
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("warnings"));
  EXPECT_FALSE(r.contains("status"));
  EXPECT_EQ(r["auditAnnotations"]["skipped"], "no Megatron-LM launch");
  EXPECT_FALSE(last_.outcome.judged);
}

TEST_F(WebhookAdmissionTest, SkipAnnotationAdmitsAJobThatDoesNotFit) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  review["request"]["object"]["metadata"]["annotations"]["oomguard.io/skip"] = "true";
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("warnings"));
  EXPECT_EQ(r["auditAnnotations"]["skipped"], "annotation oomguard.io/skip");
}

TEST_F(WebhookAdmissionTest, DryRunGetsTheSameVerdict) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  review["request"]["dryRun"] = true;
  review["request"]["uid"] = "dry-run-uid-0001";
  const json r = Review(review);
  EXPECT_EQ(r["uid"], "dry-run-uid-0001");
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["code"], 403);
  EXPECT_TRUE(last_.outcome.dry_run);
}

TEST_F(WebhookAdmissionTest, UidIsEchoedExactly) {
  json review = Load("pod_not_training.json");
  const std::string uid = "7a\"b\\c/\u00e9\u2603-\u00001";  // Quote, backslash, UTF-8, NUL.
  review["request"]["uid"] = uid;
  const json r = Review(review);
  EXPECT_EQ(r["uid"].get<std::string>(), uid);
}

TEST_F(WebhookAdmissionTest, MissingGpuTypeIsAllowedWithAWarning) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  review["request"]["object"]["metadata"]["annotations"].erase("oomguard.io/gpu");
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  ASSERT_EQ(r["warnings"].size(), 1u);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              AllOf(StartsWith("oomguard could not check Pod llm-training/dsv3-smoke: "),
                    HasSubstr("set annotation oomguard.io/gpu"),
                    HasSubstr("nodeSelector nvidia.com/gpu.product")));
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kFailedPrecondition);
}

TEST_F(WebhookAdmissionTest, UnknownGpuIsAllowedWithAWarningNamingTheAnnotation) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  review["request"]["object"]["metadata"]["annotations"]["oomguard.io/gpu"] = "P100-16GB";
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              AllOf(HasSubstr("metadata.annotations[\"oomguard.io/gpu\"] = \"P100-16GB\""),
                    HasSubstr("unknown GPU"), HasSubstr("H100-SXM-80GB")));
}

TEST_F(WebhookAdmissionTest, MalformedGpuQuantityIsAllowedWithAWarningNamingTheField) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  PodSpecOf(review)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "eight";
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              HasSubstr("spec.containers[0].resources.limits[\"nvidia.com/"
                        "gpu\"] = \"eight\": "
                        "not a whole number of GPUs"));
  EXPECT_EQ(r["auditAnnotations"].count("error"), 1u);
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kInvalidArgument);
}

// A Pod whose env references double at each step (V0=x, Vi=$(Vi-1)$(Vi-1)
// to V40, args ending in $(V40)) took the replica's memory without bound
// and never answered; it is answered at once, naming the value that passes
// the expansion limit (webhook/pod_scan.h), like any Pod oomguard cannot
// read.
TEST_F(WebhookAdmissionTest, DoublingEnvReferencesAreAnsweredNamingTheValue) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  json& container = PodSpecOf(review)["containers"][0];
  json env = json::array({{{"name", "V0"}, {"value", "x"}}});
  for (int i = 1; i <= 40; ++i) {
    env.push_back({{"name", absl::StrCat("V", i)},
                   {"value", absl::StrCat("$(V", i - 1, ")$(V", i - 1, ")")}});
  }
  container["env"] = env;
  container["args"].push_back("--data-path");
  container["args"].push_back("$(V40)");
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              AllOf(HasSubstr("spec.containers[0].env[20] (\"V20\")"),
                    HasSubstr("expand past 1048576 bytes")));
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kInvalidArgument);
}

// Issue 25 item 5: a `bash -c` script of array-doubling lines took 6-42 s of
// CPU a review. Its reading stops at the job script reader's work bound
// (jobscript/shell_variables.h): a Pod oomguard cannot read, allowed with a
// warning naming the line and the bound, at once.
TEST_F(WebhookAdmissionTest, ArrayDoublingScriptIsAnsweredNamingTheBound) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  json& container = PodSpecOf(review)["containers"][0];
  container["command"] = json::array({"bash", "-c"});
  container["args"] = json::array({testing::ArrayDoublingScript("a b")});
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              AllOf(HasSubstr("spec.containers[0] (\"megatron\") command/args: line 19: "),
                    HasSubstr("pass 16 MiB of work")));
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kResourceExhausted);
}

// Issue 25 item 12: an env value substituted into a numeric flag, by
// Kubernetes ($(NAME) in args) or by a `bash -c` script ($NAME), was echoed in
// the warnings, the audit annotations and the outcome's reason (the server's
// log). They name the variable; the value appears nowhere.
TEST_F(WebhookAdmissionTest, AnEnvValueIsNamedNeverEchoed) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  json& container = PodSpecOf(review)["containers"][0];
  container["env"] = json::array({{{"name", "WANDB_API_KEY"}, {"value", "sk-secret-123"}}});
  container["args"].push_back("--micro-batch-size");
  container["args"].push_back("$(WANDB_API_KEY)");
  json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              HasSubstr("--micro-batch-size: expected a non-negative integer, got the value of "
                        "$(WANDB_API_KEY) (not shown)"));
  EXPECT_THAT(r.dump(), Not(HasSubstr("sk-secret")));
  EXPECT_THAT(last_.outcome.reason, Not(HasSubstr("sk-secret")));
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kInvalidArgument);

  container["command"] = json::array({"bash", "-c"});
  container["args"] = json::array(
      {"torchrun --nproc-per-node 8 pretrain_gpt.py --micro-batch-size $WANDB_API_KEY"});
  r = Review(review);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              HasSubstr("got the value of $WANDB_API_KEY (not shown)"));
  EXPECT_THAT(r.dump(), Not(HasSubstr("sk-secret")));
  EXPECT_THAT(last_.outcome.reason, Not(HasSubstr("sk-secret")));

  // Kubernetes expands $(NAME) in the script's text before the shell reads it.
  container["args"] = json::array(
      {"torchrun --nproc-per-node 8 pretrain_gpt.py --micro-batch-size $(WANDB_API_KEY)"});
  r = Review(review);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              HasSubstr("got the value of $(WANDB_API_KEY) (not shown)"));
  EXPECT_THAT(r.dump(), Not(HasSubstr("sk-secret")));
  EXPECT_THAT(last_.outcome.reason, Not(HasSubstr("sk-secret")));
}

TEST_F(WebhookAdmissionTest, WrongTypesAreReportedByPath) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  PodSpecOf(review)["containers"] = "megatron";
  json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              HasSubstr("spec.containers = \"megatron\": expected a list"));

  review = Load("pod_deepseek_v3_8gpu.json");
  PodSpecOf(review)["containers"][0]["args"] = json::array({"--seq-length", 4096});
  r = Review(review);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              HasSubstr("spec.containers[0].args[1] = 4096: expected a string"));

  review = Load("pod_deepseek_v3_8gpu.json");
  review["request"]["object"] = json::array({1, 2});
  r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(), HasSubstr("request.object"));

  review = Load("pod_deepseek_v3_8gpu.json");
  review["request"]["kind"] = "Pod";  // Not an object: not a kind we judge.
  r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("warnings"));
}

TEST_F(WebhookAdmissionTest, InvalidMegatronJobIsAllowedWithTheReason) {
  const json r = Review(DeepSeekPodWith({"--tensor-model-parallel-size", "3"}));
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("status"));
  ASSERT_EQ(r["warnings"].size(), 1u);
  // The estimator's reason, naming the field.
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              StartsWith("oomguard could not check Pod llm-training/dsv3-smoke: "
                         "parallelism.num_gpus = 8: not divisible by TP x PP x CP = 3"));
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kInvalidArgument);
}

// Issue 27: a job with a flag oomguard does not model is not judged by
// default: admitted, with a warning naming the flag and why, audited as
// not-judged.
TEST_F(WebhookAdmissionTest, UnmodelledFlagIsAllowedNotJudgedNamingIt) {
  const json r = Review(DeepSeekPodWith({"--tp-comm-overlap-cfg", "/cfg/x.yaml"}));
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("status"));
  ASSERT_EQ(r["warnings"].size(), 1u) << r.dump();
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              StartsWith("oomguard did not judge Pod llm-training/dsv3-smoke: oomguard does not "
                         "model --tp-comm-overlap-cfg, so the job is not judged. "
                         "--tp-comm-overlap-cfg: a custom TP communication overlap configuration "
                         "is not read"));
  EXPECT_THAT(r["auditAnnotations"]["not-judged"].get<std::string>(),
              HasSubstr("--tp-comm-overlap-cfg"));
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kUnimplemented);
}

// With the server's --judge_unmodelled the same job is judged: denied (it
// does not fit), the denial's verdict and the first warning saying what it
// was judged without.
TEST_F(WebhookAdmissionTest, ServerThatJudgesUnmodelledFlagsSaysSoInTheVerdict) {
  service::ServiceConfig config = Config();
  config.default_judge_unmodelled = true;
  service::RequestHandlers judging(config, &metrics_);
  const webhook::AdmissionAnswer answer = webhook::ReviewAdmission(
      DeepSeekPodWith({"--tp-comm-overlap-cfg", "/cfg/x.yaml"}).dump(), catalog_,
      absl::Now() + absl::Seconds(30),
      [&](const v1::CheckRequest& request, const v1::JobHandle&, absl::Time d,
          v1::CheckResponse* response) { return judging.RunCheck(request, d, response); });
  ASSERT_EQ(answer.http_status, 200) << answer.body;
  const json r = json::parse(answer.body)["response"];
  EXPECT_EQ(r["allowed"], false);
  EXPECT_THAT(r["status"]["message"].get<std::string>(),
              HasSubstr("Does not fit, judged without modelling --tp-comm-overlap-cfg: PP rank"));
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              StartsWith("oomguard: DOES_NOT_FIT, judged without modelling --tp-comm-overlap-cfg "
                         "(a custom TP communication overlap"));
  EXPECT_THAT(r["auditAnnotations"]["judged-without"].get<std::string>(),
              StartsWith("--tp-comm-overlap-cfg (a custom"));
}

TEST_F(WebhookAdmissionTest, CheckOutOfTimeIsAllowedWithAWarning) {
  const json r = Review(Load("pod_deepseek_v3_8gpu.json"), absl::InfinitePast());
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(), HasSubstr("did not finish in time"));
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kDeadlineExceeded);
}

TEST_F(WebhookAdmissionTest, OnlyCreateIsJudged) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  review["request"]["operation"] = "UPDATE";
  review["request"]["oldObject"] = review["request"]["object"];
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_EQ(r["auditAnnotations"]["skipped"], "operation UPDATE is not judged");
}

TEST_F(WebhookAdmissionTest, PodsWithAControllerAreLeftToTheirOwner) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  review["request"]["object"]["metadata"]["ownerReferences"] =
      json::array({{{"apiVersion", "kubeflow.org/v1"},
                    {"kind", "PyTorchJob"},
                    {"name", "dsv3-pretrain"},
                    {"uid", "b7c6d5e4"},
                    {"controller", true},
                    {"blockOwnerDeletion", true}}});
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_EQ(r["auditAnnotations"]["skipped"], "controlled by PyTorchJob/dsv3-pretrain");
}

// The world size of `review`'s object, as ReadWorkload counts it.
uint32_t WorldSize(const json& review, webhook::WorkloadKind kind) {
  absl::StatusOr<webhook::WorkloadJob> job =
      webhook::ReadWorkload(review["request"]["object"], kind);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? job->launch.num_gpus : 0;
}

TEST_F(WebhookAdmissionTest, PyTorchJobSumsReplicaTypes) {
  json review = Load("pytorchjob_deepseek_v3_1024gpu.json");
  json& specs = review["request"]["object"]["spec"]["pytorchReplicaSpecs"];
  specs["Worker"]["replicas"] = 63;
  EXPECT_EQ(WorldSize(review, webhook::WorkloadKind::kPyTorchJob), 512u);
  specs.erase("Master");  // Workers only.
  EXPECT_EQ(WorldSize(review, webhook::WorkloadKind::kPyTorchJob), 504u);
  specs["Worker"].erase("replicas");  // Defaults to 1.
  EXPECT_EQ(WorldSize(review, webhook::WorkloadKind::kPyTorchJob), 8u);
  specs["Worker"]["replicas"] = -1;
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              HasSubstr("spec.pytorchReplicaSpecs.Worker.replicas = -1: must be in [0, "));
}

TEST_F(WebhookAdmissionTest, AbsurdCountsAreRefusedNotOverflowed) {
  json review = Load("jobset_deepseek_v3_256gpu.json");
  json& worker = review["request"]["object"]["spec"]["replicatedJobs"][1];
  worker["replicas"] = 1000000;
  worker["template"]["spec"]["parallelism"] = 1000000;
  worker["template"]["spec"]["completions"] = 1000000;
  json& containers = worker["template"]["spec"]["template"]["spec"]["containers"];
  for (int i = 0; i < 50; ++i) containers.push_back(containers[0]);
  const json r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_THAT(r["warnings"][0].get<std::string>(), HasSubstr("asks for more than 4294967295 GPUs"));
}

TEST_F(WebhookAdmissionTest, JobPodsAreParallelismCappedByCompletions) {
  json review = Load("job_llama3_8b_8gpu.json");
  json& spec = review["request"]["object"]["spec"];
  spec["parallelism"] = 4;  // Completions 2: two pods ever run at once.
  EXPECT_EQ(WorldSize(review, webhook::WorkloadKind::kJob), 8u);
  spec.erase("completions");
  EXPECT_EQ(WorldSize(review, webhook::WorkloadKind::kJob), 16u);
  spec.erase("parallelism");  // Defaults to 1.
  EXPECT_EQ(WorldSize(review, webhook::WorkloadKind::kJob), 4u);
}

TEST_F(WebhookAdmissionTest, SidecarGpusAreNotTrainingRanks) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  json sidecar = {{"name", "profiler"},
                  {"image", "nvcr.io/nvidia/cloud-native/dcgm:3.3"},
                  {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}};
  PodSpecOf(review)["containers"].push_back(sidecar);
  EXPECT_EQ(Review(review)["auditAnnotations"]["num-gpus"], "8");
}

TEST_F(WebhookAdmissionTest, KubernetesReferencesAreExpandedFromLiteralEnv) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  json& container = PodSpecOf(review)["containers"][0];
  container["env"].push_back({{"name", "EP"}, {"value", "8"}});
  container["env"].push_back(
      {{"name", "PYTORCH_CUDA_ALLOC_CONF"}, {"value", "expandable_segments:True"}});
  container["args"] = json::array({"--expert-model-parallel-size", "$(EP)", "--seq-length", "4096",
                                   "--micro-batch-size", "1", "--use-distributed-optimizer"});
  const json r = Review(review);
  EXPECT_EQ(r["auditAnnotations"]["verdict"], "DOES_NOT_FIT");
  // With expandable segments already set, it is not recommended again.
  for (const json& w : r["warnings"]) {
    EXPECT_THAT(w.get<std::string>(), Not(HasSubstr("expandable_segments")));
  }
}

TEST_F(WebhookAdmissionTest, ShellScriptsSeeTheContainerEnv) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  json& container =
      RunScript(review,
                "torchrun --nproc-per-node 8 /workspace/Megatron-LM/pretrain_gpt.py "
                "--expert-model-parallel-size $EP --seq-length 4096 --micro-batch-size "
                "${MBS} "
                "--recompute-granularity $RECOMPUTE "
                "--use-distributed-optimizer --data-path $DATA_PATH/$(date +%s)");
  container["env"] = json::array({{{"name", "EP"}, {"value", "8"}},
                                  {{"name", "MBS"}, {"value", "1"}},
                                  {{"name", "RECOMPUTE"}, {"value", "selective"}},
                                  {{"name", "DATA_PATH"}, {"value", "it's/data"}}});
  json r = Review(review);
  // Every memory flag resolved; the data path (left out) does not matter.
  EXPECT_EQ(r["allowed"], false) << r.dump();
  EXPECT_FALSE(r["auditAnnotations"].contains("unresolved"));

  // RECOMPUTE only known at run time: judged without it, not enforced.
  container["env"].erase(2);
  r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("status"));
  EXPECT_EQ(r["auditAnnotations"]["verdict"], "DOES_NOT_FIT");
  EXPECT_EQ(r["auditAnnotations"]["unresolved"], "--recompute-granularity $RECOMPUTE");
  EXPECT_THAT(r["warnings"][0].get<std::string>(),
              AllOf(StartsWith("oomguard: as read, it would not fit on "
                               "H100-SXM-80GB (PP rank "),
                    HasSubstr("not enforced: judged without --recompute-granularity "
                              "$RECOMPUTE (known only at run time)")));
  EXPECT_TRUE(last_.outcome.judged);
  EXPECT_TRUE(last_.outcome.allowed);

  // MBS unknown too: the job is invalid without it; the warning says why.
  container["env"].erase(1);
  r = Review(review);
  EXPECT_EQ(r["allowed"], true);
  ASSERT_GE(r["warnings"].size(), 2u);
  EXPECT_THAT(r["warnings"][0].get<std::string>(), HasSubstr("micro_batch_size"));
  EXPECT_THAT(r["warnings"][1].get<std::string>(),
              HasSubstr("leaves out --micro-batch-size ${MBS}, --recompute-granularity"));
}

TEST_F(WebhookAdmissionTest, ScriptDirectiveSetsTheWorldSize) {
  json review = Load("pod_deepseek_v3_8gpu.json");
  json& container = PodSpecOf(review)["containers"][0];
  container["command"] = json::array({"/bin/bash", "-lc"});
  container["args"] =
      json::array({"#OOMGUARD gpus=64\n"
                   "torchrun --nnodes 8 --nproc-per-node 8 "
                   "/workspace/Megatron-LM/pretrain_gpt.py "
                   "--expert-model-parallel-size 8 --seq-length 4096 "
                   "--micro-batch-size 1\n"});
  const json r = Review(review);
  EXPECT_EQ(r["auditAnnotations"]["num-gpus"], "64");
  EXPECT_FALSE(r.contains("warnings") &&
               r["warnings"][0].get<std::string>().find("#OOMGUARD gpus=") != std::string::npos);
}

TEST_F(WebhookAdmissionTest, NotAnAdmissionReviewIs400) {
  struct Case {
    std::string body;
    std::string error;
  };
  json v1beta1 = Load("pod_not_training.json");
  v1beta1["apiVersion"] = "admission.k8s.io/v1beta1";
  json no_uid = Load("pod_not_training.json");
  no_uid["request"].erase("uid");
  json number_uid = Load("pod_not_training.json");
  number_uid["request"]["uid"] = 42;
  const std::vector<Case> cases = {
      {"", "body: not JSON"},
      {"{\"apiVersion\":", "body: not JSON"},
      {"\xff\xfe{}", "body: not JSON"},
      {"[]", "body: expected an AdmissionReview object"},
      {v1beta1.dump(), "apiVersion = \"admission.k8s.io/v1beta1\": expected"},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"Pod\"}", "kind = \"Pod\""},
      {"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\"}", "request: missing"},
      {no_uid.dump(), "request.uid: missing"},
      {number_uid.dump(), "request.uid: missing or not a string"},
  };
  for (const Case& c : cases) {
    const webhook::AdmissionAnswer answer = ReviewText(c.body);
    EXPECT_EQ(answer.http_status, 400) << c.body.substr(0, 80);
    EXPECT_THAT(answer.body, HasSubstr(c.error)) << c.body.substr(0, 80);
    EXPECT_EQ(answer.outcome.code, absl::StatusCode::kInvalidArgument);
  }
}

// A Pod whose command holds bytes that are not UTF-8 (issue 25, item 8: a
// path is bytes). The API server writes them as U+FFFD ("\ufffd" or its
// UTF-8), which is judged like the Pod without them; a body that holds them
// raw is read by the same rule (common/valid_utf8.h) and judged the same,
// where it was refused as "not JSON". An escaped lone surrogate is not JSON:
// 400 naming it, never 500 or a crash.
TEST_F(WebhookAdmissionTest, CommandBytesThatAreNotUtf8AreJudged) {
  const json base = Load("pod_deepseek_v3_8gpu.json");
  const json plain = Review(base);
  ASSERT_EQ(plain["allowed"], false);
  json review = base;
  json& args = PodSpecOf(review)["containers"][0]["args"];
  ASSERT_EQ(args.back(), "/data/dsv3/text_document");
  args.back() = "/data/@BYTES@/text_document";
  const std::string text = review.dump();
  const auto with = [&](const std::string& bytes) {
    return absl::StrReplaceAll(text, {{"@BYTES@", bytes}});
  };
  for (const std::string bytes : {"\\ufffd", "\xEF\xBF\xBD", "\xff", "\xc3("}) {
    last_ = ReviewText(with(bytes));
    ASSERT_EQ(last_.http_status, 200) << bytes << ": " << last_.body;
    const json r = json::parse(last_.body)["response"];
    EXPECT_EQ(r["allowed"], false) << bytes;
    EXPECT_EQ(r["auditAnnotations"]["verdict"], "DOES_NOT_FIT") << bytes;
    EXPECT_EQ(r["auditAnnotations"]["peak-device-bytes"],
              plain["auditAnnotations"]["peak-device-bytes"])
        << bytes;
  }
  last_ = ReviewText(with("\\udcff"));
  EXPECT_EQ(last_.http_status, 400);
  EXPECT_THAT(last_.body, HasSubstr("body: not JSON"));
  EXPECT_EQ(last_.outcome.code, absl::StatusCode::kInvalidArgument);
}

TEST_F(WebhookAdmissionTest, DeepNestingIsRefusedAndModerateNestingIsFine) {
  // 100000 levels would build a huge tree (and overflow recursive parsers).
  const std::string deep = absl::StrCat(std::string(100000, '['), std::string(100000, ']'));
  webhook::AdmissionAnswer answer = ReviewText(deep);
  EXPECT_EQ(answer.http_status, 400);
  EXPECT_THAT(answer.body, HasSubstr("nested deeper than 64 levels"));

  // 40 levels inside a field the webhook never reads: answered normally.
  json review = Load("pod_deepseek_v3_8gpu.json");
  json nested = "leaf";
  for (int i = 0; i < 40; ++i) nested = json::object({{"f:x", nested}});
  review["request"]["object"]["metadata"]["managedFields"][0]["fieldsV1"] = nested;
  EXPECT_EQ(Review(review)["allowed"], false);
}

TEST_F(WebhookAdmissionTest, HostileShapesNeverCrash) {
  // Every field of a real review replaced, one at a time, by values of the
  // wrong type: each gets an answer.
  const json base = Load("pytorchjob_deepseek_v3_1024gpu.json");
  const std::vector<json> odd = {nullptr,
                                 0,
                                 -1,
                                 1.5,
                                 "x",
                                 json::array(),
                                 json::object(),
                                 json::array({nullptr}),
                                 1e308,
                                 "18446744073709551616"};
  int answered = 0;
  std::vector<json::json_pointer> pointers;
  const json flat = base.flatten();
  for (const auto& [pointer, unused] : flat.items()) {
    json::json_pointer p(pointer);
    while (!p.empty()) {
      pointers.push_back(p);
      p = p.parent_pointer();
    }
  }
  std::sort(pointers.begin(), pointers.end(),
            [](const auto& a, const auto& b) { return a.to_string() < b.to_string(); });
  pointers.erase(std::unique(pointers.begin(), pointers.end()), pointers.end());
  for (const json::json_pointer& p : pointers) {
    for (const json& value : odd) {
      json review = base;
      review[p] = value;
      // A canned verdict: this is about reading the review, not estimating.
      const webhook::AdmissionAnswer answer =
          webhook::ReviewAdmission(review.dump(), catalog_, absl::InfiniteFuture(),
                                   [](const v1::CheckRequest&, const v1::JobHandle&, absl::Time,
                                      v1::CheckResponse* response) {
                                     response->set_verdict(v1::VERDICT_FITS);
                                     return absl::OkStatus();
                                   });
      ASSERT_TRUE(answer.http_status == 200 || answer.http_status == 400) << p.to_string();
      if (answer.http_status == 200) {
        EXPECT_TRUE(json::parse(answer.body)["response"].contains("allowed")) << p.to_string();
      }
      ++answered;
    }
  }
  EXPECT_GT(answered, 500);
}

TEST(WebhookHelpersTest, GpuFeatureDiscoveryNamesResolve) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  EXPECT_EQ(*webhook::ResolveGpuName("NVIDIA-H100-80GB-HBM3", catalog), "H100-SXM-80GB");
  EXPECT_EQ(*webhook::ResolveGpuName("NVIDIA-A100-SXM4-80GB", catalog), "A100-SXM-80GB");
  EXPECT_EQ(*webhook::ResolveGpuName("NVIDIA-A100-SXM4-40GB", catalog), "A100-40GB");
  EXPECT_EQ(*webhook::ResolveGpuName("NVIDIA-H200", catalog), "H200-141GB");
  EXPECT_EQ(*webhook::ResolveGpuName("NVIDIA-B200", catalog), "B200-192GB");
  EXPECT_EQ(*webhook::ResolveGpuName("h100_sxm_80gb", catalog), "H100-SXM-80GB");
  EXPECT_EQ(webhook::ResolveGpuName("Tesla-P100-SXM2-16GB", catalog).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(WebhookHelpersTest, CheckRequestIsBuiltFromTheLaunchWithTheResolvedGpu) {
  const GpuCatalog catalog = GpuCatalog::Builtin();
  webhook::WorkloadJob job;
  job.launch.megatron_args = {"--micro-batch-size", "2", "it's"};
  job.launch.preset = "deepseek-v3";
  job.launch.num_gpus = 16;
  job.launch.gpus_per_node = 8;
  job.launch.env = {{"NCCL_GRAPH_REGISTER", "0"}};
  job.launch.safety_margin = 0.1;
  job.gpu = "NVIDIA-H100-80GB-HBM3";
  job.gpu_source = "spec.nodeSelector[\"nvidia.com/gpu.product\"]";
  absl::StatusOr<v1::CheckRequest> request = webhook::CheckRequestFor(job, catalog);
  ASSERT_TRUE(request.ok()) << request.status();
  LaunchCheck resolved = job.launch;
  resolved.gpu_name = "H100-SXM-80GB";
  v1::CheckRequest expected = BuildCheckRequest(resolved);
  // The review never shows the per-rank report, so it asks for none.
  expected.set_omit_report(true);
  EXPECT_EQ(request->DebugString(), expected.DebugString());

  job.gpu = "Tesla-P100-SXM2-16GB";
  request = webhook::CheckRequestFor(job, catalog);
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(request.status().message()),
              AllOf(StartsWith("spec.nodeSelector[\"nvidia.com/gpu.product\"] = "
                               "\"Tesla-P100-SXM2-16GB\": "),
                    HasSubstr("set annotation oomguard.io/gpu")));
}

// --- POST /mutate: the check id carried to the job ---

// The JSONPatch of a mutating answer, decoded.
json PatchOf(const json& response) {
  EXPECT_EQ(response["patchType"], "JSONPatch");
  std::string patch;
  EXPECT_TRUE(absl::Base64Unescape(response["patch"].get<std::string>(), &patch));
  return json::parse(patch);
}

// The check id an answer names (audit annotation check-id), checked for
// its form.
std::string CheckIdOf(const json& response) {
  const std::string id = response["auditAnnotations"].value("check-id", "");
  EXPECT_THAT(id, ::testing::MatchesRegex("[0-9a-f]{32}"));
  return id;
}

TEST_F(WebhookAdmissionTest, MutatingAnswerPatchesTheIdIntoAnAdmittedJob) {
  keep_checks_ = true;
  const json review = Load("job_llama3_8b_8gpu.json");
  const json r = Review(review, absl::InfiniteFuture(), webhook::AdmissionMode::kMutate);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_EQ(r["auditAnnotations"]["verdict"], "FITS");
  const std::string id = CheckIdOf(r);
  EXPECT_EQ(last_.outcome.check_id, id);
  EXPECT_TRUE(last_.outcome.patched);
  // The patch is check_id_patch's for the object; applied, the pods carry
  // the id (check_id_patch_test checks the operations one by one).
  const json& object = review["request"]["object"];
  const json patched = object.patch(PatchOf(r));
  const json& pod_template = patched["spec"]["template"];
  EXPECT_EQ(pod_template["metadata"]["annotations"]["oomguard.io/check-id"], id);
  EXPECT_EQ(pod_template["spec"]["containers"][0]["env"].back(),
            (json{{"name", "OOMGUARD_CHECK_ID"}, {"value", id}}));
  EXPECT_EQ(pod_template["spec"]["containers"][0]["terminationMessagePolicy"],
            "FallbackToLogsOnError");
  // The check was kept with the job's handle.
  const v1::CheckRecord record = Kept(id);
  EXPECT_EQ(record.check_id(), id);
  EXPECT_EQ(record.verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(record.num_gpus(), 8u);
  EXPECT_EQ(record.handle().kubernetes_namespace(), "llm-training");
  EXPECT_EQ(record.handle().kubernetes_workload(), "llama3-8b-sft");
  EXPECT_EQ(record.handle().kubernetes_kind(), "Job");
  EXPECT_TRUE(record.handle().slurm_job_id().empty());
}

TEST_F(WebhookAdmissionTest, ValidatingAnswerNamesTheIdButNeverPatches) {
  keep_checks_ = true;
  const json r = Review(Load("job_llama3_8b_8gpu.json"));
  EXPECT_EQ(r["allowed"], true);
  const std::string id = CheckIdOf(r);
  EXPECT_FALSE(r.contains("patch"));
  EXPECT_FALSE(r.contains("patchType"));
  EXPECT_FALSE(last_.outcome.patched);
  // The handle is kept all the same: the DCGM reader finds the pods by it.
  EXPECT_EQ(Kept(id).handle().kubernetes_workload(), "llama3-8b-sft");
}

TEST_F(WebhookAdmissionTest, MutatingAnswerWithoutAnIdOrDenyingDoesNotPatch) {
  // A server without a store: no id, nothing to carry.
  const json fits = Review(Load("job_llama3_8b_8gpu.json"), absl::InfiniteFuture(),
                           webhook::AdmissionMode::kMutate);
  EXPECT_EQ(fits["allowed"], true);
  EXPECT_FALSE(fits.contains("patch"));
  EXPECT_FALSE(fits["auditAnnotations"].contains("check-id"));
  // A denied job is not created: no patch, though its check was kept.
  keep_checks_ = true;
  const json denied = Review(Load("pod_deepseek_v3_8gpu.json"), absl::InfiniteFuture(),
                             webhook::AdmissionMode::kMutate);
  EXPECT_EQ(denied["allowed"], false);
  EXPECT_FALSE(denied.contains("patch"));
  EXPECT_EQ(Kept(CheckIdOf(denied)).verdict(), v1::VERDICT_DOES_NOT_FIT);
  // Not judged (no launch): no check, no patch.
  const json skipped = Review(Load("pod_not_training.json"), absl::InfiniteFuture(),
                              webhook::AdmissionMode::kMutate);
  EXPECT_EQ(skipped["allowed"], true);
  EXPECT_FALSE(skipped.contains("patch"));
}

TEST_F(WebhookAdmissionTest, DeniedJobAdmittedForUnresolvedWordsIsPatched) {
  // --recompute-granularity $RECOMPUTE, known only at run time: the denial
  // is not enforced, the job runs, so its id goes with it.
  keep_checks_ = true;
  json review = Load("pod_deepseek_v3_8gpu.json");
  RunScript(review,
            "torchrun --nproc-per-node 8 /workspace/Megatron-LM/pretrain_gpt.py "
            "--expert-model-parallel-size 8 --seq-length 4096 --micro-batch-size 1 "
            "--recompute-granularity $RECOMPUTE --use-distributed-optimizer");
  const json r = Review(review, absl::InfiniteFuture(), webhook::AdmissionMode::kMutate);
  EXPECT_EQ(r["allowed"], true);
  EXPECT_EQ(r["auditAnnotations"]["verdict"], "DOES_NOT_FIT");
  const std::string id = CheckIdOf(r);
  const json patched = review["request"]["object"].patch(PatchOf(r));
  EXPECT_EQ(patched["metadata"]["annotations"]["oomguard.io/check-id"], id);
  EXPECT_EQ(patched["spec"]["containers"][0]["env"].back()["value"], id);
  EXPECT_EQ(Kept(id).handle().kubernetes_kind(), "Pod");
}

TEST_F(WebhookAdmissionTest, DryRunsAndUnnamedObjectsAreKeptWithoutAHandle) {
  keep_checks_ = true;
  json dry_run = Load("job_llama3_8b_8gpu.json");
  dry_run["request"]["dryRun"] = true;
  const json r = Review(dry_run, absl::InfiniteFuture(), webhook::AdmissionMode::kMutate);
  // Still patched: a dry run shows the object as it would be created.
  EXPECT_TRUE(r.contains("patch"));
  EXPECT_EQ(last_handle_.ByteSizeLong(), 0u) << last_handle_.ShortDebugString();
  EXPECT_EQ(Kept(CheckIdOf(r)).handle().ByteSizeLong(), 0u);

  // generateName: the API server names the object after the mutating
  // webhooks, so the pods' names are not known yet.
  json unnamed = Load("job_llama3_8b_8gpu.json");
  unnamed["request"].erase("name");
  unnamed["request"]["object"]["metadata"].erase("name");
  unnamed["request"]["object"]["metadata"]["generateName"] = "llama3-8b-sft-";
  last_handle_.set_kubernetes_workload("left-over");
  const json generated = Review(unnamed, absl::InfiniteFuture(), webhook::AdmissionMode::kMutate);
  EXPECT_EQ(last_handle_.ByteSizeLong(), 0u) << last_handle_.ShortDebugString();
  EXPECT_TRUE(generated.contains("patch"));

  // The name from the object when the request leaves it out.
  json object_named = Load("job_llama3_8b_8gpu.json");
  object_named["request"].erase("name");
  Review(object_named, absl::InfiniteFuture(), webhook::AdmissionMode::kMutate);
  EXPECT_EQ(last_handle_.kubernetes_workload(), "llama3-8b-sft");
}

}  // namespace
}  // namespace oomguard
