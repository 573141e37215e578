// An RL job through a real server (server::Server, gRPC on 127.0.0.1:0):
// Estimate answers the step the estimator gives for the job the reader
// reads, on the request's GPU (H100-SXM-80GB, noted, when none is named);
// Check answers what the RL admission check answers, its verdict on the
// binding phase; the structured job answers the same; a Megatron argument
// line of an RL loop is judged as the RL job; errors name the field.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "admission/gpu_catalog.h"
#include "admission/rl_admission.h"
#include "estimator/rl_step.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "jobspec/rl_job_builder.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "prometheus/metric_family.h"
#include "server/server.h"
#include "service/request_resolution.h"
#include "service/status_mapping.h"
#include "tests/testing/examples.h"
#include "tests/testing/rl_test_jobs.h"

namespace oomguard {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr uint64_t kGiB = uint64_t{1} << 30;

class RlServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.service.log_requests = false;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = v1::Oomguard::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  }

  template <typename Request, typename Response, typename Call>
  grpc::Status Unary(Call call, const Request& request, Response* response) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(20)));
    return ((*stub_).*call)(&context, request, response);
  }
  grpc::Status Estimate(const v1::EstimateRequest& request, v1::EstimateResponse* response) {
    return Unary(&v1::Oomguard::Stub::Estimate, request, response);
  }
  grpc::Status Check(const v1::CheckRequest& request, v1::CheckResponse* response) {
    return Unary(&v1::Oomguard::Stub::Check, request, response);
  }

  // The job the reader reads from `source` (with its notes).
  static v1::RlJobSpec Read(const v1::JobSource& source, std::vector<std::string>* notes) {
    absl::StatusOr<v1::RlJobSpec> job = BuildRlJob(source.rl(), notes);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : v1::RlJobSpec();
  }

  static v1::GpuSpec Gpu(const std::string& name) {
    absl::StatusOr<v1::GpuSpec> gpu = GpuCatalog::Builtin().Find(name);
    EXPECT_TRUE(gpu.ok()) << gpu.status();
    return gpu.ok() ? *gpu : v1::GpuSpec();
  }

  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

