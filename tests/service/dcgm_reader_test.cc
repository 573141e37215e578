// The DCGM reader's rounds (service/dcgm_reader.h) with the real pieces
// around it: checks made through the service's handlers into a real SQLite
// store in a temporary directory, reports added through the handlers'
// Report, and an HTTP server on loopback answering /api/v1/query as
// Prometheus does (the real Prometheus: tests/deploy/dcgm_feedback_test.py).
#include "service/dcgm_reader.h"

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "service/metrics.h"
#include "service/request_handlers.h"
#include "store/check_store.h"
#include "store/store_url.h"
#include "tests/testing/service_test_jobs.h"
#include "tests/testing/service_test_util.h"

namespace oomguard::service {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string Answer(const std::string& series) {
  return absl::StrCat(R"({"status":"success","data":{"resultType":"vector","result":[)", series,
                      "]}}");
}

// "device=bytes" of each measurement of a stored report.
std::vector<std::string> Shown(const v1::StoredReport& report) {
  std::vector<std::string> out;
  for (const v1::RankMeasurement& m : report.ranks()) {
    out.push_back(absl::StrCat(m.device(), "=", m.device_used_bytes()));
  }
  return out;
}

class DcgmReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    absl::StatusOr<store::StoreUrl> url =
        store::ParseStoreUrl(absl::StrCat("sqlite:", dir_, "/c.db"));
    ASSERT_TRUE(url.ok()) << url.status();
    absl::StatusOr<std::unique_ptr<store::CheckStore>> opened =
        store::OpenCheckStore(*url, store::StoreOptions());
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
    metrics_ = std::make_unique<ServiceMetrics>("test");
    ServiceConfig config;
    config.log_requests = false;
    config.store = store_.get();
    config.cluster = "c1";
    handlers_ = std::make_unique<RequestHandlers>(std::move(config), metrics_.get());

    prometheus_.Get("/api/v1/query",
                    [this](const httplib::Request& request, httplib::Response& response) {
                      const std::string query = request.get_param_value("query");
                      absl::MutexLock lock(&mu_);
                      queries_.push_back(query);
                      for (const auto& [key, body] : answers_) {
                        if (absl::StrContains(query, key)) {
                          response.set_content(body, "application/json");
                          return;
                        }
                      }
                      response.set_content(Answer(""), "application/json");
                    });
    port_ = prometheus_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { prometheus_.listen_after_bind(); });
    // Its stop() is lost before it runs: wait for it.
    while (!prometheus_.is_running()) absl::SleepFor(absl::Milliseconds(1));
  }

  void TearDown() override {
    reader_.reset();
    prometheus_.stop();
    if (thread_.joinable()) thread_.join();
    handlers_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  DcgmReader& Reader(const std::string& cluster = "c1") {
    DcgmReaderOptions options;
    options.prometheus_url = absl::StrCat("http://127.0.0.1:", port_);
    options.cluster = cluster;
    absl::StatusOr<std::unique_ptr<DcgmReader>> reader = DcgmReader::Create(
        options, store_.get(), [this](const v1::ReportRequest& report, absl::Time deadline) {
          return handlers_->Report(report, kDcgmReporter, deadline).status();
        });
    EXPECT_TRUE(reader.ok()) << reader.status();
    reader_ = *std::move(reader);
    return *reader_;
  }

  // A check of a job that fits, made through the handlers with `handle`
  // and committed; its id.
  std::string Checked(const v1::JobHandle& handle) {
    v1::CheckRequest request;
    *request.mutable_job() = testing::Llama3With8GpusFits();
    request.set_gpu_name("H100-SXM-80GB");
    v1::CheckResponse response;
    const absl::Status status =
        handlers_->RunCheck(request, absl::Now() + absl::Seconds(60), &response, handle);
    EXPECT_TRUE(status.ok()) << status;
    EXPECT_TRUE(store_->Flush().ok());
    return response.check_id();
  }

  void SetAnswer(const std::string& key, const std::string& body) {
    absl::MutexLock lock(&mu_);
    answers_.emplace_back(key, body);
  }

  std::vector<std::string> Queries() {
    absl::MutexLock lock(&mu_);
    return queries_;
  }

  std::vector<v1::StoredReport> DcgmReports(const std::string& check_id) {
    absl::StatusOr<v1::CheckRecord> record = store_->GetCheck(check_id);
    EXPECT_TRUE(record.ok()) << record.status();
    std::vector<v1::StoredReport> out;
    for (const v1::StoredReport& report : record->reports()) {
      if (report.source() == v1::MEASUREMENT_SOURCE_DCGM) out.push_back(report);
    }
    return out;
  }

  std::string dir_;
  std::unique_ptr<store::CheckStore> store_;
  std::unique_ptr<ServiceMetrics> metrics_;
  std::unique_ptr<RequestHandlers> handlers_;
  std::unique_ptr<DcgmReader> reader_;
  httplib::Server prometheus_;
  int port_ = 0;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<std::pair<std::string, std::string>> answers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> queries_ ABSL_GUARDED_BY(mu_);
};

