// TLS of a guarded HTTP server, with certificate reloading (see
// server_tls.h).
#include "net/server_tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/flag_file.h"
#include "common/status_macros.h"

namespace oomguard::net {

struct ServerTls::KeyPair {
  X509* leaf = nullptr;
  STACK_OF(X509) * chain = nullptr;
  EVP_PKEY* key = nullptr;
  STACK_OF(X509) * client_cas = nullptr;  // Empty: no client certificates asked for.

  KeyPair() = default;
  KeyPair(const KeyPair&) = delete;
  KeyPair& operator=(const KeyPair&) = delete;
  ~KeyPair() {
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    sk_X509_pop_free(client_cas, X509_free);
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

// The certificates left in `pem`, onto `certificates`.
void ReadCertificates(BIO& pem, STACK_OF(X509) * certificates) {
  while (X509* cert = PEM_read_bio_X509(&pem, nullptr, nullptr, nullptr)) {
    sk_X509_push(certificates, cert);
  }
}

}  // namespace

absl::StatusOr<ServerTls::Loaded> ServerTls::Parse(TlsPem pem, const TlsPemNames& names) {
  auto pair = std::make_shared<KeyPair>();
  auto cert_bio = MemoryBio(pem.cert_chain);
  pair->leaf = PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr);
  pair->chain = sk_X509_new_null();
  pair->client_cas = sk_X509_new_null();
  std::string error;
  if (pair->leaf == nullptr) {
    error = absl::StrCat(names.cert_chain, ": no PEM certificate");
  } else {
    ReadCertificates(*cert_bio, pair->chain);
    auto key_bio = MemoryBio(pem.key);
    pair->key = PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr);
    if (pair->key == nullptr) {
      error = absl::StrCat(names.key, ": no PEM private key (encrypted keys are not supported)");
    } else if (X509_check_private_key(pair->leaf, pair->key) != 1) {
      error = absl::StrCat(names.key, ": does not match the certificate (", names.cert_chain, ")");
    } else if (!pem.client_ca.empty()) {
      auto ca_bio = MemoryBio(pem.client_ca);
      ReadCertificates(*ca_bio, pair->client_cas);
      if (sk_X509_num(pair->client_cas) == 0) {
        error = absl::StrCat(names.client_ca, ": no PEM certificate");
      }
    }
  }
  ERR_clear_error();  // The end-of-chain read leaves an error queued.
  if (!error.empty()) return absl::InvalidArgumentError(error);
  return Loaded{std::move(pair), std::move(pem)};
}

absl::StatusOr<std::unique_ptr<ServerTls>> ServerTls::Create(Source source,
                                                             absl::Duration reload_interval,
                                                             ReloadObserver observer) {
  TlsPemNames names;
  OOMGUARD_ASSIGN_OR_RETURN(TlsPem pem, source(names));
  OOMGUARD_ASSIGN_OR_RETURN(Loaded loaded, Parse(std::move(pem), names));
  std::unique_ptr<ServerTls> tls(
      new ServerTls(std::move(source), reload_interval, std::move(observer)));
  std::lock_guard<std::mutex> lock(tls->mu_);
  tls->pair_ = std::move(loaded.pair);
  tls->pem_ = std::move(loaded.pem);
  tls->next_check_ = absl::Now() + reload_interval;
  return tls;
}

absl::StatusOr<std::unique_ptr<ServerTls>> ServerTls::FromPem(TlsPem pem, TlsPemNames names) {
  return Create(
      [pem = std::move(pem), names = std::move(names)](TlsPemNames& named) {
        named = names;
        return absl::StatusOr<TlsPem>(pem);
      },
      absl::InfiniteDuration(), nullptr);
}

absl::StatusOr<std::unique_ptr<ServerTls>> ServerTls::FromFiles(TlsFiles files,
                                                                absl::Duration reload_interval,
                                                                ReloadObserver observer) {
  return Create(
      [files = std::move(files)](TlsPemNames& names) -> absl::StatusOr<TlsPem> {
        names.cert_chain = absl::StrCat(files.cert_flag, " = ", files.cert_file);
        names.key = absl::StrCat(files.key_flag, " = ", files.key_file);
        TlsPem pem;
        OOMGUARD_ASSIGN_OR_RETURN(pem.cert_chain, ReadFlagFile(files.cert_flag, files.cert_file));
        OOMGUARD_ASSIGN_OR_RETURN(pem.key, ReadFlagFile(files.key_flag, files.key_file));
        return pem;
      },
      reload_interval, std::move(observer));
}

ServerTls::~ServerTls() = default;

int ServerTls::reloads() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reloads_;
}

std::shared_ptr<const ServerTls::KeyPair> ServerTls::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  const absl::Time now = absl::Now();
  if (now < next_check_) return pair_;
  next_check_ = now + interval_;
  TlsPemNames names;
  absl::StatusOr<TlsPem> pem = source_(names);
  if (pem.ok() && pem->cert_chain == pem_.cert_chain && pem->key == pem_.key &&
      pem->client_ca == pem_.client_ca) {
    return pair_;
  }
  absl::StatusOr<Loaded> loaded = pem.ok() ? Parse(*std::move(pem), names) : pem.status();
  if (loaded.ok()) {
    pair_ = std::move(loaded->pair);
    pem_ = std::move(loaded->pem);
    ++reloads_;
  }
  if (observer_ != nullptr) observer_(loaded.status());
  return pair_;
}

int ServerTls::CertCallback(SSL* ssl, void* self) {
  std::shared_ptr<const KeyPair> pair = static_cast<ServerTls*>(self)->Current();
  const bool ok = SSL_use_certificate(ssl, pair->leaf) == 1 &&
                  SSL_use_PrivateKey(ssl, pair->key) == 1 && SSL_set1_chain(ssl, pair->chain) == 1;
  return ok ? 1 : 0;
}

bool ServerTls::Configure(SSL_CTX& ctx) {
  SSL_CTX_set_options(
      &ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION) != 1) return false;
  SSL_CTX_set_cert_cb(&ctx, &ServerTls::CertCallback, this);
  // The client CA is fixed contents (files carry none): it is trusted once.
  std::shared_ptr<const KeyPair> pair = Current();
  if (sk_X509_num(pair->client_cas) > 0) {
    X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
    for (int i = 0; i < sk_X509_num(pair->client_cas); ++i) {
      if (X509_STORE_add_cert(store, sk_X509_value(pair->client_cas, i)) != 1) return false;
    }
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return true;
}

}  // namespace oomguard::net
