// The webhook test fixture (see webhook_server_fixture.h).
#include "tests/webhook/webhook_server_fixture.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tests/testing/service_test_util.h"

namespace oomguard::testing {
namespace {

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

std::string ReadAdmissionData(const std::string& name) {
  return ReadFile(absl::StrCat(OOMGUARD_SOURCE_DIR, "/tests/data/admission/", name));
}

TestCertificate MakeCertificate(const std::string& common_name) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), static_cast<long>(absl::ToUnixMicros(absl::Now())));
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1,
                             0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  for (const auto& [nid, value] : std::vector<std::pair<int, const char*>>{
           {NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost"},
           {NID_basic_constraints, "critical,CA:TRUE"},
           {NID_key_usage, "critical,digitalSignature,keyCertSign"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert, key, EVP_sha256());
  BIO* cert_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(cert_bio, cert);
  BIO* key_bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(key_bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  TestCertificate out{BioText(cert_bio), BioText(key_bio)};
  BIO_free(cert_bio);
  BIO_free(key_bio);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
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
