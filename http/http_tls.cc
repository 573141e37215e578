// TLS of the HTTP/JSON API (see http_tls.h).
#include "http/http_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <memory>

namespace oomguard::http {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

Bio MemoryBio(const std::string& pem) {
  return Bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

bool UseChainAndKey(const TlsPem& pem, SSL_CTX& ctx) {
  Bio cert = MemoryBio(pem.cert_chain);
  X509* leaf = cert ? PEM_read_bio_X509(cert.get(), nullptr, nullptr, nullptr) : nullptr;
  if (leaf == nullptr) return false;
  const bool leaf_used = SSL_CTX_use_certificate(&ctx, leaf) == 1;
  X509_free(leaf);
  if (!leaf_used) return false;
  // The rest of the file is the chain; SSL_CTX_add0_chain_cert owns each.
  while (X509* intermediate = PEM_read_bio_X509(cert.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add0_chain_cert(&ctx, intermediate) != 1) {
      X509_free(intermediate);
      return false;
    }
  }
  Bio key_bio = MemoryBio(pem.key);
  EVP_PKEY* key =
      key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (key == nullptr) return false;
  const bool key_used = SSL_CTX_use_PrivateKey(&ctx, key) == 1;
  EVP_PKEY_free(key);
  return key_used && SSL_CTX_check_private_key(&ctx) == 1;
}

bool TrustClientCa(const std::string& client_ca, SSL_CTX& ctx) {
  Bio bio = MemoryBio(client_ca);
  X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
  int added = 0;
  while (X509* ca = bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr) {
    if (X509_STORE_add_cert(store, ca) == 1) ++added;
    X509_free(ca);
  }
  if (added == 0) return false;
  SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  return true;
}

}  // namespace

bool ConfigureTls(const TlsPem& pem, SSL_CTX& ctx) {
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  const bool ok = SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) == 1 &&
                  UseChainAndKey(pem, ctx) &&
                  (pem.client_ca.empty() || TrustClientCa(pem.client_ca, ctx));
  ERR_clear_error();  // The end-of-chain read leaves an error queued.
  return ok;
}

}  // namespace oomguard::http
