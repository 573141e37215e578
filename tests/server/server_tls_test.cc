// TLS tests: the server with a certificate (and optionally required client
// certificates), on 127.0.0.1:0, called with the generated stub. The
// certificates are test-only, valid until 2126, for 127.0.0.1/localhost.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "oomguard/v1/service.grpc.pb.h"
#include "server/server.h"

namespace oomguard {
namespace {

// openssl: EC P-256 CA "oomguard test CA"; server cert CN=localhost with
// subjectAltName IP:127.0.0.1, DNS:localhost; client cert signed by the CA.
constexpr char kCaPem[] = R"pem(-----BEGIN CERTIFICATE-----
MIIBjTCCATOgAwIBAgIUNOrLX7LjGdIFFy6dhENzCuw7hNgwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQb29tZ3VhcmQgdGVzdCBDQTAgFw0yNjExMjIxMjM2MTVaGA8y
MTI2MTAyOTEyMzYxNVowGzEZMBcGA1UEAwwQb29tZ3VhcmQgdGVzdCBDQTBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABBJVTSfN0vv85F+Mpdlx741vSLwxdnmgthoh
QqagXReo+mHSQ+6jkAp/IMVM9xun+OgpTN5BiwTObh+QQvGIjIajUzBRMB0GA1Ud
DgQWBBRqCNbgjIH5953ByoyK2O25sqp7BDAfBgNVHSMEGDAWgBRqCNbgjIH5953B
yoyK2O25sqp7BDAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIFtD
BZ++mWTmBTqWFBc5v4ys9P7ea3CEyR/iqAjRUDqiAiEAwV000B4WEepIUNkXQJyz
Ay/05um/0/cr1Z02wRVqxBw=
-----END CERTIFICATE-----
)pem";
constexpr char kServerCertPem[] = R"pem(-----BEGIN CERTIFICATE-----
MIIBkTCCATegAwIBAgIUVSDGpdWlkHG0g3WcLDeUE+pYCwswCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQb29tZ3VhcmQgdGVzdCBDQTAgFw0yNjExMjIxMjM2MTVaGA8y
MTI2MTAyOTEyMzYxNVowFDESMBAGA1UEAwwJbG9jYWxob3N0MFkwEwYHKoZIzj0C
AQYIKoZIzj0DAQcDQgAEuaIXzfctNM9ELZEtkYrZb5jq7js/leyjHzGiNMlHDZxD
HQNbHrOiPgeRQ3hlkF6ZQ86wXhdP/fdkXC4+Kk9vEqNeMFwwGgYDVR0RBBMwEYcE
fwAAAYIJbG9jYWxob3N0MB0GA1UdDgQWBBRrq4SSqthHfNu0E/4cd+x1TLXfEzAf
BgNVHSMEGDAWgBRqCNbgjIH5953ByoyK2O25sqp7BDAKBggqhkjOPQQDAgNIADBF
AiEA/8de3SQssEW5VLnwfCCoLYOpiLMAD0iEilio/AszmRsCIEbbRTAHTXLuhEZe
R3zK3ITfYPqsr97P1XKzXP+M3eDa
-----END CERTIFICATE-----
)pem";
constexpr char kServerKeyPem[] = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgUGA/M52kbLJYLgaQ
NZSGS39WYbGofLKF1X6JTHFYulChRANCAAS5ohfN9y00z0QtkS2RitlvmOruOz+V
7KMfMaI0yUcNnEMdA1ses6I+B5FDeGWQXplDzrBeF0/992RcLj4qT28S
-----END PRIVATE KEY-----
)pem";
constexpr char kClientCertPem[] = R"pem(-----BEGIN CERTIFICATE-----
MIIBNjCB3QIUVSDGpdWlkHG0g3WcLDeUE+pYCwwwCgYIKoZIzj0EAwIwGzEZMBcG
A1UEAwwQb29tZ3VhcmQgdGVzdCBDQTAgFw0yNjExMjIxMjM2MTVaGA8yMTI2MTAy
OTEyMzYxNVowHzEdMBsGA1UEAwwUb29tZ3VhcmQgdGVzdCBjbGllbnQwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAATsUrnPNiohyEBk+qWB65hG1fBaRrWWaO4X4xeI
aurr7QekviCUY9F6rnwafGwlD1C6V6wfzKc+4gQDDypCe6Z1MAoGCCqGSM49BAMC
A0gAMEUCIEDbmJkc0NrES5dmmjd96/KfJU4giSR1PLEBhec6aSTsAiEAiPPqYbsN
BofK32pyNZfsvMEOiUbMmROyoZef5jLp+Zs=
-----END CERTIFICATE-----
)pem";
constexpr char kClientKeyPem[] = R"pem(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgFBzV8UxT06L3il+P
IcApRMntqQRPx7Aj92ZV6x6wAZShRANCAATsUrnPNiohyEBk+qWB65hG1fBaRrWW
aO4X4xeIaurr7QekviCUY9F6rnwafGwlD1C6V6wfzKc+4gQDDypCe6Z1
-----END PRIVATE KEY-----
)pem";

class TlsTest : public ::testing::Test {
 protected:
  void Start(bool require_client_cert) {
    server::ServerOptions options;
    options.grpc_address = "127.0.0.1:0";
    options.metrics_address = "";
    options.service.log_requests = false;
    options.tls_cert_pem = kServerCertPem;
    options.tls_key_pem = kServerKeyPem;
    if (require_client_cert) options.tls_client_ca_pem = kCaPem;
    absl::StatusOr<std::unique_ptr<server::Server>> server =
        server::Server::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  grpc::Status ListGpus(std::shared_ptr<grpc::ChannelCredentials> credentials) {
    auto stub = v1::Oomguard::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", server_->grpc_port()), credentials));
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
    v1::ListGpusResponse response;
    return stub->ListGpus(&context, {}, &response);
  }

  static std::shared_ptr<grpc::ChannelCredentials> Tls(bool with_client_cert) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = kCaPem;
    if (with_client_cert) {
      ssl.pem_cert_chain = kClientCertPem;
      ssl.pem_private_key = kClientKeyPem;
    }
    return grpc::SslCredentials(ssl);
  }

  std::unique_ptr<server::Server> server_;
};

TEST_F(TlsTest, ServesTlsClients) {
  Start(/*require_client_cert=*/false);
  EXPECT_TRUE(ListGpus(Tls(false)).ok());
  EXPECT_EQ(ListGpus(grpc::InsecureChannelCredentials()).error_code(),
            grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsTest, MutualTlsRequiresAClientCertificate) {
  Start(/*require_client_cert=*/true);
  EXPECT_TRUE(ListGpus(Tls(true)).ok());
  EXPECT_EQ(ListGpus(Tls(false)).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST(TlsOptionsTest, HalfConfiguredTlsIsRefused) {
  server::ServerOptions options;
  options.grpc_address = "127.0.0.1:0";
  options.metrics_address = "";
  options.tls_cert_pem = kServerCertPem;  // No key.
  EXPECT_EQ(server::Server::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.tls_cert_pem.clear();
  options.tls_client_ca_pem = kCaPem;  // Client CA without TLS.
  EXPECT_EQ(server::Server::Start(options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace oomguard
