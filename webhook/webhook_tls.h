// TLS for the admission webhook: an OpenSSL server context (TLS 1.2 or
// later) whose certificate chain and key come from PEM files and are re-read
// when the files change, so that a rotated Kubernetes Secret is served
// without a restart. A new pair that does not parse or does not match is
// logged and the previous pair kept.
#ifndef OOMGUARD_WEBHOOK_WEBHOOK_TLS_H_
#define OOMGUARD_WEBHOOK_WEBHOOK_TLS_H_

#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace oomguard::webhook {

class CertificateReloader {
 public:
  // Reads and checks the pair. InvalidArgument naming the flag and the file
  // when one cannot be read, holds no PEM certificate/key, or the key does
  // not match the certificate.
  static absl::StatusOr<std::unique_ptr<CertificateReloader>> Create(std::string cert_file,
                                                                     std::string key_file,
                                                                     absl::Duration interval);

  ~CertificateReloader();

  // Sets `ctx` up to serve the current pair (re-read at most every
  // `interval`, during a handshake). False on an OpenSSL failure.
  bool Configure(SSL_CTX& ctx);

  // How many times a changed pair was loaded after the first.
  int reloads() const;

 private:
  struct KeyPair;
  struct Loaded {
    std::shared_ptr<const KeyPair> pair;
    std::string cert_pem;
    std::string key_pem;
  };

  // Reads and checks the two files.
  static absl::StatusOr<Loaded> Load(const std::string& cert_file, const std::string& key_file);

  CertificateReloader(std::string cert_file, std::string key_file, absl::Duration interval)
      : cert_file_(std::move(cert_file)), key_file_(std::move(key_file)), interval_(interval) {}

  // The pair to serve now, re-reading the files when due.
  std::shared_ptr<const KeyPair> Current();
  static int CertCallback(SSL* ssl, void* self);

  const std::string cert_file_;
  const std::string key_file_;
  const absl::Duration interval_;
  mutable std::mutex mu_;
  std::shared_ptr<const KeyPair> pair_ ABSL_GUARDED_BY(mu_);
  std::string cert_pem_ ABSL_GUARDED_BY(mu_);
  std::string key_pem_ ABSL_GUARDED_BY(mu_);
  absl::Time next_check_ ABSL_GUARDED_BY(mu_);
  int reloads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace oomguard::webhook

#endif  // OOMGUARD_WEBHOOK_WEBHOOK_TLS_H_
