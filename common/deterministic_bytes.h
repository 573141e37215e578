// A protobuf message's bytes that are the same for equal messages (map
// entries in key order): what cache keys are made of, never parsed back.
#ifndef OOMGUARD_COMMON_DETERMINISTIC_BYTES_H_
#define OOMGUARD_COMMON_DETERMINISTIC_BYTES_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message_lite.h"

namespace oomguard {

inline std::string DeterministicBytes(const google::protobuf::MessageLite& message) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    message.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// Appends "<length>:<deterministic bytes>" of `message` to `key`: with the
// length first, two different sequences of messages never give one key.
inline void AppendDeterministic(const google::protobuf::MessageLite& message, std::string* key) {
  const std::string bytes = DeterministicBytes(message);
  absl::StrAppend(key, bytes.size(), ":", bytes);
}

}  // namespace oomguard

#endif  // OOMGUARD_COMMON_DETERMINISTIC_BYTES_H_
