// `oomguard report` against a real server on loopback with a real SQLite
// store in a temporary directory: a Slurm job's stderr whose rank died of a
// CUDA OOM is stored as the check's CUDA_OOM outcome with its per-rank
// peaks, under the reporter its token names; a missing token, an unknown
// check id, an unreachable server and bad input each exit as documented.
#include "tools/report_command.h"

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"
#include "service/report_auth.h"
#include "tests/testing/service_test_jobs.h"
#include "tests/testing/service_test_util.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr char kToken[] = "0123456789abcdef0123456789abcdef";
constexpr char kTokensFile[] = "slurm-jobcomp 0123456789abcdef0123456789abcdef\n";

// A Slurm job's stderr (srun --label): two ranks' memory lines, then rank 1
// dies of a CUDA OOM.
constexpr char kSlurmStderr[] =
    "0: [Rank 0] (after 2 iterations) memory (MB) | allocated: 30000.00 | max allocated: "
    "60000.00 | reserved: 62000.00 | max reserved: 62000.00\n"
    "1: [Rank 1] (after 2 iterations) memory (MB) | allocated: 31000.00 | max allocated: "
    "70000.50 | reserved: 72000.00 | max reserved: 72000.00\n"
    "1: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
    "total capacity of 79.19 GiB of which 1.06 GiB is free.\n"
    "srun: error: node7: task 1: Exited with exit code 1\n";

class ReportCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir();
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.service.log_requests = false;
    options.store_url = absl::StrCat("sqlite:", dir_, "/checks.db");
    options.service.cluster = "test-cluster";
    options.service.report_auth.tokens = *service::ParseReportTokens(kTokensFile, "tokens");
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ =
        v1::Oomguard::NewStub(grpc::CreateChannel(Server(), grpc::InsecureChannelCredentials()));
    token_file_ = Write("token", absl::StrCat(kToken, "\n"));
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Server() const { return absl::StrCat("127.0.0.1:", server_->grpc_port()); }

  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = absl::StrCat(dir_, "/", name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // A check the server stored; its id.
  std::string CheckId() {
    v1::CheckRequest request;
    *request.mutable_job() = testing::Llama3With8GpusFits();
    request.set_gpu_name("H100-SXM-80GB");
    request.set_omit_report(true);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::CheckResponse response;
    const grpc::Status status = stub_->Check(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.verdict(), v1::VERDICT_FITS);
    return response.check_id();
  }

  v1::CheckRecord Record(const std::string& check_id) {
    EXPECT_TRUE(server_->store()->Flush().ok());
    v1::GetCheckRequest request;
    request.set_check_id(check_id);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    v1::CheckRecord record;
    const grpc::Status status = stub_->GetCheck(&context, request, &record);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return record;
  }

  int Run(std::vector<std::string> args) {
    out_.clear();
    err_.clear();
    return RunReportCommand(args, out_, err_);
  }

  std::string dir_, token_file_, out_, err_;
  std::unique_ptr<server::Server> server_;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

TEST_F(ReportCommandTest, StoresASlurmJobsCudaOomWithItsPeaks) {
  const std::string id = CheckId();
  ASSERT_EQ(Run({"--server", Server(), "--check-id", id, "--log",
                 Write("slurm-4242.err", kSlurmStderr), "--exit-code", "1:0", "--slurm-state",
                 "FAILED", "--slurm-job-id", "4242", "--token-file", token_file_}),
            kReportStored)
      << err_;
  EXPECT_EQ(out_, absl::StrCat("oomguard: stored the report of check ", id,
                               ": 2 rank measurements, outcome cuda_oom, source megatron_log\n"));
  EXPECT_EQ(err_, "");
  const v1::CheckRecord record = Record(id);
  EXPECT_EQ(record.outcome(), v1::JOB_OUTCOME_CUDA_OOM);
  ASSERT_EQ(record.reports_size(), 1);
  const v1::StoredReport& report = record.reports(0);
  EXPECT_EQ(report.reporter(), "slurm-jobcomp");
  EXPECT_EQ(report.source(), v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  EXPECT_EQ(report.outcome(), v1::JOB_OUTCOME_CUDA_OOM);
  EXPECT_THAT(report.detail(), StartsWith("1: torch.OutOfMemoryError: CUDA out of memory."));
  ASSERT_EQ(report.ranks_size(), 2);
  EXPECT_EQ(report.ranks(0).rank(), 0u);
  EXPECT_EQ(report.ranks(0).max_allocated_bytes(), 60000ull << 20);
  EXPECT_EQ(report.ranks(1).rank(), 1u);
  EXPECT_EQ(report.ranks(1).max_allocated_bytes(), (70000ull << 20) + (1ull << 19));
  EXPECT_EQ(report.ranks(1).max_reserved_bytes(), 72000ull << 20);
}

TEST_F(ReportCommandTest, ACompletedJobWithoutALogRan) {
  const std::string id = CheckId();
  ASSERT_EQ(Run({"--server", Server(), "--check-id", id, "--exit-code", "0:0", "--slurm-state",
                 "COMPLETED", "--slurm-job-id", "17", "--token-file", token_file_}),
            kReportStored)
      << err_;
  EXPECT_EQ(out_, absl::StrCat("oomguard: stored the report of check ", id,
                               ": 0 rank measurements, outcome ran, source slurm\n"));
  const v1::CheckRecord record = Record(id);
  ASSERT_EQ(record.reports_size(), 1);
  EXPECT_EQ(record.reports(0).outcome(), v1::JOB_OUTCOME_RAN);
  EXPECT_EQ(record.reports(0).source(), v1::MEASUREMENT_SOURCE_SLURM);
}

TEST_F(ReportCommandTest, TheServerRefusesWithoutATokenAndAnUnknownCheck) {
  const std::string id = CheckId();
  EXPECT_EQ(Run({"--server", Server(), "--check-id", id, "--slurm-state", "FAILED"}),
            kReportRefused);
  EXPECT_THAT(err_, HasSubstr("did not store the report: UNAUTHENTICATED"));
  EXPECT_EQ(out_, "");
  EXPECT_EQ(Run({"--server", Server(), "--check-id", std::string(32, 'f'), "--slurm-state",
                 "FAILED", "--token-file", token_file_}),
            kReportRefused);
  EXPECT_THAT(err_, HasSubstr("did not store the report: NOT_FOUND"));
  EXPECT_EQ(Record(id).reports_size(), 0);
}

TEST_F(ReportCommandTest, BadInputExits2BeforeAnythingIsSent) {
  const std::string id = CheckId();
  EXPECT_EQ(Run({"--server", Server(), "--check-id", "not-an-id", "--slurm-state", "FAILED"}),
            kReportUsage);
  EXPECT_THAT(err_, StartsWith("oomguard report: --check-id: \"not-an-id\" is not a check id"));
  EXPECT_THAT(err_, HasSubstr("usage: oomguard report"));
  // A log with nothing to say, and nothing else: refused, with a note why.
  EXPECT_EQ(Run({"--server", Server(), "--check-id", id, "--log", Write("quiet.log", "hello\n"),
                 "--token-file", token_file_}),
            kReportUsage);
  EXPECT_THAT(err_, HasSubstr("oomguard report: note: --log \""));
  EXPECT_THAT(err_, HasSubstr("1 lines, no memory line"));
  EXPECT_THAT(err_, HasSubstr("oomguard report: invalid report: ranks: the report says nothing"));
  EXPECT_EQ(Run({"--server", Server(), "--check-id", id, "--slurm-state", "FAILED", "--token-file",
                 Write("empty_token", "\n")}),
            kReportUsage);
  EXPECT_THAT(err_, HasSubstr("--token-file"));
  EXPECT_EQ(Record(id).reports_size(), 0);
}

TEST_F(ReportCommandTest, AnUnreachableServerExits1) {
  const std::string id = CheckId();
  const std::string gone = Server();
  server_.reset();
  EXPECT_EQ(
      Run({"--server", gone, "--check-id", id, "--slurm-state", "FAILED", "--deadline-ms", "2000"}),
      kReportRefused);
  EXPECT_THAT(err_, HasSubstr(absl::StrCat("service ", gone, " did not store the report: ")));
}

TEST_F(ReportCommandTest, Help) {
  EXPECT_EQ(Run({"--help"}), kReportStored);
  EXPECT_THAT(out_, StartsWith("usage: oomguard report --server HOST:PORT --check-id ID"));
}

}  // namespace
}  // namespace oomguard
