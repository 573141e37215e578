// Integration tests with real outside programs, each against the built
// `oomguard serve` running as a separate process on loopback:
// - Debian's python3-grpcio (/usr/bin/python3) as a client without stubs:
//   health, reflection, one Check, /metrics (tests/testing/grpc_python_client.py);
// - a real Prometheus scraping /metrics, queried through its HTTP API.
// Each skips only when its program is not installed (CI installs both).
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "tests/testing/service_test_jobs.h"
#include "tests/testing/service_test_util.h"

namespace oomguard {
namespace {

using testing::ChildProcess;
using ::testing::HasSubstr;

constexpr char kPython[] = "/usr/bin/python3";
constexpr char kPrometheus[] = "/usr/bin/prometheus";

class IntegrationTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = testing::MakeTempDir(); }
  void TearDown() override {
    prometheus_.reset();  // Each kills its process if still running.
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  void StartServer() {
    // The policy of before the upper bound, under which the 1024-GPU
    // DeepSeek-V3 job fits only with settings.
    auto child = ChildProcess::Start(
        {testing::ServerBinary(), "--grpc_address=127.0.0.1:0", "--metrics_address=127.0.0.1:0",
         "--threads=2", "--default_safety_margin=0.05", "--default_peak_bound=point"},
        absl::StrCat(dir_, "/server.log"));
    ASSERT_TRUE(child.ok()) << child.status();
    server_ = *std::move(child);
    absl::StatusOr<std::string> line =
        testing::WaitForOutputLine(*server_, "msg=listening", absl::Seconds(20));
    ASSERT_TRUE(line.ok()) << line.status();
    grpc_port_ = testing::LogValue(*line, "grpc_port");
    metrics_port_ = testing::LogValue(*line, "metrics_port");
    ASSERT_GT(grpc_port_, 0);
    ASSERT_GT(metrics_port_, 0);
  }

  void StopServer() {
    server_->Signal(SIGTERM);
    EXPECT_EQ(server_->WaitForExit(absl::Seconds(20)), 0) << server_->Output();
  }

  static v1::CheckRequest DeepSeekOnH100() {
    v1::CheckRequest request;
    *request.mutable_job() =
        testing::MegatronSource("deepseek-v3", testing::DeepSeekV3With1024GpusArgs(), 1024);
    request.set_gpu_name("H100-SXM-80GB");
    return request;
  }

  std::string dir_;
  std::unique_ptr<ChildProcess> server_;
  std::unique_ptr<ChildProcess> prometheus_;
  int grpc_port_ = 0;
  int metrics_port_ = 0;
};

bool PythonGrpcInstalled() {
  if (access(kPython, X_OK) != 0) return false;
  const std::string command = absl::StrCat(kPython, " -c 'import grpc' >/dev/null 2>&1");
  return std::system(command.c_str()) == 0;
}

TEST_F(IntegrationTest, PythonGrpcioClientSeesHealthReflectionCheckAndMetrics) {
  if (!PythonGrpcInstalled()) GTEST_SKIP() << kPython << " with the grpc module is not installed";
  StartServer();
  const std::string request_path = absl::StrCat(dir_, "/check_request.bin");
  const std::string response_path = absl::StrCat(dir_, "/check_response.bin");
  testing::WriteFile(request_path, DeepSeekOnH100().SerializeAsString());

  auto client = ChildProcess::Start(
      {kPython, absl::StrCat(OOMGUARD_SOURCE_DIR, "/tests/testing/grpc_python_client.py"),
       "--target", absl::StrCat("127.0.0.1:", grpc_port_), "--check-request", request_path,
       "--check-response", response_path, "--metrics-port", absl::StrCat(metrics_port_)},
      absl::StrCat(dir_, "/client.log"));
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->WaitForExit(absl::Seconds(60)), 0) << (*client)->Output();

  v1::CheckResponse response;
  ASSERT_TRUE(response.ParseFromString(testing::ReadFile(response_path)));
  EXPECT_EQ(response.verdict(), v1::VERDICT_FITS_WITH_SETTINGS) << response.summary();
  EXPECT_EQ(response.gpu_name(), "H100-SXM-80GB");
  StopServer();
}

// %-encodes everything but unreserved characters.
std::string UrlEncode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

TEST_F(IntegrationTest, PrometheusScrapesTheRequestCounter) {
  if (access(kPrometheus, X_OK) != 0) GTEST_SKIP() << kPrometheus << " is not installed";
  StartServer();
  const int prometheus_port = testing::PickFreePort();
  ASSERT_GT(prometheus_port, 0);
  const std::string config = absl::StrCat(dir_, "/prometheus.yml");
  testing::WriteFile(config, absl::StrCat("global:\n"
                                          "  scrape_interval: 1s\n"
                                          "scrape_configs:\n"
                                          "  - job_name: oomguard\n"
                                          "    static_configs:\n"
                                          "      - targets: ['127.0.0.1:",
                                          metrics_port_, "']\n"));
  auto prometheus =
      ChildProcess::Start({kPrometheus, absl::StrCat("--config.file=", config),
                           absl::StrCat("--storage.tsdb.path=", dir_, "/data"),
                           absl::StrCat("--web.listen-address=127.0.0.1:", prometheus_port)},
                          absl::StrCat(dir_, "/prometheus.log"));
  ASSERT_TRUE(prometheus.ok()) << prometheus.status();
  prometheus_ = *std::move(prometheus);

  auto stub = v1::Oomguard::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", grpc_port_),
                                                        grpc::InsecureChannelCredentials()));
  constexpr int kCalls = 3;
  for (int i = 0; i < kCalls; ++i) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    v1::CheckResponse response;
    ASSERT_TRUE(stub->Check(&context, DeepSeekOnH100(), &response).ok());
  }
  stub.reset();  // Closes the connection, so the server exits at once.

  // Poll the query API until a scrape has the counter (bounded).
  const std::string query =
      absl::StrCat("/api/v1/query?query=",
                   UrlEncode("sum(oomguard_requests_total{method=\"Check\",code=\"OK\"})"));
  const std::string want = absl::StrCat("\"", kCalls, "\"]");
  std::string last;
  const absl::Time end = absl::Now() + absl::Seconds(60);
  while (absl::Now() < end) {
    absl::StatusOr<std::string> body = testing::HttpGet(prometheus_port, query, absl::Seconds(5));
    if (body.ok()) {
      last = *body;
      if (absl::StrContains(last, want)) break;
    } else {
      last = std::string(body.status().message());
    }
    ASSERT_FALSE(prometheus_->WaitForExit(absl::ZeroDuration()).has_value())
        << prometheus_->Output();
    absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_THAT(last, HasSubstr(want)) << prometheus_->Output();

  prometheus_->Signal(SIGTERM);
  EXPECT_TRUE(prometheus_->WaitForExit(absl::Seconds(20)).has_value());
  StopServer();
}

}  // namespace
}  // namespace oomguard
