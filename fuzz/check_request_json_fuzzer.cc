// Fuzzes a Check request given as protobuf JSON (what grpcurl, the Python
// client's json_format and tools send): the input is the JSON text, parsed
// into a CheckRequest by protobuf's JSON parser, then the same in-process
// Check as a request from the wire (RequestHandlers::RunCheck).
#include <google/protobuf/util/json_util.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "fuzz/fuzz_checks.h"
#include "fuzz/fuzz_service.h"
#include "oomguard/v1/admission.pb.h"
#include "service/oomguard_service.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  const std::string json(reinterpret_cast<const char*>(data), size);
  v1::CheckRequest request;
  if (!google::protobuf::util::JsonStringToMessage(json, &request).ok()) return 0;
  v1::CheckResponse response;
  const absl::Status checked = fuzz::Service().RunCheck(request, absl::InfiniteFuture(), &response);
  fuzz::ExpectAnswerCode(checked, "RunCheck");
  if (checked.ok()) fuzz::ExpectCheckInvariants(request, response, "RunCheck");
  return 0;
}
