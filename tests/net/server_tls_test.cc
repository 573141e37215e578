// TLS of the guarded HTTP server (net/server_tls.h): the PEMs refused with
// errors naming them, mutual TLS from fixed PEM contents, and files re-read
// when they change (each reload reported), served by a real
// GuardedHttpServer on loopback to httplib clients that verify it.
#include "net/server_tls.h"

#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "net/guarded_http_server.h"
#include "tests/testing/test_certificate.h"

namespace oomguard::net {
namespace {

using ::testing::HasSubstr;
using testing::MakeCertificate;
using testing::TestCertificate;

const TlsPemNames kFlags = {
    .cert_chain = "tls_cert", .key = "tls_key", .client_ca = "tls_client_ca"};

class ServerTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("server_tls_test_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Write(const std::string& name, const std::string& contents) {
    const std::string path = (dir_ / name).string();
    const std::string temporary = path + ".new";
    std::ofstream(temporary, std::ios::binary) << contents;
    std::filesystem::rename(temporary, path);  // As a Secret's update: whole.
    return path;
  }

  // A server of GET /ok over `tls`.
  void Serve(ServerTls& tls) {
    server_ = std::make_unique<GuardedHttpServer>(ConnectionLimits{}, &tls);
    ASSERT_TRUE(server_->is_valid());
    server_->Get("/ok", [](const httplib::Request&, httplib::Response& response) {
      response.set_content("ok", "text/plain");
    });
    const absl::StatusOr<int> port = server_->Start("test_address", "127.0.0.1:0");
    ASSERT_TRUE(port.ok()) << port.status();
    port_ = *port;
  }

  // GET /ok trusting `ca_pem` only, with the client certificate `client`
  // when given; the status, or -1 when the connection failed.
  int Get(const std::string& ca_pem, const TestCertificate* client = nullptr) {
    const std::string ca = Write("ca.pem", ca_pem);
    std::unique_ptr<httplib::SSLClient> https;
    if (client != nullptr) {
      https = std::make_unique<httplib::SSLClient>("127.0.0.1", port_,
                                                   Write("client.crt", client->cert_pem),
                                                   Write("client.key", client->key_pem));
    } else {
      https = std::make_unique<httplib::SSLClient>("127.0.0.1", port_);
    }
    https->set_ca_cert_path(ca.c_str());
    https->enable_server_certificate_verification(true);
    https->set_connection_timeout(5);
    https->set_read_timeout(5);
    httplib::Result result = https->Get("/ok");
    return result ? result->status : -1;
  }

  std::filesystem::path dir_;
  std::unique_ptr<GuardedHttpServer> server_;
  int port_ = 0;
};

TEST_F(ServerTlsTest, RefusedPemsAreNamed) {
  const TestCertificate server = MakeCertificate("server");
  const TestCertificate other = MakeCertificate("other");
  absl::Status bad =
      ServerTls::FromPem({.cert_chain = "junk", .key = server.key_pem, .client_ca = ""}, kFlags)
          .status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "tls_cert: no PEM certificate");
  bad = ServerTls::FromPem({.cert_chain = server.cert_pem, .key = "junk", .client_ca = ""}, kFlags)
            .status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("tls_key: no PEM private key"));
  bad = ServerTls::FromPem({.cert_chain = server.cert_pem, .key = other.key_pem, .client_ca = ""},
                           kFlags)
            .status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "tls_key: does not match the certificate (tls_cert)");
  bad = ServerTls::FromPem(
            {.cert_chain = server.cert_pem, .key = server.key_pem, .client_ca = "junk"}, kFlags)
            .status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.message(), "tls_client_ca: no PEM certificate");

  const std::string missing = (dir_ / "missing.crt").string();
  bad = ServerTls::FromFiles({.cert_flag = "webhook_tls_cert",
                              .cert_file = missing,
                              .key_flag = "webhook_tls_key",
                              .key_file = Write("tls.key", server.key_pem)},
                             absl::Seconds(30), nullptr)
            .status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(),
              HasSubstr(absl::StrCat("webhook_tls_cert = ", missing, ": cannot read")));
}

TEST_F(ServerTlsTest, MutualTlsFromPemContents) {
  const TestCertificate server = MakeCertificate("server");
  const TestCertificate client = MakeCertificate("client");
  const TestCertificate stranger = MakeCertificate("stranger");
  absl::StatusOr<std::unique_ptr<ServerTls>> tls = ServerTls::FromPem(
      {.cert_chain = server.cert_pem, .key = server.key_pem, .client_ca = client.cert_pem}, kFlags);
  ASSERT_TRUE(tls.ok()) << tls.status();
  Serve(**tls);
  EXPECT_EQ(Get(server.cert_pem, &client), 200);
  EXPECT_EQ(Get(server.cert_pem), -1);             // No client certificate.
  EXPECT_EQ(Get(server.cert_pem, &stranger), -1);  // One the CA did not sign.
  EXPECT_EQ(Get(stranger.cert_pem, &client), -1);  // A server the client does not trust.
  EXPECT_EQ((*tls)->reloads(), 0);
}

TEST_F(ServerTlsTest, ChangedFilesAreServedAndReported) {
  const TestCertificate first = MakeCertificate("first");
  const TestCertificate second = MakeCertificate("second");
  const TlsFiles files = {.cert_flag = "webhook_tls_cert",
                          .cert_file = Write("tls.crt", first.cert_pem),
                          .key_flag = "webhook_tls_key",
                          .key_file = Write("tls.key", first.key_pem)};
  // Reported on the server's connection threads.
  std::mutex mu;
  std::vector<absl::Status> reported;
  const auto last_report = [&]() -> std::optional<absl::Status> {
    std::lock_guard<std::mutex> lock(mu);
    if (reported.empty()) return std::nullopt;
    return reported.back();
  };
  absl::StatusOr<std::unique_ptr<ServerTls>> tls =
      ServerTls::FromFiles(files, absl::ZeroDuration(), [&](const absl::Status& s) {
        std::lock_guard<std::mutex> lock(mu);
        reported.push_back(s);
      });
  ASSERT_TRUE(tls.ok()) << tls.status();
  Serve(**tls);
  EXPECT_EQ(Get(first.cert_pem), 200);
  EXPECT_EQ(last_report(), std::nullopt);  // Unchanged files: nothing to report.

  // Half a rotation (the new certificate, the old key) is refused and
  // reported; the old pair is still served.
  Write("tls.crt", second.cert_pem);
  EXPECT_EQ(Get(first.cert_pem), 200);
  const std::optional<absl::Status> refused = last_report();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused->message(),
              HasSubstr(absl::StrCat(
                  "webhook_tls_key = ", files.key_file,
                  ": does not match the certificate (webhook_tls_cert = ", files.cert_file, ")")));
  EXPECT_EQ((*tls)->reloads(), 0);

  Write("tls.key", second.key_pem);
  EXPECT_EQ(Get(second.cert_pem), 200);
  EXPECT_EQ(last_report(), absl::OkStatus());
  EXPECT_EQ((*tls)->reloads(), 1);
  EXPECT_EQ(Get(first.cert_pem), -1);  // The old certificate is gone.
}

}  // namespace
}  // namespace oomguard::net
