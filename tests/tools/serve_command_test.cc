// Process tests: the built `oomguard serve` (oomguard_server_for_test, the
// same RunServeCommand the CLI dispatches to) run as a separate process on loopback
// ports the OS picks: flags and --help, start-up errors, request logs,
// graceful shutdown on SIGTERM/SIGINT. Every process is killed by PID.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/generic/generic_stub.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "tests/testing/service_test_jobs.h"
#include "tests/testing/service_test_util.h"

namespace oomguard {
namespace {

using testing::ChildProcess;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kStartTimeout = absl::Seconds(20);
constexpr absl::Duration kExitTimeout = absl::Seconds(20);

class ServeProcessTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir(); }
  void TearDown() override {
    server_.reset();  // Kills it if still running.
    std::filesystem::remove_all(dir_);
  }

  // Runs the binary with `flags` until it exits; its exit code and output.
  std::pair<int, std::string> RunToExit(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {testing::ServerBinary()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto child = ChildProcess::Start(argv, absl::StrCat(dir_, "/run.log"));
    if (!child.ok()) return {-1, std::string(child.status().message())};
    const std::optional<int> code = (*child)->WaitForExit(kExitTimeout);
    return {code.value_or(-1), (*child)->Output()};
  }

  // Starts a server on a free port and waits for its "listening" line.
  // Without /metrics: stopping prometheus-cpp's civetweb takes ~2 s
  // (service_integration_test covers /metrics in a process).
  void StartServer(std::vector<std::string> flags = {}) {
    std::vector<std::string> argv = {testing::ServerBinary(), "--grpc_address=127.0.0.1:0",
                                     "--metrics_address=", "--threads=2"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto child = ChildProcess::Start(argv, absl::StrCat(dir_, "/server.log"));
    ASSERT_TRUE(child.ok()) << child.status();
    server_ = *std::move(child);
    absl::StatusOr<std::string> line =
        testing::WaitForOutputLine(*server_, "msg=listening", kStartTimeout);
    ASSERT_TRUE(line.ok()) << line.status();
    grpc_port_ = testing::LogValue(*line, "grpc_port");
    ASSERT_GT(grpc_port_, 0) << *line;
    stub_ = v1::Oomguard::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_),
                                                      grpc::InsecureChannelCredentials()));
  }

  grpc::Status Check(const v1::JobSource& job, const std::string& gpu,
                     v1::CheckResponse* response) {
    v1::CheckRequest request;
    *request.mutable_job() = job;
    request.set_gpu_name(gpu);
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    return stub_->Check(&context, request, response);
  }

  std::string dir_;
  std::unique_ptr<ChildProcess> server_;
  int grpc_port_ = 0;
  std::unique_ptr<v1::Oomguard::Stub> stub_;
};

TEST_F(ServeProcessTest, HelpDocumentsEveryFlag) {
  const auto [code, output] = RunToExit({"--help"});
  EXPECT_NE(code, -1);
  for (const char* flag : {"--grpc_address",
                           "--metrics_address",
                           "--tls_cert",
                           "--tls_key",
                           "--tls_client_ca",
                           "--threads",
                           "--max_request_bytes",
                           "--default_safety_margin",
                           "--gpu_catalog",
                           "--shutdown_grace",
                           "--log_requests",
                           "--response_cache_mb",
                           "--check_result_cache_mb",
                           "--plan_cache_mb",
                           "--http_address",
                           "--http_request_timeout",
                           "--webhook_max_connections_per_source",
                           "--http_max_connections_per_source",
                           "--store",
                           "--cluster",
                           "--report_tokens_file",
                           "--allow_unauthenticated_reports"}) {
    EXPECT_THAT(output, HasSubstr(flag));
  }
  EXPECT_THAT(output, HasSubstr("SIGTERM"));
}

