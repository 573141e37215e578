// Requests and responses as the bytes on the wire (see wire_message.h).
#include "service/wire_message.h"

#include <vector>

#include "absl/strings/str_cat.h"

namespace oomguard::service {

absl::StatusOr<std::string> RequestBytes(const grpc::ByteBuffer& request) {
  std::vector<grpc::Slice> slices;
  if (!request.Dump(&slices).ok()) return absl::InternalError("cannot read the request");
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

absl::Status ParseRequest(const std::string& bytes, google::protobuf::MessageLite& request) {
  if (request.ParseFromString(bytes)) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "request: not a valid ", request.GetTypeName(), " (", bytes.size(),
      " bytes that are not its protobuf encoding: truncated or malformed fields, a string "
      "that is not UTF-8, or messages nested deeper than 100); send a message serialized "
      "from oomguard/v1/service.proto"));
}

grpc::ByteBuffer SerializeResponse(const google::protobuf::MessageLite& response) {
  grpc::Slice slice(response.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace oomguard::service
