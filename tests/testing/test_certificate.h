// Self-signed certificates for the TLS tests (the webhook, the HTTP/JSON
// API, net/'s server TLS), made with OpenSSL.
#ifndef OOMGUARD_TESTS_TESTING_TEST_CERTIFICATE_H_
#define OOMGUARD_TESTS_TESTING_TEST_CERTIFICATE_H_

#include <string>

namespace oomguard::testing {

// A self-signed EC P-256 certificate for 127.0.0.1 and localhost, valid for
// a day: its own CA.
struct TestCertificate {
  std::string cert_pem;
  std::string key_pem;
};
TestCertificate MakeCertificate(const std::string& common_name);

}  // namespace oomguard::testing

#endif  // OOMGUARD_TESTS_TESTING_TEST_CERTIFICATE_H_