TEST_F(ServeProcessTest, BadFlagValuesStopStartUp) {
  auto [code, output] = RunToExit({"--default_safety_margin=1.5", "--metrics_address="});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("default_safety_margin = 1.5"));

  std::tie(code, output) = RunToExit({"--gpu_catalog=/nonexistent/gpus.txtpb"});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("gpu_catalog = /nonexistent/gpus.txtpb"));

  std::tie(code, output) = RunToExit({"--plan_cache_mb=-1", "--metrics_address="});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("plan_cache_mb = -1: must be >= 0"));

  std::tie(code, output) = RunToExit({"--check_result_cache_mb=-2", "--metrics_address="});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("check_result_cache_mb = -2: must be >= 0"));

  // The webhook's connection limits reach the webhook (which refuses them).
  std::tie(code, output) = RunToExit(
      {"--grpc_address=127.0.0.1:0", "--metrics_address=", "--webhook_address=127.0.0.1:0",
       "--webhook_insecure_http_for_testing", "--webhook_max_connections=0"});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("webhook max_connections = 0: must be >= 1"));
  std::tie(code, output) = RunToExit(
      {"--grpc_address=127.0.0.1:0", "--metrics_address=", "--webhook_address=127.0.0.1:0",
       "--webhook_insecure_http_for_testing", "--webhook_header_timeout=0s"});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("header_timeout"));
  std::tie(code, output) = RunToExit(
      {"--grpc_address=127.0.0.1:0", "--metrics_address=", "--webhook_address=127.0.0.1:0",
       "--webhook_insecure_http_for_testing", "--webhook_max_connections_per_source=0"});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("webhook max_connections_per_source = 0: must be >= 1"));
  std::tie(code, output) =
      RunToExit({"--grpc_address=127.0.0.1:0", "--metrics_address=", "--http_address=127.0.0.1:0",
                 "--http_max_connections_per_source=-1"});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("http max_connections_per_source = -1: must be >= 1"));

  std::tie(code, output) = RunToExit({"--no_such_flag"});
  EXPECT_NE(code, 0);
  EXPECT_THAT(output, HasSubstr("no_such_flag"));
}

TEST_F(ServeProcessTest, AddressInUseIsReported) {
  StartServer();
  const auto [code, output] =
      RunToExit({absl::StrCat("--grpc_address=127.0.0.1:", grpc_port_), "--metrics_address="});
  EXPECT_EQ(code, 1);
  EXPECT_THAT(output, HasSubstr("cannot listen"));
}

TEST_F(ServeProcessTest, LogsOneLinePerRequestAndDrainsOnSigterm) {
  StartServer();
  v1::CheckResponse response;
  ASSERT_TRUE(Check(testing::Llama3With8GpusFits(), "H100-SXM-80GB", &response).ok());
  EXPECT_FALSE(Check(testing::Llama3With8GpusFits(), "H999", &response).ok());

  // Close the connection first: the server lets idle clients see its GOAWAY
  // for up to ~5 s before it exits.
  stub_.reset();
  server_->Signal(SIGTERM);
  EXPECT_EQ(server_->WaitForExit(kExitTimeout), 0);
  const std::string log = server_->Output();
  EXPECT_THAT(log, HasSubstr("msg=request method=Check code=OK"));
  EXPECT_THAT(log, HasSubstr("verdict=FITS"));
  EXPECT_THAT(log, HasSubstr("code=INVALID_ARGUMENT"));
  EXPECT_THAT(log, HasSubstr("error=\"gpu_name: unknown GPU 'H999'"));
  EXPECT_THAT(log, HasSubstr("msg=\"shutting down\" signal=SIGTERM"));
  EXPECT_THAT(log, HasSubstr("msg=stopped"));
}

