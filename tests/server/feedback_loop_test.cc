// The feedback loop's analysis on a real server on loopback with a real
// SQLite store in a temporary directory: what reports say against the
// estimate reaches /metrics (the error, the peaks under the bound, an
// admitted job's CUDA OOM once), and the cluster's widening learned from
// the store's measured jobs is applied where the server or the policy says,
// stated in the verdict and kept with the record.
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"
#include "store/check_store.h"
#include "tests/feedback/feedback_test_records.h"
#include "tests/testing/service_test_jobs.h"
#include "tests/testing/service_test_util.h"

namespace oomguard {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kCluster[] = "test-cluster";

class FeedbackLoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    ASSERT_FALSE(dir_.empty());
    store_url_ = absl::StrCat("sqlite:", dir_, "/checks.db");
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Fills the store before the server opens it: 20 measured jobs of the
  // cluster whose rank 0 used 50 GiB of a 55 GiB bound, but for two that
  // used 66 (11/55 = 20 % over): the 19th smallest needed widening of 20
  // is 20 %.
  void MeasuredJobsInTheStore() {
    absl::StatusOr<std::unique_ptr<store::CheckStore>> store =
        store::OpenCheckStore(*store::ParseStoreUrl(store_url_), {});
    ASSERT_TRUE(store.ok()) << store.status();
    for (int i = 0; i < 20; ++i) {
      v1::CheckRecord record = feedback::testing::TwoStageRecord();
      record.set_check_id(absl::StrFormat("%032x", i + 1));
      record.set_cluster(kCluster);
      // Checked now: the server's retention (180 days), which runs as it
      // starts, would remove records of 1970.
      record.mutable_checked_at()->set_seconds(absl::ToUnixSeconds(absl::Now()));
      ASSERT_TRUE((*store)->PutCheck(record).ok());
      ASSERT_TRUE((*store)->Flush().ok());
      const v1::StoredReport report =
          feedback::testing::Report({feedback::testing::Allocated(0, i < 18 ? 50 : 66)});
      ASSERT_TRUE((*store)->AddReport(record.check_id(), report, {}).ok());
    }
  }

