// A webhook connection with absolute deadlines (see connection_stream.h).
#include "net/connection_stream.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/time/clock.h"

namespace oomguard::net {
namespace {

// Milliseconds left until `deadline`, rounded up (0 once it has passed).
int MillisecondsUntil(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(
      absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))), INT_MAX));
}

// The poll events an OpenSSL call that returned `result` waits for; 0 when
// it failed for good.
short SslWants(SSL* ssl, int result) {
  switch (SSL_get_error(ssl, result)) {
    case SSL_ERROR_WANT_READ:
      return POLLIN;
    case SSL_ERROR_WANT_WRITE:
      return POLLOUT;
    default:
      return 0;
  }
}

void AddressText(const sockaddr_storage& address, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    port = ntohs(v4.sin_port);
  } else if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
    port = ntohs(v6.sin6_port);
  }
  ip = text;
}

}  // namespace

bool ConnectionStream::WaitFor(short events, absl::Time deadline) const {
  pollfd ready{fd_, events, 0};
  for (;;) {
    const int n = poll(&ready, 1, MillisecondsUntil(deadline));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

bool ConnectionStream::WaitForBody(short events, absl::Time deadline) const {
  if (!after_head_ || !body_wait_observer_) return WaitFor(events, deadline);
  if (!body_wait_observer_(true)) return false;
  const bool ready = WaitFor(events, deadline);
  return body_wait_observer_(false) && ready;
}

bool ConnectionStream::Handshake(absl::Time deadline) {
  for (;;) {
    ERR_clear_error();
    const int result = SSL_accept(ssl_);
    if (result == 1) return true;
    const short wants = SslWants(ssl_, result);
    if (wants == 0 || !WaitFor(wants, deadline)) return false;
  }
}

ssize_t ConnectionStream::Receive(char* ptr, size_t size, absl::Time deadline) {
  for (;;) {
    if (ssl_ != nullptr) {
      ERR_clear_error();
      const int n = SSL_read(ssl_, ptr, static_cast<int>(std::min<size_t>(size, INT_MAX)));
      if (n > 0) return n;
      if (SSL_get_error(ssl_, n) == SSL_ERROR_ZERO_RETURN) return 0;
      const short wants = SslWants(ssl_, n);
      if (wants == 0 || !WaitForBody(wants, deadline)) return -1;
    } else {
      const ssize_t n = recv(fd_, ptr, size, 0);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !WaitForBody(POLLIN, deadline)) return -1;
    }
  }
}

bool ConnectionStream::WaitForRequest(absl::Time deadline) {
  if (buffered() > 0 || (ssl_ != nullptr && SSL_pending(ssl_) > 0)) return true;
  return WaitFor(POLLIN, deadline);
}

bool ConnectionStream::ReadHead(absl::Time deadline, size_t max_bytes) {
  constexpr size_t kChunk = 4096;
  after_head_ = false;
  buffer_.erase(0, buffer_offset_);
  buffer_offset_ = 0;
  size_t search_from = 0;
  // The head ends with an empty line ("\r\n", as httplib reads it) after a
  // line's "\n".
  while (buffer_.find("\n\r\n", search_from) == std::string::npos) {
    if (buffer_.size() >= max_bytes) return false;
    const size_t old_size = buffer_.size();
    search_from = old_size < 2 ? 0 : old_size - 2;
    buffer_.resize(old_size + kChunk);
    const ssize_t n = Receive(&buffer_[old_size], kChunk, deadline);
    buffer_.resize(old_size + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n <= 0) return false;
  }
  return true;
}

void ConnectionStream::SetDeadlines(absl::Time read_deadline, absl::Duration write_timeout) {
  read_deadline_ = read_deadline;
  write_timeout_ = write_timeout;
  after_head_ = true;
}

void ConnectionStream::SetBodyWaitObserver(std::function<bool(bool waiting)> observer) {
  body_wait_observer_ = std::move(observer);
}

bool ConnectionStream::is_readable() const {
  return buffered() > 0 || (ssl_ != nullptr && SSL_pending(ssl_) > 0) ||
         WaitForBody(POLLIN, read_deadline_);
}

bool ConnectionStream::is_writable() const {
  return WaitFor(POLLOUT, absl::Now() + write_timeout_);
}

ssize_t ConnectionStream::read(char* ptr, size_t size) {
  if (buffered() == 0) return Receive(ptr, size, read_deadline_);
  const size_t n = std::min(size, buffered());
  std::memcpy(ptr, buffer_.data() + buffer_offset_, n);
  buffer_offset_ += n;
  return static_cast<ssize_t>(n);
}

ssize_t ConnectionStream::write(const char* ptr, size_t size) {
  const absl::Time deadline = absl::Now() + write_timeout_;
  size_t written = 0;
  while (written < size) {
    const size_t left = size - written;
    if (ssl_ != nullptr) {
      // A write that wants a retry is retried with the same arguments.
      ERR_clear_error();
      const int n =
          SSL_write(ssl_, ptr + written, static_cast<int>(std::min<size_t>(left, INT_MAX)));
      if (n > 0) {
        written += static_cast<size_t>(n);
        continue;
      }
      const short wants = SslWants(ssl_, n);
      if (wants == 0 || !WaitFor(wants, deadline)) return -1;
    } else {
      const ssize_t n = send(fd_, ptr + written, left, MSG_NOSIGNAL);
      if (n >= 0) {
        written += static_cast<size_t>(n);
        continue;
      }
      if (errno == EINTR) continue;
      if ((errno != EAGAIN && errno != EWOULDBLOCK) || !WaitFor(POLLOUT, deadline)) return -1;
    }
  }
  return static_cast<ssize_t>(size);
}

void ConnectionStream::get_remote_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getpeername(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    AddressText(address, ip, port);
  }
}

void ConnectionStream::get_local_ip_and_port(std::string& ip, int& port) const {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    AddressText(address, ip, port);
  }
}

}  // namespace oomguard::net
