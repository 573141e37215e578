// The webhook test fixture: the real server (server::Server with the webhook
// on 127.0.0.1:0 and a self-signed certificate, test_certificate.h) and
// an httplib SSLClient that verifies the certificate. Shared by
// webhook_server_test and webhook_held_connections_test.
#ifndef OOMGUARD_TESTS_WEBHOOK_WEBHOOK_SERVER_FIXTURE_H_
#define OOMGUARD_TESTS_WEBHOOK_WEBHOOK_SERVER_FIXTURE_H_

#include <httplib.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/testing/test_certificate.h"

namespace oomguard::testing {

// tests/data/admission/`name`.
std::string ReadAdmissionData(const std::string& name);

class WebhookServerTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // gRPC and the webhook on 127.0.0.1:0, no metrics port, no request log.
  server::ServerOptions Options();
  void Start(server::ServerOptions options);
  void Start() { Start(Options()); }

  // A client that trusts only `ca_file` and checks the host name.
  std::unique_ptr<httplib::SSLClient> Client(const std::string& ca_file);
  std::unique_ptr<httplib::SSLClient> Client() { return Client(ca_file_); }

  std::string dir_;
  TestCertificate certificate_;
  std::string cert_file_, key_file_, ca_file_;
  std::unique_ptr<server::Server> server_;
};

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_WEBHOOK_WEBHOOK_SERVER_FIXTURE_H_