  void Start(bool learned_widening_on) {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "127.0.0.1:0";
    options.service.log_requests = false;
    options.store_url = store_url_;
    options.service.cluster = kCluster;
    options.service.report_auth.allow_unauthenticated = true;
    options.service.learned_widening.apply_by_default = learned_widening_on;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = v1::Oomguard::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->grpc_port()), grpc::InsecureChannelCredentials()));
  }

  static void SetDeadline(grpc::ClientContext& context) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  }

  v1::CheckResponse Check(std::optional<bool> learned_widening) {
    v1::CheckRequest request = testing::Llama3With8GpusCheck(/*omit_report=*/false);
    if (learned_widening) request.mutable_policy()->set_learned_widening(*learned_widening);
    grpc::ClientContext context;
    SetDeadline(context);
    v1::CheckResponse response;
    const grpc::Status status = stub_->Check(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  v1::CheckRecord Record(const std::string& check_id) {
    EXPECT_TRUE(server_->store()->Flush().ok());
    grpc::ClientContext context;
    SetDeadline(context);
    v1::GetCheckRequest request;
    request.set_check_id(check_id);
    v1::CheckRecord record;
    const grpc::Status status = stub_->GetCheck(&context, request, &record);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return record;
  }

  void Report(const v1::ReportRequest& report) {
    ASSERT_TRUE(server_->store()->Flush().ok());
    grpc::ClientContext context;
    SetDeadline(context);
    v1::ReportResponse response;
    const grpc::Status status = stub_->Report(&context, report, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
  }

  std::string Metrics() {
    absl::StatusOr<std::string> text =
        testing::HttpGet(server_->metrics_port(), "/metrics", absl::Seconds(10));
    EXPECT_TRUE(text.ok()) << text.status();
    return text.value_or("");
  }

  std::string dir_, store_url_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

TEST_F(FeedbackLoopTest, TheLearnedWideningIsAppliedWhereTheServerSaysAndStated) {
  MeasuredJobsInTheStore();
  Start(/*learned_widening_on=*/true);
  EXPECT_THAT(Metrics(), HasSubstr("\noomguard_learned_bound_widening_ratio 0.2"));

  const v1::CheckResponse widened = Check(std::nullopt);
  ASSERT_NEAR(widened.learned_widening(), 0.2, 1e-9);
  EXPECT_EQ(widened.learned_widening_jobs(), 20u);
  EXPECT_EQ(widened.learned_widening_cluster(), kCluster);
  // The estimator's bound, widened by 20 % and rounded up.
  EXPECT_EQ(widened.compared_peak_bytes(),
            static_cast<uint64_t>(std::ceil(static_cast<double>(widened.peak_device_upper_bytes()) *
                                            (1 + widened.learned_widening()))));
  EXPECT_EQ(widened.compared_peak_label(), "95% bound + 20.0% learned");
  EXPECT_THAT(widened.summary(), EndsWith(" The 95% bound is widened by 20.0%, learned from 20 "
                                          "measured jobs of cluster \"test-cluster\"."));
  const v1::CheckRecord record = Record(widened.check_id());
  EXPECT_NEAR(record.learned_widening(), 0.2, 1e-9);
  EXPECT_EQ(record.family(), "dense");
  // The record keeps the estimator's own bound, which the next learning
  // compares with.
  ASSERT_GT(record.estimate_size(), 0);
  EXPECT_EQ(record.estimate(0).peak_device_upper_bytes(), widened.peak_device_upper_bytes());

  // The policy refuses it for one check: the bound as the estimator gives it.
  const v1::CheckResponse plain = Check(false);
  EXPECT_EQ(plain.learned_widening(), 0.0);
  EXPECT_EQ(plain.compared_peak_bytes(), plain.peak_device_upper_bytes());
  EXPECT_EQ(plain.compared_peak_label(), "95% bound");
  EXPECT_THAT(plain.summary(), Not(HasSubstr("widened")));
}

TEST_F(FeedbackLoopTest, OffByDefaultUnlessThePolicyAsks) {
  MeasuredJobsInTheStore();
  Start(/*learned_widening_on=*/false);
  EXPECT_EQ(Check(std::nullopt).learned_widening(), 0.0);
  EXPECT_NEAR(Check(true).learned_widening(), 0.2, 1e-9);
  // The same request again after one with another policy: the response
  // cache answers each as asked.
  EXPECT_EQ(Check(std::nullopt).learned_widening(), 0.0);
}

// A report's peaks against the record's estimate reach /metrics; an
// admitted job's CUDA OOM counts once however often it is reported.
TEST_F(FeedbackLoopTest, ReportsReachTheMetrics) {
  Start(/*learned_widening_on=*/false);
  const v1::CheckResponse checked = Check(std::nullopt);
  ASSERT_EQ(checked.verdict(), v1::VERDICT_FITS);
  const v1::CheckRecord record = Record(checked.check_id());
  ASSERT_EQ(record.estimate_size(), 1);

  // Rank 0 used exactly the estimated allocated peak: error 0, under the
  // bound; then the job died of a CUDA OOM, reported twice.
  v1::ReportRequest report;
  report.set_check_id(checked.check_id());
  report.set_source(v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  v1::RankMeasurement* rank0 = report.add_ranks();
  rank0->set_rank(0);
  rank0->set_max_allocated_bytes(record.estimate(0).peak_allocated_bytes());
  report.set_outcome(v1::JOB_OUTCOME_CUDA_OOM);
  Report(report);
  v1::ReportRequest slurm;
  slurm.set_check_id(checked.check_id());
  slurm.set_source(v1::MEASUREMENT_SOURCE_SLURM);
  slurm.set_outcome(v1::JOB_OUTCOME_CUDA_OOM);
  Report(slurm);

  const std::string metrics = Metrics();
  const std::string labels =
      "{family=\"dense\",gpu=\"H100-SXM-80GB\",measure=\"allocated\",source=\"megatron_log\"}";
  EXPECT_THAT(metrics, HasSubstr(absl::StrCat("\noomguard_measured_peaks_total", labels, " 1\n")));
  EXPECT_THAT(metrics, HasSubstr(absl::StrCat("\noomguard_measured_peaks_under_bound_total", labels,
                                              " 1\n")));
  EXPECT_THAT(metrics,
              HasSubstr(absl::StrCat("\noomguard_estimate_error_ratio_sum", labels, " 0\n")));
  EXPECT_THAT(metrics, HasSubstr("\noomguard_feedback_reports_total{outcome=\"cuda_oom\","
                                 "source=\"megatron_log\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\noomguard_feedback_reports_total{outcome=\"cuda_oom\","
                                 "source=\"slurm\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\noomguard_admitted_then_oom_total{family=\"dense\",gpu=\"H100-"
                                 "SXM-80GB\"} 1\n"));
  EXPECT_THAT(metrics, HasSubstr("\noomguard_learned_bound_widening_ratio 0\n"));
}

}  // namespace
}  // namespace oomguard
