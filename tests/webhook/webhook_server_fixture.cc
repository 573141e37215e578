// The webhook test fixture (see webhook_server_fixture.h).
#include "tests/webhook/webhook_server_fixture.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/testing/service_test_util.h"

namespace oomguard::testing {
std::string ReadAdmissionData(const std::string& name) {
  return ReadFile(absl::StrCat(OOMGUARD_SOURCE_DIR, "/tests/data/admission/", name));
}

void WebhookServerTest::SetUp() {
  dir_ = MakeTempDir();
  certificate_ = MakeCertificate("oomguard webhook test");
  cert_file_ = absl::StrCat(dir_, "/tls.crt");
  key_file_ = absl::StrCat(dir_, "/tls.key");
  ca_file_ = absl::StrCat(dir_, "/ca.crt");
  WriteFile(cert_file_, certificate_.cert_pem);
  WriteFile(key_file_, certificate_.key_pem);
  WriteFile(ca_file_, certificate_.cert_pem);
}

void WebhookServerTest::TearDown() {
  server_.reset();
  std::filesystem::remove_all(dir_);
}

server::ServerOptions WebhookServerTest::Options() {
  server::ServerOptions options;
  options.grpc_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.threads = 2;
  options.service.log_requests = false;
  // The policy of before the upper bound, under which the 1024-GPU
  // DeepSeek-V3 review fits only with settings.
  options.service.default_safety_margin = 0.05;
  options.service.default_peak_bound = v1::PEAK_BOUND_POINT;
  options.webhook.address = "127.0.0.1:0";
  options.webhook.tls_cert_file = cert_file_;
  options.webhook.tls_key_file = key_file_;
  return options;
}

void WebhookServerTest::Start(server::ServerOptions options) {
  absl::StatusOr<std::unique_ptr<server::Server>> server =
      server::Server::Start(std::move(options));
  ASSERT_TRUE(server.ok()) << server.status();
  server_ = *std::move(server);
  ASSERT_GT(server_->webhook_port(), 0);
}

std::unique_ptr<httplib::SSLClient> WebhookServerTest::Client(const std::string& ca_file) {
  auto client = std::make_unique<httplib::SSLClient>("127.0.0.1", server_->webhook_port());
  client->set_ca_cert_path(ca_file.c_str());
  client->enable_server_certificate_verification(true);
  client->set_connection_timeout(5);
  client->set_read_timeout(10);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);  // As Go's client (the API server) does.
  return client;
}

}  // namespace oomguard::testing
