// absl::Status (what the core and the request resolution return) <->
// grpc::Status (what a client sees), with gRPC's rich error model: the
// request field an error is about travels as a structured detail, never
// only as message text. The names of gRPC codes for logs and metric labels.
//
// The field is attached where the error is made (WithBadField, an absl
// payload keyed by the detail's type URL); ToGrpcStatus sends every payload
// as a google.rpc.Status detail (oomguard.v1.RpcStatus, error.proto) in
// `grpc-status-details-bin`; a client reads the fields back with
// BadRequestFields.
#ifndef OOMGUARD_SERVICE_STATUS_MAPPING_H_
#define OOMGUARD_SERVICE_STATUS_MAPPING_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/status.h"

namespace oomguard::service {

// The type URL of a google.rpc.BadRequest detail (oomguard.v1.BadRequest is
// wire-compatible with it).
inline constexpr absl::string_view kBadRequestTypeUrl = "type.googleapis.com/google.rpc.BadRequest";

// The type URL of a google.rpc.ErrorInfo detail (oomguard.v1.ErrorInfo is
// wire-compatible with it), the domain of oomguard's reasons, and the reason
// of a job oomguard does not model (error.proto).
inline constexpr absl::string_view kErrorInfoTypeUrl = "type.googleapis.com/google.rpc.ErrorInfo";
inline constexpr absl::string_view kErrorDomain = "oomguard.io";
inline constexpr absl::string_view kJobNotModelledReason = "JOB_NOT_MODELLED";

// `status` with an ErrorInfo payload: oomguard's `reason`.
absl::Status WithErrorReason(absl::Status status, absl::string_view reason);

// `status` with the reason JOB_NOT_MODELLED when it is Unimplemented: the
// core's answer for a valid job oomguard does not model (a setting it does
// not model, FSDP version 2, ...), which tells clients it is oomguard's own
// and not a server that lacks the method. Any other status unchanged.
absl::Status MarkJobNotModelled(absl::Status status);

// Whether `status` (a handler's, before ToGrpcStatus) is oomguard's answer
// for a job it does not model: UNIMPLEMENTED with the reason
// JOB_NOT_MODELLED. The in-process callers (the webhook) decide by it.
bool IsJobNotModelled(const absl::Status& status);

// The reason of an ErrorInfo detail of oomguard's domain in `status`, a
// call's status as the client sees it; empty when it has none.
std::string ErrorReason(const grpc::Status& status);

// `status` with a BadRequest payload naming `field`, the request field path
// it is about (e.g. "gpu_name", "job.megatron.args"); its message is the
// violation's description. Adds to a BadRequest payload already there.
absl::Status WithBadField(absl::Status status, absl::string_view field);

// Same code and message. UNKNOWN never leaves the server: an absl Unknown
// (or a code outside the canonical set) becomes INTERNAL. A status with
// payloads gets error details: an RpcStatus (google.rpc.Status) with the
// same code and message and one Any per payload (its key is the type URL).
grpc::Status ToGrpcStatus(const absl::Status& status);

// The request fields named by the BadRequest details of `status`, a call's
// status as the client sees it; empty when it has none.
std::vector<std::string> BadRequestFields(const grpc::Status& status);

// "OK", "INVALID_ARGUMENT", ...: the canonical name of `code`.
inline std::string StatusCodeName(grpc::StatusCode code) {
  return absl::StatusCodeToString(static_cast<absl::StatusCode>(code));
}

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_STATUS_MAPPING_H_
