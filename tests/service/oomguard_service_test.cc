// Service tests: the real server on a loopback port the OS picks, called
// through the generated C++ stub. Happy paths, every validation error,
// deadlines, the request size limit, concurrent calls, health and metrics.
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/any.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "oomguard/v1/error.pb.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"
#include "service/request_resolution.h"
#include "service/status_mapping.h"
#include "tests/testing/service_test_jobs.h"
#include "tests/testing/service_test_util.h"

namespace oomguard {
namespace {

using ::testing::AllOf;
using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr uint64_t kGiB = uint64_t{1} << 30;

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  // Metrics only where a test reads them: stopping prometheus-cpp's
  // civetweb server takes about two seconds.
  void StartServer(server::ServerOptions options, bool with_metrics = false) {
    server_.reset();
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = with_metrics ? "127.0.0.1:0" : "";
    options.service.log_requests = false;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()),
                                   grpc::InsecureChannelCredentials());
    stub_ = v1::Oomguard::NewStub(channel_);
  }

  static void SetDeadline(grpc::ClientContext& context, absl::Duration timeout) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
  }

  grpc::Status Check(const v1::CheckRequest& request, v1::CheckResponse* response,
                     absl::Duration timeout = absl::Seconds(20)) {
    grpc::ClientContext context;
    SetDeadline(context, timeout);
    return stub_->Check(&context, request, response);
  }

  grpc::Status Estimate(const v1::EstimateRequest& request, v1::EstimateResponse* response) {
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(20));
    return stub_->Estimate(&context, request, response);
  }

  // A raw call through the generic stub (for services without C++ stubs).
  grpc::Status RawCall(const std::string& method, const std::string& request_bytes,
                       std::string* response_bytes) {
    grpc::GenericStub generic(channel_);
    grpc::ClientContext context;
    SetDeadline(context, absl::Seconds(10));
    grpc::Slice slice(request_bytes);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&context, method, grpc::StubOptions(), &request, &response,
                      [&done](grpc::Status s) { done.set_value(std::move(s)); });
    grpc::Status status = done.get_future().get();
    std::vector<grpc::Slice> slices;
    if (status.ok() && response.Dump(&slices).ok()) {
      response_bytes->clear();
      for (const grpc::Slice& s : slices) {
        response_bytes->append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
    return status;
  }

  static v1::CheckRequest CheckOn(const v1::JobSource& job, const std::string& gpu) {
    v1::CheckRequest request;
    *request.mutable_job() = job;
    request.set_gpu_name(gpu);
    return request;
  }

  std::unique_ptr<server::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

// --- Catalogs -----------------------------------------------------------------

TEST_F(ServiceTest, ListGpusReturnsTheCatalog) {
  grpc::ClientContext context;
  v1::ListGpusResponse response;
  ASSERT_TRUE(stub_->ListGpus(&context, {}, &response).ok());
  std::vector<std::string> names;
  for (const v1::GpuSpec& gpu : response.gpus()) {
    names.push_back(gpu.name());
    EXPECT_GT(gpu.memory_bytes(), 14 * kGiB) << gpu.name();  // The T4's 14.75 GiB the least.
  }
  EXPECT_THAT(names, ::testing::UnorderedElementsAre(
                         "H100-SXM-80GB", "H100-PCIe-80GB", "H100-NVL-94GB", "H800-SXM-80GB",
                         "H200-141GB", "H20-96GB", "H20-141GB", "A100-SXM-80GB", "A100-40GB",
                         "A100-PCIe-40GB", "B200-192GB", "B300-288GB", "GB200-186GB", "GB300-288GB",
                         "L40S-48GB", "V100-SXM2-16GB", "V100-PCIe-16GB", "V100-PCIe-32GB",
                         "V100-SXM2-32GB", "T4-16GB", "MI300X-192GB"));
}

TEST_F(ServiceTest, ListPresetsIsSortedAndHasTheKnownModels) {
  grpc::ClientContext context;
  v1::ListPresetsResponse response;
  ASSERT_TRUE(stub_->ListPresets(&context, {}, &response).ok());
  std::vector<std::string> names;
  for (const v1::Preset& preset : response.presets()) {
    names.push_back(preset.name());
    EXPECT_FALSE(preset.description().empty());
  }
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_THAT(names, ::testing::IsSupersetOf({"deepseek-v3", "llama3-8b"}));
}

// --- Estimate ---------------------------------------------------------------

TEST_F(ServiceTest, EstimateReturnsThePerRankReport) {
  v1::EstimateRequest request;
  *request.mutable_job() = testing::Llama3With8GpusFits();
  v1::EstimateResponse response;
  ASSERT_TRUE(Estimate(request, &response).ok());
  const v1::EstimateReport& report = response.report();
  EXPECT_EQ(report.num_gpus(), 8u);
  EXPECT_EQ(report.data_parallel(), 8u);
  ASSERT_EQ(report.ranks_size(), 1);
  EXPECT_GT(report.ranks(0).peak_device_bytes(), report.ranks(0).peak_allocated_bytes());
  EXPECT_TRUE(report.rank_trees().empty());

  request.set_module_tree(true);
  ASSERT_TRUE(Estimate(request, &response).ok());
  EXPECT_EQ(response.report().rank_trees_size(), 1);
}

TEST_F(ServiceTest, StructuredJobAndArgumentLineGiveTheSameEstimate) {
  v1::EstimateRequest from_args;
  *from_args.mutable_job() = testing::Llama3With8GpusFits();
  absl::StatusOr<service::ResolvedJob> resolved = service::ResolveJobSource(from_args.job(), "job");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  v1::EstimateRequest structured;
  *structured.mutable_job()->mutable_spec() = resolved->spec;

  v1::EstimateResponse a, b;
  ASSERT_TRUE(Estimate(from_args, &a).ok());
  ASSERT_TRUE(Estimate(structured, &b).ok());
  EXPECT_EQ(a.report().ranks(0).peak_device_bytes(), b.report().ranks(0).peak_device_bytes());
}

// --- Check ------------------------------------------------------------------

TEST_F(ServiceTest, CheckLlama3With8GpusFitsOnH100) {
  v1::CheckResponse response;
  ASSERT_TRUE(Check(CheckOn(testing::Llama3With8GpusFits(), "H100-SXM-80GB"), &response).ok());
  EXPECT_EQ(response.verdict(), v1::VERDICT_FITS) << response.summary();
  EXPECT_EQ(response.gpu_name(), "H100-SXM-80GB");
  // The server's defaults: no margin kept free, the upper bound compared.
  EXPECT_DOUBLE_EQ(response.safety_margin(), 0);
  EXPECT_EQ(response.usable_bytes(), response.capacity_bytes());
  EXPECT_EQ(response.peak_bound(), v1::PEAK_BOUND_UPPER);
  EXPECT_DOUBLE_EQ(response.upper_bound_coverage(), 0.95);
  EXPECT_EQ(response.compared_peak_bytes(), response.peak_device_upper_bytes());
  EXPECT_EQ(response.headroom_bytes(), static_cast<int64_t>(response.usable_bytes()) -
                                           static_cast<int64_t>(response.compared_peak_bytes()));
  EXPECT_GT(response.headroom_bytes(), 0);
  EXPECT_EQ(response.peak_device_bytes(), response.report().ranks(0).peak_device_bytes());
  EXPECT_EQ(response.peak_device_upper_bytes(),
            response.report().ranks(0).peak_device_upper_bytes());
  EXPECT_GT(response.peak_device_upper_bytes(), response.peak_device_bytes());
  EXPECT_THAT(response.summary(), AllOf(StartsWith("Fits"), HasSubstr("H100-SXM-80GB")));
}

TEST_F(ServiceTest, CheckTakesTheWholeCommandLine) {
  v1::JobSource job;
  job.mutable_megatron()->set_args(testing::Llama3With8GpusCommandLine());
  job.mutable_megatron()->set_num_gpus(8);
  v1::CheckResponse response;
  ASSERT_TRUE(Check(CheckOn(job, "h100"), &response).ok());  // An alias, any case.
  EXPECT_EQ(response.verdict(), v1::VERDICT_FITS) << response.summary();
  EXPECT_EQ(response.gpu_name(), "H100-SXM-80GB");
}

TEST_F(ServiceTest, CheckTakesAHuggingFaceConfig) {
  v1::JobSource job = testing::Llama3With8GpusFits();
  job.mutable_megatron()->set_hf_config_json(R"({
    "model_type": "llama", "hidden_size": 4096, "intermediate_size": 14336,
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 32,
    "vocab_size": 128256, "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
    "tie_word_embeddings": false, "hidden_act": "silu"})");
  v1::CheckResponse response;
  ASSERT_TRUE(Check(CheckOn(job, "A100-SXM-80GB"), &response).ok());
  EXPECT_EQ(response.verdict(), v1::VERDICT_FITS) << response.summary();
}