TEST_F(RlServerTest, EstimateIsTheStepOfTheJobRead) {
  v1::EstimateRequest request;
  *request.mutable_job() = testing::VerlQwen3Source();
  request.set_gpu_name("H200");
  v1::EstimateResponse response;
  const grpc::Status status = Estimate(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();

  std::vector<std::string> notes;
  const v1::RlJobSpec job = Read(request.job(), &notes);
  RlStepOptions options;
  options.gpu_memory_bytes = Gpu("H200").memory_bytes();
  options.gpu_name = "H200-141GB";
  absl::StatusOr<v1::RlStepReport> direct = EstimateRlStep(RlJobOnGpu(job, Gpu("H200")), options);
  ASSERT_TRUE(direct.ok()) << direct.status();
  for (const std::string& note : notes) direct->add_notes(note);
  EXPECT_EQ(response.rl_step().SerializeAsString(), direct->SerializeAsString());
  EXPECT_EQ(response.rl_step().framework(), v1::RL_FRAMEWORK_VERL);
  EXPECT_EQ(response.rl_step().gpu_name(), "H200-141GB");
  EXPECT_FALSE(response.rl_step().binding_phase().empty());
  std::vector<std::string> phases;
  for (const v1::RlPhaseReport& p : response.rl_step().phases()) phases.push_back(p.phase());
  EXPECT_THAT(phases, Contains("generate"));
  EXPECT_THAT(phases, Contains("log_prob"));
  EXPECT_THAT(phases, Contains("actor_update"));
  // `report`: the actor update, with the reader's notes.
  v1::EstimateReport actor = direct->actor_update();
  for (const std::string& note : notes) actor.add_notes(note);
  EXPECT_EQ(response.report().SerializeAsString(), actor.SerializeAsString());
}

TEST_F(RlServerTest, EstimateWithoutAGpuAssumesH100AndSaysSo) {
  v1::EstimateRequest request;
  *request.mutable_job() = testing::VerlQwen3Source();
  v1::EstimateResponse response;
  grpc::Status status = Estimate(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.rl_step().gpu_name(), "H100-SXM-80GB");
  EXPECT_EQ(response.rl_step().gpu_memory_bytes(), Gpu("H100-SXM-80GB").memory_bytes());
  EXPECT_THAT(response.rl_step().notes(),
              Contains(StartsWith("no GPU given: the RL step is estimated on H100-SXM-80GB")));

  request.set_gpu_memory_bytes(100 * kGiB);
  status = Estimate(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.rl_step().gpu_memory_bytes(), 100 * kGiB);
  EXPECT_EQ(response.rl_step().gpu_name(), "");
  for (const std::string& note : response.rl_step().notes()) {
    EXPECT_THAT(note, ::testing::Not(HasSubstr("no GPU given")));
  }
}

// Check answers what CheckRlJob answers for the job read (the reader's
// notes added to its report's); the compared peak is the largest upper
// bound of any phase's rank, and the verdict follows from it.
TEST_F(RlServerTest, CheckJudgesTheBindingPhase) {
  for (const std::string fraction : {"0.5", "0.9"}) {
    SCOPED_TRACE(fraction);
    v1::CheckRequest request;
    *request.mutable_job() = testing::VerlQwen3Source(fraction);
    request.set_gpu_name("H100");
    v1::CheckResponse response;
    const grpc::Status status = Check(request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();

    std::vector<std::string> notes;
    const v1::RlJobSpec job = Read(request.job(), &notes);
    absl::StatusOr<v1::CheckResponse> direct = CheckRlJob(job, Gpu("H100"), AdmissionOptions{});
    ASSERT_TRUE(direct.ok()) << direct.status();
    for (const std::string& note : notes) direct->mutable_report()->add_notes(note);
    EXPECT_EQ(response.SerializeAsString(), direct->SerializeAsString());

    uint64_t largest = 0;
    for (const v1::RlPhaseReport& p : response.rl_step().phases()) {
      for (const v1::RlPhaseRank& r : p.ranks()) {
        largest = std::max(largest, r.peak_device_upper_bytes());
      }
    }
    EXPECT_EQ(response.compared_peak_bytes(), largest);
    bool failing = false;
    for (const v1::RlPhaseReport& p : response.rl_step().phases()) failing |= !p.failure().empty();
    EXPECT_EQ(response.verdict(), !failing && largest <= response.usable_bytes()
                                      ? v1::VERDICT_FITS
                                      : v1::VERDICT_DOES_NOT_FIT)
        << response.summary();
    EXPECT_THAT(response.summary(), HasSubstr("on H100-SXM-80GB"));
    EXPECT_TRUE(response.alternatives().empty());  // The planner plans no RL step.
  }
}

TEST_F(RlServerTest, TheStructuredJobAnswersTheSame) {
  v1::CheckRequest request;
  *request.mutable_job() = testing::VerlQwen3Source();
  request.set_gpu_name("H100");
  v1::CheckResponse from_config, structured;
  grpc::Status status = Check(request, &from_config);
  ASSERT_TRUE(status.ok()) << status.error_message();
  absl::StatusOr<service::ResolvedJob> resolved = service::ResolveJobSource(request.job(), "job");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_TRUE(resolved->rl.has_value());
  *request.mutable_job()->mutable_rl_spec() = *resolved->rl;
  status = Check(request, &structured);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(structured.verdict(), from_config.verdict());
  EXPECT_EQ(structured.summary(), from_config.summary());
  EXPECT_EQ(structured.rl_step().SerializeAsString(), from_config.rl_step().SerializeAsString());
}

// The source's env reaches the actor: PYTORCH_ALLOC_CONF's expandable
// segments with veRL's vLLM sleep pool of an older vLLM is an
// incompatibility to undo, never a recommendation.
TEST_F(RlServerTest, EnvironmentReachesTheActor) {
  v1::JobSource source = testing::VerlQwen3Source();
  (*source.mutable_env())["PYTORCH_ALLOC_CONF"] = "expandable_segments:True";
  absl::StatusOr<service::ResolvedJob> resolved = service::ResolveJobSource(source, "job");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_TRUE(resolved->rl->actor().runtime().expandable_segments());
  source.set_gpus_per_node(4);
  resolved = service::ResolveJobSource(source, "job");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(resolved->rl->actor().runtime().gpus_per_node(), 4u);
}

TEST_F(RlServerTest, ErrorsNameTheField) {
  v1::CheckRequest check;
  check.mutable_job()->mutable_rl()->set_config_yaml("actor_rollout_ref: [unclosed\n");
  check.mutable_job()->mutable_rl()->set_preset("qwen3-8b");
  check.set_gpu_name("H100");
  v1::CheckResponse checked;
  grpc::Status status = Check(check, &checked);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), StartsWith("job.rl: "));
  EXPECT_THAT(service::BadRequestFields(status), ElementsAre("job.rl"));

  v1::EstimateRequest estimate;
  *estimate.mutable_job() = testing::VerlQwen3Source();
  estimate.set_gpu_name("P100");
  v1::EstimateResponse estimated;
  status = Estimate(estimate, &estimated);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(service::BadRequestFields(status), ElementsAre("gpu_name"));
  estimate.set_gpu_memory_bytes(0);
  status = Estimate(estimate, &estimated);
  EXPECT_THAT(service::BadRequestFields(status), ElementsAre("gpu_memory_bytes"));

  v1::PlanRequest plan;
  *plan.mutable_job() = testing::VerlQwen3Source();
  plan.set_gpu_name("H100");
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::PlanResponse>> reader = stub_->Plan(&context, plan);
  v1::PlanResponse planned;
  while (reader->Read(&planned)) {
  }
  status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("an RL job is estimated"));
  EXPECT_THAT(service::BadRequestFields(status), ElementsAre("job"));
}

