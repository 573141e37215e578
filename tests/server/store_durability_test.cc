// A report acknowledged is a report kept: a real `oomguard serve --store
// sqlite:PATH` process, killed with SIGKILL while reporters are sending
// reports (three times, restarted on the same file each time), returns
// every report it had acknowledged (the store commits with synchronous=FULL in WAL mode before
// Report answers; store/check_store.h).
#include <signal.h>

#include <condition_variable>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/wait_until.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "tests/testing/service_test_jobs.h"
#include "tests/testing/service_test_util.h"

namespace oomguard {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(30);
constexpr absl::Duration kRpcTimeout = absl::Seconds(30);
constexpr int kChecks = 8;
constexpr int kReporters = 16;
// Each kill comes once this many more reports were acknowledged (a count,
// not a time); the server is killed this many times.
constexpr int kAcknowledgedBeforeKill = 500;
constexpr int kRounds = 3;

class StoreDurabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Starts `oomguard serve` on the store and connects to it.
  void StartServer(const std::string& log_name) {
    auto child = testing::ChildProcess::Start(
        {testing::ServerBinary(), "--grpc_address=127.0.0.1:0", "--metrics_address=", "--threads=4",
         absl::StrCat("--store=sqlite:", dir_, "/checks.db"), "--allow_unauthenticated_reports"},
        absl::StrCat(dir_, "/", log_name));
    ASSERT_TRUE(child.ok()) << child.status();
    server_ = *std::move(child);
    absl::StatusOr<std::string> line =
        testing::WaitForOutputLine(*server_, "msg=listening", kStartTimeout);
    ASSERT_TRUE(line.ok()) << line.status();
    const int port = testing::LogValue(*line, "grpc_port");
    ASSERT_GT(port, 0) << *line;
    stub_ = v1::Oomguard::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  }

  static void SetDeadline(grpc::ClientContext& context) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + kRpcTimeout));
  }

  // A report of 8 ranks whose detail names it.
  static v1::ReportRequest NamedReport(const std::string& check_id, const std::string& name) {
    v1::ReportRequest report;
    report.set_check_id(check_id);
    report.set_source(v1::MEASUREMENT_SOURCE_CLIENT);
    for (uint32_t rank = 0; rank < 8; ++rank) {
      v1::RankMeasurement& measurement = *report.add_ranks();
      measurement.set_rank(rank);
      measurement.set_max_allocated_bytes((uint64_t{40} << 30) + rank);
    }
    report.set_outcome(v1::JOB_OUTCOME_RAN);
    report.set_detail(name);
    return report;
  }

  grpc::Status Report(const v1::ReportRequest& report) {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::ReportResponse response;
    return stub_->Report(&context, report, &response);
  }

  std::string dir_;
  std::unique_ptr<testing::ChildProcess> server_;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

TEST_F(StoreDurabilityTest, EveryAcknowledgedReportIsFoundAfterKill9) {
  StartServer("round0.log");
  // Checks, each with a first report: a report answered means its check's
  // record is committed too.
  std::vector<std::string> check_ids;
  std::set<std::string> acknowledged;  // The details of the reports answered OK.
  for (int n = 0; n < kChecks; ++n) {
    const v1::CheckRequest request = testing::Llama3With8GpusCheck();
    grpc::ClientContext context;
    SetDeadline(context);
    v1::CheckResponse response;
    const grpc::Status status = stub_->Check(&context, request, &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    ASSERT_EQ(response.check_id().size(), 32u);
    check_ids.push_back(response.check_id());
    const std::string name = absl::StrCat("first-", n);
    ASSERT_TRUE(Report(NamedReport(response.check_id(), name)).ok());
    acknowledged.insert(name);
  }

  // Rounds: reporters send until the server is gone; the test kills it
  // once enough more were acknowledged, while the others are in flight, and
  // starts it again on the same file (recovering the WAL the kill left).
  std::mutex mutex;
  std::condition_variable progress;
  std::set<std::string> sent;
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) StartServer(absl::StrCat("round", round, ".log"));
    const size_t goal = acknowledged.size() + kAcknowledgedBeforeKill;
    std::vector<std::thread> reporters;
    for (int t = 0; t < kReporters; ++t) {
      reporters.emplace_back([&, t] {
        for (int i = 0;; ++i) {
          const std::string name = absl::StrCat("round", round, "-r", t, "-", i);
          {
            std::lock_guard<std::mutex> lock(mutex);
            sent.insert(name);
          }
          const grpc::Status status =
              Report(NamedReport(check_ids[(t + i) % check_ids.size()], name));
          std::lock_guard<std::mutex> lock(mutex);
          if (!status.ok()) return;  // The server is gone.
          acknowledged.insert(name);
          progress.notify_all();
        }
      });
    }
    bool enough = false;
    {
      std::unique_lock<std::mutex> lock(mutex);
      enough = WaitUntil(progress, lock, absl::Now() + absl::Minutes(2),
                         [&] { return acknowledged.size() >= goal; });
    }
    server_->Signal(SIGKILL);
    ASSERT_TRUE(server_->WaitForExit(absl::Seconds(30)).has_value());
    for (std::thread& reporter : reporters) reporter.join();
    ASSERT_TRUE(enough) << acknowledged.size() << " reports acknowledged in 2 minutes";
  }

  StartServer("last.log");
  std::set<std::string> stored;
  for (const std::string& check_id : check_ids) {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::GetCheckRequest request;
    request.set_check_id(check_id);
    v1::CheckRecord record;
    const grpc::Status status = stub_->GetCheck(&context, request, &record);
    ASSERT_TRUE(status.ok()) << check_id << ": " << status.error_message();
    for (const v1::StoredReport& report : record.reports()) {
      EXPECT_TRUE(stored.insert(report.detail()).second) << "stored twice: " << report.detail();
      EXPECT_EQ(report.ranks_size(), 8);
    }
  }
  int lost = 0;
  for (const std::string& name : acknowledged) {
    if (!stored.contains(name)) {
      ++lost;
      ADD_FAILURE() << "acknowledged but lost: " << name;
    }
  }
  EXPECT_EQ(lost, 0) << "of " << acknowledged.size() << " acknowledged";
  // What is stored was sent (a report the kill cut off before its answer may
  // be stored or not).
  for (const std::string& name : stored) {
    EXPECT_TRUE(sent.contains(name) || name.starts_with("first-")) << name;
  }
  std::cout << acknowledged.size() << " acknowledged, " << stored.size() << " stored of "
            << sent.size() + kChecks << " sent\n";
}

}  // namespace
}  // namespace oomguard
