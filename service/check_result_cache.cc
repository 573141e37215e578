// The key of the Check answers cache (see check_result_cache.h).
#include "service/check_result_cache.h"

#include <bit>
#include <cstdint>
#include <string>

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/message_lite.h"

namespace oomguard::service {
namespace {

// `message` deterministically serialized after its length: two different
// pairs of messages never give the same key.
void AppendMessage(const google::protobuf::MessageLite& message,
                   google::protobuf::io::CodedOutputStream& out) {
  out.WriteVarint64(message.ByteSizeLong());
  message.SerializeWithCachedSizes(&out);
}

}  // namespace

std::string CheckResultKey(const v1::JobSpec& job, const v1::GpuSpec& gpu,
                           const AdmissionOptions& options) {
  std::string key;
  {
    google::protobuf::io::StringOutputStream stream(&key);
    google::protobuf::io::CodedOutputStream out(&stream);
    out.SetSerializationDeterministic(true);
    AppendMessage(job, out);
    AppendMessage(gpu, out);
    // AdmissionOptions, the deadline aside (a new field that changes the
    // answer belongs here too).
    out.WriteLittleEndian64(std::bit_cast<uint64_t>(options.safety_margin));
    out.WriteLittleEndian64(std::bit_cast<uint64_t>(options.upper_bound_coverage));
    out.WriteVarint32((options.compare_upper_bound ? 1u : 0u) | (options.with_report ? 2u : 0u));
  }
  return key;
}

}  // namespace oomguard::service
