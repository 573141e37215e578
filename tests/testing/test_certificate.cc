// Self-signed certificates for the TLS tests (see test_certificate.h).
#include "tests/testing/test_certificate.h"

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <utility>
#include <vector>

#include "absl/time/clock.h"

namespace oomguard::testing {
namespace {

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

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

}  // namespace oomguard::testing
