// Requests and responses as the bytes on the wire. Every Oomguard method is
// registered on raw grpc::ByteBuffers and parses its request here, so that a
// malformed body (junk bytes, a truncated varint, a string that is not
// UTF-8, nesting too deep) is INVALID_ARGUMENT for every method alike, not
// gRPC's own INTERNAL "Unable to parse request".
#ifndef OOMGUARD_SERVICE_WIRE_MESSAGE_H_
#define OOMGUARD_SERVICE_WIRE_MESSAGE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message_lite.h"
#include "grpcpp/support/byte_buffer.h"

namespace oomguard::service {

// The bytes of a received request.
absl::StatusOr<std::string> RequestBytes(const grpc::ByteBuffer& request);

// Parses `bytes` into `request`; InvalidArgument naming its message type
// when they are not its protobuf encoding.
absl::Status ParseRequest(const std::string& bytes, google::protobuf::MessageLite& request);

// `response` serialized, ready to send.
grpc::ByteBuffer SerializeResponse(const google::protobuf::MessageLite& response);

}  // namespace oomguard::service

#endif  // OOMGUARD_SERVICE_WIRE_MESSAGE_H_