TEST_F(ServiceTest, DeepSeekV3With8GpusDoesNotFit) {
  v1::CheckResponse response;
  ASSERT_TRUE(Check(CheckOn(testing::DeepSeekV3With8Gpus(), "H200-141GB"), &response).ok());
  EXPECT_EQ(response.verdict(), v1::VERDICT_DOES_NOT_FIT);
  EXPECT_LT(response.headroom_bytes(), 0);
  EXPECT_THAT(response.summary(), AllOf(StartsWith("Does not fit"), HasSubstr("H200-141GB")));
  ASSERT_FALSE(response.recommendations().empty());
  const v1::Recommendation& first = response.recommendations(0);
  EXPECT_EQ(first.kind(), v1::Recommendation::KIND_ENVIRONMENT);
  EXPECT_EQ(first.setting(), "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
  // Every step is a re-estimate: each lowers the compared peak by what it
  // says.
  uint64_t peak = response.compared_peak_bytes();
  for (const v1::Recommendation& rec : response.recommendations()) {
    EXPECT_GT(rec.saved_bytes(), 0) << rec.id();
    EXPECT_EQ(peak - rec.saved_bytes(), rec.peak_device_bytes_after()) << rec.id();
    EXPECT_FALSE(rec.sufficient()) << rec.id();  // 671B on 8 GPUs: nothing helps enough.
    peak = rec.peak_device_bytes_after();
  }
}

// Under the policy of before the upper bound (the point estimate with 5%
// kept free).
TEST_F(ServiceTest, DeepSeekV3PretrainingFitsOnlyWithExpandableSegments) {
  const v1::JobSource job =
      testing::MegatronSource("deepseek-v3", testing::DeepSeekV3With1024GpusArgs(), 1024);
  auto check_on_h100 = [](const v1::JobSource& source) {
    v1::CheckRequest request = CheckOn(source, "H100-SXM-80GB");
    request.mutable_policy()->set_safety_margin(0.05);
    request.mutable_policy()->set_peak_bound(v1::PEAK_BOUND_POINT);
    return request;
  };
  v1::CheckResponse response;
  ASSERT_TRUE(Check(check_on_h100(job), &response).ok());
  EXPECT_EQ(response.verdict(), v1::VERDICT_FITS_WITH_SETTINGS) << response.summary();
  ASSERT_EQ(response.recommendations_size(), 1);
  EXPECT_TRUE(response.recommendations(0).sufficient());
  EXPECT_THAT(response.summary(),
              StartsWith("Fits only with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));

  // With the setting in the job's environment, it simply fits.
  v1::JobSource with_env = job;
  (*with_env.mutable_env())["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True";
  ASSERT_TRUE(Check(check_on_h100(with_env), &response).ok());
  EXPECT_EQ(response.verdict(), v1::VERDICT_FITS) << response.summary();
  EXPECT_TRUE(response.recommendations().empty());
}

// By default the verdict compares the upper bound: routing that is not
// forced to balance makes this job's hot ranks uncertain by several GiB
// (the moe_imbalance term), so it is not admitted as it is.
TEST_F(ServiceTest, DeepSeekV3PretrainingIsRefusedAtItsUpperBound) {
  const v1::JobSource job =
      testing::MegatronSource("deepseek-v3", testing::DeepSeekV3With1024GpusArgs(), 1024);
  v1::CheckResponse response;
  ASSERT_TRUE(Check(CheckOn(job, "H100-SXM-80GB"), &response).ok());
  EXPECT_EQ(response.verdict(), v1::VERDICT_DOES_NOT_FIT) << response.summary();
  EXPECT_LT(response.peak_device_bytes(), response.usable_bytes());
  EXPECT_GT(response.peak_device_upper_bytes(), response.usable_bytes());
  const v1::RankReport& worst = response.report().ranks(response.worst_pp_rank());
  ASSERT_FALSE(worst.uncertainties().empty());
  EXPECT_EQ(worst.uncertainties(0).name(), "moe_imbalance");  // The largest.
  // The bound the verdict compares leads, labelled, and the point estimate
  // under it is labelled too.
  EXPECT_THAT(response.summary(),
              ContainsRegex(" peaks at [0-9.]+ GiB \\(95% bound; point estimate [0-9.]+ GiB\\) of "
                            "79.1 GiB usable on H100-SXM-80GB"));
}

// What the hooks ask for: the same answer without the per-rank report, the
// parser's notes kept, in a fraction of the bytes.
TEST_F(ServiceTest, CheckWithoutTheReportAnswersTheSame) {
  v1::CheckRequest request = CheckOn(
      testing::MegatronSource(
          "deepseek-v3",
          absl::StrCat(testing::DeepSeekV3With1024GpusArgs(), " --not-a-megatron-flag 3"), 1024),
      "H100-SXM-80GB");
  // Judged without the unknown flag, whose note the brief answer keeps.
  request.mutable_policy()->set_judge_unmodelled(true);
  v1::CheckResponse full, brief;
  ASSERT_TRUE(Check(request, &full).ok());
  request.set_omit_report(true);
  ASSERT_TRUE(Check(request, &brief).ok());
  EXPECT_EQ(full.report().ranks_size(), 16);
  EXPECT_TRUE(brief.report().ranks().empty());
  EXPECT_GT(full.report().notes_size(), 0);  // The unknown flag's.
  EXPECT_EQ(brief.report().notes_size(), full.report().notes_size());
  EXPECT_LT(brief.ByteSizeLong() * 4, full.ByteSizeLong());
  full.mutable_report()->clear_ranks();
  v1::EstimateReport notes_only;
  *notes_only.mutable_notes() = full.report().notes();
  *full.mutable_report() = notes_only;
  EXPECT_EQ(full.SerializeAsString(), brief.SerializeAsString());
}

TEST_F(ServiceTest, CheckTakesExplicitBytesAndAPolicy) {
  v1::CheckRequest request;
  *request.mutable_job() = testing::Llama3With8GpusFits();
  request.set_gpu_memory_bytes(40 * kGiB);
  request.mutable_policy()->set_safety_margin(0);
  v1::CheckResponse response;
  ASSERT_TRUE(Check(request, &response).ok());
  EXPECT_EQ(response.capacity_bytes(), 40 * kGiB);
  EXPECT_EQ(response.usable_bytes(), 40 * kGiB);
  EXPECT_EQ(response.gpu_name(), "");
  EXPECT_EQ(response.verdict(), v1::VERDICT_DOES_NOT_FIT);  // An 8B model's full state.
  EXPECT_THAT(response.summary(), HasSubstr("a 40.0 GiB GPU"));
}

TEST_F(ServiceTest, CheckReportsIncompatibilities) {
  v1::JobSource job = testing::Llama3With8GpusFits();
  job.mutable_megatron()->set_args(absl::StrCat(job.megatron().args(), " --use-nccl-ub"));
  (*job.mutable_env())["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True";
  v1::CheckResponse response;
  ASSERT_TRUE(Check(CheckOn(job, "H100-SXM-80GB"), &response).ok());
  ASSERT_FALSE(response.recommendations().empty());
  const v1::Recommendation& last = *response.recommendations().rbegin();
  EXPECT_EQ(last.kind(), v1::Recommendation::KIND_INCOMPATIBILITY);
  EXPECT_EQ(last.id(), "nccl_ub_with_expandable_segments");
  EXPECT_THAT(response.summary(), HasSubstr("--use-nccl-ub"));
}

// --- Validation: every bad field is INVALID_ARGUMENT naming field and value.

struct BadRequestCase {
  std::string name;
  std::function<void(v1::CheckRequest&)> spoil;
  std::vector<std::string> message_parts;
  // The request fields the error details name (google.rpc.BadRequest);
  // empty for the core's own checks, which know no request fields.
  std::vector<std::string> detail_fields;
};

class CheckValidationTest : public ServiceTest,
                            public ::testing::WithParamInterface<BadRequestCase> {};

TEST_P(CheckValidationTest, IsInvalidArgumentNamingTheField) {
  v1::CheckRequest request = CheckOn(testing::Llama3With8GpusFits(), "H100-SXM-80GB");
  GetParam().spoil(request);
  v1::CheckResponse response;
  const grpc::Status status = Check(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  for (const std::string& part : GetParam().message_parts) {
    EXPECT_THAT(status.error_message(), HasSubstr(part));
  }
  EXPECT_THAT(service::BadRequestFields(status),
              ::testing::ElementsAreArray(GetParam().detail_fields));
}

INSTANTIATE_TEST_SUITE_P(
    EveryField, CheckValidationTest,
    ::testing::ValuesIn(std::vector<BadRequestCase>{
        {"MissingJob", [](v1::CheckRequest& r) { r.clear_job(); }, {"job: missing"}, {"job"}},
        {"ZeroGpus",
         [](v1::CheckRequest& r) { r.mutable_job()->mutable_megatron()->set_num_gpus(0); },
         {"job.megatron.num_gpus = 0"},
         {"job.megatron.num_gpus"}},
        {"EmptyCommandLine",
         [](v1::CheckRequest& r) {
           r.mutable_job()->mutable_megatron()->clear_preset();
           r.mutable_job()->mutable_megatron()->clear_args();
         },
         {"job.megatron.argv"},
         {"job.megatron.argv"}},
        {"BothArgvAndArgs",
         [](v1::CheckRequest& r) { r.mutable_job()->mutable_megatron()->add_argv("--bf16"); },
         {"job.megatron.args"},
         {"job.megatron.args"}},
        {"UnterminatedQuote",
         [](v1::CheckRequest& r) {
           r.mutable_job()->mutable_megatron()->set_args("--micro-batch-size 1 --seq-length '4096");
         },
         {"job.megatron.args"},
         {"job.megatron.args"}},
        {"NotANumber",
         [](v1::CheckRequest& r) {
           r.mutable_job()->mutable_megatron()->set_args(
               "--micro-batch-size abc --seq-length 4096");
         },
         {"job.megatron", "--micro-batch-size", "abc"},
         {"job.megatron"}},
        {"UnknownPreset",
         [](v1::CheckRequest& r) { r.mutable_job()->mutable_megatron()->set_preset("gpt-9"); },
         {"job.megatron", "gpt-9"},
         {"job.megatron"}},
        {"MalformedHfConfig",
         [](v1::CheckRequest& r) {
           r.mutable_job()->mutable_megatron()->set_hf_config_json("{\"model_type\": ");
         },
         {"job.megatron"},
         {"job.megatron"}},
        {"ImpossibleLayout",
         [](v1::CheckRequest& r) {
           r.mutable_job()->mutable_megatron()->set_args(
               "--tensor-model-parallel-size 3 --micro-batch-size 1 --seq-length 4096");
         },
         {"num_gpus = 8", "not divisible", "TP x PP x CP = 3"},
         {}},
        {"BadStructuredJob",
         [](v1::CheckRequest& r) { r.mutable_job()->mutable_spec()->mutable_model(); },
         {"model.num_layers = 0"},
         {}},
        {"MissingGpu", [](v1::CheckRequest& r) { r.clear_gpu_name(); }, {"gpu: missing"}, {"gpu"}},
        {"UnknownGpu",
         [](v1::CheckRequest& r) { r.set_gpu_name("H999"); },
         {"gpu_name", "H999", "H100-SXM-80GB"},
         {"gpu_name"}},
        {"ZeroGpuBytes",
         [](v1::CheckRequest& r) { r.set_gpu_memory_bytes(0); },
         {"gpu_memory_bytes = 0"},
         {"gpu_memory_bytes"}},
        {"MarginTooLarge",
         [](v1::CheckRequest& r) { r.mutable_policy()->set_safety_margin(1.5); },
         {"safety_margin = 1.5"},
         {"policy.safety_margin"}},
        {"NegativeMargin",
         [](v1::CheckRequest& r) { r.mutable_policy()->set_safety_margin(-0.1); },
         {"safety_margin = -0.1"},
         {"policy.safety_margin"}},
    }),
    [](const ::testing::TestParamInfo<BadRequestCase>& info) { return info.param.name; });

// A job oomguard refuses to model (--use-custom-fsdp, the Megatron-FSDP
// spelling Megatron-LM removed) is UNIMPLEMENTED.
TEST_F(ServiceTest, UnmodelledJobIsUnimplementedNotInvalid) {
  v1::EstimateRequest request;
  *request.mutable_job() = testing::MegatronSource(
      "llama3-8b", "--use-custom-fsdp --micro-batch-size 1 --seq-length 4096", 8);
  v1::EstimateResponse response;
  const grpc::Status status = Estimate(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_THAT(status.error_message(), HasSubstr("--use-custom-fsdp"));
  // Nothing in the request is wrong: no BadRequest; the reason says it is
  // oomguard's own answer (a client tells it from another server's
  // UNIMPLEMENTED by that).
  EXPECT_THAT(service::BadRequestFields(status), ::testing::IsEmpty());
  EXPECT_EQ(service::ErrorReason(status), service::kJobNotModelledReason);
}

// Llama-3-8B on 8 GPUs (fits on an H100) with a flag oomguard does not
// model and one it does not know.
v1::CheckRequest UnmodelledLlamaCheck() {
  v1::CheckRequest request;
  *request.mutable_job() = testing::Llama3With8GpusFits();
  request.mutable_job()->mutable_megatron()->mutable_args()->append(
      " --tp-comm-overlap-cfg x.yaml --no-such-flag");
  request.set_gpu_name("H100-SXM-80GB");
  return request;
}

// A job with a setting oomguard does not model is not judged by default:
// UNIMPLEMENTED with the reason JOB_NOT_MODELLED, naming every setting, its
// reason and how to judge it anyway.
TEST_F(ServiceTest, JobWithUnmodelledSettingsIsNotJudgedByDefault) {
  v1::CheckResponse response;
  const grpc::Status status = Check(UnmodelledLlamaCheck(), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(service::ErrorReason(status), service::kJobNotModelledReason);
  EXPECT_THAT(service::BadRequestFields(status), ::testing::IsEmpty());
  EXPECT_THAT(status.error_message(),
              AllOf(StartsWith("oomguard does not model --tp-comm-overlap-cfg, --no-such-flag, so "
                               "the job is not judged"),
                    HasSubstr("--tp-comm-overlap-cfg: a custom TP communication overlap"),
                    HasSubstr("--no-such-flag: not a flag of Megatron-LM up to Megatron-Core "
                              "0.20"),
                    HasSubstr("policy.judge_unmodelled"), HasSubstr("--judge-unmodelled")));
  // The Estimate answers, noting each setting.
  v1::EstimateRequest estimate;
  *estimate.mutable_job() = UnmodelledLlamaCheck().job();
  v1::EstimateResponse estimated;
  ASSERT_TRUE(Estimate(estimate, &estimated).ok());
  EXPECT_THAT(estimated.report().notes(),
              ::testing::IsSupersetOf(
                  {StartsWith("--tp-comm-overlap-cfg is not modelled (a custom TP communication"),
                   StartsWith("--no-such-flag is not modelled (not a flag of Megatron-LM")}));
}

// Judged when the policy asks: the verdict of the job without the settings,
// whose summary says so and which lists them; the same peaks as the job
// written without them.
TEST_F(ServiceTest, PolicyJudgesUnmodelledSettingsAndSaysSo) {
  v1::CheckRequest request = UnmodelledLlamaCheck();
  request.mutable_policy()->set_judge_unmodelled(true);
  v1::CheckResponse judged, plain;
  ASSERT_TRUE(Check(request, &judged).ok());
  ASSERT_TRUE(Check(CheckOn(testing::Llama3With8GpusFits(), "H100-SXM-80GB"), &plain).ok());
  EXPECT_EQ(judged.verdict(), v1::VERDICT_FITS);
  EXPECT_EQ(judged.peak_device_bytes(), plain.peak_device_bytes());
  EXPECT_THAT(judged.summary(),
              StartsWith("Fits, judged without modelling --tp-comm-overlap-cfg, --no-such-flag: "
                         "PP rank 0 peaks at "));
  ASSERT_EQ(judged.unmodelled_settings_size(), 2);
  EXPECT_EQ(judged.unmodelled_settings(0).flag(), "--tp-comm-overlap-cfg");
  EXPECT_EQ(judged.unmodelled_settings(1).flag(), "--no-such-flag");
  EXPECT_THAT(plain.unmodelled_settings(), ::testing::IsEmpty());
  // The same request without the policy (the response cache holds the
  // judged one by its bytes) and asked not to judge (the answers cache
  // holds it by job): not judged.
  v1::CheckResponse refused;
  EXPECT_EQ(Check(UnmodelledLlamaCheck(), &refused).error_code(), grpc::StatusCode::UNIMPLEMENTED);
  request.mutable_policy()->set_judge_unmodelled(false);
  EXPECT_EQ(Check(request, &refused).error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

// The server's --judge_unmodelled is the default a request overrides, both
// ways.
TEST_F(ServiceTest, ServerDefaultJudgesUnmodelledUnlessTheRequestSaysNot) {
  server::ServerOptions options;
  options.service.default_judge_unmodelled = true;
  StartServer(std::move(options));
  v1::CheckRequest request = UnmodelledLlamaCheck();
  v1::CheckResponse response;
  ASSERT_TRUE(Check(request, &response).ok());
  EXPECT_THAT(response.summary(), HasSubstr("judged without modelling --tp-comm-overlap-cfg"));
  request.mutable_policy()->set_judge_unmodelled(false);
  const grpc::Status status = Check(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(service::ErrorReason(status), service::kJobNotModelledReason);
}

// The google.rpc.BadRequest violations in the `grpc-status-details-bin` of
// `status`, decoded as any client with the googleapis types would.
std::vector<v1::BadRequest::FieldViolation> Violations(const grpc::Status& status) {
  std::vector<v1::BadRequest::FieldViolation> violations;
  v1::RpcStatus details;
  EXPECT_TRUE(details.ParseFromString(status.error_details()));
  EXPECT_EQ(details.code(), static_cast<int>(status.error_code()));
  EXPECT_EQ(details.message(), status.error_message());
  for (const google::protobuf::Any& detail : details.details()) {
    EXPECT_EQ(detail.type_url(), "type.googleapis.com/google.rpc.BadRequest");
    v1::BadRequest bad_request;
    EXPECT_TRUE(bad_request.ParseFromString(detail.value()));
    violations.insert(violations.end(), bad_request.field_violations().begin(),
                      bad_request.field_violations().end());
  }
  return violations;
}

TEST_F(ServiceTest, UnknownGpuNameDetailNamesGpuName) {
  v1::CheckResponse response;
  const grpc::Status status = Check(CheckOn(testing::Llama3With8GpusFits(), "tesla"), &response);
  ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  const std::vector<v1::BadRequest::FieldViolation> violations = Violations(status);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field(), "gpu_name");
  EXPECT_EQ(violations[0].description(), status.error_message());
  EXPECT_THAT(violations[0].description(), HasSubstr("tesla"));
}

TEST_F(ServiceTest, BadJobFieldDetailNamesTheField) {
  v1::EstimateRequest request;
  *request.mutable_job() = testing::MegatronSource(
      "llama3-8b", "--micro-batch-size 1 --tokenizer-model \"/data/tok.model", 8);
  v1::EstimateResponse response;
  grpc::Status status = Estimate(request, &response);
  ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  std::vector<v1::BadRequest::FieldViolation> violations = Violations(status);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field(), "job.megatron.args");

  // A value the argument parser refuses: the job as a whole.
  *request.mutable_job() =
      testing::MegatronSource("llama3-8b", "--micro-batch-size abc --seq-length 4096", 8);
  status = Estimate(request, &response);
  ASSERT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  violations = Violations(status);
  ASSERT_EQ(violations.size(), 1u);
  EXPECT_EQ(violations[0].field(), "job.megatron");
  EXPECT_THAT(violations[0].description(), HasSubstr("abc"));
}

TEST_F(ServiceTest, EstimateValidatesToo) {
  v1::EstimateRequest request;
  v1::EstimateResponse response;
  grpc::Status status = Estimate(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("job: missing"));

  *request.mutable_job() = testing::MegatronSource(
      "llama3-8b", "--pipeline-model-parallel-size 5 --micro-batch-size 1 --seq-length 4096", 10);
  status = Estimate(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("pipeline_model_parallel_size = 5"));
}

TEST_F(ServiceTest, GarbageBytesAreRejectedNotUnknown) {
  std::string response;
  const grpc::Status status = RawCall("/oomguard.v1.Oomguard/Check", "\xff\xff\xff\x01", &response);
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.error_code(), grpc::StatusCode::UNKNOWN);
  // The server still serves.
  v1::CheckResponse check;
  EXPECT_TRUE(Check(CheckOn(testing::Llama3With8GpusFits(), "H100"), &check).ok());
}

// --- Limits -----------------------------------------------------------------

TEST_F(ServiceTest, DeadlineInThePastIsDeadlineExceeded) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() - absl::Milliseconds(1)));
  v1::CheckResponse response;
  const grpc::Status status =
      stub_->Check(&context, CheckOn(testing::DeepSeekV3With8Gpus(), "H100"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
}

TEST_F(ServiceTest, TightDeadlinesUnderLoadAnswerPromptly) {
  // More concurrent calls than workers, each with a 2 ms deadline: every call
  // ends OK or DEADLINE_EXCEEDED, promptly, and the server keeps serving.
  server::ServerOptions options;
  options.threads = 1;
  StartServer(std::move(options));
  std::vector<std::thread> clients;
  std::atomic<int> bad_code{0}, late{0};
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        const absl::Time start = absl::Now();
        v1::CheckResponse response;
        const grpc::Status status = Check(CheckOn(testing::DeepSeekV3With8Gpus(), "H100"),
                                          &response, absl::Milliseconds(2));
        if (!status.ok() && status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
          ++bad_code;
        }
        if (absl::Now() - start > absl::Seconds(2)) ++late;
      }
    });
  }
  for (std::thread& c : clients) c.join();
  EXPECT_EQ(bad_code, 0);
  EXPECT_EQ(late, 0);
  v1::CheckResponse response;
  EXPECT_TRUE(Check(CheckOn(testing::Llama3With8GpusFits(), "H100"), &response).ok());
}

TEST_F(ServiceTest, OversizedRequestIsResourceExhausted) {
  server::ServerOptions options;
  options.max_request_bytes = 4096;
  StartServer(std::move(options));
  v1::CheckRequest request = CheckOn(testing::Llama3With8GpusFits(), "H100");
  request.mutable_job()->mutable_megatron()->mutable_args()->append(
      absl::StrCat(" --data-path ", std::string(8192, 'x')));
  v1::CheckResponse response;
  EXPECT_EQ(Check(request, &response).error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(Check(CheckOn(testing::Llama3With8GpusFits(), "H100"), &response).ok());
}

TEST_F(ServiceTest, ConcurrentCallsAllSucceedWithIdenticalAnswers) {
  server::ServerOptions options;
  options.threads = 4;
  StartServer(std::move(options));
  const v1::CheckRequest request = CheckOn(testing::DeepSeekV3With8Gpus(), "H100-SXM-80GB");
  v1::CheckResponse reference;
  ASSERT_TRUE(Check(request, &reference).ok());
  const std::string expected = reference.SerializeAsString();
  std::atomic<int> failures{0}, differences{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 8; ++t) {
    clients.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        if ((t + i) % 2 == 0) {
          v1::CheckResponse response;
          if (!Check(request, &response).ok()) ++failures;
          if (response.SerializeAsString() != expected) ++differences;
        } else {
          v1::EstimateRequest estimate;
          *estimate.mutable_job() = testing::Llama3With8GpusFits();
          v1::EstimateResponse response;
          if (!Estimate(estimate, &response).ok()) ++failures;
        }
      }
    });
  }
  for (std::thread& c : clients) c.join();
  EXPECT_EQ(failures, 0);
  EXPECT_EQ(differences, 0);
}

// --- Health and metrics -----------------------------------------------------

TEST_F(ServiceTest, HealthServesTheServiceAndTheServer) {
  std::string response;
  ASSERT_TRUE(RawCall("/grpc.health.v1.Health/Check", "", &response).ok());
  EXPECT_EQ(response, std::string("\x08\x01", 2));  // status: SERVING
  const std::string name = "oomguard.v1.Oomguard";
  ASSERT_TRUE(RawCall("/grpc.health.v1.Health/Check",
                      absl::StrCat("\x0a", std::string(1, static_cast<char>(name.size())), name),
                      &response)
                  .ok());
  EXPECT_EQ(response, std::string("\x08\x01", 2));
}

TEST_F(ServiceTest, RepeatedChecksAreAnsweredAlikeFromTheCache) {
  const v1::CheckRequest request = CheckOn(testing::DeepSeekV3With8Gpus(), "H100");
  v1::CheckResponse first, second;
  ASSERT_TRUE(Check(request, &first).ok());
  ASSERT_TRUE(Check(request, &second).ok());  // A cache hit.
  EXPECT_EQ(first.SerializeAsString(), second.SerializeAsString());

  server::ServerOptions options;
  options.service.response_cache_bytes = 0;
  options.service.check_result_cache_bytes = 0;
  StartServer(std::move(options));
  v1::CheckResponse uncached;
  ASSERT_TRUE(Check(request, &uncached).ok());
  EXPECT_EQ(first.SerializeAsString(), uncached.SerializeAsString());
}

TEST_F(ServiceTest, MetricsCountRequestsVerdictsAndPeaks) {
  StartServer({}, /*with_metrics=*/true);
  v1::CheckResponse response;
  ASSERT_TRUE(Check(CheckOn(testing::Llama3With8GpusFits(), "H100"), &response).ok());
  ASSERT_TRUE(Check(CheckOn(testing::DeepSeekV3With8Gpus(), "H100"), &response).ok());
  EXPECT_FALSE(Check(CheckOn(testing::Llama3With8GpusFits(), "H999"), &response).ok());
  // Served from the cache, and counted all the same.
  ASSERT_TRUE(Check(CheckOn(testing::Llama3With8GpusFits(), "H100"), &response).ok());

  absl::StatusOr<std::string> metrics =
      testing::HttpGet(server_->metrics_port(), "/metrics", absl::Seconds(5));
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_THAT(
      *metrics,
      HasSubstr("oomguard_requests_total{code=\"OK\",method=\"Check\",transport=\"grpc\"} 3"));
  EXPECT_THAT(*metrics,
              HasSubstr("oomguard_requests_total{code=\"INVALID_ARGUMENT\",method=\"Check\","
                        "transport=\"grpc\"} 1"));
  EXPECT_THAT(*metrics, HasSubstr("oomguard_verdicts_total{verdict=\"FITS\"} 2"));
  EXPECT_THAT(*metrics, HasSubstr("oomguard_verdicts_total{verdict=\"DOES_NOT_FIT\"} 1"));
  EXPECT_THAT(*metrics, HasSubstr("oomguard_request_duration_seconds_count{method=\"Check\","
                                  "transport=\"grpc\"} 4"));
  EXPECT_THAT(*metrics, HasSubstr("oomguard_estimated_peak_bytes_count 3"));
  EXPECT_THAT(*metrics, HasSubstr("oomguard_build_info{version=\""));
}

}  // namespace
}  // namespace oomguard
