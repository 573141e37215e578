// Protobuf's own log lines in a server: as event lines of the service's log
// (request_log.h), at most one per interval, each with the count of those
// left out since the last one written.
//
// The protobuf library logs through GOOGLE_LOG to stderr, and a request with
// invalid UTF-8 in a string field makes it log one line ("String field ...
// contains invalid UTF-8 data") before the service refuses the request with
// INVALID_ARGUMENT. Unlimited, a client could fill the server's log with
// them. The refusals themselves stay counted, each, in
// oomguard_requests_total{code="INVALID_ARGUMENT"} and in the request log.
#ifndef OOMGUARD_SERVICE_PROTOBUF_LOG_H_
#define OOMGUARD_SERVICE_PROTOBUF_LOG_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace oomguard::service {

// Which lines of a stream to write: the first, then the first after each
// `interval` since the last one written. Thread-safe.
class LogRateLimit {
 public:
  explicit LogRateLimit(absl::Duration interval) : interval_(interval) {}

  // Whether the line arriving at `now` is written. When it is, `*left_out`
  // is the number of lines dropped since the last one written.
  bool Admit(absl::Time now, int64_t* left_out);

 private:
  const absl::Duration interval_;
  absl::Mutex mu_;
  absl::Time next_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
};

// Sends protobuf's log lines to WriteLogLine as msg=protobuf events
// (level, source file and line, message, left_out), at most one per
// `interval`; FATAL ones always. Process-wide: call once, at start-up,
// before any thread parses a message (oomguard serve does).
void RouteProtobufLogging(absl::Duration interval);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_PROTOBUF_LOG_H_
