// Two replicas on one PostgreSQL: two real servers (gRPC on loopback), each
// with its own `--store postgresql://...` connection to one real PostgreSQL
// server the test starts (tests/testing/postgres_server.h), see each other's
// checks and reports: a check answered by one is found, and reported on, by
// the other; each sees the reports the other stored, in the order stored.
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"
#include "tests/testing/postgres_server.h"
#include "tests/testing/service_test_jobs.h"

namespace oomguard {
namespace {

using ::testing::ElementsAre;

// One replica: the server and a stub to it.
struct Replica {
  std::unique_ptr<server::Server> server;
  std::unique_ptr<v1::Oomguard::Stub> stub;
};

class StoreReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::PostgresServer::BinDir().has_value()) {
      GTEST_SKIP() << "PostgreSQL is not installed (Debian's postgresql; CI installs it)";
    }
    absl::StatusOr<std::unique_ptr<testing::PostgresServer>> postgres =
        testing::PostgresServer::Start();
    ASSERT_TRUE(postgres.ok()) << postgres.status();
    postgres_ = *std::move(postgres);
    absl::StatusOr<std::string> uri = postgres_->CreateDatabase("oomguard");
    ASSERT_TRUE(uri.ok()) << uri.status();
    uri_ = *uri;
  }

  void TearDown() override {
    for (Replica* replica : {&a_, &b_}) {
      if (replica->server != nullptr) replica->server->Shutdown(absl::Seconds(5));
      replica->server.reset();
    }
    postgres_.reset();
  }

  void Start(Replica& replica) {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.threads = 2;
    options.service.log_requests = false;
    options.service.cluster = "gpu-east";
    options.service.report_auth.allow_unauthenticated = true;
    options.store_url = uri_;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    replica.server = *std::move(server);
    replica.stub = v1::Oomguard::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", replica.server->grpc_port()),
                            grpc::InsecureChannelCredentials()));
  }

  static void SetDeadline(grpc::ClientContext& context) {
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  }

  // A Check on `replica`; its check id, once its record is committed.
  static std::string Check(Replica& replica) {
    const v1::CheckRequest request = testing::Llama3With8GpusCheck();
    grpc::ClientContext context;
    SetDeadline(context);
    v1::CheckResponse response;
    const grpc::Status status = replica.stub->Check(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_TRUE(replica.server->store()->Flush().ok());
    return response.check_id();
  }

  static grpc::Status Report(Replica& replica, const std::string& check_id,
                             const std::string& detail, v1::JobOutcome outcome) {
    v1::ReportRequest report;
    report.set_check_id(check_id);
    report.set_source(v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
    v1::RankMeasurement& rank = *report.add_ranks();
    rank.set_rank(0);
    rank.set_max_allocated_bytes(uint64_t{50} << 30);
    report.set_outcome(outcome);
    report.set_detail(detail);
    grpc::ClientContext context;
    SetDeadline(context);
    v1::ReportResponse response;
    return replica.stub->Report(&context, report, &response);
  }

  static v1::CheckRecord GetCheck(Replica& replica, const std::string& check_id) {
    grpc::ClientContext context;
    SetDeadline(context);
    v1::GetCheckRequest request;
    request.set_check_id(check_id);
    v1::CheckRecord record;
    const grpc::Status status = replica.stub->GetCheck(&context, request, &record);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return record;
  }

  static std::vector<std::string> Details(const v1::CheckRecord& record) {
    std::vector<std::string> details;
    for (const v1::StoredReport& report : record.reports()) details.push_back(report.detail());
    return details;
  }

  std::unique_ptr<testing::PostgresServer> postgres_;
  std::string uri_;
  Replica a_;
  Replica b_;
};

TEST_F(StoreReplicasTest, EachSeesTheOthersChecksAndReports) {
  Start(a_);
  Start(b_);  // The schema is there: B migrates nothing.
  const std::string from_a = Check(a_);
  const std::string from_b = Check(b_);
  ASSERT_EQ(from_a.size(), 32u);
  ASSERT_EQ(from_b.size(), 32u);
  ASSERT_NE(from_a, from_b);

  // Each check is found on the other replica, with what the first kept.
  const v1::CheckRecord a_on_b = GetCheck(b_, from_a);
  EXPECT_EQ(a_on_b.check_id(), from_a);
  EXPECT_EQ(a_on_b.cluster(), "gpu-east");
  EXPECT_EQ(a_on_b.SerializeAsString(), GetCheck(a_, from_a).SerializeAsString());
  EXPECT_EQ(GetCheck(a_, from_b).check_id(), from_b);

  // Reports for one check through both replicas: both see all, in order.
  ASSERT_TRUE(Report(a_, from_a, "first, via A", v1::JOB_OUTCOME_UNSPECIFIED).ok());
  ASSERT_TRUE(Report(b_, from_a, "second, via B", v1::JOB_OUTCOME_CUDA_OOM).ok());
  ASSERT_TRUE(Report(a_, from_a, "third, via A", v1::JOB_OUTCOME_FAILED).ok());
  for (Replica* replica : {&a_, &b_}) {
    const v1::CheckRecord record = GetCheck(*replica, from_a);
    EXPECT_THAT(Details(record), ElementsAre("first, via A", "second, via B", "third, via A"));
    EXPECT_EQ(record.outcome(), v1::JOB_OUTCOME_CUDA_OOM);
  }
  // B's check, reported through A, is B's record with A's report.
  ASSERT_TRUE(Report(a_, from_b, "via A", v1::JOB_OUTCOME_RAN).ok());
  EXPECT_THAT(Details(GetCheck(b_, from_b)), ElementsAre("via A"));
}

TEST_F(StoreReplicasTest, AReplicaStartedLaterSeesWhatTheFirstKept) {
  Start(a_);
  const std::string check_id = Check(a_);
  ASSERT_TRUE(Report(a_, check_id, "before B started", v1::JOB_OUTCOME_RAN).ok());
  a_.server->Shutdown(absl::Seconds(5));
  a_.server.reset();
  Start(b_);
  EXPECT_THAT(Details(GetCheck(b_, check_id)), ElementsAre("before B started"));
}

}  // namespace
}  // namespace oomguard
