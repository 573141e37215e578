// The HTTP(S) server of the admission webhook and of the HTTP/JSON API:
// httplib's accept loop and request handling
// (routing, bodies, answers), with each connection served on a thread of
// its own, deadlines that hold in total, and a bounded number of
// connections, so that connections held open by slow or silent clients
// cannot keep real reviews waiting (issue 12, item 6).
//
// Why not httplib's own serving (Debian's cpp-httplib 0.11.4): its accept
// loop queues each connection to a pool of worker threads, and the worker
// then does the TLS handshake (SSL_accept) and reads the request line and
// headers one byte at a time, every wait bounded by the read timeout *per
// read*. A client that sends nothing holds a worker for the whole timeout;
// one that sends a byte within each timeout holds it for ever; a few such
// clients hold every worker, and the API server's reviews (or the API's
// calls) wait in the queue behind them until it gives up (and, with
// failurePolicy: Ignore, admits the job unchecked). More workers only raise the number of
// connections needed, and httplib has no hook before the handshake or a total deadline. So this
// class keeps httplib's accept loop (with a task queue that runs the hand-off
// at once, on the accept thread) and process_request, and replaces what
// happens to an accepted socket (process_and_close_socket):
//  - the connection is admitted or refused at once (below) and gets a thread
//    of its own: a held connection holds up nothing but itself;
//  - its TLS handshake and its first request's line and headers must arrive
//    by `header_timeout` after the accept, however the bytes trickle; a
//    later request on a kept-alive connection by `header_timeout` after its
//    first byte; a body by `io_timeout` after its headers (ConnectionStream);
//  - at most `max_connections` are open, and `max_connections_per_source`
//    from one peer address: at a limit, a new connection closes the one
//    (from that source, at its cap) that has waited longest without its
//    request being handled (in its handshake, its headers, idle between
//    requests, or waiting for its body's bytes); when all have their request
//    handled, the new connection is closed at once. So clients that hold
//    many connections, however slowly they send, can only cut short each
//    other's waits, not keep a new connection out; and one source cannot
//    fill the server (connection_limits.h states the bound).
#ifndef OOMGUARD_NET_GUARDED_HTTP_SERVER_H_
#define OOMGUARD_NET_GUARDED_HTTP_SERVER_H_

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "net/connection_limits.h"
#include "net/server_tls.h"

namespace oomguard::net {

class ConnectionStream;

class GuardedHttpServer : public httplib::Server {
 public:
  // TLS when `tls` is set (it must outlive the server); is_valid() is false
  // when the OpenSSL context cannot be set up. Plain HTTP otherwise. The
  // handlers are httplib's (Get, Post, ...), set before Start().
  GuardedHttpServer(ConnectionLimits limits, ServerTls* tls);
  ~GuardedHttpServer() override;  // Stop() and Wait().

  bool is_valid() const override;

  // Binds to `address`, the value of `flag` (host:port or a port,
  // host_port.h; port 0: any free port), and serves on a thread of its own.
  // The port bound. InvalidArgument for a bad address, Unavailable when it
  // cannot be bound.
  absl::StatusOr<int> Start(absl::string_view flag, absl::string_view address);

  // Stops accepting connections and closes those without a request in
  // progress (the others close once their request is answered); returns at
  // once.
  void Stop();
  // Returns once every connection is closed and the threads are gone (after
  // Stop()).
  void Wait();

 private:
  struct Connection {
    int fd = -1;
    // The peer's address (family and bytes, no port): what
    // max_connections_per_source counts.
    std::string source;
    bool in_request = false;     // From its headers to its answer.
    bool awaiting_body = false;  // In request, waiting for its body's bytes.
    bool closing = false;        // Its socket was shut down, or it ends after its request.
    // Its accept, its last answer, or (in request) its headers.
    absl::Time waiting_since;
    std::thread thread;  // Serving it.
  };
  using ConnectionList = std::list<Connection>;

  // Binds to host:`port` (0: any free port) and listens, with a backlog of
  // SOMAXCONN: httplib's is 5, which a burst of connections overflows, and a
  // dropped SYN costs a client a 1 s retransmit. The port, or -1.
  int Bind(const std::string& host, int port);
  // After stop(): closes the connections without a request in progress; the
  // others close once their request is answered.
  void CloseConnections();
  // Returns once every connection is closed and its thread gone.
  void WaitForConnections();

  // On the accept thread: admits `sock` and starts its thread, or closes it.
  bool process_and_close_socket(int sock) override;
  // On the connection's thread, to the end.
  void Serve(ConnectionList::iterator connection, int fd, absl::Time accepted);
  // The requests on `stream`; true when the last one was answered.
  bool ServeRequests(ConnectionStream& stream, ConnectionList::iterator connection,
                     absl::Time accepted);
  // False when the connection is being closed.
  bool BeginRequest(ConnectionList::iterator connection);
  bool AwaitBody(ConnectionList::iterator connection, bool waiting);
  bool EndRequest(ConnectionList::iterator connection);
  // Makes room for a new connection from `source` by closing one that is
  // not being handled (see connection_limits.h); true when it fits.
  bool MakeRoomLocked(const std::string& source) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The connection that has waited longest without being handled (from
  // `source` only, when it is not null); end() when none.
  ConnectionList::iterator LongestWaitingLocked(const std::string* source)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Marks `connection` closing and shuts its socket down.
  void CloseLocked(ConnectionList::iterator connection) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NoConnections() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return connections_.empty(); }

  const ConnectionLimits limits_;
  const bool tls_ = false;
  SSL_CTX* tls_context_ = nullptr;
  // std::mutex, not absl::Mutex: Debian's Abseil is not built with
  // ThreadSanitizer annotations, so TSan (CI's server tests) could not see
  // an absl::Mutex and would report every access it guards.
  std::mutex mu_;
  std::condition_variable no_connections_;  // Notified when connections_ empties.
  ConnectionList connections_ ABSL_GUARDED_BY(mu_);
  int open_ ABSL_GUARDED_BY(mu_) = 0;  // Those not closing.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // Of connections that are gone: threads that have ended, or are about to,
  // to be joined.
  std::vector<std::thread> ended_ ABSL_GUARDED_BY(mu_);
  std::thread accept_thread_;  // listen_after_bind(), from Start().
};

}  // namespace oomguard::net

#endif  // OOMGUARD_NET_GUARDED_HTTP_SERVER_H_
