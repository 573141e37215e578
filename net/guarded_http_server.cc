// The guarded HTTP(S) server (see guarded_http_server.h).
#include "net/guarded_http_server.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <system_error>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "net/connection_stream.h"
#include "net/host_port.h"

namespace oomguard::net {
namespace {

// httplib's accept loop hands each accepted socket to its task queue; this
// one runs the hand-off (process_and_close_socket) at once, on the accept
// thread, which only admits the connection and starts its thread.
class InlineTaskQueue : public httplib::TaskQueue {
 public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// The peer's address, family and bytes (no port); empty when unknown.
std::string PeerAddress(int sock) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  if (getpeername(sock, reinterpret_cast<sockaddr*>(&address), &length) != 0) return "";
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    return std::string("4") +
           std::string(reinterpret_cast<const char*>(&v4.sin_addr), sizeof(v4.sin_addr));
  }
  if (address.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
    return std::string("6") +
           std::string(reinterpret_cast<const char*>(&v6.sin6_addr), sizeof(v6.sin6_addr));
  }
  return "";
}

}  // namespace

GuardedHttpServer::GuardedHttpServer(ConnectionLimits limits, ServerTls* tls)
    : limits_(limits), tls_(tls != nullptr) {
  if (tls_) {
    tls_context_ = SSL_CTX_new(TLS_server_method());
    if (tls_context_ != nullptr && !tls->Configure(*tls_context_)) {
      SSL_CTX_free(tls_context_);
      tls_context_ = nullptr;
    }
  }
  new_task_queue = [] { return new InlineTaskQueue; };
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would
  // let a second server share (and steal requests from) the port.
  set_socket_options([](int sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  set_payload_max_length(limits_.max_body_bytes);
}

GuardedHttpServer::~GuardedHttpServer() {
  Stop();
  Wait();
  SSL_CTX_free(tls_context_);
}

absl::StatusOr<int> GuardedHttpServer::Start(absl::string_view flag, absl::string_view address) {
  OOMGUARD_ASSIGN_OR_RETURN(const HostPort where, ParseHostPort(flag, address));
  const int port = Bind(where.host, where.port);
  if (port <= 0) {
    return absl::UnavailableError(absl::StrCat(flag, " = ", address, ": cannot listen there"));
  }
  accept_thread_ = std::thread([this] { listen_after_bind(); });
  // stop() is a no-op until the loop runs: wait for it, so that a Stop()
  // right after Start() is never lost.
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  while (!is_running() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(1));
  return port;
}

void GuardedHttpServer::Stop() {
  stop();
  CloseConnections();
}

void GuardedHttpServer::Wait() {
  if (accept_thread_.joinable()) accept_thread_.join();
  WaitForConnections();
}

bool GuardedHttpServer::is_valid() const { return !tls_ || tls_context_ != nullptr; }

int GuardedHttpServer::Bind(const std::string& host, int port) {
  const int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound <= 0 || ::listen(svr_sock_, SOMAXCONN) != 0) return -1;
  return bound;
}

void GuardedHttpServer::CloseLocked(ConnectionList::iterator connection) {
  connection->closing = true;
  --open_;
  // Its thread, waiting in poll(), wakes to the end of the stream.
  ::shutdown(connection->fd, SHUT_RDWR);
}

GuardedHttpServer::ConnectionList::iterator GuardedHttpServer::LongestWaitingLocked(
    const std::string* source) {
  ConnectionList::iterator longest = connections_.end();
  for (auto c = connections_.begin(); c != connections_.end(); ++c) {
    if (c->closing || (c->in_request && !c->awaiting_body)) continue;
    if (source != nullptr && c->source != *source) continue;
    if (longest == connections_.end() || c->waiting_since < longest->waiting_since) longest = c;
  }
  return longest;
}

bool GuardedHttpServer::MakeRoomLocked(const std::string& source) {
  int from_source = 0;
  for (const Connection& c : connections_) {
    if (!c.closing && c.source == source) ++from_source;
  }
  if (from_source >= limits_.max_connections_per_source) {
    const ConnectionList::iterator longest = LongestWaitingLocked(&source);
    if (longest == connections_.end()) return false;
    CloseLocked(longest);
  }
  if (open_ >= limits_.max_connections) {
    const ConnectionList::iterator longest = LongestWaitingLocked(nullptr);
    if (longest != connections_.end()) CloseLocked(longest);
  }
  return open_ < limits_.max_connections;
}

bool GuardedHttpServer::process_and_close_socket(int sock) {
  const absl::Time now = absl::Now();
  std::string source = PeerAddress(sock);
  std::vector<std::thread> ended;
  bool admitted = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ended.swap(ended_);
    if (!stopping_ && MakeRoomLocked(source)) {
      const auto connection = connections_.insert(
          connections_.end(),
          Connection{.fd = sock, .source = std::move(source), .waiting_since = now, .thread = {}});
      try {
        // Its end waits for this lock: the handle is stored first.
        connection->thread =
            std::thread([this, connection, sock, now] { Serve(connection, sock, now); });
        ++open_;
        admitted = true;
      } catch (const std::system_error&) {  // No thread to be had.
        connections_.erase(connection);
      }
    }
  }
  if (!admitted) ::close(sock);
  for (std::thread& thread : ended) thread.join();
  return admitted;
}

