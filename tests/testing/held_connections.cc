// Connections held open against a server (see held_connections.h).
#include "tests/testing/held_connections.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace oomguard::testing {
namespace {

struct Connection {
  int fd = -1;
  SSL* ssl = nullptr;
  absl::Time opened;
  bool hung_up = false;
  size_t sent = 0;
};

// What a connection sends once it is up (after the handshake over TLS).
std::string FirstBytes(const HoldSpec& spec) {
  switch (spec.kind) {
    case Hold::kTrickleHeaders:
      return absl::StrCat("POST ", spec.path, " HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    case Hold::kTrickleBody:
      return absl::StrCat("POST ", spec.path,
                          " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                          "Content-Length: 1000000\r\n\r\n");
    default:
      return "";
  }
}

// The bytes trickled, over and over.
absl::string_view TrickledBytes(Hold kind) {
  switch (kind) {
    case Hold::kTrickleTls:  // A TLS handshake record of 512 bytes, of which only the start comes.
      return absl::string_view("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
    case Hold::kTrickleHeaders:
      return "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    default:
      return "{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
  }
}

// Sends all of `bytes`; false when they cannot be sent now.
bool Send(Connection& c, absl::string_view bytes) {
  if (bytes.empty()) return true;
  if (c.ssl == nullptr) {
    return send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT) ==
           static_cast<ssize_t>(bytes.size());
  }
  const int n = SSL_write(c.ssl, bytes.data(), static_cast<int>(bytes.size()));
  ERR_clear_error();
  return n == static_cast<int>(bytes.size());
}

bool HungUp(const Connection& c) {
  char byte;
  if (c.ssl == nullptr) {
    // The server sends these nothing but its close.
    const ssize_t n = recv(c.fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
  const int n = SSL_read(c.ssl, &byte, 1);  // TLS 1.3 session tickets are read here.
  const int error = SSL_get_error(c.ssl, n);
  ERR_clear_error();
  return n > 0 || (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE);
}

// The next `spec.bytes_per_send` trickled bytes; false when they cannot be sent.
bool Trickle(const HoldSpec& spec, Connection& c) {
  const absl::string_view bytes = TrickledBytes(spec.kind);
  std::string next;
  for (int i = 0; i < spec.bytes_per_send; ++i) next += bytes[(c.sent + i) % bytes.size()];
  if (!Send(c, next)) return false;
  c.sent += next.size();
  return true;
}

// Completes the TLS handshakes side by side, within 3 s. The number done.
int Handshake(SSL_CTX* context, std::vector<Connection>& connections) {
  std::vector<bool> pending(connections.size(), true);
  int done = 0;
  for (Connection& c : connections) {
    c.ssl = SSL_new(context);
    SSL_set_fd(c.ssl, c.fd);
    SSL_set_connect_state(c.ssl);
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(3);
  int left = static_cast<int>(connections.size());
  while (left > 0 && absl::Now() < give_up) {
    for (size_t i = 0; i < connections.size(); ++i) {
      if (!pending[i]) continue;
      const int r = SSL_do_handshake(connections[i].ssl);
      const int error = SSL_get_error(connections[i].ssl, r);
      ERR_clear_error();
      if (r == 1) ++done;
      if (r == 1 || (error != SSL_ERROR_WANT_READ && error != SSL_ERROR_WANT_WRITE)) {
        pending[i] = false;
        --left;
      }
    }
    absl::SleepFor(absl::Milliseconds(2));
  }
  return done;
}

}  // namespace

int Connect(int port, const std::string& source) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int error = 0;
  socklen_t length = sizeof(error);
  pollfd ready{fd, POLLOUT, 0};
  if (inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
      bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 &&
       errno != EINPROGRESS) ||
      poll(&ready, 1, 2000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0 ||
      error != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

HeldConnections::HeldConnections(HoldSpec spec)
    : thread_([this, spec = std::move(spec)] { outcome_.set_value(Run(spec)); }) {}

HeldOutcome HeldConnections::Finish() {
  if (thread_.joinable()) thread_.join();
  return outcome_future_.valid() ? outcome_future_.get() : HeldOutcome{};
}

HeldOutcome HeldConnections::Run(const HoldSpec& spec) {
  // A write to a connection the server closed must fail, not kill the test:
  // SIGPIPE is blocked on this thread only (and dropped with it).
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);

  SSL_CTX* context = SSL_CTX_new(TLS_client_method());  // Trusts anything.
  std::vector<Connection> connections;
  HeldOutcome outcome;
  for (int i = 0; i < spec.count; ++i) {
    Connection c;
    c.fd = Connect(spec.port, spec.source);
    c.opened = absl::Now();
    if (c.fd >= 0) connections.push_back(c);
  }
  const bool tls = spec.tls && spec.kind != Hold::kSilent && spec.kind != Hold::kTrickleTls;
  outcome.held = tls ? Handshake(context, connections) : static_cast<int>(connections.size());
  const std::string first = FirstBytes(spec);
  for (Connection& c : connections) Send(c, first);
  held_.set_value(outcome.held);
  const absl::Time end = absl::Now() + spec.hold;

  while (absl::Now() < end && outcome.hung_up < static_cast<int>(connections.size())) {
    for (Connection& c : connections) {
      if (c.hung_up) continue;
      if (HungUp(c) || (spec.kind != Hold::kSilent && !Trickle(spec, c))) {
        c.hung_up = true;
        ++outcome.hung_up;
        outcome.longest_until_hung_up =
            std::max(outcome.longest_until_hung_up, absl::Now() - c.opened);
      }
    }
    absl::SleepFor(std::min(spec.kind == Hold::kSilent ? absl::Milliseconds(20) : spec.interval,
                            end - absl::Now()));
  }
  for (Connection& c : connections) {
    SSL_free(c.ssl);
    close(c.fd);
  }
  SSL_CTX_free(context);
  return outcome;
}

}  // namespace oomguard::testing
