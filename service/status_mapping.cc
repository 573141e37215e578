// absl::Status -> grpc::Status (see status_mapping.h).
#include "service/status_mapping.h"

#include <string>

namespace oomguard::service {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbers.
  const int code = static_cast<int>(status.code());
  if (status.code() == absl::StatusCode::kUnknown ||
      code > static_cast<int>(grpc::StatusCode::UNAUTHENTICATED)) {
    return grpc::Status(grpc::StatusCode::INTERNAL, std::string(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(status.message()));
}

}  // namespace oomguard::service