void GuardedHttpServer::Serve(ConnectionList::iterator connection, int fd, absl::Time accepted) {
  // A write to a peer that is gone fails with EPIPE instead of killing the
  // process (OpenSSL writes with write(), which cannot say MSG_NOSIGNAL). A
  // SIGPIPE raised here stays pending on this thread and goes with it.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);

  // Else keep-alive clients stall ~40 ms a request.
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  SSL* ssl = nullptr;
  if (tls_) {
    ssl = SSL_new(tls_context_);
    if (ssl != nullptr) SSL_set_fd(ssl, fd);
  }
  if (!tls_ || ssl != nullptr) {
    ConnectionStream stream(fd, ssl);
    const bool answered = (ssl == nullptr || stream.Handshake(accepted + limits_.header_timeout)) &&
                          ServeRequests(stream, connection, accepted);
    if (ssl != nullptr) {
      if (answered) SSL_shutdown(ssl);  // One try: close_notify, no waiting for the peer's.
      SSL_free(ssl);
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!connection->closing) --open_;
    ended_.push_back(std::move(connection->thread));
    connections_.erase(connection);
    if (connections_.empty()) no_connections_.notify_all();
  }
  ::close(fd);  // Nothing names it any more.
}

bool GuardedHttpServer::ServeRequests(ConnectionStream& stream, ConnectionList::iterator connection,
                                      absl::Time accepted) {
  bool answered = false;
  absl::Time head_deadline = accepted + limits_.header_timeout;
  stream.SetBodyWaitObserver(
      [this, connection](bool waiting) { return AwaitBody(connection, waiting); });
  for (int served = 0; served < limits_.keep_alive_max_requests; ++served) {
    if (served > 0) {
      if (!stream.WaitForRequest(absl::Now() + limits_.keep_alive_timeout)) return answered;
      head_deadline = absl::Now() + limits_.header_timeout;
    }
    if (!stream.ReadHead(head_deadline, limits_.max_header_bytes) || !BeginRequest(connection)) {
      return false;
    }
    stream.SetDeadlines(absl::Now() + limits_.io_timeout, limits_.io_timeout);
    bool close = false;
    answered =
        process_request(stream, served + 1 == limits_.keep_alive_max_requests, close,
                        [&stream](httplib::Request& request) { request.ssl = stream.ssl(); });
    if (!EndRequest(connection) || !answered || close) return answered;
  }
  return answered;
}

bool GuardedHttpServer::BeginRequest(ConnectionList::iterator connection) {
  std::lock_guard<std::mutex> lock(mu_);
  if (connection->closing) return false;
  connection->in_request = true;
  connection->waiting_since = absl::Now();
  return true;
}

bool GuardedHttpServer::AwaitBody(ConnectionList::iterator connection, bool waiting) {
  std::lock_guard<std::mutex> lock(mu_);
  connection->awaiting_body = waiting;
  return !connection->closing;
}

bool GuardedHttpServer::EndRequest(ConnectionList::iterator connection) {
  std::lock_guard<std::mutex> lock(mu_);
  connection->in_request = false;
  connection->awaiting_body = false;
  connection->waiting_since = absl::Now();
  if (stopping_ && !connection->closing) CloseLocked(connection);
  return !connection->closing;
}

void GuardedHttpServer::CloseConnections() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  for (auto c = connections_.begin(); c != connections_.end(); ++c) {
    if (!c->in_request && !c->closing) CloseLocked(c);
  }
}

void GuardedHttpServer::WaitForConnections() {
  std::vector<std::thread> ended;
  {
    std::unique_lock<std::mutex> lock(mu_);
    no_connections_.wait(lock, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return NoConnections(); });
    ended.swap(ended_);
  }
  for (std::thread& thread : ended) thread.join();
}

}  // namespace oomguard::net
