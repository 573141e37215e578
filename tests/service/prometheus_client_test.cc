// Prometheus's HTTP API as the DCGM reader calls it
// (service/prometheus_client.h), against a real HTTP server on loopback
// answering as Prometheus does; the real Prometheus is queried in
// tests/deploy/dcgm_feedback_test.py.
#include "service/prometheus_client.h"

#include <memory>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "httplib.h"

namespace oomguard::service {
namespace {

using ::testing::HasSubstr;

TEST(ParsePrometheusUrlTest, SchemeHostPortAndPrefix) {
  absl::StatusOr<PrometheusUrl> url = ParsePrometheusUrl("prometheus_url", "http://prom:9090");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->scheme_host_port, "http://prom:9090");
  EXPECT_EQ(url->path_prefix, "");
  url = ParsePrometheusUrl("prometheus_url", "https://mon.example.org/prometheus/");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->scheme_host_port, "https://mon.example.org");
  EXPECT_EQ(url->path_prefix, "/prometheus");
  url = ParsePrometheusUrl("prometheus_url", "http://[::1]:9090/");
  ASSERT_TRUE(url.ok()) << url.status();
  EXPECT_EQ(url->scheme_host_port, "http://[::1]:9090");
  EXPECT_EQ(url->path_prefix, "");
}

TEST(ParsePrometheusUrlTest, RefusesWhatIsNotABaseUrl) {
  for (const char* bad : {"prom:9090", "ftp://prom", "http://", "http://:9090", "http://prom:0",
                          "http://prom:http", "http://prom:9090/?x=1", "http://u@prom:9090"}) {
    absl::StatusOr<PrometheusUrl> url = ParsePrometheusUrl("prometheus_url", bad);
    EXPECT_EQ(url.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(url.status().message(), HasSubstr(std::string("prometheus_url = ") + bad)) << bad;
  }
}

// A server on 127.0.0.1 answering /api/v1/query (and under /prefix) as
// Prometheus does, echoing the query it got; /big answers 4 KiB, /fail 500,
// /bad 422, /hold waits until released.
class PrometheusClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto answer = [this](const httplib::Request& request, httplib::Response& response) {
      {
        absl::MutexLock lock(&mu_);
        last_query_ = request.get_param_value("query");
      }
      response.set_content(R"({"status":"success","data":{"resultType":"vector","result":[]}})",
                           "application/json");
    };
    server_.Get("/api/v1/query", answer);
    server_.Get("/prefix/api/v1/query", answer);
    server_.Get("/big/api/v1/query", [](const httplib::Request&, httplib::Response& response) {
      response.set_content(std::string(4096, 'x'), "application/json");
    });
    server_.Get("/fail/api/v1/query", [](const httplib::Request&, httplib::Response& response) {
      response.status = 500;
      response.set_content("oops", "text/plain");
    });
    server_.Get("/bad/api/v1/query", [](const httplib::Request&, httplib::Response& response) {
      response.status = 422;
      response.set_content(R"({"status":"error","errorType":"execution","error":"too many"})",
                           "application/json");
    });
    server_.Get("/hold/api/v1/query", [this](const httplib::Request&, httplib::Response& response) {
      release_.WaitForNotification();
      response.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // Its stop() is lost before it runs: wait for it.
    while (!server_.is_running()) absl::SleepFor(absl::Milliseconds(1));
  }

  void TearDown() override {
    if (!release_.HasBeenNotified()) release_.Notify();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  std::unique_ptr<PrometheusClient> Client(const std::string& path, size_t max_bytes = 1 << 20) {
    absl::StatusOr<std::unique_ptr<PrometheusClient>> client = PrometheusClient::Create(
        "prometheus_url", "http://127.0.0.1:" + std::to_string(port_) + path, max_bytes);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  std::string LastQuery() {
    absl::MutexLock lock(&mu_);
    return last_query_;
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  absl::Notification release_;
  absl::Mutex mu_;
  std::string last_query_ ABSL_GUARDED_BY(mu_);
};

constexpr char kQuery[] =
    "max by (pod, gpu) (max_over_time(DCGM_FI_DEV_FB_USED{namespace=\"a\","
    "pod=~\"x\\\\.y-.+\"}[60s])) or vector(1) + 2 & ?#%";

TEST_F(PrometheusClientTest, SendsTheQueryAsIsAndReturnsTheBody) {
  for (const std::string path : {"", "/", "/prefix", "/prefix/"}) {
    std::unique_ptr<PrometheusClient> client = Client(path);
    ASSERT_NE(client, nullptr);
    absl::StatusOr<std::string> body = client->Query(kQuery, absl::Now() + absl::Seconds(30));
    ASSERT_TRUE(body.ok()) << path << ": " << body.status();
    EXPECT_EQ(*body, R"({"status":"success","data":{"resultType":"vector","result":[]}})");
    EXPECT_EQ(LastQuery(), kQuery) << path;
  }
}

TEST_F(PrometheusClientTest, ReturnsPrometheusErrorAnswers) {
  std::unique_ptr<PrometheusClient> client = Client("/bad");
  absl::StatusOr<std::string> body = client->Query("up", absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_THAT(*body, HasSubstr("too many"));
}

TEST_F(PrometheusClientTest, OtherStatusIsUnavailable) {
  std::unique_ptr<PrometheusClient> client = Client("/fail");
  absl::StatusOr<std::string> body = client->Query("up", absl::Now() + absl::Seconds(30));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(body.status().message(), HasSubstr("/fail/api/v1/query answered HTTP 500"));
}

TEST_F(PrometheusClientTest, AnswerOverTheBoundIsRefused) {
  std::unique_ptr<PrometheusClient> client = Client("/big", 4095);
  absl::StatusOr<std::string> body = client->Query("up", absl::Now() + absl::Seconds(30));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(body.status().message(), HasSubstr("more than 4095 bytes"));
  client = Client("/big", 4096);
  body = client->Query("up", absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->size(), 4096u);
}

TEST_F(PrometheusClientTest, NoAnswerByTheDeadlineIsUnavailable) {
  std::unique_ptr<PrometheusClient> client = Client("/hold");
  absl::StatusOr<std::string> body = client->Query("up", absl::Now() + absl::Milliseconds(200));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kUnavailable);
  release_.Notify();
}

TEST_F(PrometheusClientTest, StopEndsAQueryInFlightAndRefusesLaterOnes) {
  std::unique_ptr<PrometheusClient> client = Client("/hold");
  absl::StatusOr<std::string> body;
  std::thread query([&] { body = client->Query("up", absl::InfiniteFuture()); });
  // Stop does not wait for the query to be sent: sent or not, it ends.
  client->Stop();
  query.join();
  EXPECT_EQ(body.status().code(), absl::StatusCode::kCancelled);
  release_.Notify();
  body = client->Query("up", absl::Now() + absl::Seconds(30));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kCancelled);
}

TEST(PrometheusClientUnreachableTest, NothingListeningIsUnavailable) {
  // Port 1 on loopback: nothing listens there.
  absl::StatusOr<std::unique_ptr<PrometheusClient>> client =
      PrometheusClient::Create("prometheus_url", "http://127.0.0.1:1", 1 << 20);
  ASSERT_TRUE(client.ok()) << client.status();
  absl::StatusOr<std::string> body = (*client)->Query("up", absl::Now() + absl::Seconds(30));
  EXPECT_EQ(body.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(body.status().message(), HasSubstr("http://127.0.0.1:1/api/v1/query"));
}

}  // namespace
}  // namespace oomguard::service
