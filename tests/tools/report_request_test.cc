// Tests of `oomguard report`'s command line and the request it makes
// (tools/report_request.h), from real log files.
#include "tools/report_request.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oomguard {
namespace {

using ::testing::HasSubstr;

constexpr char kId[] = "0123456789abcdef0123456789abcdef";

// A Slurm job's stderr (srun --label) whose rank 1 died of a CUDA OOM.
constexpr char kSlurmStderr[] =
    "0: [Rank 0] (after 1 iterations) memory (MB) | allocated: 30000.00 | max allocated: "
    "60000.00 | reserved: 62000.00 | max reserved: 62000.00\n"
    "1: [Rank 1] (after 1 iterations) memory (MB) | allocated: 31000.00 | max allocated: "
    "70000.50 | reserved: 72000.00 | max reserved: 72000.00\n"
    "1: Traceback (most recent call last):\n"
    "1: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a "
    "total capacity of 79.19 GiB of which 1.06 GiB is free.\n"
    "srun: error: node7: task 1: Exited with exit code 1\n";

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(testing::TempDir(), "/report_request_test_", name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

ReportFlags Flags(std::vector<std::string> more) {
  std::vector<std::string> args = {"--server", "127.0.0.1:1", "--check-id", kId};
  args.insert(args.end(), more.begin(), more.end());
  absl::StatusOr<ReportFlags> f = ParseReportFlags(args);
  EXPECT_TRUE(f.ok()) << f.status();
  return f.ok() ? *f : ReportFlags{};
}

void ExpectFlagError(std::vector<std::string> args, const std::string& message) {
  absl::StatusOr<ReportFlags> f = ParseReportFlags(args);
  EXPECT_EQ(f.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(f.status().message(), HasSubstr(message));
}

TEST(ReportFlagsTest, ReadsEveryFlag) {
  absl::StatusOr<ReportFlags> f = ParseReportFlags({"--server=h:1",
                                                    "--check-id",
                                                    kId,
                                                    "--log",
                                                    "/x/slurm-7.err",
                                                    "--exit-code=1:0",
                                                    "--slurm-state",
                                                    "FAILED",
                                                    "--slurm-job-id",
                                                    "7_2",
                                                    "--token-file",
                                                    "/t",
                                                    "--tls-ca",
                                                    "ca",
                                                    "--tls-cert",
                                                    "c",
                                                    "--tls-key",
                                                    "k",
                                                    "--deadline-ms",
                                                    "900"});
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->server, "h:1");
  EXPECT_EQ(f->check_id, kId);
  EXPECT_EQ(f->log_path, "/x/slurm-7.err");
  ASSERT_TRUE(f->exit_status.has_value());
  EXPECT_EQ(f->exit_status->code, 1);
  EXPECT_EQ(f->slurm_outcome, v1::JOB_OUTCOME_FAILED);
  EXPECT_EQ(f->slurm_job_id, "7_2");
  EXPECT_EQ(f->token_file, "/t");
  EXPECT_EQ(f->tls_ca, "ca");
  EXPECT_EQ(f->tls_key, "k");
  EXPECT_EQ(f->deadline_ms, 900);
  EXPECT_TRUE(ParseReportFlags({"--help"})->help);
}

TEST(ReportFlagsTest, ErrorsNameTheFlag) {
  ExpectFlagError({"--check-id", kId}, "--server: expected HOST:PORT");
  ExpectFlagError({"--server", "h:1"}, "--check-id: is empty");
  ExpectFlagError({"--server", "h:1", "--check-id", "ABC"},
                  "--check-id: \"ABC\" is not a check id");
  ExpectFlagError({"--server", "h:1", "--check-id", kId, "--exit-code", "x"},
                  "--exit-code: \"x\" is not an exit status");
  ExpectFlagError({"--server", "h:1", "--check-id", kId, "--slurm-state", "EXPLODED"},
                  "--slurm-state: \"EXPLODED\" is not a Slurm job state");
  ExpectFlagError({"--server", "h:1", "--check-id", kId, "--slurm-job-id", "12;rm"},
                  "--slurm-job-id: handle.slurm_job_id: \"12;rm\" is not a Slurm job id");
  ExpectFlagError({"--server", "h:1", "--check-id", kId, "--deadline-ms", "0"}, "--deadline-ms");
  ExpectFlagError({"--server", "h:1", "--check-id", kId, "--tls-cert", "c"},
                  "--tls-cert/--tls-key need --tls-ca");
  ExpectFlagError({"--server", "h:1", "--check-id", kId, "--log"}, "--log: missing value");
  ExpectFlagError({"--server", "h:1", "--check-id", kId, "extra"}, "unknown argument \"extra\"");
}

TEST(ReportRequestTest, ASlurmJobsStderrThatEndedInACudaOom) {
  LogSummary summary;
  absl::StatusOr<v1::ReportRequest> r =
      BuildReportRequest(Flags({"--log", WriteFile("oom.err", kSlurmStderr), "--exit-code", "1:0",
                                "--slurm-state", "FAILED", "--slurm-job-id", "4242"}),
                         &summary);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->check_id(), kId);
  EXPECT_EQ(r->source(), v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  EXPECT_EQ(r->outcome(), v1::JOB_OUTCOME_CUDA_OOM);
  EXPECT_THAT(r->detail(), ::testing::StartsWith("1: torch.OutOfMemoryError: CUDA out of memory."));
  EXPECT_EQ(r->handle().slurm_job_id(), "4242");
  ASSERT_EQ(r->ranks_size(), 2);
  EXPECT_EQ(r->ranks(0).rank(), 0u);
  EXPECT_EQ(r->ranks(0).max_allocated_bytes(), 60000ull << 20);
  EXPECT_EQ(r->ranks(1).rank(), 1u);
  EXPECT_EQ(r->ranks(1).max_allocated_bytes(), (70000ull << 20) + (1ull << 19));
  EXPECT_EQ(r->ranks(1).max_reserved_bytes(), 72000ull << 20);
  EXPECT_EQ(summary.lines, 5u);
  EXPECT_EQ(summary.memory_lines, 2u);
  EXPECT_TRUE(summary.cuda_oom);
}

TEST(ReportRequestTest, TheStderrOfAChildThatDiedOfACudaOomOnAnH200) {
  // tests/data/feedback/h200_oom_stderr.txt: the child exited 1
  // (h200_probe.json), as Slurm's jobcomp script reports it.
  absl::StatusOr<v1::ReportRequest> r = BuildReportRequest(
      Flags({"--log", absl::StrCat(OOMGUARD_SOURCE_DIR, "/tests/data/feedback/h200_oom_stderr.txt"),
             "--exit-code", "1:0", "--slurm-state", "FAILED", "--slurm-job-id", "3"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome(), v1::JOB_OUTCOME_CUDA_OOM);
  EXPECT_EQ(r->source(), v1::MEASUREMENT_SOURCE_SLURM);  // No memory line in it.
  EXPECT_THAT(r->detail(),
              ::testing::StartsWith("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                                    "83.88 GiB."));
  EXPECT_EQ(r->ranks_size(), 0);
}

TEST(ReportRequestTest, SlurmsStateAloneIsASlurmReport) {
  absl::StatusOr<v1::ReportRequest> r = BuildReportRequest(
      Flags({"--slurm-state", "OUT_OF_MEMORY", "--exit-code", "0:9", "--slurm-job-id", "17"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source(), v1::MEASUREMENT_SOURCE_SLURM);
  EXPECT_EQ(r->outcome(), v1::JOB_OUTCOME_HOST_OOM);
  EXPECT_EQ(r->ranks_size(), 0);
  EXPECT_EQ(r->detail(), "");
}

TEST(ReportRequestTest, ALogWithoutMemoryLinesIsStillTheLogsOom) {
  absl::StatusOr<v1::ReportRequest> r = BuildReportRequest(Flags(
      {"--log", WriteFile("only_oom.err",
                          "[default0]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried\n")}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source(), v1::MEASUREMENT_SOURCE_MEGATRON_LOG);
  EXPECT_EQ(r->outcome(), v1::JOB_OUTCOME_CUDA_OOM);
}

TEST(ReportRequestTest, BridgeLogsAndExitCodes) {
  absl::StatusOr<v1::ReportRequest> r = BuildReportRequest(Flags(
      {"--log",
       WriteFile("bridge.log",
                 "[Rank 2] (after 2 iterations) memory (GB) | mem-max-allocated-gigabytes: 50.5 "
                 "| mem-max-reserved-gigabytes: 60.25\n"),
       "--exit-code", "0"}));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->source(), v1::MEASUREMENT_SOURCE_MEGATRON_BRIDGE_LOG);
  EXPECT_EQ(r->outcome(), v1::JOB_OUTCOME_RAN);
  ASSERT_EQ(r->ranks_size(), 1);
  EXPECT_EQ(r->ranks(0).max_allocated_bytes(), 50'500'000'000u);
  EXPECT_EQ(r->ranks(0).max_reserved_bytes(), 60'250'000'000u);

  absl::StatusOr<v1::ReportRequest> exit_only = BuildReportRequest(Flags({"--exit-code", "3"}));
  ASSERT_TRUE(exit_only.ok()) << exit_only.status();
  EXPECT_EQ(exit_only->source(), v1::MEASUREMENT_SOURCE_CLIENT);
  EXPECT_EQ(exit_only->outcome(), v1::JOB_OUTCOME_FAILED);
}

TEST(ReportRequestTest, RefusesAReportThatSaysNothingAndLogsItCannotRead) {
  absl::StatusOr<v1::ReportRequest> empty =
      BuildReportRequest(Flags({"--log", WriteFile("empty.log", "hello\n")}));
  EXPECT_EQ(empty.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.status().message(),
              HasSubstr("invalid report: ranks: the report says nothing"));

  absl::StatusOr<v1::ReportRequest> missing =
      BuildReportRequest(Flags({"--log", "/nonexistent/slurm-1.err"}));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(),
              HasSubstr("--log: cannot read \"/nonexistent/slurm-1.err\""));

  absl::StatusOr<v1::ReportRequest> directory =
      BuildReportRequest(Flags({"--log", testing::TempDir()}));
  EXPECT_THAT(directory.status().message(), HasSubstr("is a directory"));
}

TEST(ReportRequestTest, ReadsTheTokenFile) {
  absl::StatusOr<std::string> token = ReadTokenFile(WriteFile("token", "  s3cr3t-Token_1\n"));
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "s3cr3t-Token_1");
  for (const char* bad : {"", "\n", "two words\n", "tab\there"}) {
    absl::StatusOr<std::string> t = ReadTokenFile(WriteFile("bad_token", bad));
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(t.status().message(), HasSubstr("--token-file")) << bad;
  }
  EXPECT_THAT(ReadTokenFile("/nonexistent/token").status().message(),
              HasSubstr("--token-file: cannot read"));
}

}  // namespace
}  // namespace oomguard
