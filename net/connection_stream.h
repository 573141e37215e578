// One accepted webhook connection as an httplib::Stream: plain or TLS over
// a nonblocking socket, where every wait ends at an absolute deadline, so
// that bytes trickling in cannot extend it (httplib's own streams time out
// per read: a client sending a byte within each timeout holds the
// connection, and the thread serving it, for ever). Also reads the request
// line and headers ahead of httplib, so that they can be given a deadline of
// their own (see guarded_http_server.h).
#ifndef OOMGUARD_NET_CONNECTION_STREAM_H_
#define OOMGUARD_NET_CONNECTION_STREAM_H_

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <string>

#include "absl/time/time.h"

namespace oomguard::net {

class ConnectionStream : public httplib::Stream {
 public:
  // `fd` is a nonblocking connected socket; `ssl` (null for plain HTTP) is
  // set up on it. Neither is owned.
  ConnectionStream(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}

  // The connection's TLS (null for plain HTTP): httplib's Request::ssl, from
  // which a handler reads the client's certificate.
  SSL* ssl() const { return ssl_; }

  // The TLS handshake (server side), by `deadline`. False when it fails or
  // is not done by then.
  bool Handshake(absl::Time deadline);
  // Waits until a next request starts (at once when its bytes are already
  // read). False at `deadline`, at the end of the stream or on an error.
  bool WaitForRequest(absl::Time deadline);
  // Reads until a whole request line and headers (up to the empty line) are
  // buffered, by `deadline`. False at the deadline, at the end of the
  // stream, on an error, or when `max_bytes` hold no empty line.
  bool ReadHead(absl::Time deadline, size_t max_bytes);
  // The reads after the head (httplib's: the head again, from the buffer,
  // then the body) must be done by `read_deadline`; each write gets
  // `write_timeout`.
  void SetDeadlines(absl::Time read_deadline, absl::Duration write_timeout);
  // Called with true before a read after the head waits for the peer's
  // bytes (the body's), and with false when the wait ends; when it answers
  // false, the read fails (-1). So the server knows which connections are
  // waiting for their body rather than being handled.
  void SetBodyWaitObserver(std::function<bool(bool waiting)> observer);

  // httplib::Stream. read() is -1 once the read deadline passes; write()
  // writes all of `size` or returns -1.
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  int socket() const override { return fd_; }

 private:
  // Waits for `events` (POLLIN, POLLOUT) on the socket until `deadline`.
  // True when they, or an error, came first.
  bool WaitFor(short events, absl::Time deadline) const;
  // What has arrived (waiting for it until `deadline`), up to `size` bytes:
  // the count, 0 at the end of the stream, -1 on an error or at the deadline.
  ssize_t Receive(char* ptr, size_t size, absl::Time deadline);
  // WaitFor(`events`, `deadline`) after the head, told to the observer.
  bool WaitForBody(short events, absl::Time deadline) const;
  size_t buffered() const { return buffer_.size() - buffer_offset_; }

  const int fd_;
  SSL* const ssl_;
  // Read ahead (by ReadHead) and not yet handed to httplib.
  std::string buffer_;
  size_t buffer_offset_ = 0;
  absl::Time read_deadline_ = absl::InfinitePast();
  absl::Duration write_timeout_ = absl::ZeroDuration();
  // Set once the head is read.
  bool after_head_ = false;
  std::function<bool(bool waiting)> body_wait_observer_;
};

}  // namespace oomguard::net

#endif  // OOMGUARD_NET_CONNECTION_STREAM_H_
