// TLS of the HTTP/JSON API, from the same PEM contents as the gRPC server's
// (--tls_cert, --tls_key, --tls_client_ca): TLS 1.2 or later, the server's
// certificate chain and key, and, with a client CA, client certificates
// required and verified (mutual TLS).
#ifndef OOMGUARD_HTTP_HTTP_TLS_H_
#define OOMGUARD_HTTP_HTTP_TLS_H_

#include <string>

typedef struct ssl_ctx_st SSL_CTX;

namespace oomguard::http {

struct TlsPem {
  std::string cert_chain;
  std::string key;
  std::string client_ca;  // Empty: no client certificates asked for.
};

// Sets `ctx` up to serve `pem`. False when OpenSSL refuses it (a PEM that
// does not parse, a key that does not match the certificate).
bool ConfigureTls(const TlsPem& pem, SSL_CTX& ctx);

}  // namespace oomguard::http

#endif  // OOMGUARD_HTTP_HTTP_TLS_H_
