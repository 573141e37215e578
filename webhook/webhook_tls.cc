// Reloading TLS certificates for the webhook (see webhook_tls.h).
#include "webhook/webhook_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "service/flag_file.h"
#include "service/request_log.h"

namespace oomguard::webhook {

using service::FormatEventLine;
using service::ReadFlagFile;
using service::WriteLogLine;

struct CertificateReloader::KeyPair {
  X509* leaf = nullptr;
  STACK_OF(X509) * chain = nullptr;
  EVP_PKEY* key = nullptr;

  KeyPair() = default;
  KeyPair(const KeyPair&) = delete;
  KeyPair& operator=(const KeyPair&) = delete;
  ~KeyPair() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
  }
};

namespace {

struct BioDeleter {
  void operator()(BIO* bio) const { BIO_free(bio); }
};

std::unique_ptr<BIO, BioDeleter> MemoryBio(const std::string& data) {
  return std::unique_ptr<BIO, BioDeleter>(
      BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

}  // namespace

absl::StatusOr<CertificateReloader::Loaded> CertificateReloader::Load(const std::string& cert_file,
                                                                      const std::string& key_file) {
  Loaded loaded;
  OOMGUARD_ASSIGN_OR_RETURN(std::string cert_pem, ReadFlagFile("webhook_tls_cert", cert_file));
  OOMGUARD_ASSIGN_OR_RETURN(std::string key_pem, ReadFlagFile("webhook_tls_key", key_file));

  auto pair = std::make_shared<KeyPair>();
  auto cert_bio = MemoryBio(cert_pem);
  pair->leaf = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
  std::string error;
  if (pair->leaf == nullptr) {
    error = absl::StrCat("webhook_tls_cert = ", cert_file, ": no PEM certificate");
  } else {
    pair->chain = sk_X509_new_null();
    while (X509* cert = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)) {
      sk_X509_push(pair->chain, cert);
    }
    auto key_bio = MemoryBio(key_pem);
    pair->key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
    if (pair->key == nullptr) {
      error = absl::StrCat("webhook_tls_key = ", key_file,
                           ": no PEM private key (encrypted keys are not supported)");
    } else if (X509_check_private_key(pair->leaf, pair->key) != 1) {
      error = absl::StrCat("webhook_tls_key = ", key_file, ": does not match the certificate in ",
                           cert_file);
    }
  }
  ERR_clear_error();  // The end-of-chain read leaves an error queued.
  if (!error.empty()) return absl::InvalidArgumentError(error);
  loaded.pair = std::move(pair);
  loaded.cert_pem = std::move(cert_pem);
  loaded.key_pem = std::move(key_pem);
  return loaded;
}

absl::StatusOr<std::unique_ptr<CertificateReloader>> CertificateReloader::Create(
    std::string cert_file, std::string key_file, absl::Duration interval) {
  OOMGUARD_ASSIGN_OR_RETURN(Loaded loaded, Load(cert_file, key_file));
  std::unique_ptr<CertificateReloader> reloader(
      new CertificateReloader(std::move(cert_file), std::move(key_file), interval));
  std::lock_guard<std::mutex> lock(reloader->mu_);
  reloader->pair_ = std::move(loaded.pair);
  reloader->cert_pem_ = std::move(loaded.cert_pem);
  reloader->key_pem_ = std::move(loaded.key_pem);
  reloader->next_check_ = absl::Now() + interval;
  return reloader;
}

CertificateReloader::~CertificateReloader() = default;

int CertificateReloader::reloads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reloads_;
}

std::shared_ptr<const CertificateReloader::KeyPair> CertificateReloader::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = absl::Now();
  if (now < next_check_) return pair_;
  next_check_ = now + interval_;
  absl::StatusOr<Loaded> loaded = Load(cert_file_, key_file_);
  if (!loaded.ok()) {
    WriteLogLine(FormatEventLine("webhook certificate not reloaded",
                                 {{"error", std::string(loaded.status().message())}}, now));
    return pair_;
  }
  if (loaded->cert_pem != cert_pem_ || loaded->key_pem != key_pem_) {
    pair_ = std::move(loaded->pair);
    cert_pem_ = std::move(loaded->cert_pem);
    key_pem_ = std::move(loaded->key_pem);
    ++reloads_;
    WriteLogLine(FormatEventLine("webhook certificate reloaded", {{"cert_file", cert_file_}}, now));
  }
  return pair_;
}

int CertificateReloader::CertCallback(SSL* ssl, void* self) {
  std::shared_ptr<const KeyPair> pair = static_cast<CertificateReloader*>(self)->Current();
  const bool ok = SSL_use_certificate(ssl, pair->leaf) == 1 &&
                  SSL_use_PrivateKey(ssl, pair->key) == 1 && SSL_set1_chain(ssl, pair->chain) == 1;
  return ok ? 1 : 0;
}

bool CertificateReloader::Configure(SSL_CTX& ctx) {
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return false;
  SSL_CTX_set_cert_cb(&ctx, &CertificateReloader::CertCallback, this);
  return true;
}

}  // namespace oomguard::webhook
