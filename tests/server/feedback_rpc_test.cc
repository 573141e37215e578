// The feedback loop's RPCs on a real server on loopback with a real SQLite
// store in a temporary directory: every Check answered gets a check id of
// its own (also from the response cache) and its record (the resolved job,
// the estimate of each stage, the layout, the GPU, the verdict, the
// version, the cluster); Report is authenticated (a bearer token, a client
// certificate, or --allow_unauthenticated_reports) and stored; GetCheck
// returns the record with its reports, over gRPC and HTTP/JSON.
#include <httplib.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "feedback/report_limits.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"
#include "service/request_resolution.h"
#include "service/status_mapping.h"
#include "tests/testing/examples.h"
#include "tests/testing/rl_test_jobs.h"
#include "tests/testing/service_test_jobs.h"
#include "tests/testing/service_test_util.h"
#include "tests/testing/test_certificate.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";
constexpr char kTokensFile[] = "slurm-jobcomp 0123456789abcdef0123456789abcdef\n";

// The estimate of each stage as a record keeps it: the report's.
void ExpectEstimateIsReport(const v1::CheckRecord& record, const v1::EstimateReport& report) {
  ASSERT_EQ(record.estimate_size(), report.ranks_size());
  for (int i = 0; i < report.ranks_size(); ++i) {
    const v1::RankEstimate& stage = record.estimate(i);
    const v1::RankReport& rank = report.ranks(i);
    EXPECT_EQ(stage.pp_rank(), rank.pp_rank());
    EXPECT_EQ(stage.peak_allocated_bytes(), rank.peak_allocated_bytes());
    EXPECT_EQ(stage.peak_allocated_upper_bytes(), rank.peak_allocated_upper_bytes());
    EXPECT_EQ(stage.peak_device_bytes(), rank.peak_device_bytes());
    EXPECT_EQ(stage.peak_device_upper_bytes(), rank.peak_device_upper_bytes());
    EXPECT_GT(stage.peak_device_bytes(), 0u);
    EXPECT_GE(stage.peak_device_upper_bytes(), stage.peak_device_bytes());
  }
}

class FeedbackRpcTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir(); }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  server::ServerOptions Options(bool with_store = true) {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.http.address = "127.0.0.1:0";
    options.service.log_requests = false;
    if (with_store) options.store_url = absl::StrCat("sqlite:", dir_, "/checks.db");
    options.service.cluster = "test-cluster";
    options.service.report_auth.tokens = *service::ParseReportTokens(kTokensFile, "tokens");
    return options;
  }

  void Start(server::ServerOptions options, std::shared_ptr<grpc::ChannelCredentials> credentials =
                                                grpc::InsecureChannelCredentials()) {
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = v1::Oomguard::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()), credentials));
  }

  static void SetDeadline(grpc::ClientContext& context) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  }

  v1::CheckResponse Check(const v1::CheckRequest& request) {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::CheckResponse response;
    const grpc::Status status = stub_->Check(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  grpc::Status Report(const v1::ReportRequest& request, const std::string& token,
                      v1::ReportResponse* response) {
    grpc::ClientContext context;
    SetDeadline(context);
    if (!token.empty()) context.AddMetadata("authorization", absl::StrCat("Bearer ", token));
    return stub_->Report(&context, request, response);
  }

  grpc::Status GetCheck(const std::string& check_id, v1::CheckRecord* record) {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::GetCheckRequest request;
    request.set_check_id(check_id);
    return stub_->GetCheck(&context, request, record);
  }

  // The record of `check_id`, once the store has committed it.
  v1::CheckRecord Record(const std::string& check_id) {
    EXPECT_TRUE(server_->store()->Flush().ok());
    v1::CheckRecord record;
    const grpc::Status status = GetCheck(check_id, &record);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return record;
  }

  static v1::ReportRequest OomReport(const std::string& check_id) {
    v1::ReportRequest report;
    report.set_check_id(check_id);
    report.set_source(v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
    v1::RankMeasurement* rank0 = report.add_ranks();
    rank0->set_rank(0);
    rank0->set_max_allocated_bytes(uint64_t{61} << 30);
    rank0->set_max_reserved_bytes(uint64_t{66} << 30);
    v1::RankMeasurement* rank1 = report.add_ranks();
    rank1->set_rank(1);
    rank1->set_max_allocated_bytes(uint64_t{60} << 30);
    report.set_outcome(v1::JOB_OUTCOME_CUDA_OOM);
    report.set_detail("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.");
    return report;
  }

  std::string dir_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

// Each answer, a response cache hit too, has an id of its own, and is
// otherwise the answer of a server without a store, byte for byte.
TEST_F(FeedbackRpcTest, EveryCheckHasAnIdOfItsOwnAndTheSameAnswer) {
  Start(Options(/*with_store=*/false));
  const v1::CheckResponse without_store = Check(testing::Llama3With8GpusCheck(false));
  EXPECT_EQ(without_store.check_id(), "");
  Start(Options());
  const v1::CheckResponse first = Check(testing::Llama3With8GpusCheck(false));
  const v1::CheckResponse cached = Check(testing::Llama3With8GpusCheck(false));
  EXPECT_TRUE(feedback::ValidateCheckId(first.check_id()).ok()) << first.check_id();
  EXPECT_TRUE(feedback::ValidateCheckId(cached.check_id()).ok()) << cached.check_id();
  EXPECT_NE(first.check_id(), cached.check_id());
  for (v1::CheckResponse answer : {first, cached}) {
    answer.clear_check_id();
    EXPECT_EQ(answer.SerializeAsString(), without_store.SerializeAsString());
  }
  // Both are stored, each with its own id.
  EXPECT_EQ(Record(first.check_id()).check_id(), first.check_id());
  EXPECT_EQ(Record(cached.check_id()).check_id(), cached.check_id());
}

TEST_F(FeedbackRpcTest, TheRecordHoldsTheResolvedJobTheEstimateAndTheVerdict) {
  Start(Options());
  const absl::Time before = absl::Now();
  const v1::CheckResponse checked = Check(testing::Llama3With8GpusCheck(false));
  const absl::Time after = absl::Now();
  const v1::CheckRecord record = Record(checked.check_id());
  EXPECT_EQ(record.check_id(), checked.check_id());
  const absl::Time checked_at = absl::FromUnixNanos(
      google::protobuf::util::TimeUtil::TimestampToNanoseconds(record.checked_at()));
  EXPECT_GE(checked_at, before - absl::Seconds(1));
  EXPECT_LE(checked_at, after + absl::Seconds(1));
  EXPECT_EQ(record.oomguard_version(), OOMGUARD_TEST_VERSION);
  EXPECT_EQ(record.cluster(), "test-cluster");
  const absl::StatusOr<service::ResolvedJob> resolved =
      service::ResolveJobSource(testing::Llama3With8GpusFits(), "job");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_TRUE(record.has_job_spec());
  EXPECT_EQ(record.job_spec().SerializeAsString(), resolved->spec.SerializeAsString());
  EXPECT_EQ(record.gpu_name(), "H100-SXM-80GB");
  EXPECT_EQ(record.usable_bytes(), checked.usable_bytes());
  EXPECT_EQ(record.verdict(), v1::VERDICT_FITS);
  // TP1 PP1 DP8: one stage of 8 GPUs.
  EXPECT_EQ(record.num_gpus(), 8u);
  EXPECT_EQ(record.gpus_per_pipeline_stage(), 8u);
  ExpectEstimateIsReport(record, checked.report());
  EXPECT_EQ(record.estimate(0).peak_device_bytes(), checked.peak_device_bytes());
  EXPECT_EQ(record.reports_size(), 0);
}

// The webhook's and `oomguard check`'s requests omit the report: the answer
// is still the one without a store, and the record has the estimate.
TEST_F(FeedbackRpcTest, ACheckWithoutItsReportStillRecordsTheEstimate) {
  Start(Options(/*with_store=*/false));
  const v1::CheckResponse without_store = Check(testing::Llama3With8GpusCheck(true));
  const v1::CheckResponse full = Check(testing::Llama3With8GpusCheck(false));
  Start(Options());
  v1::CheckResponse omitted = Check(testing::Llama3With8GpusCheck(true));
  const v1::CheckRecord record = Record(omitted.check_id());
  ExpectEstimateIsReport(record, full.report());
  omitted.clear_check_id();
  EXPECT_EQ(omitted.SerializeAsString(), without_store.SerializeAsString());
  EXPECT_EQ(omitted.report().ranks_size(), 0);
}

// DeepSeek-V3 on 1024 GPUs, TP2 PP16: 16 stages of 1024 / 16 = 64 GPUs.
TEST_F(FeedbackRpcTest, ALargeJobHasAnEstimateForEachStage) {
  Start(Options());
  v1::CheckRequest request;
  *request.mutable_job() =
      testing::MegatronSource("deepseek-v3", testing::DeepSeekV3With1024GpusArgs(), 1024);
  request.set_gpu_name("H100-SXM-80GB");
  const v1::CheckResponse checked = Check(request);
  const v1::CheckRecord record = Record(checked.check_id());
  EXPECT_EQ(record.num_gpus(), 1024u);
  EXPECT_EQ(record.gpus_per_pipeline_stage(), 64u);
  ASSERT_EQ(record.estimate_size(), 16);
  for (int stage = 0; stage < 16; ++stage) EXPECT_EQ(record.estimate(stage).pp_rank(), stage);
  ExpectEstimateIsReport(record, checked.report());
}

// An RL step (veRL, actor TP 2 on 8 GPUs: PP 1, one stage of 8 GPUs): the
// record keeps the resolved RlJobSpec; the stage's device peak is its
// largest phase's, the allocator's the actor update's.
TEST_F(FeedbackRpcTest, AnRlStepsRecordHasItsLargestPhasePerStage) {
  Start(Options());
  v1::CheckRequest request;
  *request.mutable_job() = testing::VerlQwen3Source();
  request.set_gpu_name("H100-SXM-80GB");
  const v1::CheckResponse checked = Check(request);
  const v1::CheckRecord record = Record(checked.check_id());
  const absl::StatusOr<service::ResolvedJob> resolved =
      service::ResolveJobSource(testing::VerlQwen3Source(), "job");
  ASSERT_TRUE(resolved.ok() && resolved->rl.has_value());
  ASSERT_TRUE(record.has_rl_job_spec());
  EXPECT_EQ(record.rl_job_spec().SerializeAsString(), resolved->rl->SerializeAsString());
  EXPECT_EQ(record.num_gpus(), 8u);
  EXPECT_EQ(record.gpus_per_pipeline_stage(), 8u);
  ASSERT_EQ(record.estimate_size(), 1);
  const v1::RankEstimate& stage = record.estimate(0);
  EXPECT_EQ(stage.pp_rank(), 0u);
  // One stage: its largest phase is the step's peak.
  EXPECT_EQ(stage.peak_device_bytes(), checked.rl_step().peak_device_bytes());
  EXPECT_EQ(stage.peak_device_upper_bytes(), checked.rl_step().peak_device_upper_bytes());
  const v1::RankReport& actor = checked.rl_step().actor_update().ranks(0);
  EXPECT_EQ(stage.peak_allocated_bytes(), actor.peak_allocated_bytes());
  EXPECT_GT(stage.peak_allocated_bytes(), 0u);

  // Without its report (the webhook's request): the layout and the device
  // peaks all the same; the actor update's allocator peaks are not computed.
  request.set_omit_report(true);
  const v1::CheckRecord omitted = Record(Check(request).check_id());
  EXPECT_EQ(omitted.num_gpus(), 8u);
  EXPECT_EQ(omitted.gpus_per_pipeline_stage(), 8u);
  ASSERT_EQ(omitted.estimate_size(), 1);
  EXPECT_EQ(omitted.estimate(0).peak_device_bytes(), stage.peak_device_bytes());
  EXPECT_EQ(omitted.estimate(0).peak_allocated_bytes(), 0u);
}

TEST_F(FeedbackRpcTest, AReportWithAKnownTokenIsStoredUnderItsName) {
  Start(Options());
  const std::string id = Check(testing::Llama3With8GpusCheck(true)).check_id();
  v1::ReportResponse stored;
  const grpc::Status status = Report(OomReport(id), kToken, &stored);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(stored.check_id(), id);
  EXPECT_EQ(stored.ranks_stored(), 2u);
  const v1::CheckRecord record = Record(id);
  ASSERT_EQ(record.reports_size(), 1);
  const v1::StoredReport& report = record.reports(0);
  EXPECT_EQ(report.reporter(), "slurm-jobcomp");
  EXPECT_EQ(report.source(), v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  EXPECT_EQ(report.outcome(), v1::JOB_OUTCOME_CUDA_OOM);
  EXPECT_THAT(report.detail(), HasSubstr("CUDA out of memory"));
  ASSERT_EQ(report.ranks_size(), 2);
  EXPECT_EQ(report.ranks(0).max_allocated_bytes(), uint64_t{61} << 30);
  EXPECT_EQ(report.ranks(0).max_reserved_bytes(), uint64_t{66} << 30);
  EXPECT_EQ(report.ranks(1).rank(), 1u);
  EXPECT_FALSE(report.ranks(1).has_max_reserved_bytes());
  EXPECT_EQ(record.outcome(), v1::JOB_OUTCOME_CUDA_OOM);
  // The estimate is kept as it was.
  EXPECT_EQ(record.estimate_size(), 1);
}

TEST_F(FeedbackRpcTest, AReportWithoutAKnownTokenIsUnauthenticated) {
  Start(Options());
  const std::string id = Check(testing::Llama3With8GpusCheck(true)).check_id();
  v1::ReportResponse stored;
  grpc::Status status = Report(OomReport(id), "", &stored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(status.error_message(), HasSubstr("--report_tokens_file"));
  status = Report(OomReport(id), "0123456789abcdef0123456789abcdee", &stored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Record(id).reports_size(), 0);
}

TEST_F(FeedbackRpcTest, UnauthenticatedReportsWhereAllowed) {
  server::ServerOptions options = Options();
  options.service.report_auth = {.allow_unauthenticated = true};
  Start(std::move(options));
  const std::string id = Check(testing::Llama3With8GpusCheck(true)).check_id();
  v1::ReportResponse stored;
  ASSERT_TRUE(Report(OomReport(id), "", &stored).ok());
  EXPECT_EQ(Record(id).reports(0).reporter(), "unauthenticated");
}

TEST_F(FeedbackRpcTest, BadReportsAreRefusedNamingTheField) {
  Start(Options());
  const std::string id = Check(testing::Llama3With8GpusCheck(true)).check_id();
  v1::ReportResponse stored;
  // An id no check has.
  grpc::Status status = Report(OomReport("0123456789abcdef0123456789abcdef"), kToken, &stored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), HasSubstr("0123456789abcdef0123456789abcdef"));
  // Not an id.
  status = Report(OomReport("not-an-id"), kToken, &stored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("check_id"));
  // A rank measured twice.
  v1::ReportRequest twice = OomReport(id);
  twice.mutable_ranks(1)->set_rank(0);
  status = Report(twice, kToken, &stored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("ranks[1]"));
  EXPECT_EQ(Record(id).reports_size(), 0);
}

TEST_F(FeedbackRpcTest, GetCheckOfAnUnknownOrMalformedId) {
  Start(Options());
  v1::CheckRecord record;
  grpc::Status status = GetCheck("0123456789abcdef0123456789abcdef", &record);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  status = GetCheck("0123456789ABCDEF0123456789ABCDEF", &record);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(service::BadRequestFields(status), ElementsAre("check_id"));
}

TEST_F(FeedbackRpcTest, WithoutAStoreNoIdsAndNoReports) {
  Start(Options(/*with_store=*/false));
  EXPECT_EQ(server_->store(), nullptr);
  EXPECT_EQ(server_->handlers().store(), nullptr);
  EXPECT_EQ(Check(testing::Llama3With8GpusCheck(true)).check_id(), "");
  v1::ReportResponse stored;
  grpc::Status status = Report(OomReport("0123456789abcdef0123456789abcdef"), kToken, &stored);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("--store"));
  v1::CheckRecord record;
  EXPECT_EQ(GetCheck("0123456789abcdef0123456789abcdef", &record).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);
}

// The webhook's RunCheck records the job's handle; a report adds the Slurm
// job id learned later (job_submit.lua runs before Slurm assigns it).
TEST_F(FeedbackRpcTest, TheJobsHandleIsRecordedWithTheCheckAndByReports) {
  Start(Options());
  v1::JobHandle handle;
  handle.set_kubernetes_namespace("team-a");
  handle.set_kubernetes_workload("llama3-pretrain");
  v1::CheckResponse checked;
  ASSERT_TRUE(
      server_->handlers()
          .RunCheck(testing::Llama3With8GpusCheck(true), absl::InfiniteFuture(), &checked, handle)
          .ok());
  EXPECT_EQ(Record(checked.check_id()).handle().kubernetes_workload(), "llama3-pretrain");
  handle.set_kubernetes_workload("Not_A_Name");
  v1::CheckResponse refused;
  const absl::Status bad = server_->handlers().RunCheck(testing::Llama3With8GpusCheck(true),
                                                        absl::InfiniteFuture(), &refused, handle);
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("handle.kubernetes_workload"));

  const std::string id = Check(testing::Llama3With8GpusCheck(true)).check_id();
  v1::ReportRequest report;
  report.set_check_id(id);
  report.set_source(v1::MEASUREMENT_SOURCE_SLURM);
  report.mutable_handle()->set_slurm_job_id("4242");
  v1::ReportResponse stored;
  ASSERT_TRUE(Report(report, kToken, &stored).ok());
  EXPECT_EQ(stored.ranks_stored(), 0u);
  EXPECT_EQ(Record(id).handle().slurm_job_id(), "4242");
}

// The record is kept across a restart: the shutdown commits what was queued.
TEST_F(FeedbackRpcTest, RecordsAndReportsOutliveTheServer) {
  Start(Options());
  const std::string id = Check(testing::Llama3With8GpusCheck(true)).check_id();
  v1::ReportResponse stored;
  ASSERT_TRUE(Report(OomReport(id), kToken, &stored).ok());
  const std::string unreported = Check(testing::Llama3With8GpusCheck(false)).check_id();
  server_->Shutdown(absl::Seconds(5));
  Start(Options());
  EXPECT_EQ(Record(id).reports_size(), 1);
  EXPECT_EQ(Record(unreported).check_id(), unreported);
}

TEST_F(FeedbackRpcTest, HttpReportAndGetCheck) {
  Start(Options());
  httplib::Client http("127.0.0.1", server_->http_port());
  httplib::Result checked =
      http.Post("/v1/check", R"({"job": {"megatron": {"preset": "llama3-8b", "numGpus": 8,
                "args": "--seq-length 4096 --micro-batch-size 1 --use-distributed-optimizer"}},
                "gpuName": "H100-SXM-80GB", "omitReport": true})",
                "application/json");
  ASSERT_TRUE(checked);
  ASSERT_EQ(checked->status, 200) << checked->body;
  const std::string id = nlohmann::json::parse(checked->body).at("checkId");
  EXPECT_TRUE(feedback::ValidateCheckId(id).ok()) << id;

  const std::string report =
      absl::StrCat(R"({"checkId": ")", id,
                   R"(", "source": "MEASUREMENT_SOURCE_CLIENT", "ranks": [{"rank": 0,
      "maxAllocatedBytes": "42949672960"}], "outcome": "JOB_OUTCOME_RAN"})");
  httplib::Result refused = http.Post("/v1/report", report, "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 401) << refused->body;
  EXPECT_EQ(nlohmann::json::parse(refused->body).at("code"), 16) << refused->body;
  httplib::Result taken =
      http.Post("/v1/report", {{"Authorization", absl::StrCat("Bearer ", kToken)}}, report,
                "application/json");
  ASSERT_TRUE(taken);
  ASSERT_EQ(taken->status, 200) << taken->body;
  EXPECT_EQ(nlohmann::json::parse(taken->body),
            nlohmann::json::parse(absl::StrCat(R"({"checkId": ")", id, R"(", "ranksStored": 1})")));

  ASSERT_TRUE(server_->store()->Flush().ok());
  httplib::Result record = http.Get(absl::StrCat("/v1/checks/", id));
  ASSERT_TRUE(record);
  ASSERT_EQ(record->status, 200) << record->body;
  const nlohmann::json json = nlohmann::json::parse(record->body);
  EXPECT_EQ(json.at("checkId"), id);
  EXPECT_EQ(json.at("cluster"), "test-cluster");
  EXPECT_EQ(json.at("numGpus"), 8);
  EXPECT_EQ(json.at("reports").at(0).at("reporter"), "slurm-jobcomp");
  EXPECT_EQ(json.at("reports").at(0).at("ranks").at(0).at("maxAllocatedBytes"), "42949672960");

  httplib::Result unknown = http.Get("/v1/checks/0123456789abcdef0123456789abcdef");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404) << unknown->body;
  httplib::Result malformed = http.Get("/v1/checks/xyz");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400) << malformed->body;
  EXPECT_THAT(malformed->body, HasSubstr("check_id"));
  httplib::Result no_id = http.Get("/v1/checks/");
  ASSERT_TRUE(no_id);
  EXPECT_EQ(no_id->status, 404) << no_id->body;
  httplib::Result posted = http.Post(absl::StrCat("/v1/checks/", id), "{}", "application/json");
  ASSERT_TRUE(posted);
  EXPECT_EQ(posted->status, 405) << posted->body;
  EXPECT_EQ(posted->get_header_value("Allow"), "GET");
}

