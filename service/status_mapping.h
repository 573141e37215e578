// absl::Status (what the core and the request resolution return) ->
// grpc::Status (what a client sees), and the names of gRPC codes for logs
// and metric labels.
#ifndef OOMGUARD_SERVICE_STATUS_MAPPING_H_
#define OOMGUARD_SERVICE_STATUS_MAPPING_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace oomguard::service {

// Same code and message. UNKNOWN never leaves the server: an absl Unknown
// (or a code outside the canonical set) becomes INTERNAL.
grpc::Status ToGrpcStatus(const absl::Status& status);

// "OK", "INVALID_ARGUMENT", ...: the canonical name of `code`.
inline std::string StatusCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_STATUS_MAPPING_H_
