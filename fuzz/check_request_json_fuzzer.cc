// Fuzzes a Check request given as protobuf JSON (what the HTTP API's
// POST /v1/check, grpcurl, the Python client's json_format and tools send):
// the input is the JSON text, read by the HTTP API's http::ParseJsonBody
// (bytes that are not UTF-8 become U+FFFD, then protobuf's JSON parser),
// then the same in-process Check as a request from the wire
// (RequestHandlers::RunCheck). A body it refuses must still have a JSON
// error answer (http::ErrorJson never throws).
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "fuzz/fuzz_checks.h"
#include "fuzz/fuzz_service.h"
#include "http/json_transcoding.h"
#include "oomguard/v1/admission.pb.h"
#include "service/oomguard_service.h"
#include "service/status_mapping.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oomguard;
  const std::string json(reinterpret_cast<const char*>(data), size);
  v1::CheckRequest request;
  if (const absl::Status parsed = http::ParseJsonBody(json, request); !parsed.ok()) {
    fuzz::ExpectAnswerCode(parsed, "ParseJsonBody");
    http::ErrorJson(service::ToGrpcStatus(parsed));
    return 0;
  }
  v1::CheckResponse response;
  const absl::Status checked = fuzz::Service().RunCheck(request, absl::InfiniteFuture(), &response);
  fuzz::ExpectAnswerCode(checked, "RunCheck");
  if (checked.ok()) fuzz::ExpectCheckInvariants(request, response, "RunCheck");
  return 0;
}