// A client sending invalid UTF-8 in a string field makes protobuf log a line
// per request; the server writes the first as a msg=protobuf event and no
// more that minute, while refusing every request.
TEST_F(ServeProcessTest, ProtobufLogLinesDoNotFloodTheLog) {
  StartServer({"--log_requests=false"});
  v1::CheckRequest request;
  request.set_gpu_name("@@");
  std::string bytes = request.SerializeAsString();
  bytes.replace(bytes.find("@@"), 2, "\xc3\x28");  // Invalid UTF-8.
  grpc::GenericStub generic(grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_),
                                                grpc::InsecureChannelCredentials()));
  constexpr int kRequests = 40;
  for (int i = 0; i < kRequests; ++i) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    grpc::Slice slice(bytes);
    grpc::ByteBuffer body(&slice, 1), answer;
    std::promise<grpc::Status> done;
    generic.UnaryCall(&context, "/oomguard.v1.Oomguard/Check", grpc::StubOptions(), &body, &answer,
                      [&done](grpc::Status status) { done.set_value(std::move(status)); });
    EXPECT_EQ(done.get_future().get().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }
  server_->Signal(SIGTERM);
  EXPECT_EQ(server_->WaitForExit(kExitTimeout), 0);
  const std::vector<std::string> lines = absl::StrSplit(server_->Output(), '\n');
  int protobuf_lines = 0, utf8_lines = 0;
  for (const std::string& line : lines) {
    if (absl::StrContains(line, "msg=protobuf")) ++protobuf_lines;
    if (absl::StrContains(line, "UTF-8")) ++utf8_lines;
  }
  EXPECT_EQ(protobuf_lines, 1) << server_->Output();
  EXPECT_EQ(utf8_lines, 1) << server_->Output();
  EXPECT_THAT(server_->Output(), HasSubstr("msg=protobuf level=ERROR"));
  EXPECT_THAT(server_->Output(), HasSubstr("left_out=0"));
}

TEST_F(ServeProcessTest, SigintAlsoExitsZero) {
  StartServer();
  server_->Signal(SIGINT);
  EXPECT_EQ(server_->WaitForExit(kExitTimeout), 0);
  EXPECT_THAT(server_->Output(), HasSubstr("signal=SIGINT"));
}

TEST_F(ServeProcessTest, GpuCatalogFileAddsAndReplacesEntries) {
  const std::string catalog = absl::StrCat(dir_, "/gpus.txtpb");
  testing::WriteFile(catalog, R"pb(
    gpus { name: "H100-SXM-80GB" memory_bytes: 1073741824 vendor: GPU_VENDOR_NVIDIA }
    gpus { name: "LAB-GPU-1TB" aliases: "lab" memory_bytes: 1099511627776 }
  )pb");
  StartServer({absl::StrCat("--gpu_catalog=", catalog)});
  v1::CheckResponse response;
  ASSERT_TRUE(Check(testing::Llama3With8GpusFits(), "lab", &response).ok());
  EXPECT_EQ(response.gpu_name(), "LAB-GPU-1TB");
  EXPECT_EQ(response.verdict(), v1::VERDICT_FITS);
  ASSERT_TRUE(Check(testing::Llama3With8GpusFits(), "H100-SXM-80GB", &response).ok());
  EXPECT_EQ(response.capacity_bytes(), uint64_t{1} << 30);  // Replaced: 1 GiB.
  EXPECT_EQ(response.verdict(), v1::VERDICT_DOES_NOT_FIT);
}

// The `oomguard` CLI dispatches `serve` to the same RunServeCommand.
TEST_F(ServeProcessTest, OomguardCliServesToo) {
  // The test target depends on the binary (tests/CMakeLists.txt): a missing
  // one is a failure, not a skip.
  const std::string cli = absl::StrCat(OOMGUARD_BINARY_DIR, "/tools/oomguard");
  ASSERT_EQ(access(cli.c_str(), X_OK), 0) << cli << " is not built";
  auto child = ChildProcess::Start({cli, "serve", "--help"}, absl::StrCat(dir_, "/cli.log"));
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WaitForExit(kExitTimeout).has_value());
  const std::string output = (*child)->Output();
  EXPECT_THAT(output, Not(HasSubstr("unknown command")));
  EXPECT_THAT(output, HasSubstr("--grpc_address"));
  EXPECT_THAT(output, HasSubstr("--default_safety_margin"));
}