v1::JobHandle SlurmJob(const std::string& id) {
  v1::JobHandle handle;
  handle.set_slurm_job_id(id);
  return handle;
}

TEST_F(DcgmReaderTest, ReportsAJobsPeaksOnceAndAgainWhenTheyRise) {
  const std::string check_id = Checked(SlurmJob("4242"));
  ASSERT_FALSE(check_id.empty());
  SetAnswer("hpc_job=\"4242\"",
            Answer(R"({"metric":{"gpu":"0","hostname":"n1"},"value":[1,"40000"]},
                                         {"metric":{"gpu":"1","hostname":"n1"},"value":[1,"41000"]})"));
  DcgmReader& reader = Reader();
  DcgmRound round = reader.RunRound(absl::Now());
  EXPECT_EQ(round.records, 1);
  EXPECT_EQ(round.reported, 1);
  EXPECT_EQ(round.failed, 0) << round.first_error;
  std::vector<v1::StoredReport> reports = DcgmReports(check_id);
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].reporter(), "dcgm");
  EXPECT_EQ(reports[0].outcome(), v1::JOB_OUTCOME_UNSPECIFIED);
  EXPECT_THAT(Shown(reports[0]), ElementsAre(absl::StrCat("n1/0=", 40000 * kMiB),
                                             absl::StrCat("n1/1=", 41000 * kMiB)));
  // The query named the job and the time since its check (at least 60 s).
  ASSERT_EQ(Queries().size(), 1u);
  EXPECT_THAT(Queries()[0], HasSubstr("DCGM_FI_DEV_FB_USED{hpc_job=\"4242\"}[60s]"));

  // Same peaks: nothing added.
  round = reader.RunRound(absl::Now());
  EXPECT_EQ(round.unchanged, 1);
  EXPECT_EQ(round.reported, 0);
  EXPECT_EQ(DcgmReports(check_id).size(), 1u);

  // GPU 1 rises, GPU 0 is gone from the answer: a second report with both
  // GPUs' largest.
  {
    absl::MutexLock lock(&mu_);
    answers_.clear();
  }
  SetAnswer("hpc_job=\"4242\"",
            Answer(R"({"metric":{"gpu":"1","hostname":"n1"},"value":[1,"42000"]})"));
  round = reader.RunRound(absl::Now());
  EXPECT_EQ(round.reported, 1);
  reports = DcgmReports(check_id);
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_THAT(Shown(reports[1]), ElementsAre(absl::StrCat("n1/0=", 40000 * kMiB),
                                             absl::StrCat("n1/1=", 42000 * kMiB)));
}