// A Megatron argument line that is an RL loop's (slime's, Megatron-LM's
// --perform-rl-step) is judged as that RL job: the same answer as
// JobSource.rl with the same words.
TEST_F(RlServerTest, AnRlArgumentLineIsJudgedAsTheRlJob) {
  struct Case {
    const char* example;
    const char* preset;
    v1::RlFramework framework;
  };
  for (const Case& c :
       {Case{"rl/slime_qwen3_30b_a3b.args", "", v1::RL_FRAMEWORK_SLIME},
        Case{"rl/megatron_rl.args", "qwen3-30b-a3b", v1::RL_FRAMEWORK_MEGATRON_RL}}) {
    SCOPED_TRACE(c.example);
    const std::vector<std::string> argv = testing::ExampleArgs(c.example);
    v1::CheckRequest as_megatron;
    v1::MegatronJob* megatron = as_megatron.mutable_job()->mutable_megatron();
    megatron->mutable_argv()->Assign(argv.begin(), argv.end());
    megatron->set_num_gpus(32);
    if (*c.preset != '\0') megatron->set_preset(c.preset);
    as_megatron.set_gpu_name("H100");
    v1::CheckResponse judged;
    grpc::Status status = Check(as_megatron, &judged);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(judged.rl_step().framework(), c.framework);
    EXPECT_FALSE(judged.rl_step().phases().empty());

    v1::CheckRequest as_rl;
    v1::RlJob* rl = as_rl.mutable_job()->mutable_rl();
    rl->mutable_argv()->Assign(argv.begin(), argv.end());
    rl->set_num_gpus(32);
    if (*c.preset != '\0') rl->set_preset(c.preset);
    as_rl.set_gpu_name("H100");
    v1::CheckResponse direct;
    status = Check(as_rl, &direct);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(judged.SerializeAsString(), direct.SerializeAsString());
  }
}

// An RL call is counted as any other: its request, its verdict, its
// estimated peak.
TEST_F(RlServerTest, MetricsCountRlCalls) {
  auto count = [this](const std::string& family_name) {
    double total = 0;
    for (const prometheus::MetricFamily& family : server_->metrics().registry()->Collect()) {
      if (family.name != family_name) continue;
      for (const prometheus::ClientMetric& metric : family.metric) {
        total += family.type == prometheus::MetricType::Histogram
                     ? static_cast<double>(metric.histogram.sample_count)
                     : metric.counter.value;
      }
    }
    return total;
  };
  v1::CheckRequest request;
  *request.mutable_job() = testing::VerlQwen3Source();
  request.set_gpu_name("H100");
  v1::CheckResponse response;
  ASSERT_TRUE(Check(request, &response).ok());
  v1::EstimateRequest estimate;
  *estimate.mutable_job() = testing::VerlQwen3Source();
  v1::EstimateResponse estimated;
  ASSERT_TRUE(Estimate(estimate, &estimated).ok());
  EXPECT_EQ(count("oomguard_requests_total"), 2);
  EXPECT_EQ(count("oomguard_verdicts_total"), 1);
  EXPECT_EQ(count("oomguard_estimated_peak_bytes"), 2);
}

}  // namespace
}  // namespace oomguard