TEST_F(ServeProcessTest, HttpAddressServesJsonAndDrains) {
  StartServer({"--http_address=0"});  // A bare port: loopback.
  const absl::StatusOr<std::string> listening =
      testing::WaitForOutputLine(*server_, "msg=listening", kStartTimeout);
  ASSERT_TRUE(listening.ok()) << listening.status();
  const int http_port = testing::LogValue(*listening, "http_port");
  ASSERT_GT(http_port, 0) << *listening;
  absl::StatusOr<std::string> gpus = testing::HttpGet(http_port, "/v1/gpus", absl::Seconds(5));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_THAT(*gpus, HasSubstr("\"name\":\"H100-SXM-80GB\""));
  absl::StatusOr<std::string> page = testing::HttpGet(http_port, "/", absl::Seconds(5));
  ASSERT_TRUE(page.ok()) << page.status();
  EXPECT_THAT(*page, HasSubstr("<script src=\"/page.js\""));
  server_->Signal(SIGTERM);
  EXPECT_EQ(server_->WaitForExit(kExitTimeout), 0);
  EXPECT_THAT(server_->Output(), HasSubstr("msg=request method=ListGpus code=OK"));
  EXPECT_THAT(server_->Output(), HasSubstr("peer=http:127.0.0.1:"));
  EXPECT_THAT(server_->Output(), HasSubstr("msg=stopped"));
}

// --store, --cluster and --report_tokens_file reach the server: a Check has
// an id, a report with the file's token is kept as its name's, and the
// record is found with its cluster. A bad tokens file or store stops the
// start with the file's line or the URL named.
TEST_F(ServeProcessTest, FeedbackFlagsKeepChecksAndTakeReports) {
  testing::WriteFile(dir_ + "/tokens", "# reporters\njobcomp 0123456789abcdef0123456789abcdef\n");
  StartServer({absl::StrCat("--store=sqlite:", dir_, "/checks.db"), "--cluster=gpu-a",
               absl::StrCat("--report_tokens_file=", dir_, "/tokens")});
  v1::CheckResponse checked;
  ASSERT_TRUE(Check(testing::Llama3With8GpusFits(), "H100-SXM-80GB", &checked).ok());
  ASSERT_EQ(checked.check_id().size(), 32u) << checked.check_id();
  v1::ReportRequest report;
  report.set_check_id(checked.check_id());
  report.set_source(v1::MEASUREMENT_SOURCE_SLURM);
  report.set_outcome(v1::JOB_OUTCOME_RAN);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  context.AddMetadata("authorization", "Bearer 0123456789abcdef0123456789abcdef");
  v1::ReportResponse stored;
  const grpc::Status reported = stub_->Report(&context, report, &stored);
  ASSERT_TRUE(reported.ok()) << reported.error_message();
  grpc::ClientContext get_context;
  get_context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  v1::GetCheckRequest get;
  get.set_check_id(checked.check_id());
  v1::CheckRecord record;
  const grpc::Status got = stub_->GetCheck(&get_context, get, &record);
  ASSERT_TRUE(got.ok()) << got.error_message();
  EXPECT_EQ(record.cluster(), "gpu-a");
  ASSERT_EQ(record.reports_size(), 1);
  EXPECT_EQ(record.reports(0).reporter(), "jobcomp");
  server_->Signal(SIGTERM);
  EXPECT_EQ(server_->WaitForExit(kExitTimeout), 0);

  testing::WriteFile(dir_ + "/bad_tokens", "jobcomp short\n");
  auto [code, output] = RunToExit({"--metrics_address=", "--grpc_address=127.0.0.1:0",
                                   absl::StrCat("--report_tokens_file=", dir_, "/bad_tokens")});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("bad_tokens line 1: the token of jobcomp has 5 characters"));
  std::tie(code, output) =
      RunToExit({"--metrics_address=", "--grpc_address=127.0.0.1:0", "--store=mysql://x"});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("--store"));
}

TEST_F(ServeProcessTest, BadHttpAddressStopsStartUp) {
  const auto [code, output] = RunToExit(
      {"--grpc_address=127.0.0.1:0", "--metrics_address=", "--http_address=localhost:http"});
  EXPECT_EQ(code, 2);
  EXPECT_THAT(output, HasSubstr("http_address = localhost:http: expected host:port or a port"));
}

}  // namespace
}  // namespace oomguard