// Mutual TLS: a verified client certificate is the reporter, over gRPC and
// HTTPS, with no token.
TEST_F(FeedbackRpcTest, AClientCertificateIsTheReporter) {
  const testing::TestCertificate server_certificate = testing::MakeCertificate("127.0.0.1");
  const testing::TestCertificate client_certificate = testing::MakeCertificate("jobcomp.node7");
  server::ServerOptions options = Options();
  options.tls_cert_pem = server_certificate.cert_pem;
  options.tls_key_pem = server_certificate.key_pem;
  options.tls_client_ca_pem = client_certificate.cert_pem;  // Self-signed: its own CA.
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = server_certificate.cert_pem;
  ssl.pem_cert_chain = client_certificate.cert_pem;
  ssl.pem_private_key = client_certificate.key_pem;
  Start(std::move(options), grpc::SslCredentials(ssl));
  const std::string id = Check(testing::Llama3With8GpusCheck(true)).check_id();
  v1::ReportResponse stored;
  const grpc::Status status = Report(OomReport(id), "", &stored);
  ASSERT_TRUE(status.ok()) << status.error_message();

  for (const auto& [name, pem] : {std::pair{"ca.pem", server_certificate.cert_pem},
                                  std::pair{"client.pem", client_certificate.cert_pem},
                                  std::pair{"client.key", client_certificate.key_pem}}) {
    testing::WriteFile(absl::StrCat(dir_, "/", name), pem);
  }
  httplib::SSLClient https("127.0.0.1", server_->http_port(), dir_ + "/client.pem",
                           dir_ + "/client.key");
  https.set_ca_cert_path((dir_ + "/ca.pem").c_str());
  https.enable_server_certificate_verification(true);
  httplib::Result taken = https.Post(
      "/v1/report",
      absl::StrCat(R"({"checkId": ")", id, R"(", "outcome": "JOB_OUTCOME_RAN", "source": 5})"),
      "application/json");
  ASSERT_TRUE(taken) << httplib::to_string(taken.error());
  EXPECT_EQ(taken->status, 200) << taken->body;

  const v1::CheckRecord record = Record(id);
  ASSERT_EQ(record.reports_size(), 2);
  EXPECT_EQ(record.reports(0).reporter(), "jobcomp.node7");
  EXPECT_EQ(record.reports(1).reporter(), "jobcomp.node7");
}

}  // namespace
}  // namespace oomguard