TEST_F(DcgmReaderTest, NoGpuFoundAddsNothing) {
  const std::string check_id = Checked(SlurmJob("77"));
  const DcgmRound round = Reader().RunRound(absl::Now());
  EXPECT_EQ(round.records, 1);
  EXPECT_EQ(round.unchanged, 1);
  EXPECT_THAT(DcgmReports(check_id), IsEmpty());
}

TEST_F(DcgmReaderTest, ReadsOnlyChecksWithAHandleOfItsClusterWithinTheLookback) {
  Checked(v1::JobHandle());  // No handle: not read.
  Checked(SlurmJob("5"));
  EXPECT_EQ(Reader("c2").RunRound(absl::Now()).records, 0);
  EXPECT_EQ(Reader("c1").RunRound(absl::Now()).records, 1);
  // 14 days and a second later the check is past the lookback.
  EXPECT_EQ(
      Reader("c1").RunRound(absl::Now() + DcgmReaderOptions().lookback + absl::Seconds(1)).records,
      0);
  EXPECT_THAT(Queries(), ElementsAre(HasSubstr("hpc_job=\"5\"")));
}

TEST_F(DcgmReaderTest, AFailedQueryIsCountedWithItsCheckAndTheOthersGoOn) {
  const std::string failing = Checked(SlurmJob("1"));
  const std::string working = Checked(SlurmJob("2"));
  SetAnswer("hpc_job=\"1\"",
            R"({"status":"error","errorType":"timeout","error":"query timed out"})");
  SetAnswer("hpc_job=\"2\"", Answer(R"({"metric":{"gpu":"0","pod":"p-0"},"value":[1,"7"]})"));
  const DcgmRound round = Reader().RunRound(absl::Now());
  EXPECT_EQ(round.records, 2);
  EXPECT_EQ(round.failed, 1);
  EXPECT_EQ(round.reported, 1);
  EXPECT_EQ(round.first_error.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(round.first_error.message(),
            absl::StrCat("check ", failing, ": prometheus: timeout: query timed out"));
  EXPECT_THAT(DcgmReports(failing), IsEmpty());
  ASSERT_EQ(DcgmReports(working).size(), 1u);
  EXPECT_THAT(Shown(DcgmReports(working)[0]), ElementsAre(absl::StrCat("p-0/0=", 7 * kMiB)));
}

TEST_F(DcgmReaderTest, ThreadReportsAndStops) {
  const std::string check_id = Checked(SlurmJob("9"));
  SetAnswer("hpc_job=\"9\"", Answer(R"({"metric":{"gpu":"3","hostname":"n"},"value":[1,"5"]})"));
  DcgmReader& reader = Reader();
  reader.Start();  // Its first round runs at once.
  for (int i = 0; i < 3000 && DcgmReports(check_id).empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  reader.Stop();
  ASSERT_EQ(DcgmReports(check_id).size(), 1u);
  EXPECT_THAT(Shown(DcgmReports(check_id)[0]), ElementsAre(absl::StrCat("n/3=", 5 * kMiB)));
}

TEST_F(DcgmReaderTest, RefusesBadOptions) {
  const auto sink = [](const v1::ReportRequest&, absl::Time) { return absl::OkStatus(); };
  DcgmReaderOptions options;
  options.prometheus_url = "http://127.0.0.1:9090";
  absl::StatusOr<std::unique_ptr<DcgmReader>> reader = DcgmReader::Create(options, nullptr, sink);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reader.status().message(), HasSubstr("set --store too"));
  options.interval = absl::Milliseconds(500);
  reader = DcgmReader::Create(options, store_.get(), sink);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reader.status().message(), HasSubstr("dcgm_interval: 500ms: must be >= 1s"));
  options.interval = absl::Minutes(1);
  options.prometheus_url = "prometheus:9090";
  reader = DcgmReader::Create(options, store_.get(), sink);
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reader.status().message(), HasSubstr("prometheus_url = prometheus:9090"));
}

}  // namespace
}  // namespace oomguard::service
