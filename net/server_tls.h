// TLS of a guarded HTTP server (the admission webhook, the HTTP/JSON API): an
// OpenSSL server context (TLS 1.2 or later) serving a certificate chain and
// key, and, with a client CA, requiring and verifying client certificates
// (mutual TLS). The PEMs are either fixed contents (the HTTP API serves the
// gRPC server's) or files re-read when they change, so that a rotated
// Kubernetes Secret is served without a restart: a new pair that does not
// parse or does not match is reported and the previous pair kept. The pair
// is chosen at each handshake. Thread-safe.
#ifndef OOMGUARD_NET_SERVER_TLS_H_
#define OOMGUARD_NET_SERVER_TLS_H_

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace oomguard::net {

struct TlsPem {
  std::string cert_chain;  // The server's certificate, then its chain.
  std::string key;
  std::string client_ca;  // Empty: no client certificates asked for.
};

// What an error calls each PEM: the flag that gave it, and for a file its
// path ("webhook_tls_cert = /etc/tls/tls.crt").
struct TlsPemNames {
  std::string cert_chain;
  std::string key;
  std::string client_ca;
};

// PEM files and the flags that name them.
struct TlsFiles {
  std::string cert_flag;
  std::string cert_file;
  std::string key_flag;
  std::string key_file;
};

class ServerTls {
 public:
  // Told of each reload: OK when a changed pair was loaded, else why the new
  // files were not taken.
  using ReloadObserver = std::function<void(const absl::Status& reloaded)>;

  // Serves `pem`. InvalidArgument naming the PEM (by `names`) that holds no
  // PEM certificate or key, a key that does not match the certificate, or a
  // client CA with no certificate.
  static absl::StatusOr<std::unique_ptr<ServerTls>> FromPem(TlsPem pem, TlsPemNames names);

  // Serves the pair in `files`, re-read at most every `reload_interval`
  // (during a handshake). InvalidArgument naming the flag and the file when
  // one cannot be read or the pair is refused as above.
  static absl::StatusOr<std::unique_ptr<ServerTls>> FromFiles(TlsFiles files,
                                                              absl::Duration reload_interval,
                                                              ReloadObserver observer);

  ~ServerTls();

  // Sets `ctx` up to serve the current pair. False on an OpenSSL failure.
  bool Configure(SSL_CTX& ctx);

  // How many times a changed pair was loaded after the first.
  int reloads() const;

 private:
  struct KeyPair;
  struct Loaded {
    std::shared_ptr<const KeyPair> pair;
    TlsPem pem;
  };
  // Reads the PEMs and the names errors give them.
  using Source = std::function<absl::StatusOr<TlsPem>(TlsPemNames& names)>;

  // The pair in `pem`, checked.
  static absl::StatusOr<Loaded> Parse(TlsPem pem, const TlsPemNames& names);
  static absl::StatusOr<std::unique_ptr<ServerTls>> Create(Source source,
                                                           absl::Duration reload_interval,
                                                           ReloadObserver observer);

  ServerTls(Source source, absl::Duration interval, ReloadObserver observer)
      : source_(std::move(source)), interval_(interval), observer_(std::move(observer)) {}

  // The pair to serve now, re-reading the source when due.
  std::shared_ptr<const KeyPair> Current();
  static int CertCallback(SSL* ssl, void* self);

  const Source source_;
  const absl::Duration interval_;
  const ReloadObserver observer_;
  // std::mutex, not absl::Mutex: Debian's Abseil is not built with
  // ThreadSanitizer annotations, so TSan (CI's server tests) could not see
  // an absl::Mutex and would report every access it guards.
  mutable std::mutex mu_;
  std::shared_ptr<const KeyPair> pair_ ABSL_GUARDED_BY(mu_);
  TlsPem pem_ ABSL_GUARDED_BY(mu_);
  absl::Time next_check_ ABSL_GUARDED_BY(mu_);
  int reloads_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace oomguard::net

#endif  // OOMGUARD_NET_SERVER_TLS_H_
