// Structured one-line logs on stderr, logfmt style (key=value, values with
// spaces or quotes in double quotes): one line per request, and lines for
// server events (listening, shutdown). Each line is one write(2), so lines
// from concurrent requests never interleave.
//
//   ts=2025-01-31T12:00:00.123456Z msg=request method=Check code=OK
//   latency_ms=0.412 verdict=DOES_NOT_FIT peak_bytes=123 peer=ipv4:127.0.0.1:5
#ifndef OOMGUARD_SERVICE_REQUEST_LOG_H_
#define OOMGUARD_SERVICE_REQUEST_LOG_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"

namespace oomguard::service {

struct RequestRecord {
  absl::string_view method;
  const grpc::Status* status = nullptr;
  absl::Duration latency;
  absl::string_view verdict;  // Check only; empty otherwise.
  uint64_t peak_bytes = 0;    // 0 when there is no estimate.
  absl::string_view peer;
};

// The log line of one request (with the trailing newline).
std::string FormatRequestLine(const RequestRecord& record, absl::Time now);

// The log line of a server event, e.g. msg=listening grpc_port=50051.
std::string FormatEventLine(absl::string_view event,
                            const std::vector<std::pair<std::string, std::string>>& fields,
                            absl::Time now);

// Writes `line` to stderr in one call.
void WriteLogLine(absl::string_view line);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_REQUEST_LOG_H_
