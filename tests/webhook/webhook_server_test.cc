// Admission webhook over HTTPS (the fixture: webhook_server_fixture.h): real
// AdmissionReview documents posted with an httplib SSLClient that verifies
// the certificate, the answers checked field by field; latency, concurrency,
// limits, metrics, certificate rotation, shutdown, and the `oomguard serve`
// flags in a process.
#include <httplib.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/metric_family.h"
#include "server/server.h"
#include "tests/testing/service_test_util.h"
#include "tests/webhook/webhook_server_fixture.h"

namespace oomguard {
namespace {

using json = nlohmann::json;
using ::testing::HasSubstr;
using testing::MakeCertificate;
using testing::ReadAdmissionData;
using ::testing::StartsWith;
using testing::TestCertificate;
using testing::WebhookServerTest;

// Replaces `path` atomically, as the kubelet swaps a Secret volume.
void ReplaceFile(const std::string& path, const std::string& contents) {
  testing::WriteFile(path + ".new", contents);
  std::filesystem::rename(path + ".new", path);
}

TEST_F(WebhookServerTest, AnswersRealReviewsOverHttps) {
  Start();
  auto client = Client();

  // Does not fit: denied, field by field.
  const std::string pod = ReadAdmissionData("pod_deepseek_v3_8gpu.json");
  httplib::Result result = client->Post("/validate?timeout=3s", pod, "application/json");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
  std::cout << "DOES_NOT_FIT answer: " << result->body << "\n";
  EXPECT_THAT(result->body, StartsWith("{\"apiVersion\":\"admission.k8s.io/v1\","
                                       "\"kind\":\"AdmissionReview\",\"response\":{\"uid\":"
                                       "\"3f1e0d2c-5b4a-4e8f-9a7b-6c5d4e3f2a10\",\"allowed\":false,"
                                       "\"status\":{\"code\":403,\"reason\":\"Forbidden\","
                                       "\"message\":\"oomguard: Pod llm-training/dsv3-smoke"));
  json denied = json::parse(result->body)["response"];
  EXPECT_EQ(denied["allowed"], false);
  EXPECT_THAT(denied["status"]["message"].get<std::string>(), HasSubstr("Does not fit: PP rank "));
  EXPECT_EQ(denied["auditAnnotations"]["verdict"], "DOES_NOT_FIT");

  // Fits with settings: allowed, with the warning.
  result =
      client->Post("/validate?timeout=3s", ReadAdmissionData("pytorchjob_deepseek_v3_1024gpu.json"),
                   "application/json");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  EXPECT_EQ(result->status, 200);
  std::cout << "FITS_WITH_SETTINGS answer: " << result->body << "\n";
  json allowed = json::parse(result->body)["response"];
  EXPECT_EQ(allowed["uid"], "b7c6d5e4-f3a2-4b1c-8d9e-0f1a2b3c4d5e");
  EXPECT_EQ(allowed["allowed"], true);
  EXPECT_FALSE(allowed.contains("status"));
  ASSERT_EQ(allowed["warnings"].size(), 1u);
  EXPECT_THAT(allowed["warnings"][0].get<std::string>(),
              HasSubstr("only with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));

  // Latency on a kept-alive connection, per document.
  for (const char* name :
       {"pod_deepseek_v3_8gpu.json", "pytorchjob_deepseek_v3_1024gpu.json",
        "job_llama3_8b_8gpu.json", "jobset_deepseek_v3_256gpu.json", "pod_not_training.json"}) {
    const std::string body = ReadAdmissionData(name);
    std::vector<double> ms;
    for (int i = 0; i < 20; ++i) {
      const absl::Time start = absl::Now();
      httplib::Result r = client->Post("/validate?timeout=3s", body, "application/json");
      ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
      ASSERT_TRUE(r && r->status == 200) << name;
    }
    std::sort(ms.begin(), ms.end());
    std::cout << absl::StrFormat("latency %-38s p50 %7.2f ms  max %7.2f ms\n", name, ms[10],
                                 ms.back());
    // Well within the webhook's timeoutSeconds (3).
    EXPECT_LT(ms[10], 1000) << name;
  }
}

TEST_F(WebhookServerTest, ConcurrentReviewsAreAllAnswered) {
  Start();
  const std::string pod = ReadAdmissionData("pod_deepseek_v3_8gpu.json");
  const std::string job = ReadAdmissionData("job_llama3_8b_8gpu.json");
  std::vector<std::future<int>> clients;
  for (int c = 0; c < 6; ++c) {
    clients.push_back(std::async(std::launch::async, [&, c] {
      auto client = Client();
      int right = 0;
      for (int i = 0; i < 5; ++i) {
        const bool deny = (c + i) % 2 == 0;
        httplib::Result r = client->Post("/validate", deny ? pod : job, "application/json");
        if (r && r->status == 200 && json::parse(r->body)["response"]["allowed"] == !deny) {
          ++right;
        }
      }
      return right;
    }));
  }
  for (auto& c : clients) EXPECT_EQ(c.get(), 5);
}

TEST_F(WebhookServerTest, HealthzAndOtherPaths) {
  Start();
  auto client = Client();
  httplib::Result r = client->Get("/healthz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "ok\n");
  r = client->Get("/validate");
  ASSERT_TRUE(r);
  EXPECT_NE(r->status, 200);
  // /mutate reads a review as /validate does; other paths are not served.
  r = client->Post("/mutate", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_EQ(r->body, "apiVersion = \"\": expected \"admission.k8s.io/v1\"\n");
  r = client->Post("/convert", "{}", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
}

TEST_F(WebhookServerTest, MutateCarriesTheKeptChecksIdToTheJob) {
  server::ServerOptions options = Options();
  options.store_url = absl::StrCat("sqlite:", dir_, "/checks.db");
  Start(options);
  auto client = Client();
  const std::string review = ReadAdmissionData("pytorchjob_deepseek_v3_1024gpu.json");
  httplib::Result result = client->Post("/mutate?timeout=3s", review, "application/json");
  ASSERT_TRUE(result) << httplib::to_string(result.error());
  ASSERT_EQ(result->status, 200);
  const json answer = json::parse(result->body)["response"];
  EXPECT_EQ(answer["allowed"], true);
  ASSERT_EQ(answer["patchType"], "JSONPatch");
  const std::string id = answer["auditAnnotations"]["check-id"];
  std::string patch;
  ASSERT_TRUE(absl::Base64Unescape(answer["patch"].get<std::string>(), &patch));
  // Applied as the API server applies it: Master and Worker pods carry it.
  const json patched = json::parse(review)["request"]["object"].patch(json::parse(patch));
  for (const char* type : {"Master", "Worker"}) {
    const json& pod = patched["spec"]["pytorchReplicaSpecs"][type]["template"];
    EXPECT_EQ(pod["metadata"]["annotations"]["oomguard.io/check-id"], id) << type;
    EXPECT_EQ(pod["spec"]["containers"][0]["env"].back()["value"], id) << type;
  }
  // The record the server kept, with the job's handle.
  ASSERT_TRUE(server_->handlers().store()->Flush().ok());
  v1::GetCheckRequest get;
  get.set_check_id(id);
  absl::StatusOr<v1::CheckRecord> record =
      server_->handlers().GetCheck(get, absl::InfiniteFuture());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->verdict(), v1::VERDICT_FITS_WITH_SETTINGS);
  EXPECT_EQ(record->num_gpus(), 1024u);
  EXPECT_EQ(record->handle().kubernetes_namespace(), "llm-training");
  EXPECT_EQ(record->handle().kubernetes_workload(), "dsv3-pretrain");
  EXPECT_EQ(record->handle().kubernetes_kind(), "PyTorchJob");
}

TEST_F(WebhookServerTest, MutateJudgesLikeValidate) {
  Start();
  auto client = Client();
  for (const char* name : {"pod_deepseek_v3_8gpu.json", "job_llama3_8b_8gpu.json"}) {
    SCOPED_TRACE(name);
    const std::string review = ReadAdmissionData(name);
    httplib::Result validated = client->Post("/validate", review, "application/json");
    httplib::Result mutated = client->Post("/mutate", review, "application/json");
    ASSERT_TRUE(validated && mutated);
    ASSERT_EQ(mutated->status, 200);
    // A server without a store keeps no checks: no id to carry, the same
    // answer.
    EXPECT_EQ(mutated->body, validated->body);
    EXPECT_FALSE(json::parse(mutated->body)["response"].contains("patch"));
  }
}

TEST_F(WebhookServerTest, BadAndOversizedBodiesAreRefused) {
  Start();
  auto client = Client();
  httplib::Result r = client->Post("/validate", "not json", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_THAT(r->body, StartsWith("body: not JSON"));
  r = client->Post("/validate", std::string(5 << 20, ' '), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  // Still serving.
  r = client->Post("/validate", ReadAdmissionData("pod_not_training.json"), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(WebhookServerTest, TheApiServerTimeoutBoundsTheCheck) {
  Start();
  httplib::Result r = Client()->Post(
      "/validate?timeout=1ns", ReadAdmissionData("pod_deepseek_v3_8gpu.json"), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  const json response = json::parse(r->body)["response"];
  EXPECT_EQ(response["allowed"], true);  // Fail open.
  EXPECT_THAT(response["warnings"][0].get<std::string>(), HasSubstr("did not finish in time"));
}

TEST_F(WebhookServerTest, ClientsMustUseVerifiedTls) {
  Start();
  httplib::Client plain("127.0.0.1", server_->webhook_port());
  plain.set_connection_timeout(5);
  plain.set_read_timeout(5);
  httplib::Result r = plain.Get("/healthz");
  EXPECT_FALSE(r && r->status == 200);
  const TestCertificate other = MakeCertificate("someone else");
  const std::string other_ca = absl::StrCat(dir_, "/other-ca.crt");
  testing::WriteFile(other_ca, other.cert_pem);
  r = Client(other_ca)->Get("/healthz");
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error(), httplib::Error::SSLServerVerification);
}

TEST_F(WebhookServerTest, RotatedCertificateIsServedWithoutARestart) {
  server::ServerOptions options = Options();
  options.webhook.tls_reload_interval = absl::ZeroDuration();
  Start(std::move(options));
  ASSERT_TRUE(Client()->Get("/healthz"));

  const TestCertificate rotated = MakeCertificate("oomguard webhook rotated");
  const std::string rotated_ca = absl::StrCat(dir_, "/rotated-ca.crt");
  testing::WriteFile(rotated_ca, rotated.cert_pem);
  // A half-written pair (new cert, old key) is not taken.
  ReplaceFile(cert_file_, rotated.cert_pem);
  EXPECT_TRUE(Client()->Get("/healthz"));
  ReplaceFile(key_file_, rotated.key_pem);
  httplib::Result r = Client(rotated_ca)->Get("/healthz");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(Client()->Get("/healthz"));  // The old certificate is gone.
}

TEST_F(WebhookServerTest, MetricsCountWebhookReviews) {
  Start();
  auto client = Client();
  ASSERT_TRUE(client->Post("/validate", ReadAdmissionData("pod_deepseek_v3_8gpu.json"),
                           "application/json"));
  ASSERT_TRUE(
      client->Post("/validate", ReadAdmissionData("job_llama3_8b_8gpu.json"), "application/json"));
  ASSERT_TRUE(client->Post("/validate", "[", "application/json"));
  std::map<std::string, double> counts;
  for (const prometheus::MetricFamily& family : server_->metrics().registry()->Collect()) {
    for (const prometheus::ClientMetric& metric : family.metric) {
      std::string labels;  // Sorted by name.
      std::vector<prometheus::ClientMetric::Label> sorted = metric.label;
      std::sort(sorted.begin(), sorted.end(),
                [](const auto& a, const auto& b) { return a.name < b.name; });
      for (const prometheus::ClientMetric::Label& l : sorted) {
        absl::StrAppend(&labels, l.name, "=", l.value, ",");
      }
      if (family.name == "oomguard_requests_total" || family.name == "oomguard_verdicts_total") {
        counts[absl::StrCat(family.name, "{", labels, "}")] = metric.counter.value;
      }
      if (family.name == "oomguard_request_duration_seconds" &&
          labels == "method=Webhook,transport=http,") {
        counts["webhook_duration_count"] = static_cast<double>(metric.histogram.sample_count);
      }
    }
  }
  EXPECT_EQ(counts["oomguard_requests_total{code=OK,method=Webhook,transport=http,}"], 2);
  EXPECT_EQ(counts["oomguard_requests_total{code=INVALID_ARGUMENT,method=Webhook,transport=http,}"],
            1);
  EXPECT_EQ(counts["oomguard_verdicts_total{verdict=DOES_NOT_FIT,}"], 1);
  EXPECT_EQ(counts["oomguard_verdicts_total{verdict=FITS,}"], 1);
  EXPECT_EQ(counts["webhook_duration_count"], 3);
}

TEST_F(WebhookServerTest, ShutdownStopsTheWebhook) {
  Start();
  const int port = server_->webhook_port();
  ASSERT_TRUE(Client()->Get("/healthz"));
  const absl::Time start = absl::Now();
  server_->Shutdown(absl::Seconds(2));
  EXPECT_LT(absl::Now() - start, absl::Seconds(10));
  httplib::SSLClient after("127.0.0.1", port);
  after.enable_server_certificate_verification(false);
  after.set_connection_timeout(2);
  EXPECT_FALSE(after.Get("/healthz"));
}

TEST_F(WebhookServerTest, BadOptionsAreRefused) {
  server::ServerOptions options = Options();
  options.webhook.tls_cert_file.clear();
  options.webhook.tls_key_file.clear();
  absl::Status status = server::Server::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("webhook_tls_cert"));

  options = Options();
  const std::string other_key = absl::StrCat(dir_, "/other.key");
  testing::WriteFile(other_key, MakeCertificate("x").key_pem);
  options.webhook.tls_key_file = other_key;
  status = server::Server::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("does not match the certificate"));

  options = Options();
  options.webhook.tls_cert_file = absl::StrCat(dir_, "/missing.crt");
  status = server::Server::Start(options).status();
  EXPECT_THAT(status.message(), HasSubstr("webhook_tls_cert = "));

  options = Options();
  options.webhook.address = "127.0.0.1";
  EXPECT_EQ(server::Server::Start(options).status().code(), absl::StatusCode::kInvalidArgument);

  options = Options();
  options.webhook.limits.max_connections = 0;
  status = server::Server::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("max_connections = 0"));

  options = Options();
  options.webhook.limits.header_timeout = absl::ZeroDuration();
  status = server::Server::Start(options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("header_timeout = 0"));

  options = Options();
  options.webhook.insecure_http = true;  // With TLS files too.
  EXPECT_EQ(server::Server::Start(options).status().code(), absl::StatusCode::kInvalidArgument);

  Start();  // Its port is now taken.
  options = Options();
  options.webhook.address = absl::StrCat("127.0.0.1:", server_->webhook_port());
  EXPECT_EQ(server::Server::Start(options).status().code(), absl::StatusCode::kUnavailable);
}

// The `oomguard serve` flags, in a process.
TEST_F(WebhookServerTest, ServeFlagsStartAndStopTheWebhook) {
  std::vector<std::string> argv = {testing::ServerBinary(),
                                   "--grpc_address=127.0.0.1:0",
                                   "--metrics_address=",
                                   "--threads=2",
                                   "--webhook_address=127.0.0.1:0",
                                   "--webhook_insecure_http_for_testing"};
  auto child = testing::ChildProcess::Start(argv, absl::StrCat(dir_, "/serve.log"));
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<std::string> line =
      testing::WaitForOutputLine(**child, "msg=listening", absl::Seconds(20));
  ASSERT_TRUE(line.ok()) << line.status();
  const int port = testing::LogValue(*line, "webhook_port");
  ASSERT_GT(port, 0) << *line;
  absl::StatusOr<std::string> health = testing::HttpGet(port, "/healthz", absl::Seconds(5));
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(*health, "ok\n");
  httplib::Client client("127.0.0.1", port);
  httplib::Result r =
      client.Post("/validate", ReadAdmissionData("pod_deepseek_v3_8gpu.json"), "application/json");
  ASSERT_TRUE(r);
  EXPECT_THAT(r->body, HasSubstr("\"allowed\":false"));
  (*child)->Signal(SIGTERM);
  EXPECT_EQ((*child)->WaitForExit(absl::Seconds(20)), 0);
  // One log line per review.
  EXPECT_THAT((*child)->Output(), HasSubstr("msg=admission http_status=200 code=OK"));
  EXPECT_THAT((*child)->Output(), HasSubstr("kind=Pod namespace=llm-training name=dsv3-smoke"));

  // TLS flags that name missing files: exit 2 naming the flag.
  argv = {testing::ServerBinary(),
          "--grpc_address=127.0.0.1:0",
          "--metrics_address=",
          "--webhook_address=127.0.0.1:0",
          absl::StrCat("--webhook_tls_cert=", dir_, "/nope.crt"),
          absl::StrCat("--webhook_tls_key=", dir_, "/nope.key")};
  child = testing::ChildProcess::Start(argv, absl::StrCat(dir_, "/bad.log"));
  ASSERT_TRUE(child.ok());
  EXPECT_EQ((*child)->WaitForExit(absl::Seconds(20)),
            2);  // A configuration error.
  EXPECT_THAT((*child)->Output(), HasSubstr("webhook_tls_cert = "));
}

}  // namespace
}  // namespace oomguard
